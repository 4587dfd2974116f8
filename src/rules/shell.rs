//! A `bash` command line as the rules see it: the simple commands it runs, each as its words
//! after quote removal, found by a real shell parser (`brush-parser`) across `;`, `&&`, `||`,
//! `|`, `&`, newlines, subshells, `{ }` groups, `if`/`while`/`until`/`for`/`case` bodies,
//! command and process substitutions and `sh -c '…'` scripts.
//!
//! What cannot be known before the line runs is never guessed at. A word whose value depends
//! on the run (a parameter expansion, a substitution, an unquoted glob or brace expansion, a
//! tilde) is [`Word::Unknown`]: an allow pattern can only cover it with a `*`, and a deny
//! pattern is taken to match it (see `command_pattern`). A line the analysis cannot follow at all —
//! `eval`, `exec`, `source`, a function definition, `[[ ]]`, arithmetic, a here-document that
//! expands, NUL bytes, control characters, unquoted non-ASCII text (a fullwidth `；` or `ｇｉｔ`
//! looks like syntax or a name it is not), a line past [`MAX_LINE`] or nested past
//! [`MAX_DEPTH`] — is [`Unanalysable`], and the rules deny it.
//!
//! The hand-written parts are the walk over the parser's tree and the pre-checks. The walk is
//! safe because it is exhaustive: every node kind of the tree is matched without a wildcard
//! arm, so a construct the walk does not descend into is one it refuses by name, and a new
//! node kind in the parser fails to compile here.

use brush_parser::ast::{
    self, AndOr, AssignmentValue, Command, CommandPrefixOrSuffixItem, CompoundCommand,
    CompoundList, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions, SourceInfo};

/// The longest command line the rules analyse (bytes); a longer one is denied when rules
/// apply to `bash`.
pub(crate) const MAX_LINE: usize = 16 * 1024;

/// How deep substitutions, subshells and `sh -c` scripts may nest before the line is denied:
/// far beyond what a real command needs, and a bound on the parser's recursion.
pub(crate) const MAX_DEPTH: usize = 8;

/// The most opening brackets a line may hold before it is denied unparsed: the parser
/// recurses once per nesting level, and a line of thousands of `(` must not reach it.
const MAX_BRACKETS: usize = 256;

/// Commands that run their argument text as shell code or change what later names mean;
/// a line using one is not analysed.
const OPAQUE: [&str; 12] = [
    "eval", "exec", "source", ".", "builtin", "command", "alias", "enable", "trap", "hash", "fc",
    "coproc",
];

/// Shells whose `-c SCRIPT` is analysed as a line of its own.
pub(crate) const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "mksh"];

pub(crate) use crate::command_pattern::Word;

/// One simple command of a line: what runs, as the rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// Its words: the assignments before the command name (`FOO=1`), then the name and its
    /// arguments.
    pub(crate) words: Vec<Word>,
    /// How many of `words` are leading assignments.
    pub(crate) assignments: usize,
    /// The files its output redirections write (`> out`, `>> log`, `&> all`), `/dev/null`
    /// and the other standard devices left out.
    pub(crate) writes: Vec<Word>,
    /// Whether it only carries a script whose commands were analysed as commands of their
    /// own (`sh -c 'SCRIPT'`): those need allowing, the carrier itself need not.
    pub(crate) carrier: bool,
}

impl SimpleCommand {
    /// The words from the command name on (the assignments left out).
    pub(crate) fn command(&self) -> &[Word] {
        &self.words[self.assignments..]
    }

