//! What a stdio server says, bounded. One message is one line of JSON, and rmcp's reader drops
//! a line longer than its limit without a word — the call it answered then waits out its tool
//! timeout and is told the server "did not answer". So zero reads the server's stdout first:
//! a pump passes each line on to rmcp, and when one grows past the limit it ends what it
//! passed (rmcp ignores the broken piece, as it ignores any line that is not JSON), skips the
//! rest of the line, and records its size and the id of the request it answered. The call
//! waiting on that id fails at once, naming the size and the limit, and the connection goes
//! on with the next line. A too-large line whose id cannot be read (it is not JSON-RPC) fails
//! every call waiting at that moment, for it may have answered any of them.

use std::sync::{Arc, Mutex};

use rmcp::model::RequestId;
use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Notify;

/// The largest message a stdio server may send, its newline included: rmcp's own limit
/// (which its HTTP client puts on one event too), so that rmcp never meets a line over it.
pub(crate) const MAX_MESSAGE: usize = DEFAULT_MAX_LINE_LENGTH;

/// How much of the pipe between the pump and rmcp is buffered.
const PIPE: usize = 64 * 1024;

/// The most of an `id` value the pump keeps: JSON-RPC ids are numbers and short strings.
const MAX_ID: usize = 1024;

/// A stdio server's stdout as rmcp reads it through the pump: what calls look for their
/// answers in when those were too large. Dropping it stops the pump.
#[derive(Debug)]
pub(crate) struct Bounded {
    /// What the pump dropped.
    dropped: Arc<Dropped>,
    /// The pump.
    _pump: Pump,
}

impl Bounded {
    /// Where the record of dropped messages stands now: a call notes it before it sends its
    /// request, and looks only at what was dropped after.
    pub(crate) fn mark(&self) -> usize {
        crate::sync::lock(&self.dropped.seen).len()
    }

    /// Waits until a message answering `id` (or one of no readable id) is dropped after
    /// `since`, and gives its size in bytes.
    pub(crate) async fn answer_to(&self, id: &RequestId, since: usize) -> u64 {
        self.dropped.answer_to(id, since).await
    }
}

/// The pump's task, stopped when this is dropped: tokio-util's `AbortOnDropHandle`, which
/// zero does not build that crate with the feature for.
#[derive(Debug)]
struct Pump(tokio::task::JoinHandle<()>);

impl Drop for Pump {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The messages the pump dropped for their size.
#[derive(Debug, Default)]
struct Dropped {
    /// Every message dropped so far, in order.
    seen: Mutex<Vec<DroppedMessage>>,
    /// Woken at each one.
    notify: Notify,
}

/// One message too large to pass on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DroppedMessage {
    /// The request it answered, when the pump could read it.
    id: Option<RequestId>,
    /// Its size in bytes, its newline included.
    size: u64,
}

impl Dropped {
    /// See [`Bounded::answer_to`].
    async fn answer_to(&self, id: &RequestId, since: usize) -> u64 {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the record is read, so a message dropped in between wakes it.
            notified.as_mut().enable();
            let found = crate::sync::lock(&self.seen)
                .get(since..)
                .into_iter()
                .flatten()
                .find(|message| message.id.as_ref().is_none_or(|answered| answered == id))
                .map(|message| message.size);
            if let Some(size) = found {
                return size;
            }
            notified.await;
        }
    }

    /// Adds `message` and wakes every call waiting.
    fn record(&self, message: DroppedMessage) {
        crate::sync::lock(&self.seen).push(message);
        self.notify.notify_waiters();
    }
}

/// What rmcp reads instead of `from` (a stdio server's stdout): the same lines, but for those
/// over [`MAX_MESSAGE`], which the [`Bounded`] records. The pump runs until `from` ends or
/// rmcp stops reading, or the [`Bounded`] is dropped.
pub(crate) fn bounded(from: impl AsyncRead + Send + Unpin + 'static) -> (DuplexStream, Bounded) {
    let (ours, theirs) = tokio::io::duplex(PIPE);
    let dropped = Arc::new(Dropped::default());
    let pump = tokio::spawn(pump(BufReader::new(from), theirs, Arc::clone(&dropped)));
    let bounded = Bounded {
        dropped,
        _pump: Pump(pump),
    };
    (ours, bounded)
}

/// Passes `from`'s lines on to `to` until either ends, each line whole or, past
/// [`MAX_MESSAGE`], cut short and recorded in `dropped`.
async fn pump(
    mut from: BufReader<impl AsyncRead + Unpin>,
    mut to: DuplexStream,
    dropped: Arc<Dropped>,
) {
    let mut line = Line::default();
    loop {
        let chunk = match from.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(chunk) => chunk,
        };
        let (piece, ends) = match memchr::memchr(b'\n', chunk) {
            Some(newline) => (&chunk[..=newline], true),
            None => (chunk, false),
        };
        let taken = piece.len();
        if line.take(piece) {
            if to.write_all(piece).await.is_err() {
                return;
            }
        } else if line.just_overflowed() && to.write_all(b"\n").await.is_err() {
            // The part passed on is ended, for rmcp to ignore as a broken line.
            return;
        }
        from.consume(taken);
        if ends {
            if let Some(message) = line.finish() {
                dropped.record(message);
            }
            line = Line::default();
        }
    }
}

/// The line the pump is in.
#[derive(Debug, Default)]
struct Line {
    /// Its bytes so far.
    size: u64,
    /// Whether it is over the limit, and since which piece.
    over: Over,
    /// Its top-level `id`, as it streams past.
    id: IdScanner,
}

/// Where a line stands against the limit.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Over {
    /// Within it: its pieces are passed on.
    #[default]
    No,
    /// The last piece took it over.
    Now,
    /// It was over before the last piece.
    Already,
}

