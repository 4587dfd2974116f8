//! A response caught in a loop: the same span of output over and over, as small models do
//! when they lose the thread (one sentence repeated for ten minutes, 25 KB and counting). The
//! provider cuts such a response once it is sure, for every wire, so no run spends minutes on
//! a loop.
//!
//! **What is judged.** The model's prose and reasoning, never a tool call's arguments: those
//! are a payload — a file of 12,000 `0`s, a CSV of identical rows, a fixture repeated on
//! purpose — and a payload may be as periodic as it likes. Arguments are bounded by the output
//! limit (`--max-output-tokens`) like any other response, and a call they fill to that limit
//! is refused as cut off, which is what happened.
//!
//! **The bound.** A response is cut once its last [`WINDOW`] bytes (8 KiB) are one span of at
//! most [`MAX_PERIOD`] bytes (1 KiB) repeated, so at least [`MIN_REPEATS`] (8) times over. It
//! is checked every [`CHECK_EVERY`] bytes (1 KiB), so a loop is cut at most 9 KiB (plus one
//! delta) after it began. Measured on the degenerate outputs the tests replay: a sentence of
//! about 70 bytes repeated (the 25 KB response of the issue) is cut after 8–9 KiB; neither a
//! long table, nor a log excerpt, nor repeated code lines with different numbers is exactly
//! periodic over 8 KiB, so none is cut. Exact repetition is the mark: a model that writes the
//! same kilobyte of prose eight times in a row is not writing anything new.
//!
//! **The cost.** One pass of the prefix function over 8 KiB per KiB streamed: the smallest
//! period of the window is its length less its longest border, found in linear time, with
//! no per-token work.

/// How much of the end of the output a check looks at: a loop is cut once it filled this much.
pub const WINDOW: usize = 8 * 1024;

/// How many times over the span must fill the window.
pub(crate) const MIN_REPEATS: usize = 8;

/// The longest span a loop can repeat and still be caught.
pub(crate) const MAX_PERIOD: usize = WINDOW / MIN_REPEATS;

/// How many bytes stream between two checks.
pub(crate) const CHECK_EVERY: usize = 1024;

/// A loop found at the end of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Loop {
    /// The length in bytes of the span that repeats.
    pub period: usize,
}

/// Watches a response's output as it streams, for a loop (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Repetition {
    /// The end of the output: at least the last [`WINDOW`] bytes once that much streamed.
    tail: Vec<u8>,
    /// Bytes streamed since the last check.
    unchecked: usize,
    /// The loop found, once one is (the output is cut there: nothing more is watched).
    found: Option<Loop>,
    /// The prefix function's table, kept between checks.
    borders: Vec<usize>,
}

impl Repetition {
    /// Takes the next `fragment` of the output; the loop, once the output ends in one.
    pub(crate) fn push(&mut self, fragment: &str) -> Option<Loop> {
        if self.found.is_some() {
            return self.found;
        }
        self.tail.extend_from_slice(fragment.as_bytes());
        if self.tail.len() > 2 * WINDOW {
            self.tail.drain(..self.tail.len() - WINDOW);
        }
        self.unchecked += fragment.len();
        if self.unchecked >= CHECK_EVERY && self.tail.len() >= WINDOW {
            self.unchecked = 0;
            self.found = self.check();
        }
        self.found
    }

    /// The loop found, if one was.
    pub(crate) fn found(&self) -> Option<Loop> {
        self.found
    }

    /// Whether the last [`WINDOW`] bytes are a span of at most [`MAX_PERIOD`] repeated.
    fn check(&mut self) -> Option<Loop> {
        let window = &self.tail[self.tail.len() - WINDOW..];
        let period = WINDOW - longest_border(window, &mut self.borders);
        (period <= MAX_PERIOD).then_some(Loop { period })
    }
}