    /// The words as a person would read them, `…` for an unknown one.
    pub(crate) fn display(&self) -> String {
        self.words
            .iter()
            .map(|word| match word {
                Word::Known(text) => text.as_str(),
                Word::Unknown => "…",
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Why a command line cannot be checked against the rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unanalysable(pub(crate) String);

fn refuse<T>(why: impl Into<String>) -> Result<T, Unanalysable> {
    Err(Unanalysable(why.into()))
}

/// The simple commands `line` runs, or why they cannot be known.
pub(crate) fn analyse(line: &str) -> Result<Vec<SimpleCommand>, Unanalysable> {
    let mut found = Vec::new();
    Walk {
        found: &mut found,
        depth: 0,
    }
    .line(line)?;
    Ok(found)
}

/// The checks made on the raw text before it is parsed.
fn precheck(line: &str) -> Result<(), Unanalysable> {
    if line.len() > MAX_LINE {
        return refuse(format!(
            "the command line is {} bytes long; the rules analyse at most {MAX_LINE}",
            line.len()
        ));
    }
    if line.contains('\0') {
        return refuse("the command line holds a NUL byte");
    }
    if let Some(control) = line
        .chars()
        .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || is_invisible(*c))
    {
        return refuse(format!(
            "the command line holds the control or invisible character U+{:04X}",
            control as u32
        ));
    }
    if line
        .chars()
        .filter(|c| matches!(c, '(' | '{' | '['))
        .count()
        > MAX_BRACKETS
    {
        return refuse(format!(
            "the command line holds more than {MAX_BRACKETS} opening brackets"
        ));
    }
    Ok(())
}

/// Characters that show as nothing or as a space but are not the shell's blanks: a line
/// holding one does not read as it runs.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// The walk over one line's tree, collecting simple commands.
struct Walk<'a> {
    found: &'a mut Vec<SimpleCommand>,
    depth: usize,
}

impl Walk<'_> {
    /// Parses `line` and walks its commands.
    fn line(&mut self, line: &str) -> Result<(), Unanalysable> {
        precheck(line)?;
        let options = ParserOptions::default();
        let program = Parser::new(line.as_bytes(), &options, &SourceInfo::default())
            .parse_program()
            .or_else(|error| refuse(format!("it does not parse as a shell command ({error})")))?;
        for complete in &program.complete_commands {
            self.list(complete)?;
        }
        Ok(())
    }

    /// Walks `line` one level deeper (a substitution's or a `-c` script's).
    fn nested(&mut self, line: &str) -> Result<(), Unanalysable> {
        self.deeper(|walk| walk.line(line))
    }

    fn list(&mut self, list: &CompoundList) -> Result<(), Unanalysable> {
        for item in &list.0 {
            // `;`, a newline and `&` all separate commands; each is checked alike.
            let and_or = &item.0;
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                match next {
                    AndOr::And(pipeline) | AndOr::Or(pipeline) => self.pipeline(pipeline)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &Pipeline) -> Result<(), Unanalysable> {
        for command in &pipeline.seq {
            self.command(command)?;
        }
        Ok(())
    }

    fn command(&mut self, command: &Command) -> Result<(), Unanalysable> {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                self.compound(compound)?;
                let mut writes = Vec::new();
                for redirect in redirects.iter().flat_map(|list| &list.0) {
                    self.redirect(redirect, &mut writes)?;
                }
                if !writes.is_empty() {
                    // The group's output goes to files: a command of its own for the rules,
                    // with no words.
                    self.found.push(SimpleCommand {
                        words: Vec::new(),
                        assignments: 0,
                        writes,
                        carrier: false,
                    });
                }
                Ok(())
            }
            Command::Function(_) => refuse("it defines a shell function"),
            Command::ExtendedTest(_) => refuse("it uses `[[ … ]]` (use `test` or `[`)"),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) -> Result<(), Unanalysable> {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list),
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition)?;
                self.list(&clause.then)?;
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition)?;
                    }
                    self.list(&other.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.list(&clause.0)?;
                self.list(&clause.1.list)
            }
            CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(&value.value)?;
                }
                self.list(&clause.body.list)
            }
            CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value)?;
                for case in &clause.cases {
                    for pattern in &case.patterns {
                        self.word(&pattern.value)?;
                    }
                    if let Some(body) = &case.cmd {
                        self.list(body)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                refuse("it uses arithmetic `(( … ))`")
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) -> Result<(), Unanalysable> {
        let mut words = Vec::new();
        let mut assignments = 0;
        let mut writes = Vec::new();
        for item in simple.prefix.iter().flat_map(|prefix| &prefix.0) {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, raw) => {
                    if let AssignmentValue::Array(_) = assignment.value {
                        return refuse("it assigns an array");
                    }
                    words.push(self.word(&raw.value)?);
                    assignments += 1;
                }
                other => self.item(other, &mut words, &mut writes)?,
            }
        }
        if let Some(name) = &simple.word_or_name {
            words.push(self.word(&name.value)?);
        }
        for item in simple.suffix.iter().flat_map(|suffix| &suffix.0) {
            self.item(item, &mut words, &mut writes)?;
        }
        let mut command = SimpleCommand {
            words,
            assignments,
            writes,
            carrier: false,
        };
        self.opaque(&command)?;
        command.carrier = self.shell_script(&command)?;
        self.found.push(command);
        Ok(())
    }

    /// A word, redirection or process substitution of a simple command.
    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        words: &mut Vec<Word>,
        writes: &mut Vec<Word>,
    ) -> Result<(), Unanalysable> {
        match item {
            CommandPrefixOrSuffixItem::Word(raw) => words.push(self.word(&raw.value)?),
            CommandPrefixOrSuffixItem::AssignmentWord(_, raw) => {
                // `declare FOO=$(…)`: an argument that looks like an assignment.
                words.push(self.word(&raw.value)?);
            }
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect, writes)?,
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.deeper(|walk| walk.list(&subshell.list))?;
                words.push(Word::Unknown);
            }
        }
        Ok(())
    }

    /// Runs `walk` one level deeper.
    fn deeper(
        &mut self,
        walk: impl FnOnce(&mut Walk<'_>) -> Result<(), Unanalysable>,
    ) -> Result<(), Unanalysable> {
        if self.depth >= MAX_DEPTH {
            return refuse(format!(
                "substitutions and shell scripts nest more than {MAX_DEPTH} deep"
            ));
        }
        let mut inner = Walk {
            found: self.found,
            depth: self.depth + 1,
        };
        walk(&mut inner)
    }

    /// A redirection: its target analysed like a word, and an output file noted as a write.
    fn redirect(
        &mut self,
        redirect: &IoRedirect,
        writes: &mut Vec<Word>,
    ) -> Result<(), Unanalysable> {
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let output = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite
                        | IoFileRedirectKind::DuplicateOutput
                );
                match target {
                    IoFileRedirectTarget::Filename(file) => {
                        let file = self.word(&file.value)?;
                        if output && !is_standard_device(&file) {
                            writes.push(file);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(target) => {
                        // `>&2` duplicates a descriptor; `>& file` (a name, not a number)
                        // writes a file.
                        let target = self.word(&target.value)?;
                        let descriptor = matches!(&target, Word::Known(text)
                            if text == "-" || text.bytes().all(|b| b.is_ascii_digit()));
                        if output && !descriptor && !is_standard_device(&target) {
                            writes.push(target);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.deeper(|walk| walk.list(&subshell.list))?;
                    }
                }
            }
            IoRedirect::OutputAndError(file, _) => {
                let file = self.word(&file.value)?;
                if !is_standard_device(&file) {
                    writes.push(file);
                }
            }
            IoRedirect::HereString(_, text) => {
                self.word(&text.value)?;
            }
            IoRedirect::HereDocument(_, document) => {
                let doc = &document.doc.value;
                if document.requires_expansion && (doc.contains('$') || doc.contains('`')) {
                    return refuse("it has a here-document that expands `$` or backquotes");
                }
            }
        }
        Ok(())
    }

    /// A word after quote removal; the substitutions in it are analysed as commands.
    fn word(&mut self, raw: &str) -> Result<Word, Unanalysable> {
        let pieces = word::parse(raw, &ParserOptions::default())
            .or_else(|error| refuse(format!("a word does not parse ({error})")))?;
        let mut text = String::new();
        let mut known = true;
        self.pieces(&pieces, false, &mut text, &mut known)?;
        Ok(if known {
            Word::Known(text)
        } else {
            Word::Unknown
        })
    }

    /// Appends the text of `pieces` (quoted or not) to `text`, clearing `known` at anything
    /// whose value is not known before the command runs.
    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        text: &mut String,
        known: &mut bool,
    ) -> Result<(), Unanalysable> {
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(literal) => {
                    if !quoted {
                        unquoted_text(literal, known)?;
                    }
                    text.push_str(literal);
                }
                WordPiece::SingleQuotedText(literal) => text.push_str(literal),
                WordPiece::EscapeSequence(escape) => {
                    let escaped = escape.strip_prefix('\\').unwrap_or(escape);
                    if quoted && !matches!(escaped, "$" | "`" | "\"" | "\\" | "\n") {
                        // Inside double quotes a backslash stays before other characters.
                        text.push('\\');
                    }
                    if escaped != "\n" {
                        text.push_str(escaped);
                    }
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, true, text, known)?;
                }
                WordPiece::CommandSubstitution(script)
                | WordPiece::BackquotedCommandSubstitution(script) => {
                    self.nested(script)?;
                    *known = false;
                }
                WordPiece::ArithmeticExpression(expression) => {
                    if expression.value.contains('$') || expression.value.contains('`') {
                        return refuse("an arithmetic expansion holds an expansion");
                    }
                    *known = false;
                }
                // `$'…'` escapes, `~`, `$VAR` and `${…}` are known only as the command runs.
                WordPiece::AnsiCQuotedText(_)
                | WordPiece::TildePrefix(_)
                | WordPiece::ParameterExpansion(_) => *known = false,
            }
        }
        Ok(())
    }

    /// Refuses a command whose name runs its arguments as code or redefines names.
    fn opaque(&self, command: &SimpleCommand) -> Result<(), Unanalysable> {
        match command.command().first() {
            Some(Word::Known(name)) if OPAQUE.contains(&name.as_str()) => refuse(format!(
                "it runs `{name}`, whose effect cannot be known in advance"
            )),
            _ => Ok(()),
        }
    }

    /// `sh -c SCRIPT [NAME ARGS…]`: the script is analysed as a line (and `true` returned:
    /// the command carries it); any other use of a shell's options with `-c` (`-lc` reads a
    /// profile, `-ec`) is refused.
    fn shell_script(&mut self, command: &SimpleCommand) -> Result<bool, Unanalysable> {
        let words = command.command();
        let Some(Word::Known(name)) = words.first() else {
            return Ok(false);
        };
        let base = name.rsplit('/').next().unwrap_or(name);
        if !SHELLS.contains(&base) {
            return Ok(false);
        }
        let options: Vec<&Word> = words[1..]
            .iter()
            .take_while(|word| {
                matches!(word, Word::Known(t) if t.starts_with('-')) || **word == Word::Unknown
            })
            .collect();
        let has_c = options.iter().any(
            |word| matches!(word, Word::Known(t) if !t.starts_with("--") && t[1..].contains('c')),
        );
        if !has_c && !options.contains(&&Word::Unknown) {
            return Ok(false);
        }
        if command.assignments > 0 {
            return refuse(format!("it runs `{name} -c` with variables set before it"));
        }
        match (options.as_slice(), words.get(2)) {
            ([Word::Known(c)], Some(Word::Known(script))) if c == "-c" => {
                self.nested(script).map(|()| true)
            }
            _ => refuse(format!(
                "it runs `{name}` with options the rules cannot follow (only `{name} -c \
                 'SCRIPT'` is analysed)"
            )),
        }
    }
}