impl Line {
    /// Adds `piece` (the line's next bytes); whether it is to be passed on.
    fn take(&mut self, piece: &[u8]) -> bool {
        self.id.feed(piece);
        self.size += piece.len() as u64;
        self.over = match self.over {
            Over::No if self.size > MAX_MESSAGE as u64 => Over::Now,
            Over::No => Over::No,
            Over::Now | Over::Already => Over::Already,
        };
        self.over == Over::No
    }

    /// Whether the last piece took the line over the limit (so what was passed needs ending).
    fn just_overflowed(&self) -> bool {
        self.over == Over::Now
    }

    /// At the line's end: the record of it, when it was too large.
    fn finish(self) -> Option<DroppedMessage> {
        (self.over != Over::No).then(|| DroppedMessage {
            id: self.id.found(),
            size: self.size,
        })
    }
}

/// Finds the value of the top-level `"id"` of a JSON object streamed past in pieces, keeping
/// nothing but that value. Written out because the JSON parsers at hand (serde_json, and the
/// streaming ones) pull from a reader and hold at least a string whole, and the line it reads
/// is one no one is to hold: a depth count, whether it is inside a string, and which key
/// the current top-level value is of are all it needs.
#[derive(Debug, Default)]
struct IdScanner {
    /// How deep in objects and arrays the next byte is.
    depth: u32,
    /// Inside a string, and just after its backslash.
    string: Option<Escape>,
    /// At depth 1: whether the next string is a key.
    in_value: bool,
    /// The current top-level key, while it is short enough to be `id`.
    key: Vec<u8>,
    /// Whether the current top-level value is the id's.
    is_id: bool,
    /// The id's value as written, while it is read and once it was.
    id: Vec<u8>,
}

/// Where a string's reading stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Plain text.
    No,
    /// The last byte was a backslash.
    Next,
}

impl IdScanner {
    /// Reads the line's next bytes.
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    /// Reads one byte.
    fn step(&mut self, byte: u8) {
        let top = self.depth == 1;
        if self.is_id && self.depth >= 1 && self.id.len() <= MAX_ID {
            self.id.push(byte);
        }
        if let Some(escape) = self.string {
            self.string = match (escape, byte) {
                (Escape::Next, _) => Some(Escape::No),
                (Escape::No, b'\\') => Some(Escape::Next),
                (Escape::No, b'"') => None,
                (Escape::No, _) => Some(Escape::No),
            };
            let in_key = top && !self.in_value && self.string.is_some();
            if in_key && self.key.len() <= 2 {
                self.key.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.string = Some(Escape::No);
                if top && !self.in_value {
                    self.key.clear();
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.end_value();
                }
            }
            b':' if top => {
                self.in_value = true;
                self.is_id = self.key == b"id";
                if self.is_id {
                    self.id.clear();
                }
            }
            b',' if top => {
                self.end_value();
                self.in_value = false;
            }
            _ => {}
        }
    }

    /// A top-level value ended (at its `,` or the object's `}`): an id's value is complete,
    /// less the byte that ended it.
    fn end_value(&mut self) {
        if self.is_id {
            self.id.pop();
            self.is_id = false;
        }
    }

    /// The id, when there was one readable.
    fn found(&self) -> Option<RequestId> {
        serde_json::from_slice(&self.id).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    use super::*;

    fn id_of(text: &str, piece: usize) -> Option<RequestId> {
        let mut scanner = IdScanner::default();
        for chunk in text.as_bytes().chunks(piece) {
            scanner.feed(chunk);
        }
        scanner.found()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is_and_in_any_pieces() {
        let big = "x".repeat(5000);
        for piece in [1, 3, 4096] {
            for (text, id) in [
                (
                    json!({"jsonrpc": "2.0", "id": 7, "result": {"text": big}}).to_string(),
                    Some(RequestId::Number(7)),
                ),
                (
                    format!(
                        r#"{{"result":{{"id":1,"t":"\"id\":2,{big}"}},"jsonrpc":"2.0","id":"a,}}b"}}"#
                    ),
                    Some(RequestId::String("a,}b".into())),
                ),
                (
                    r#"{ "result" : [ {"id": 3} ], "id" : 12 }"#.to_string(),
                    Some(RequestId::Number(12)),
                ),
                (
                    json!({"method": "notifications/message", "params": {"id": 4}}).to_string(),
                    None,
                ),
                (
                    format!("{{\"id\": 5, \"result\": \"{big}"),
                    Some(RequestId::Number(5)),
                ),
                (format!("not json {big}"), None),
            ] {
                assert_eq!(
                    id_of(&text, piece),
                    id,
                    "{piece}: {}",
                    &text[..60.min(text.len())]
                );
            }
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_the_next_one_passes() {
        let huge =
            json!({"jsonrpc": "2.0", "id": 3, "result": "x".repeat(MAX_MESSAGE)}).to_string();
        let next = json!({"jsonrpc": "2.0", "id": 4, "result": {}}).to_string();
        let input = format!("{huge}\n{next}\n").into_bytes();
        let (mut out, bounded) = bounded(std::io::Cursor::new(input));
        let since = bounded.mark();
        let mut passed = Vec::new();
        out.read_to_end(&mut passed).await.unwrap();
        let size = bounded.answer_to(&RequestId::Number(3), since).await;
        assert_eq!(size, huge.len() as u64 + 1);
        let lines: Vec<&[u8]> = passed.split(|byte| *byte == b'\n').collect();
        assert_eq!(lines.len(), 3, "the cut piece, the next line, and nothing");
        assert!(
            lines[0].len() <= MAX_MESSAGE,
            "what was passed stays within the limit"
        );
        assert_eq!(lines[1], next.as_bytes());
        assert!(lines[2].is_empty());
    }
}
