//! Text that came from the model or the workspace is data, never a command for whoever reads
//! zero's output: a terminal (escape sequences, a carriage return that rewrites the line) or a
//! CI runner (GitHub's reads `::NAME::` at the start of a line, after its leading white space,
//! and `##[NAME]` anywhere in it, as a workflow command: `::add-mask::`, `::stop-commands::`,
//! `##[error]` that forges or hides zero's own lines).
//!
//! [`neutralise`] is the one function that makes such text inert, applied where a person or a
//! runner reads zero's lines: every line of `-o text` (stdout and stderr), every diagnostic on
//! stderr, and `zero review --format text`. A machine format keeps its text exact (JSON escapes
//! control characters itself), and so does `zero review --format github`, whose commands are
//! zero's own.

use std::borrow::Cow;

/// What breaks a `##[` opener: `# #[` is no command.
const HASH_OPENER: &str = "##[";

/// `text` with every control character (C0, DEL, C1) but newline and tab written as its escape
/// (`\r`, `\u{1b}`), a `::` that opens a line (after its white space) written `: :`, and every
/// `##[` written `# #[`. Text with none of them comes back as it was.
pub(crate) fn neutralise(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_foreign_control)
        && !text.contains(HASH_OPENER)
        && !text.split('\n').any(opens_command)
    {
        return Cow::Borrowed(text);
    }
    let lines: Vec<String> = text.split('\n').map(neutral_line).collect();
    Cow::Owned(lines.join("\n"))
}

/// A control character that is not zero's own line structure (newline, tab).
fn is_foreign_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Whether `line` starts, after its white space, with a workflow command's `::`.
fn opens_command(line: &str) -> bool {
    line.trim_start().starts_with("::")
}

/// One line (no newline in it) made inert.
fn neutral_line(line: &str) -> String {
    let mut escaped = String::with_capacity(line.len());
    for c in line.chars() {
        match is_foreign_control(c) {
            true => escaped.extend(c.escape_debug()),
            false => escaped.push(c),
        }
    }
    let mut neutral = escaped.replace(HASH_OPENER, "# #[");
    if opens_command(&neutral) {
        let colon = neutral.len() - neutral.trim_start().len();
        neutral.insert(colon + 1, ' ');
    }
    neutral
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_workflow_openers_come_out_inert() {
        assert_eq!(neutralise("ls # \r::add-mask::x"), "ls # \\r::add-mask::x");
        assert_eq!(neutralise("::stop-commands::t"), ": :stop-commands::t");
        assert_eq!(neutralise("a\n  \t::error::x"), "a\n  \t: :error::x");
        assert_eq!(neutralise("x ##[error]y ###[z"), "x # #[error]y ## #[z");
        assert_eq!(
            neutralise("\u{1b}[2J\u{9b}1m\u{7f}"),
            "\\u{1b}[2J\\u{9b}1m\\u{7f}"
        );
        for line in neutralise("\r::a\n::b\n ##[c").lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
            assert!(!line.contains("##["), "{line}");
            assert!(!line.chars().any(is_foreign_control), "{line}");
        }
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        for text in [
            "",
            "It says alpha.\n\tand a tab",
            "a::b mid-line, # heading, ## [x], Grüße ✓",
            "line\n",
        ] {
            assert!(matches!(neutralise(text), Cow::Borrowed(same) if same == text));
        }
    }
}
