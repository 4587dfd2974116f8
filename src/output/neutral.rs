//! Text that came from the model or the workspace is data, never a command for whoever reads
//! zero's output: a terminal (escape sequences, a carriage return that rewrites the line) or a
//! CI runner (GitHub's reads `::NAME::` at the start of a line, after its leading white space,
//! and `##[NAME]` anywhere in it, as a workflow command: `::add-mask::`, `::stop-commands::`,
//! `##[error]` that forges or hides zero's own lines).
//!
//! [`neutralise`] is the one function that makes such text inert, applied where a person or a
//! runner reads zero's lines: every line of `-o text` (stdout and stderr), every diagnostic on
//! stderr, `zero review --format text`, and the text of `zero tasks`, `zero sessions` and `zero
//! worktrees` (through [`NeutralWriter`]). A machine format keeps its text exact (JSON escapes
//! control characters itself), and so does `zero review --format github`, whose commands are
//! zero's own, and `zero tasks output`, a command's own output as it wrote it.

use std::borrow::Cow;
use std::io::{self, Write};

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

/// A writer that passes each whole line through [`neutralise`] (a line is judged whole, so an
/// opener is never split between two writes); what follows the last newline is written by
/// [`NeutralWriter::finish`]. For text renderings built with `writeln!`.
pub(crate) struct NeutralWriter<W: Write> {
    inner: W,
    line: Vec<u8>,
}

impl<W: Write> NeutralWriter<W> {
    /// Neutralises every line written to `inner`.
    pub(crate) fn new(inner: W) -> Self {
        NeutralWriter {
            inner,
            line: Vec::new(),
        }
    }

    /// Writes the unfinished last line, if any, and flushes.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        let rest = std::mem::take(&mut self.line);
        self.inner
            .write_all(neutralise(&String::from_utf8_lossy(&rest)).as_bytes())?;
        self.inner.flush()
    }
}

impl<W: Write> Write for NeutralWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for piece in buf.split_inclusive(|&byte| byte == b'\n') {
            self.line.extend_from_slice(piece);
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                self.inner
                    .write_all(neutralise(&String::from_utf8_lossy(&line)).as_bytes())?;
            }
        }
        Ok(buf.len())
    }

    /// Flushes the lines written; an unfinished line waits for its end.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
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

    #[test]
    fn the_writer_judges_whole_lines_however_they_are_written() {
        let mut bytes = Vec::new();
        let mut writer = NeutralWriter::new(&mut bytes);
        writer.write_all(b"title: #").unwrap();
        writer.write_all(b"#[error]forged\n  :").unwrap();
        writer.write_all(b":add-mask::x\nlast\r").unwrap();
        writer.finish().unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "title: # #[error]forged\n  : :add-mask::x\nlast\\r"
        );
    }
}
