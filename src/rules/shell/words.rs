//! One word of a command line as the rules see it: its text after quote removal when that is
//! known before the line runs, else [`Word::Unknown`], with the scripts of the command and
//! process substitutions in it (which the walk follows as commands of their own).
//!
//! An expansion is followed only where bash runs nothing the line does not show:
//!
//! - `$NAME`, `${NAME}`, `${#NAME}`, `${NAME:-word}` and the other operators with plain
//!   operands: the value is unknown, nothing runs;
//! - not a substitution inside an operand (`${u:-$(touch x)}`, `${x:=$(…)}`): bash runs it
//!   only when the operator needs it, so the line is refused rather than guessed at;
//! - not arithmetic that names a variable or expands anything (`$((x))`, `${s:i}`,
//!   `${a[i]}`): a variable's value is evaluated in turn, and `a[$(…)]` in it runs the
//!   substitution. Plain numbers and operators (`$((1 + 2))`) are followed;
//! - not `${!NAME}` (the variable's value is a name, whose subscript bash evaluates), nor
//!   `${NAME@P}` (prompt expansion runs the value's substitutions).

use brush_parser::ParserOptions;
use brush_parser::word::WordPieceWithSource;
use brush_parser::word::{self, Parameter, ParameterExpr, ParameterTransformOp, WordPiece};

use super::{Opaque, Word, names};

/// A word, expanded as far as the rules can before the line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Expanded {
    /// Its text, or unknown.
    pub(super) word: Word,
    /// Whether it holds an unquoted expansion, which bash splits into any number of words
    /// (and globs).
    pub(super) splits: bool,
    /// The scripts of its command and process substitutions, in order.
    pub(super) scripts: Vec<String>,
}

/// `raw`, a word as the parser found it, expanded; the error says why it cannot be followed.
pub(super) fn expand(raw: &str) -> Result<Expanded, Opaque> {
    let pieces = parse(raw)?;
    let mut expanded = Expanded {
        word: Word::Known(String::new()),
        splits: false,
        scripts: Vec::new(),
    };
    let mut text = String::new();
    let mut known = true;
    pieces_of(&pieces, false, &mut text, &mut known, &mut expanded)?;
    if known {
        expanded.word = Word::Known(text);
    } else {
        expanded.word = Word::Unknown;
    }
    Ok(expanded)
}

fn parse(raw: &str) -> Result<Vec<WordPieceWithSource>, Opaque> {
    word::parse(raw, &ParserOptions::default())
        .map_err(|error| Opaque::code(format!("a word does not parse ({error})")))
}

