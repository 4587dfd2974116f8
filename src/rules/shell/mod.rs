//! A `bash` command line as the rules see it: every simple command it runs, each as its words
//! after quote removal, found by a real shell parser (`brush-parser`) across `;`, `&&`, `||`,
//! `|`, `&`, newlines, subshells, `{ }` groups, `if`/`while`/`until`/`for`/`case` bodies,
//! command and process substitutions, `sh -c '…'` scripts and the commands wrappers run
//! (`timeout`, `env`, `nice`, `xargs`, `find -exec`, …: `programs`); and every file its
//! redirections (and `tee`) write, placed where the line's `cd`s have moved its shell.
//!
//! What cannot be known before the line runs is never guessed at. A word whose value depends
//! on the run (a parameter expansion, a substitution, an unquoted glob or brace expansion, a
//! tilde) is [`Word::Unknown`]: an allow pattern can only cover it with a `*`, and a deny
//! pattern is taken to match it (see `command_pattern`). Anything the analysis cannot follow — a
//! substitution inside an expansion's operand, arithmetic that names a variable, a subscript
//! bash evaluates, `eval`, `source`, a computed command name, code handed to a shell or an
//! interpreter, an option a wrapper's own parser might read otherwise — makes the line
//! *unknown* ([`Analysis::unknown`]), which no allow rule allows and which every deny rule may
//! match. When that hides shell code, the files it may write are unknown too. A line that
//! does not parse, holds NUL bytes or control characters, is past [`MAX_LINE`] or nests past
//! [`MAX_DEPTH`] is [`Unanalysable`].
//!
//! The walk is exhaustive: every node kind of the tree is matched without a wildcard arm, so
//! a construct it does not descend into is one it names, and a new node kind in the parser
//! fails to compile here.

mod builtins;
mod names;
mod options;
mod programs;
mod sed;
mod words;

use std::path::{Component, Path, PathBuf};

use brush_parser::ast::{
    self, AndOr, AndOrList, AssignmentName, AssignmentValue, Command, CommandPrefixOrSuffixItem,
    CompoundCommand, CompoundList, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline,
    SeparatorOperator,
};
use brush_parser::{Parser, ParserOptions, SourceInfo};

pub(crate) use programs::file_name;

/// The longest command line the rules analyse (bytes); a longer one is denied when rules
/// apply to `bash`.
pub(crate) const MAX_LINE: usize = 16 * 1024;

/// How deep substitutions and shell scripts may nest before the line is denied: far beyond
/// what a real command needs, and a bound on the parser's recursion.
pub(crate) const MAX_DEPTH: usize = 8;

/// The most opening brackets a line may hold before it is denied unparsed: the parser
/// recurses once per nesting level, and a line of thousands of `(` must not reach it.
const MAX_BRACKETS: usize = 256;

/// The most directories the walk keeps apart as where the shell may be; past it, anywhere.
const MAX_PLACES: usize = 16;

pub(crate) use crate::command_pattern::Word;

/// One simple command of a line: what runs, as the rules match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// Its words: the assignments before the command name (`FOO=1`), then the name and its
    /// arguments.
    pub(crate) words: Vec<Word>,
    /// How many of `words` are leading assignments.
    pub(crate) assignments: usize,
    /// Whether it only carries commands analysed as commands of their own (`sh -c 'SCRIPT'`,
    /// `timeout 60 CMD`, a redirection alone): those need allowing, the carrier itself need
    /// not.
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

/// A file the line writes: by an output redirection (`>`, `>>`, `>|`, `&>`, `<>`, `>& file`)
/// or `tee`, placed where the shell is when it opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Write {
    /// The file, relative to the workspace or absolute, `..` and links as written.
    At(PathBuf),
    /// A file the rules cannot place, and why.
    Unplaced(String),
}

/// What a line runs and writes, as far as the analysis can follow it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// Every simple command found, wrappers' and scripts' commands included.
    pub(crate) commands: Vec<SimpleCommand>,
    /// Every file written.
    pub(crate) writes: Vec<Write>,
    /// Why the line runs something the analysis cannot follow (the first reason found):
    /// then `commands` may not be all it runs.
    pub(crate) unknown: Option<String>,
}

/// Why a command line cannot be checked against the rules at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unanalysable(pub(crate) String);

fn refuse<T>(why: impl Into<String>) -> Result<T, Unanalysable> {
    Err(Unanalysable(why.into()))
}

