//! How a specialist ended, read back from its stream-json, and its final answer as the model
//! gets it.
//!
//! A child's `final` event is one line however long its answer is: a 320 KB answer is a
//! 320 KB line, and a fixed window at the end of the output (what was read before) ends
//! inside it, so the answer was dropped as "a line cut by the window" and the task reported
//! "no final answer". [`find`] reads a growing window from the end instead, until the window
//! holds the `final` line whole or shows there is none. The answer then goes back capped
//! ([`Excerpt`]): never dropped, never whole past a cap, and with a note saying how much was
//! left out and the `TaskOutput` call that reads on.

use std::fmt;

use crate::output::EventKind;
use crate::runtime::{Runtime, RuntimeError, Window};
use crate::verify::{CheckReport, CheckStatus};

/// The first window [`find`] reads from the end of a child's output: the whole of a usual
/// ending (`final`, `run_end`) with room to spare.
const FIRST_WINDOW: usize = 256 * 1024;
/// How much the window grows each time it holds no conclusion.
const GROWTH: usize = 4;
/// The largest window [`find`] reads (and holds in memory): an answer longer than this is not
/// one a model can use, and the raw output stays readable with `TaskOutput`'s offset.
const LAST_WINDOW: usize = 64 * 1024 * 1024;

/// What a finished child's stream-json says about its end.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct ChildEnding {
    /// Its last `final` event's answer: the JSON value, compact, when it had a schema,
    /// else the text.
    pub(super) answer: Option<String>,
    /// The messages of its `error` events in the part of the output read.
    pub(super) errors: Vec<String>,
    /// Whether the search stopped at its largest window before it could tell whether the
    /// child gave an answer.
    pub(super) undecided: bool,
    /// Its checks (`--verify`), as its `run_end` reports them.
    pub(super) checks: Vec<CheckReport>,
}

/// What the complete lines of one window say, read from the end.
enum Scan {
    /// The ending is known.
    Decided(ChildEnding),
    /// Every line of the window may come after a `final` line that begins before it: what
    /// they say (errors, checks), with no answer yet.
    NeedMore(ChildEnding),
}

impl ChildEnding {
    /// Reads the events of (the whole lines of) a stream-json output, from its end back: the
    /// last `final` is the answer. The events a run writes after its answer (`error`,
    /// `warning`, `run_end`) are looked past; any other event comes before the answer, so
    /// reaching one without a `final` decides that there is none. Lines that are not events
    /// (the child's stderr) are skipped.
    fn scan(bytes: &[u8]) -> Scan {
        let text = String::from_utf8_lossy(bytes);
        let mut ending = ChildEnding::default();
        let mut decided = false;
        for line in text.lines().rev() {
            match serde_json::from_str::<EventKind>(line) {
                Ok(EventKind::Final { text, structured }) if !decided => {
                    ending.answer = Some(structured.map_or(text, |value| value.to_string()));
                    decided = true;
                }
                Ok(EventKind::Error { message, .. }) => ending.errors.push(message),
                Ok(EventKind::RunEnd { verify, .. }) => ending.checks = verify,
                Ok(EventKind::Warning { .. }) | Err(_) => {}
                Ok(_) => decided = true,
            }
        }
        ending.errors.reverse();
        match decided {
            true => Scan::Decided(ending),
            false => Scan::NeedMore(ending),
        }
    }

    /// What its checks came to, a line each (`check `cargo test`: passed, 2 attempts`);
    /// empty when it had none.
    pub(super) fn checked(&self) -> String {
        self.checks
            .iter()
            .map(|check| {
                let code = match (check.status, check.exit_code) {
                    (CheckStatus::Failed, Some(code)) => format!(" (exit {code})"),
                    _ => String::new(),
                };
                let attempts = match check.attempts {
                    1 => "1 attempt".to_string(),
                    n => format!("{n} attempts"),
                };
                format!(
                    "check `{}`: {}{code}, {attempts}\n",
                    check.command,
                    crate::output::word(&check.status)
                )
            })
            .collect()
    }
}