/// Appends the text of `pieces` (quoted or not) to `text`, clearing `known` at anything whose
/// value is not known before the command runs.
fn pieces_of(
    pieces: &[WordPieceWithSource],
    quoted: bool,
    text: &mut String,
    known: &mut bool,
    expanded: &mut Expanded,
) -> Result<(), Opaque> {
    for (at, piece) in pieces.iter().enumerate() {
        old_arithmetic(piece, pieces.get(at + 1))?;
        let mut unknown = |splits: bool| {
            *known = false;
            expanded.splits |= splits && !quoted;
        };
        match &piece.piece {
            WordPiece::Text(literal) => {
                if !quoted && unquoted_text(literal)? {
                    unknown(true);
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
                pieces_of(inner, true, text, known, expanded)?;
            }
            WordPiece::CommandSubstitution(script)
            | WordPiece::BackquotedCommandSubstitution(script) => {
                expanded.scripts.push(script.clone());
                unknown(true);
            }
            WordPiece::ArithmeticExpression(expression) => {
                arithmetic(&expression.value)?;
                unknown(true);
            }
            WordPiece::ParameterExpansion(expression) => {
                parameter(expression)?;
                unknown(true);
            }
            // `$'…'` escapes and `~` are known only as the command runs, and stay one word.
            WordPiece::AnsiCQuotedText(_) | WordPiece::TildePrefix(_) => unknown(false),
        }
    }
    Ok(())
}

/// Refuses `$[…]`, bash's old spelling of `$((…))`, which the parser reads as the text `$`
/// and then `[…]`.
fn old_arithmetic(
    piece: &WordPieceWithSource,
    next: Option<&WordPieceWithSource>,
) -> Result<(), Opaque> {
    let opens = |piece: &WordPiece, test: &dyn Fn(&str) -> bool| matches!(piece, WordPiece::Text(text) if test(text));
    let dollar = opens(&piece.piece, &|text| text.ends_with('$'));
    if dollar && next.is_some_and(|next| opens(&next.piece, &|text| text.starts_with('['))) {
        return Err(Opaque::code(
            "it uses `$[…]`, bash's old arithmetic (a variable holding `a[$(…)]` runs that \
             command)",
        ));
    }
    Ok(())
}

/// Whether unquoted literal text makes its word unknown (a glob or a brace expansion); the
/// error refuses non-ASCII characters (a look-alike of syntax or of a name).
fn unquoted_text(literal: &str) -> Result<bool, Opaque> {
    if let Some(c) = literal.chars().find(|c| !c.is_ascii()) {
        return Err(Opaque::program(format!(
            "it holds the non-ASCII character `{c}` (U+{:04X}) outside quotes",
            c as u32
        )));
    }
    // `[` opens a bracket expression only with a `]` after it: `[ -f x ]` is the command `[`.
    let bracket = literal
        .find('[')
        .is_some_and(|open| literal[open + 1..].contains(']'));
    let glob = literal.contains(['*', '?']) || bracket;
    let brace = literal.contains('{') && (literal.contains(',') || literal.contains(".."));
    Ok(glob || brace)
}

/// Refuses arithmetic that names a variable or expands anything: only numbers, white space
/// and operators are followed.
pub(super) fn arithmetic(expression: &str) -> Result<(), Opaque> {
    let plain = expression
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c));
    if plain {
        return Ok(());
    }
    Err(Opaque::code(format!(
        "it evaluates the arithmetic `{expression}`, which names a variable or expands \
         something (a variable holding `a[$(…)]` runs that command); only numbers and \
         operators are followed"
    )))
}

/// The parts of a parameter expansion that bash evaluates: whether it is indirect, its
/// parameter, the operands it expands as words, its arithmetic, and the variable it assigns.
struct Parts<'e> {
    indirect: bool,
    parameter: Option<&'e Parameter>,
    words: Vec<&'e str>,
    arithmetic: Vec<&'e str>,
    assigns: bool,
    prompt: bool,
}

/// Refuses a parameter expansion the rules cannot follow (see the module documentation).
fn parameter(expression: &ParameterExpr) -> Result<(), Opaque> {
    let parts = parts(expression);
    if parts.indirect {
        return Err(Opaque::code(
            "it uses `${!…}`, which expands the variable another one names (bash evaluates a \
             subscript in that name as arithmetic)",
        ));
    }
    if parts.prompt {
        return Err(Opaque::code(
            "it uses `${…@P}`, whose prompt expansion runs the substitutions in the value",
        ));
    }
    if let Some(Parameter::NamedWithIndex { index, .. }) = parts.parameter {
        arithmetic(index)?;
    }
    for expression in parts.arithmetic {
        arithmetic(expression)?;
    }
    if parts.assigns
        && let Some(Parameter::Named(name)) = parts.parameter
    {
        names::check(name)?;
    }
    for operand in parts.words {
        operand_word(operand)?;
    }
    Ok(())
}

/// An operand of `${…}`, expanded as a word: no substitution may run in it. Single quotes
/// are read as plain characters: inside double quotes (`"${u:-'$(…)'}"`) bash expands what
/// stands between them.
fn operand_word(operand: &str) -> Result<(), Opaque> {
    let expanded = expand(&operand.replace('\'', "_"))?;
    if expanded.scripts.is_empty() {
        return Ok(());
    }
    Err(Opaque::code(format!(
        "it runs a substitution inside the operand `{operand}` of a `${{…}}` expansion, \
         which bash runs only when the operator needs it"
    )))
}