/// Why part of a line cannot be followed: the line is then unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opaque {
    /// Why, in words for the refusal.
    why: String,
    /// Whether shell code the line does not show may run in its own shell (`eval`, a
    /// substitution bash runs unseen): the files it redirects to are then unknown too.
    code: bool,
}

impl Opaque {
    /// Shell code the line does not show may run.
    fn code(why: impl Into<String>) -> Opaque {
        Opaque {
            why: why.into(),
            code: true,
        }
    }

    /// A program runs something the analysis cannot follow.
    fn program(why: impl Into<String>) -> Opaque {
        Opaque {
            why: why.into(),
            code: false,
        }
    }
}

/// What following one command found for the walk to go on with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Follow {
    /// It only runs commands the walk follows on their own (see [`SimpleCommand::carrier`]).
    carrier: bool,
    /// The script it runs as a shell of its own (`sh -c SCRIPT`).
    script: Option<String>,
    /// The commands it runs (a wrapper's, `find -exec`'s, `xargs`'s).
    runs: Vec<Inner>,
    /// The files it writes (`tee`'s, `find -fprint`'s).
    writes: Vec<Word>,
    /// Where it moves the line's own shell (`cd`, `pushd`, `popd`).
    moves: Option<Move>,
}

/// What the walk knows of a word beyond its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Shape {
    /// It holds an unquoted expansion, which bash splits into any number of words.
    splits: bool,
    /// It is `NAME=value` whose name the walk has checked (`export PATH=$PATH:/x`): only
    /// its value is unknown.
    named: bool,
}

/// `words` as a command's option parser sees them: an assignment the walk parsed starts with
/// its name, so it is an operand whatever its value (`export PATH=$PATH:/x`).
fn as_parsed(words: &[Word], shapes: &[Shape]) -> Vec<Word> {
    words
        .iter()
        .zip(shapes)
        .map(|(word, shape)| match shape.named {
            true => Word::Known("NAME=".into()),
            false => word.clone(),
        })
        .collect()
}

/// A command another one runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Inner {
    /// Its words, its environment's assignments first.
    words: Vec<Word>,
    /// What is known of each word.
    shapes: Vec<Shape>,
    /// How many of `words` are assignments.
    assignments: usize,
    /// Whether it runs in another directory (`env -C`, `find -execdir`): what it names
    /// relative to its directory cannot be placed.
    elsewhere: bool,
}

/// Where a command moves the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Move {
    /// Into this directory, as written.
    To(String),
    /// Somewhere the rules cannot know.
    Unknown,
}