/// The length of the longest proper prefix of `text` that is also its suffix (Knuth–Morris–
/// Pratt's prefix function, in `table`'s space): `text.len()` less it is `text`'s smallest
/// period.
fn longest_border(text: &[u8], table: &mut Vec<usize>) -> usize {
    table.clear();
    table.resize(text.len(), 0);
    for i in 1..text.len() {
        let mut border = table[i - 1];
        while border > 0 && text[i] != text[border] {
            border = table[border - 1];
        }
        if text[i] == text[border] {
            border += 1;
        }
        table[i] = border;
    }
    table.last().copied().unwrap_or(0)
}

/// Where the loop that ends `text` begins, for a cut that keeps one copy of its span: the
/// earliest byte from which `text` repeats with `period` to its end, moved back to a character
/// boundary.
pub(crate) fn loop_start(text: &str, period: usize) -> usize {
    let bytes = text.as_bytes();
    if period == 0 || bytes.len() < period {
        return bytes.len();
    }
    let mut start = bytes.len() - period;
    while start > 0 && bytes[start - 1] == bytes[start - 1 + period] {
        start -= 1;
    }
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `text` in deltas of `delta` bytes (at character boundaries) and says after how
    /// many bytes a loop was found, and its period.
    fn streamed(text: &str, delta: usize) -> Option<(usize, Loop)> {
        let mut watch = Repetition::default();
        let mut sent = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = delta.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let (piece, after) = rest.split_at(cut);
            sent += piece.len();
            if let Some(found) = watch.push(piece) {
                return Some((sent, found));
            }
            rest = after;
        }
        None
    }

    /// The degenerate response: an answer, then one sentence forever.
    const SENTENCE: &str = "I will now update the function to handle the empty input case. ";

    #[test]
    fn one_sentence_repeated_is_cut_within_the_bound() {
        let text = format!("Here is the plan.\n{}", SENTENCE.repeat(400));
        let (sent, found) = streamed(&text, 7).expect("a loop");
        assert_eq!(found.period, SENTENCE.len());
        assert!(sent <= WINDOW + CHECK_EVERY + 18 + 7, "{sent}");
    }

    #[test]
    fn a_span_longer_than_the_longest_period_is_not_a_loop() {
        let span: String = (0..MAX_PERIOD + 10)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let span = format!("{span}!");
        assert_eq!(streamed(&span.repeat(40), 100), None);
    }

    #[test]
    fn legitimate_repetitive_output_is_not_cut() {
        let table: String = (1..=1000)
            .map(|n| format!("| {n:>4} | ok   | {:>6} ms |\n", n * 3))
            .collect();
        let log: String = (0..400)
            .map(|n| {
                format!(
                    "2026-12-06T19:{:02}:{:02}Z WARN retrying connection to db\n",
                    n / 60,
                    n % 60
                )
            })
            .collect();
        let code: String = (0..800)
            .map(|n| format!("    assert_eq!(square({n}), {});\n", n * n))
            .collect();
        let checklist: String = (0..400)
            .map(|n| format!("- [ ] step {n}: run the tests again and read the output\n"))
            .collect();
        for text in [table, log, code, checklist] {
            assert!(text.len() > 2 * WINDOW, "{}", text.len());
            assert_eq!(
                streamed(&text, 11),
                None,
                "{}",
                &text[..200.min(text.len())]
            );
        }
    }

    #[test]
    fn output_shorter_than_the_window_is_never_cut() {
        assert_eq!(streamed(&"ab".repeat(WINDOW / 2 - 1), 64), None);
        assert!(streamed(&"ab".repeat(WINDOW), 64).is_some());
    }

    #[test]
    fn the_cut_keeps_one_copy_of_the_span() {
        let text = format!("Intro. {}", SENTENCE.repeat(20));
        let start = loop_start(&text, SENTENCE.len());
        // The span kept is the sentence as it last began a copy: ". I will ... input case".
        assert_eq!(
            &text[..start + SENTENCE.len()],
            format!("Intro. {}", &SENTENCE[..SENTENCE.len() - 2])
        );
        let multibyte = "é".repeat(30);
        let start = loop_start(&format!("x{multibyte}"), 2);
        assert_eq!(start, 1);
    }
}