/// Every part of `expression` bash evaluates.
fn parts(expression: &ParameterExpr) -> Parts<'_> {
    if let Some((parameter, indirect, operand)) = one_operand(expression) {
        return base(parameter, indirect, &[operand]);
    }
    match expression {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::ParameterLength {
            parameter,
            indirect,
        } => base(parameter, *indirect, &[]),
        ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            default_value,
            ..
        } => Parts {
            assigns: true,
            ..base(parameter, *indirect, &[default_value])
        },
        ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            let mut parts = base(parameter, *indirect, &[replacement]);
            parts.words.push(pattern);
            parts
        }
        ParameterExpr::Substring {
            parameter,
            indirect,
            offset,
            length,
        } => {
            let mut parts = base(parameter, *indirect, &[]);
            parts.arithmetic.push(&offset.value);
            parts
                .arithmetic
                .extend(length.iter().map(|length| length.value.as_str()));
            parts
        }
        ParameterExpr::Transform {
            parameter,
            indirect,
            op,
        } => Parts {
            prompt: matches!(op, ParameterTransformOp::PromptExpand),
            ..base(parameter, *indirect, &[])
        },
        // `${!prefix*}` and `${!a[@]}` list names and keys: nothing is evaluated. (Every
        // other kind is `one_operand`'s, whose match names each one.)
        _ => Parts {
            indirect: false,
            parameter: None,
            words: Vec::new(),
            arithmetic: Vec::new(),
            assigns: false,
            prompt: false,
        },
    }
}

/// The parameter, indirection and operand of an expansion with one operand expanded as a
/// word (`${x:-word}`, `${x#pattern}`, …); `None` for the other kinds. A match over every
/// kind, so a new one in the parser fails to compile here.
fn one_operand(expression: &ParameterExpr) -> Option<(&Parameter, bool, &Option<String>)> {
    match expression {
        ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            default_value: value,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: value,
            ..
        }
        | ParameterExpr::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: value,
            ..
        }
        | ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            pattern: value,
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            pattern: value,
        } => Some((parameter, *indirect, value)),
        ParameterExpr::Parameter { .. }
        | ParameterExpr::ParameterLength { .. }
        | ParameterExpr::AssignDefaultValues { .. }
        | ParameterExpr::ReplaceSubstring { .. }
        | ParameterExpr::Substring { .. }
        | ParameterExpr::Transform { .. }
        | ParameterExpr::VariableNames { .. }
        | ParameterExpr::MemberKeys { .. } => None,
    }
}

/// The parts of an expansion of `parameter` with the operands `words`.
fn base<'e>(parameter: &'e Parameter, indirect: bool, words: &[&'e Option<String>]) -> Parts<'e> {
    Parts {
        indirect,
        parameter: Some(parameter),
        words: words.iter().filter_map(|word| word.as_deref()).collect(),
        arithmetic: Vec::new(),
        assigns: false,
        prompt: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(raw: &str) -> Result<Word, Opaque> {
        expand(raw).map(|expanded| expanded.word)
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(word(r#""a\"b""#), Ok(Word::Known("a\"b".into())));
        assert_eq!(word(r#""c\d""#), Ok(Word::Known("c\\d".into())));
        assert_eq!(word("m\\ain"), Ok(Word::Known("main".into())));
    }

    #[test]
    fn plain_expansions_are_unknown_and_unquoted_ones_split() {
        for raw in [
            "$HOME",
            "${HOME}",
            "${#x}",
            "${x:-/tmp}",
            "${x#*/}",
            "${x/a/b}",
            "$((1 + 2))",
        ] {
            let expanded = expand(raw).unwrap();
            assert_eq!(expanded.word, Word::Unknown, "{raw}");
            assert!(expanded.splits, "{raw}");
        }
        let quoted = expand("\"$HOME\"").unwrap();
        assert!(!quoted.splits);
        assert_eq!(
            expand("$(git rev-parse HEAD)").unwrap().scripts,
            ["git rev-parse HEAD"]
        );
    }

    #[test]
    fn what_bash_would_evaluate_unseen_is_refused() {
        for raw in [
            "${u:-$(touch x)}",
            "${x:=$(touch x)}",
            "${x:+`touch x`}",
            "${x/a/$(touch x)}",
            "${x:-${y:-$(touch x)}}",
            "$((x))",
            "$(( $x + 1 ))",
            "${s:i}",
            "${s:1:n}",
            "${a[i]}",
            "${!n}",
            "${z@P}",
            "${PS4:=x}",
            "$[x]",
            "\"$[1]\"",
            "\"${u:-'$(touch x)'}\"",
            "\"${u:-'${!n}'}\"",
        ] {
            assert!(expand(raw).is_err(), "{raw} was followed");
        }
        assert!(expand("${a[2]}").is_ok());
        assert!(expand("${s:1:2}").is_ok());
    }
}