/// The commands `line` runs and the files it writes, or why it cannot be analysed at all.
pub(crate) fn analyse(line: &str) -> Result<Analysis, Unanalysable> {
    let mut found = Analysis::default();
    Walk {
        found: &mut found,
        depth: 0,
        places: Places::workspace(),
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

/// Where the line's shell may be: each directory relative to the workspace (or absolute),
/// or somewhere the rules cannot know.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Places(Vec<Option<PathBuf>>);

impl Places {
    /// The workspace, where every line starts.
    fn workspace() -> Places {
        Places(vec![Some(PathBuf::new())])
    }

    /// Anywhere.
    fn anywhere() -> Places {
        Places(vec![None])
    }

    /// Either of `self` and `other`.
    fn or(mut self, other: &Places) -> Places {
        for place in &other.0 {
            if !self.0.contains(place) {
                self.0.push(place.clone());
            }
        }
        if self.0.len() > MAX_PLACES {
            return Places::anywhere();
        }
        self
    }

    /// Where the shell is after moving as `to` says from any of these: bash's `cd` folds
    /// `..` lexically first (`cd link/..` is where `link` is), and goes to the directory as
    /// the kernel resolves it when that fails, so both are kept.
    fn moved(&self, to: &Move) -> Places {
        let mut moved = Places(Vec::new());
        for place in &self.0 {
            let next = match (place, to) {
                (Some(base), Move::To(dir)) => {
                    let raw = base.join(dir);
                    Places(vec![Some(fold(&raw)), Some(raw)])
                }
                _ => Places::anywhere(),
            };
            moved = moved.or(&next);
        }
        moved
    }
}

/// `path` with `.` and `..` folded lexically (a `..` at the start of a relative path kept).
fn fold(path: &Path) -> PathBuf {
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if matches!(folded.components().next_back(), Some(Component::Normal(_))) {
                    folded.pop();
                } else if !folded.has_root() {
                    folded.push("..");
                }
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    folded
}

/// Where the shell may be when a command has succeeded, and when it has failed: `cd x && y`
/// runs `y` in `x`, `cd x || y` runs it where the line was.
struct Branches {
    ok: Places,
    failed: Places,
}

impl Branches {
    /// Both at `places`.
    fn at(places: &Places) -> Branches {
        Branches {
            ok: places.clone(),
            failed: places.clone(),
        }
    }
}

/// The walk over one line's tree, collecting simple commands and writes.
struct Walk<'a> {
    found: &'a mut Analysis,
    depth: usize,
    /// Where the shell may be as the next command runs.
    places: Places,
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

    /// Notes that part of the line cannot be followed (the first reason is kept); hidden
    /// shell code may also write files the walk cannot see.
    fn opaque(&mut self, opaque: Opaque) {
        if opaque.code {
            self.found.writes.push(Write::Unplaced(format!(
                "the line runs shell code the rules cannot see ({})",
                opaque.why
            )));
        }
        self.found.unknown.get_or_insert(opaque.why);
    }

    /// Runs `walk` with the shell's place kept from it (a subshell's `cd` stays there).
    fn isolated(
        &mut self,
        walk: impl FnOnce(&mut Walk<'_>) -> Result<(), Unanalysable>,
    ) -> Result<(), Unanalysable> {
        let places = self.places.clone();
        let walked = walk(self);
        self.places = places;
        walked
    }

    /// Runs `walk` one level deeper, in a shell of its own (a substitution, a script).
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
            places: self.places.clone(),
        };
        walk(&mut inner)
    }

    fn list(&mut self, list: &CompoundList) -> Result<(), Unanalysable> {
        for item in &list.0 {
            match item.1 {
                // In the background: in a shell of its own.
                SeparatorOperator::Async => self.isolated(|walk| walk.and_or(&item.0))?,
                SeparatorOperator::Sequence => self.and_or(&item.0)?,
            }
        }
        Ok(())
    }

    fn and_or(&mut self, and_or: &AndOrList) -> Result<(), Unanalysable> {
        let mut branches = self.pipeline(&and_or.first)?;
        for next in &and_or.additional {
            branches = match next {
                AndOr::And(pipeline) => {
                    self.places = branches.ok;
                    let then = self.pipeline(pipeline)?;
                    Branches {
                        ok: then.ok,
                        failed: branches.failed.or(&then.failed),
                    }
                }
                AndOr::Or(pipeline) => {
                    self.places = branches.failed;
                    let otherwise = self.pipeline(pipeline)?;
                    Branches {
                        ok: branches.ok.or(&otherwise.ok),
                        failed: otherwise.failed,
                    }
                }
            };
        }
        self.places = branches.ok.or(&branches.failed);
        Ok(())
    }

    /// A pipeline: one command runs in the line's shell; of several, each runs in a shell of
    /// its own, the last perhaps in the line's (`shopt -s lastpipe`).
    fn pipeline(&mut self, pipeline: &Pipeline) -> Result<Branches, Unanalysable> {
        let start = self.places.clone();
        let mut branches = Branches::at(&start);
        for command in &pipeline.seq {
            self.places = start.clone();
            branches = self.command(command)?;
        }
        if pipeline.seq.len() > 1 {
            let end = start.clone().or(&branches.ok).or(&branches.failed);
            branches = Branches::at(&end);
        }
        self.places = start;
        Ok(if pipeline.bang {
            Branches {
                ok: branches.failed,
                failed: branches.ok,
            }
        } else {
            branches
        })
    }

    fn command(&mut self, command: &Command) -> Result<Branches, Unanalysable> {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                // The group's files are opened before it runs, where the shell is then.
                for redirect in redirects.iter().flat_map(|list| &list.0) {
                    self.redirect(redirect)?;
                }
                self.compound(compound)
            }
            Command::Function(_) => {
                self.opaque(Opaque::code("it defines a shell function"));
                Ok(Branches::at(&self.places))
            }
            Command::ExtendedTest(_) => {
                self.opaque(Opaque::code(
                    "it uses `[[ … ]]`, which evaluates operands as arithmetic and `-v` \
                     subscripts (use `test` or `[` with quoted words)",
                ));
                Ok(Branches::at(&self.places))
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) -> Result<Branches, Unanalysable> {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list)?,
            CompoundCommand::Subshell(subshell) => {
                self.isolated(|walk| walk.list(&subshell.list))?;
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition)?;
                let start = self.places.clone();
                self.list(&clause.then)?;
                let mut end = self.places.clone();
                let mut otherwise = false;
                for other in clause.elses.iter().flatten() {
                    self.places = start.clone();
                    if let Some(condition) = &other.condition {
                        self.list(condition)?;
                    }
                    otherwise |= other.condition.is_none();
                    self.list(&other.body)?;
                    end = end.or(&self.places);
                }
                self.places = if otherwise { end } else { end.or(&start) };
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.repeated(|walk| {
                    walk.list(&clause.0)?;
                    walk.list(&clause.1.list)
                })?;
            }
            CompoundCommand::ForClause(clause) => {
                if let Err(opaque) = names::check(&clause.variable_name) {
                    self.opaque(opaque);
                }
                for value in clause.values.iter().flatten() {
                    self.expanded(&value.value)?;
                }
                self.repeated(|walk| walk.list(&clause.body.list))?;
            }
            CompoundCommand::CaseClause(clause) => {
                self.expanded(&clause.value.value)?;
                let start = self.places.clone();
                let mut end = start.clone();
                for case in &clause.cases {
                    self.places = start.clone();
                    for pattern in &case.patterns {
                        self.expanded(&pattern.value)?;
                    }
                    if let Some(body) = &case.cmd {
                        self.list(body)?;
                    }
                    end = end.or(&self.places);
                }
                self.places = end;
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.opaque(Opaque::code(
                    "it evaluates arithmetic `(( … ))` (a variable holding `a[$(…)]` runs \
                     that command)",
                ));
            }
        }
        Ok(Branches::at(&self.places))
    }

    /// A loop's body: walked once, and when it moves the shell, again from anywhere (a later
    /// round starts where the last one ended).
    fn repeated(
        &mut self,
        walk: impl Fn(&mut Walk<'_>) -> Result<(), Unanalysable>,
    ) -> Result<(), Unanalysable> {
        let start = self.places.clone();
        walk(self)?;
        if self.places != start {
            self.places = start.clone().or(&Places::anywhere());
            walk(self)?;
        }
        self.places = start.or(&self.places);
        Ok(())
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) -> Result<Branches, Unanalysable> {
        let start = self.places.clone();
        let mut words = Vec::new();
        let mut shapes = Vec::new();
        for item in simple.prefix.iter().flat_map(|prefix| &prefix.0) {
            self.item(item, &mut words, &mut shapes)?;
        }
        let assignments = words.len();
        if let Some(name) = &simple.word_or_name {
            let (word, splits) = self.expanded(&name.value)?;
            words.push(word);
            shapes.push(Shape {
                splits,
                named: false,
            });
        }
        for item in simple.suffix.iter().flat_map(|suffix| &suffix.0) {
            self.item(item, &mut words, &mut shapes)?;
        }
        let command = SimpleCommand {
            words,
            assignments,
            carrier: false,
        };
        Ok(match self.run(command, &shapes, true, false)? {
            Some(to) => Branches {
                ok: start.moved(&to),
                failed: start,
            },
            None => Branches::at(&start),
        })
    }

    /// Checks the name an assignment gives a value to.
    fn assignment(&mut self, assignment: &ast::Assignment) {
        let checked = match (&assignment.name, &assignment.value) {
            (_, AssignmentValue::Array(_)) => Err(Opaque::code(
                "it assigns an array (whose subscripts bash evaluates as arithmetic)",
            )),
            (AssignmentName::VariableName(name), _) => names::check(name),
            (AssignmentName::ArrayElementName(name, index), _) => {
                names::check(&format!("{name}[{index}]"))
            }
        };
        if let Err(opaque) = checked {
            self.opaque(opaque);
        }
    }

    /// A word, assignment, redirection or process substitution of a simple command (in its
    /// prefix, only assignments and redirections).
    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        words: &mut Vec<Word>,
        shapes: &mut Vec<Shape>,
    ) -> Result<(), Unanalysable> {
        match item {
            CommandPrefixOrSuffixItem::Word(raw) => {
                let (word, splits) = self.expanded(&raw.value)?;
                words.push(word);
                shapes.push(Shape {
                    splits,
                    named: false,
                });
            }
            // `FOO=1 cmd`, and `export FOO=$(…)`: an argument that is an assignment.
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, raw) => {
                self.assignment(assignment);
                let (word, splits) = self.expanded(&raw.value)?;
                words.push(word);
                shapes.push(Shape {
                    splits,
                    named: true,
                });
            }
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect)?,
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.deeper(|walk| walk.list(&subshell.list))?;
                words.push(Word::Unknown);
                shapes.push(Shape::default());
            }
        }
        Ok(())
    }

    /// A word expanded: the substitutions in it walked (each in a shell of its own), and
    /// whether it may split.
    fn expanded(&mut self, raw: &str) -> Result<(Word, bool), Unanalysable> {
        match words::expand(raw) {
            Ok(expanded) => {
                for script in &expanded.scripts {
                    self.deeper(|walk| walk.line(script))?;
                }
                Ok((expanded.word, expanded.splits))
            }
            Err(opaque) => {
                self.opaque(opaque);
                Ok((Word::Unknown, true))
            }
        }
    }

    /// A redirection: its target expanded like a word, and an output file noted as a write.
    fn redirect(&mut self, redirect: &IoRedirect) -> Result<(), Unanalysable> {
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
                        let (file, _) = self.expanded(&file.value)?;
                        if output {
                            self.write(&file);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(target) => {
                        // `>&2` duplicates a descriptor; `>& file` (a name, not a number)
                        // writes a file.
                        let (target, _) = self.expanded(&target.value)?;
                        let descriptor = matches!(&target, Word::Known(text)
                            if text == "-" || text.bytes().all(|b| b.is_ascii_digit()));
                        if output && !descriptor {
                            self.write(&target);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.deeper(|walk| walk.list(&subshell.list))?;
                    }
                }
            }
            IoRedirect::OutputAndError(file, _) => {
                let (file, _) = self.expanded(&file.value)?;
                self.write(&file);
            }
            IoRedirect::HereString(_, text) => {
                self.expanded(&text.value)?;
            }
            IoRedirect::HereDocument(_, document) => {
                let doc = &document.doc.value;
                if document.requires_expansion && (doc.contains('$') || doc.contains('`')) {
                    self.opaque(Opaque::code(
                        "it has a here-document that expands `$` or backquotes",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Notes the file `target` is written, wherever the shell may be.
    fn write(&mut self, target: &Word) {
        let Word::Known(path) = target else {
            self.found.writes.push(Write::Unplaced(
                "it writes a file whose name is known only as the line runs".into(),
            ));
            return;
        };
        if is_standard_device(path) {
            return;
        }
        if Path::new(path).is_absolute() {
            self.found.writes.push(Write::At(PathBuf::from(path)));
            return;
        }
        for place in &self.places.0 {
            self.found.writes.push(match place {
                Some(dir) => Write::At(dir.join(path)),
                None => Write::Unplaced(format!(
                    "it writes `{path}` after moving to a directory the rules cannot know"
                )),
            });
        }
    }

    /// Follows `command` (each word with its shape): the line's own when `direct`
    /// (its builtins are builtins), else one a program runs, in another directory when
    /// `elsewhere`. Returns where it moves the shell.
    fn run(
        &mut self,
        command: SimpleCommand,
        shapes: &[Shape],
        direct: bool,
        elsewhere: bool,
    ) -> Result<Option<Move>, Unanalysable> {
        let places = self.places.clone();
        if elsewhere {
            self.places = Places::anywhere();
        }
        let moved = self.follow(command, shapes, direct);
        self.places = places;
        moved
    }

    /// [`Walk::run`] at the shell's current places.
    fn follow(
        &mut self,
        mut command: SimpleCommand,
        shapes: &[Shape],
        direct: bool,
    ) -> Result<Option<Move>, Unanalysable> {
        let at = command.assignments;
        let words = command.command();
        let follow = match words.first() {
            // Only redirections: nothing runs.
            None => Ok(Follow {
                carrier: command.words.is_empty(),
                ..Follow::default()
            }),
            Some(Word::Known(name)) if direct => {
                builtins::follow(name, &words[1..], &shapes[at + 1..])
                    .unwrap_or_else(|| programs::follow(words, &shapes[at..]))
            }
            Some(_) => programs::follow(words, &shapes[at..]),
        };
        let follow = match follow {
            Ok(follow) => follow,
            Err(opaque) => {
                self.opaque(opaque);
                self.found.commands.push(command);
                return Ok(None);
            }
        };
        command.carrier = follow.carrier;
        self.found.commands.push(command);
        if let Some(script) = &follow.script {
            self.deeper(|walk| walk.line(script))?;
        }
        for inner in follow.runs {
            let command = SimpleCommand {
                words: inner.words,
                assignments: inner.assignments,
                carrier: false,
            };
            self.run(command, &inner.shapes, false, inner.elsewhere)?;
        }
        for file in &follow.writes {
            self.write(file);
        }
        Ok(follow.moves)
    }
}

/// Whether a redirection target is one of the devices every command may write.
fn is_standard_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    )
}

#[cfg(test)]
mod tests;