impl ChildEnding {
    /// The answer as the model gets it from the task `id`: at most `max_bytes` of it, with a
    /// note on how to read on when it is longer (see [`Excerpt`]), or why there is none.
    pub(super) fn shown(&self, id: &str, max_bytes: usize) -> String {
        match &self.answer {
            Some(answer) => Excerpt::new(id, answer, 0, max_bytes).to_string(),
            None if self.undecided => format!(
                "(no final answer in the last {} MiB of its output; read the output with \
                 TaskOutput {{\"task_id\": \"{id}\", \"offset\": 0}})",
                LAST_WINDOW / (1024 * 1024)
            ),
            None => "(no final answer)".to_string(),
        }
    }
}

/// Finds how the task `id` (a specialist) ended: its answer, however long, and its errors.
/// Reads a window at the end of its output, growing it (up to [`LAST_WINDOW`]) while the
/// window's whole lines cannot decide.
pub(super) async fn find(runtime: &Runtime, id: &str) -> Result<ChildEnding, RuntimeError> {
    let mut window = FIRST_WINDOW;
    loop {
        // One byte more than the window: it tells whether the window's first line starts in
        // it or before it.
        let read = runtime
            .read_output(
                id,
                Window::Tail {
                    max_bytes: window + 1,
                },
            )
            .await?;
        let whole = whole_lines(&read.bytes, read.start > 0);
        let partial = match ChildEnding::scan(whole) {
            Scan::Decided(ending) => return Ok(ending),
            Scan::NeedMore(partial) => partial,
        };
        if read.start == 0 || window >= LAST_WINDOW {
            return Ok(ChildEnding {
                undecided: read.start > 0,
                ..partial
            });
        }
        window = (window * GROWTH).min(LAST_WINDOW);
    }
}

/// The whole lines of a window: without the line begun before it (when `cut_at_start`: the
/// window starts after the file's start, and its first byte is not the end of a line), and
/// without a last line not yet ended.
fn whole_lines(bytes: &[u8], cut_at_start: bool) -> &[u8] {
    let first = if cut_at_start {
        bytes
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |newline| newline + 1)
    } else {
        0
    };
    let end = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |last| last + 1);
    &bytes[first.min(end)..end]
}

/// A piece of a specialist's answer, as the model gets it: the bytes from an offset, up to a
/// cap, cut at character boundaries; its display ends with a note saying how to read on when
/// the answer goes on past it.
pub(super) struct Excerpt<'a> {
    /// The task, for the note.
    id: &'a str,
    /// The whole answer.
    answer: &'a str,
    /// The first byte shown.
    start: usize,
    /// Just past the last byte shown.
    end: usize,
}

impl<'a> Excerpt<'a> {
    /// At most `max_bytes` of `answer` from byte `offset` on (both moved back to the start of
    /// the character they fall in; at least one character when any is left).
    pub(super) fn new(id: &'a str, answer: &'a str, offset: usize, max_bytes: usize) -> Self {
        let start = char_start(answer, offset.min(answer.len()));
        let mut end = char_start(answer, start.saturating_add(max_bytes).min(answer.len()));
        if end == start && start < answer.len() {
            end = start + answer[start..].chars().next().map_or(0, char::len_utf8);
        }
        Excerpt {
            id,
            answer,
            start,
            end,
        }
    }

    /// Whether every byte of the answer is shown.
    pub(super) fn is_whole(&self) -> bool {
        self.start == 0 && self.end == self.answer.len()
    }

    /// The line that says which bytes are shown: `answer: N bytes in all; showing bytes
    /// a..b; next_offset: b`, as `TaskOutput` describes its output.
    pub(super) fn header(&self) -> String {
        format!(
            "answer: {} bytes in all; showing bytes {}..{}; next_offset: {}",
            self.answer.len(),
            self.start,
            self.end,
            self.end
        )
    }
}

impl fmt::Display for Excerpt<'_> {
    /// The bytes shown, then — when the answer goes on past them, or began before them — the
    /// note saying so and the call that reads the rest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.answer[self.start..self.end])?;
        if self.is_whole() {
            return Ok(());
        }
        let total = self.answer.len();
        write!(
            f,
            "\n\n[answer cut: {total} bytes in all, bytes {}..{} shown, {} left out.",
            self.start,
            self.end,
            total - (self.end - self.start),
        )?;
        if self.end < total {
            write!(
                f,
                " Read on with TaskOutput {{\"task_id\": \"{}\", \"answer\": true, \"offset\": \
                 {}}}.",
                self.id, self.end
            )?;
        }
        f.write_str("]")
    }
}

