//! Bounded capture of a child's output stream: the first and the last bytes are kept, the
//! middle is counted, so a command that prints gigabytes costs a fixed amount of memory.

use std::collections::VecDeque;

/// Keeps at most `head_max` leading and `tail_max` trailing bytes of a stream.
#[derive(Debug, Clone)]
pub struct BoundedCapture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_max: usize,
    tail_max: usize,
    total: u64,
}

impl BoundedCapture {
    /// An empty capture with the given limits.
    pub(crate) fn new(head_max: usize, tail_max: usize) -> Self {
        BoundedCapture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_max,
            tail_max,
            total: 0,
        }
    }

    /// Adds the next chunk of the stream.
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_max.saturating_sub(self.head.len());
        let into_head = room.min(chunk.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if chunk.len() >= self.tail_max {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_max..]);
            return;
        }
        let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.tail_max);
        self.tail.drain(..overflow);
        self.tail.extend(chunk);
    }

    /// Bytes seen in total, kept or not.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The kept text (lossy UTF-8) with a note where bytes were left out.
    pub fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail_bytes: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail_bytes);
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept == self.total {
            return format!("{head}{tail}");
        }
        format!(
            "{head}\n[... {} bytes omitted ...]\n{tail}",
            self.total - kept
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_streams_are_kept_whole() {
        let mut capture = BoundedCapture::new(4, 4);
        capture.push(b"abc");
        capture.push(b"def");
        assert_eq!(capture.render(), "abcdef");
    }

    #[test]
    fn large_streams_keep_both_ends_in_bounded_memory() {
        let mut capture = BoundedCapture::new(3, 3);
        for _ in 0..1000 {
            capture.push(b"0123456789");
        }
        capture.push(b"END");
        assert_eq!(capture.total(), 10_003);
        let text = capture.render();
        assert!(text.starts_with("012"), "{text}");
        assert!(text.ends_with("END"), "{text}");
        assert!(text.contains("9997 bytes omitted"), "{text}");
    }
}
