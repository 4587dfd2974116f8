//! Server-sent events: turns the chunks of a response body into whole events.
//!
//! Hand-written rather than taken from a crate because the job is small (about sixty lines) and
//! the details that matter here are ours to decide: a line or a CRLF split across two chunks,
//! invalid UTF-8 reported as a protocol error instead of a panic or a silent replacement, and
//! JSON decoding that names the offending line. Follows the WHATWG `text/event-stream` rules
//! for the fields the model wires use (`event`, `data`, comments); `id` and `retry` are ignored.

use serde::de::DeserializeOwned;

/// One dispatched event: its name (empty when the server sent none) and its data lines joined
/// with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, or empty.
    pub(crate) event: String,
    /// The `data:` field(s).
    pub(crate) data: String,
}

/// Why a stream could not be decoded; the wires turn it into [`super::ErrorClass::Protocol`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    /// A line was not UTF-8.
    #[error("stream line is not valid UTF-8")]
    NotUtf8,
    /// A `data:` payload that must be JSON was not (or not the expected shape).
    #[error("data line is not the expected JSON ({reason}): {snippet}")]
    BadJson {
        /// The parser's complaint.
        reason: String,
        /// The start of the payload, for the reader.
        snippet: String,
    },
}

impl SseEvent {
    /// Parses the data as JSON of type `T`.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Result<T, SseError> {
        serde_json::from_str(&self.data).map_err(|err| SseError::BadJson {
            reason: err.to_string(),
            snippet: self.data.chars().take(120).collect(),
        })
    }
}

/// Incremental decoder: feed it chunks as they arrive, take the events that completed.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of the line being received (no terminator yet).
    line: Vec<u8>,
    /// The previous chunk ended in `\r`; a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    /// Fields of the event being received.
    event: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Consumes one chunk of the body and returns the events it completed, in order.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    let line = String::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
                    if let Some(event) = self.take_line(&line) {
                        events.push(event);
                    }
                }
                _ => self.line.push(byte),
            }
        }
        Ok(events)
    }

    /// Applies one complete line; a blank line dispatches the event collected so far.
    fn take_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let data = std::mem::take(&mut self.data);
            // An event without data lines is not dispatched (it only resets the name).
            return std::mem::take(&mut self.has_data).then_some(SseEvent { event, data });
        }
        if line.starts_with(':') {
            return None; // a comment, used by servers as a keep-alive
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry and unknown fields do not matter to the wires
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        chunks
            .iter()
            .flat_map(|chunk| decoder.push(chunk).unwrap())
            .collect()
    }

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: String::new(),
            data: text.to_owned(),
        }
    }

    #[test]
    fn events_split_anywhere_across_chunks_decode_the_same() {
        let body = b"event: a\ndata: {\"x\":1}\n\ndata: [DONE]\n\n";
        let whole = decode_all(&[body]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: "a".into(),
                    data: "{\"x\":1}".into()
                },
                data("[DONE]")
            ]
        );
        for split in 1..body.len() {
            let (head, tail) = body.split_at(split);
            assert_eq!(decode_all(&[head, tail]), whole, "split at {split}");
        }
    }

    #[test]
    fn crlf_and_cr_line_endings_work_even_when_split() {
        let expected = vec![data("one"), data("two")];
        assert_eq!(
            decode_all(&[b"data: one\r\n\r\ndata: two\r\n\r\n"]),
            expected
        );
        assert_eq!(
            decode_all(&[b"data: one\r", b"\n\r", b"\ndata: two\r\r"]),
            expected
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        assert_eq!(
            decode_all(&[b"data: a\ndata:b\ndata:  c\n\n"]),
            vec![data("a\nb\n c")]
        );
    }

    #[test]
    fn comments_ids_and_empty_events_are_skipped() {
        let events =
            decode_all(&[b": keep-alive\n\nid: 7\nretry: 10\n\nevent: ping\n\ndata: x\n\n"]);
        assert_eq!(events, vec![data("x")]);
    }

    #[test]
    fn event_name_resets_after_dispatch() {
        let events = decode_all(&[b"event: e1\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(events[1].event, "");
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched() {
        assert_eq!(decode_all(&[b"data: partial"]), vec![]);
        assert_eq!(decode_all(&[b"data: complete-line-only\n"]), vec![]);
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.push(b"data: \xff\xfe\n\n"), Err(SseError::NotUtf8));
    }

    #[test]
    fn a_multibyte_character_split_across_chunks_survives() {
        let body = "data: héllo\n\n".as_bytes();
        let (head, tail) = body.split_at(8); // inside the two bytes of 'é'
        assert_eq!(decode_all(&[head, tail]), vec![data("héllo")]);
    }

    #[test]
    fn bad_json_is_reported_with_a_snippet() {
        let err = data("{not json").json::<serde_json::Value>().unwrap_err();
        assert!(matches!(&err, SseError::BadJson { snippet, .. } if snippet == "{not json"));
    }
}