/// `at`, or the start of the character it falls inside.
fn char_start(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(stream: &str) -> ChildEnding {
        match ChildEnding::scan(stream.as_bytes()) {
            Scan::Decided(ending) => ending,
            Scan::NeedMore(_) => panic!("undecided: {stream}"),
        }
    }

    #[test]
    fn the_answer_is_the_last_final_and_errors_are_collected() {
        let stream = concat!(
            r#"{"type":"final","text":"first"}"#,
            "\n",
            r#"{"type":"text","delta":"more"}"#,
            "\n",
            r#"{"type":"error","code":"internal_error","message":"went wrong","retryable":false}"#,
            "\n",
            "a stray stderr line\n",
            r#"{"type":"final","text":"second"}"#,
            "\n",
            r#"{"type":"run_end","status":"success","exitCode":0}"#,
            "\n"
        );
        assert_eq!(
            decided(stream),
            ChildEnding {
                answer: Some("second".into()),
                errors: vec!["went wrong".into()],
                undecided: false,
                checks: Vec::new(),
            }
        );
        let typed = concat!(
            r#"{"type":"final","text":"```json\n{\"ok\": true}\n```","structured":{"ok":true}}"#,
            "\n"
        );
        assert_eq!(decided(typed).answer.as_deref(), Some(r#"{"ok":true}"#));
    }

    #[test]
    fn an_event_before_any_final_decides_there_is_none_and_endings_alone_do_not() {
        let failed = concat!(
            r#"{"type":"text","delta":"thinking"}"#,
            "\n",
            r#"{"type":"error","code":"internal_error","message":"no","retryable":false}"#,
            "\n"
        );
        assert_eq!(decided(failed).answer, None);
        assert_eq!(decided(failed).errors, ["no"]);
        let only_the_end = concat!(
            r#"{"type":"run_end","status":"success","exitCode":0}"#,
            "\n"
        );
        assert!(matches!(
            ChildEnding::scan(only_the_end.as_bytes()),
            Scan::NeedMore(_)
        ));
    }

    #[test]
    fn a_window_keeps_whole_lines_only() {
        assert_eq!(
            whole_lines(b"nal\"}\n{\"a\":1}\n{\"b\"", true),
            b"{\"a\":1}\n"
        );
        assert_eq!(whole_lines(b"\n{\"a\":1}\n", true), b"{\"a\":1}\n");
        assert_eq!(whole_lines(b"{\"a\":1}\n", false), b"{\"a\":1}\n");
        assert_eq!(whole_lines(b"inside one long line", true), b"");
    }

    #[test]
    fn a_long_answer_is_cut_with_a_note_saying_how_to_read_on() {
        let answer = "é".repeat(10);
        let first = Excerpt::new("task_1", &answer, 0, 5);
        // Cut at a character boundary: two characters, four bytes.
        assert_eq!(
            first.header(),
            "answer: 20 bytes in all; showing bytes 0..4; next_offset: 4"
        );
        let shown = first.to_string();
        assert!(
            shown.starts_with("éé\n\n[answer cut: 20 bytes in all, bytes 0..4 shown, 16 left out.")
        );
        assert!(
            shown.contains(r#"TaskOutput {"task_id": "task_1", "answer": true, "offset": 4}"#),
            "{shown}"
        );
        // An offset inside a character starts at that character; the last piece has no
        // call to read on.
        let last = Excerpt::new("task_1", &answer, 17, 100);
        assert_eq!(
            last.header(),
            "answer: 20 bytes in all; showing bytes 16..20; next_offset: 20"
        );
        assert!(!last.to_string().contains("Read on"), "{last}");
        // Too small a cap still shows a character; a short answer is shown as it is.
        assert_eq!(Excerpt::new("t", &answer, 0, 1).end, 2);
        assert_eq!(Excerpt::new("t", "short", 0, 100).to_string(), "short");
    }
}