/// Unquoted literal text: a glob or brace expansion makes the word unknown; non-ASCII
/// characters are refused (a look-alike of syntax or of a name).
fn unquoted_text(literal: &str, known: &mut bool) -> Result<(), Unanalysable> {
    if let Some(c) = literal.chars().find(|c| !c.is_ascii()) {
        return refuse(format!(
            "it holds the non-ASCII character `{c}` (U+{:04X}) outside quotes",
            c as u32
        ));
    }
    // `[` opens a bracket expression only with a `]` after it: `[ -f x ]` is the command `[`.
    let bracket = literal
        .find('[')
        .is_some_and(|open| literal[open + 1..].contains(']'));
    let glob = literal.contains(['*', '?']) || bracket;
    let brace = literal.contains('{') && (literal.contains(',') || literal.contains(".."));
    if glob || brace {
        *known = false;
    }
    Ok(())
}

/// Whether a redirection target is one of the devices every command may write.
fn is_standard_device(target: &Word) -> bool {
    matches!(target, Word::Known(path)
        if matches!(path.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(words: &[&str]) -> Vec<Word> {
        words.iter().map(|w| Word::Known(w.to_string())).collect()
    }

    fn commands(line: &str) -> Vec<Vec<Word>> {
        analyse(line)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .into_iter()
            .map(|command| command.words)
            .collect()
    }

    #[test]
    fn operators_subshells_and_groups_split_a_line_into_its_simple_commands() {
        assert_eq!(
            commands("cargo test && git diff; ls | wc -l || (echo a; { echo b; }) & true\nfalse"),
            [
                known(&["cargo", "test"]),
                known(&["git", "diff"]),
                known(&["ls"]),
                known(&["wc", "-l"]),
                known(&["echo", "a"]),
                known(&["echo", "b"]),
                known(&["true"]),
                known(&["false"]),
            ]
        );
    }

    #[test]
    fn quotes_and_escapes_are_removed_before_matching() {
        assert_eq!(
            commands(r#"git "push" 'origin' m\ain"#),
            [known(&["git", "push", "origin", "main"])]
        );
        assert_eq!(
            commands(r#"echo "a\"b" "c\d""#),
            [known(&["echo", "a\"b", "c\\d"])]
        );
    }

    #[test]
    fn substitutions_are_analysed_and_their_words_unknown() {
        assert_eq!(
            commands("cargo test $(curl x) `wget y` <(nc z)"),
            [
                known(&["curl", "x"]),
                known(&["wget", "y"]),
                known(&["nc", "z"]),
                vec![
                    Word::Known("cargo".into()),
                    Word::Known("test".into()),
                    Word::Unknown,
                    Word::Unknown,
                    Word::Unknown
                ],
            ]
        );
        assert_eq!(
            commands("$CMD push *.rs ~/x {a,b}"),
            [vec![
                Word::Unknown,
                Word::Known("push".into()),
                Word::Unknown,
                Word::Unknown,
                Word::Unknown
            ]]
        );
    }

    #[test]
    fn sh_c_scripts_are_analysed_as_lines_of_their_own() {
        assert_eq!(
            commands("bash -c 'git diff; curl x'"),
            [
                known(&["git", "diff"]),
                known(&["curl", "x"]),
                known(&["bash", "-c", "git diff; curl x"])
            ]
        );
        for refused in [
            "bash -lc 'ls'",
            "sh -c \"$X\"",
            "X=1 sh -c ls",
            "sh $OPT -c ls",
        ] {
            assert!(analyse(refused).is_err(), "{refused}");
        }
        assert_eq!(commands("sh script.sh"), [known(&["sh", "script.sh"])]);
        assert_eq!(
            commands("[ -f x ] && ls a[12]"),
            [
                known(&["[", "-f", "x", "]"]),
                vec![Word::Known("ls".into()), Word::Unknown]
            ]
        );
    }

    #[test]
    fn what_cannot_be_known_in_advance_is_unanalysable() {
        for line in [
            "eval 'rm -rf x'",
            "exec curl x",
            "source ./env.sh",
            ". ./env.sh",
            "f() { curl x; }; f",
            "[[ -f x ]] && ls",
            "(( x = $(curl y) ))",
            "cat <<EOF\n$(curl x)\nEOF",
            "git diff\0; curl x",
            "git diff\r",
            "git diff\u{200B}; curl x",
            "git diff； curl x",
            "ｇｉｔ diff",
            "echo $(( $(curl x) ))",
            "a=(1 2)",
            "echo 'unterminated",
        ] {
            assert!(analyse(line).is_err(), "{line:?} was analysed");
        }
        assert!(analyse(&"x".repeat(MAX_LINE + 1)).is_err());
        assert!(analyse(&"(".repeat(5000)).is_err());
        let nested = (0..12).fold("ls".to_string(), |inner, _| format!("echo $({inner})"));
        assert!(analyse(&nested).is_err());
    }

    #[test]
    fn quoted_non_ascii_is_data_and_a_quoted_here_document_is_text() {
        assert_eq!(
            commands("git commit -m 'ünïcode'"),
            [known(&["git", "commit", "-m", "ünïcode"])]
        );
        assert_eq!(commands("cat <<'EOF'\n$(curl x)\nEOF"), [known(&["cat"])]);
    }

    #[test]
    fn output_redirections_are_writes_and_descriptors_are_not() {
        let found = analyse("echo a > out.txt 2>&1 >> log 2>/dev/null &> all").unwrap();
        assert_eq!(found[0].words, known(&["echo", "a"]));
        assert_eq!(found[0].writes, known(&["out.txt", "log", "all"]));
        let grouped = analyse("{ echo a; } > out").unwrap();
        assert_eq!(grouped[1].writes, known(&["out"]));
        assert_eq!(analyse("FOO=1 BAR=$(x) make").unwrap()[1].assignments, 2);
    }
}
