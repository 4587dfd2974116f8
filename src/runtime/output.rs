//! Reading a slice of a task's output file. Only the requested bytes are read (a seek, then a
//! bounded read), so a gigabyte of output costs what a kilobyte does.
//!
//! A slice never cuts a secret in two: whoever shows it masks the secrets in it, and half a
//! key at a slice's edge would not be recognised as one — the next slice would show the other
//! half. So the edges are widened to take in whole any secret that crosses them.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::redact::Secrets;

/// Which bytes of an output file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The last `max_bytes` bytes.
    Tail {
        /// The most bytes to return.
        max_bytes: usize,
    },
    /// Up to `max_bytes` bytes from `offset` on (an offset past the end reads nothing).
    From {
        /// The first byte to read.
        offset: u64,
        /// The most bytes to return.
        max_bytes: usize,
    },
}

/// A slice of an output file, with the offsets a reader needs to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputWindow {
    /// The offset of the first byte in `bytes`.
    pub start: u64,
    /// The offset just past the last byte in `bytes`: where the next read should start.
    pub next_offset: u64,
    /// The file's size when it was read.
    pub size: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Reads `window` of the file at `path`. The slice is trimmed so it neither starts (for a tail)
/// nor ends inside a UTF-8 character, as long as that leaves something to return; an ending
/// cut short is not lost, since `next_offset` points at its first byte. It is widened so it
/// neither starts nor ends inside one of `secrets` (or a key-shaped string): it may then hold
/// a little more than `max_bytes`, by at most [`Secrets::reach`] on each side.
pub(crate) fn read_window(
    path: &Path,
    window: Window,
    secrets: &Secrets,
) -> io::Result<OutputWindow> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    let (start, len) = match window {
        Window::Tail { max_bytes } => {
            let len = size.min(max_bytes as u64);
            (size - len, len)
        }
        Window::From { offset, max_bytes } => {
            let start = offset.min(size);
            (start, (size - start).min(max_bytes as u64))
        }
    };
    // Read a margin on both sides, to see whole any secret that crosses an edge.
    let reach = if len == 0 { 0 } else { secrets.reach() as u64 };
    let margin_start = start.saturating_sub(reach);
    let margin_end = (start + len + reach).min(size);
    file.seek(SeekFrom::Start(margin_start))?;
    let mut margin = Vec::with_capacity((margin_end - margin_start) as usize);
    file.take(margin_end - margin_start)
        .read_to_end(&mut margin)?;
    let (from, to) = widen_to_whole_secrets(
        &margin,
        (start - margin_start) as usize,
        (start + len - margin_start) as usize,
        secrets,
    );
    let start = margin_start + from as u64;
    let mut bytes = margin[from..to.min(margin.len())].to_vec();

    // A tail starts wherever the size put it; skip the rest of a character cut in two.
    let skip = match window {
        Window::Tail { .. } if start > 0 => leading_continuation_bytes(&bytes),
        _ => 0,
    };
    let end = complete_prefix_len(&bytes[skip..]) + skip;
    bytes.truncate(end);
    bytes.drain(..skip);
    let start = start + skip as u64;
    Ok(OutputWindow {
        start,
        next_offset: start + bytes.len() as u64,
        size,
        bytes,
    })
}

/// Where a copy of `file` that should begin at `offset` begins instead so as not to start
/// inside one of `secrets`: `offset`, or the start of the secret it falls in (`zero tasks
/// output --tail N` starts wherever the size puts it).
pub(crate) fn start_outside_secrets(
    file: &mut File,
    offset: u64,
    secrets: &Secrets,
) -> io::Result<u64> {
    let reach = secrets.reach() as u64;
    let margin_start = offset.saturating_sub(reach);
    file.seek(SeekFrom::Start(margin_start))?;
    let mut margin = Vec::new();
    file.take(2 * reach).read_to_end(&mut margin)?;
    let at = ((offset - margin_start) as usize).min(margin.len());
    let (from, _) = widen_to_whole_secrets(&margin, at, at, secrets);
    Ok(margin_start + from as u64)
}

/// The slice `from..to` of `text`, widened until no secret of `text` crosses either edge.
fn widen_to_whole_secrets(
    text: &[u8],
    mut from: usize,
    mut to: usize,
    secrets: &Secrets,
) -> (usize, usize) {
    let spans = secrets.spans(text);
    // Widening one edge can bring it into another (overlapping) secret: repeat until still.
    loop {
        let (was_from, was_to) = (from, to);
        for span in &spans {
            if span.start < from && from < span.end {
                from = span.start;
            }
            if span.start < to && to < span.end {
                to = span.end;
            }
        }
        if (from, to) == (was_from, was_to) {
            return (from, to);
        }
    }
}

/// How many bytes at the start are UTF-8 continuation bytes (at most 3: a character's tail).
fn leading_continuation_bytes(bytes: &[u8]) -> usize {
    let count = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    // All of it being continuation bytes means it is not text; keep it as is.
    if count == bytes.len() { 0 } else { count }
}

/// The length of `bytes` without a trailing, incomplete UTF-8 character — unless dropping it
/// would leave nothing, in which case the bytes are returned as they are (a reader could
/// otherwise never get past them).
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let tail_from = bytes.len().saturating_sub(3);
    let Some(lead) = (tail_from..bytes.len()).rev().find(|&i| bytes[i] >= 0xC0) else {
        return bytes.len();
    };
    let needed = match bytes[lead] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    if lead + needed > bytes.len() && lead > 0 {
        lead
    } else {
        bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn none() -> Secrets {
        Secrets::default()
    }

    fn file_with(content: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(content).unwrap();
        file
    }

    #[test]
    fn a_tail_is_the_last_bytes_and_continues_at_the_end() {
        let file = file_with(b"0123456789");
        let tail = read_window(file.path(), Window::Tail { max_bytes: 4 }, &none()).unwrap();
        assert_eq!(tail.bytes, b"6789");
        assert_eq!((tail.start, tail.next_offset, tail.size), (6, 10, 10));
        let all = read_window(file.path(), Window::Tail { max_bytes: 100 }, &none()).unwrap();
        assert_eq!((all.bytes.as_slice(), all.start), (&b"0123456789"[..], 0));
    }

    #[test]
    fn offset_reads_continue_where_the_last_one_stopped() {
        let file = file_with(b"0123456789");
        let first = read_window(
            file.path(),
            Window::From {
                offset: 0,
                max_bytes: 4,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(
            (first.bytes.as_slice(), first.next_offset),
            (&b"0123"[..], 4)
        );
        let offset = first.next_offset;
        let second = read_window(
            file.path(),
            Window::From {
                offset,
                max_bytes: 100,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(
            (second.bytes.as_slice(), second.next_offset),
            (&b"456789"[..], 10)
        );
        let past = read_window(
            file.path(),
            Window::From {
                offset: 99,
                max_bytes: 4,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(
            (past.bytes.len(), past.start, past.next_offset),
            (0, 10, 10)
        );
    }

    #[test]
    fn a_window_never_cuts_a_secret_in_two() {
        let secrets = Secrets::default();
        secrets.add("hunter2-correct-horse");
        let text = b"before hunter2-correct-horse after sk-abcdefghijklmnopqrstuvwx end";
        let file = file_with(text);
        let at = |offset: u64, max_bytes: usize| {
            read_window(file.path(), Window::From { offset, max_bytes }, &secrets).unwrap()
        };
        // Starting and ending inside the configured secret: widened to take it in whole.
        let window = at(10, 4);
        assert_eq!(window.bytes, b"hunter2-correct-horse");
        assert_eq!((window.start, window.next_offset), (7, 28));
        // The same for a key no one configured but shaped like one.
        let window = at(45, 3);
        assert_eq!(window.bytes, b"sk-abcdefghijklmnopqrstuvwx");
        // Shown through the redactor, neither window holds any of its secret.
        for offset in 0..text.len() as u64 {
            for max_bytes in 1..12 {
                let window = at(offset, max_bytes);
                let shown = secrets.apply_bytes(&window.bytes);
                for piece in [&b"hunter2-c"[..], b"t-horse", b"abcdefgh", b"stuvwx"] {
                    assert!(
                        memchr::memmem::find(&shown, piece).is_none(),
                        "{offset}+{max_bytes}: {}",
                        String::from_utf8_lossy(&shown)
                    );
                }
            }
        }
        // With nothing secret in reach, windows are exact.
        assert_eq!(at(0, 6).bytes, b"before");
        let mut opened = File::open(file.path()).unwrap();
        for (offset, start) in [(0, 0), (7, 7), (12, 7), (27, 7), (28, 28), (50, 35)] {
            let moved = start_outside_secrets(&mut opened, offset, &secrets).unwrap();
            assert_eq!(moved, start, "from {offset}");
        }
    }

    #[test]
    fn characters_are_not_cut_in_two() {
        let text = "aé€😀"; // 1 + 2 + 3 + 4 bytes
        let file = file_with(text.as_bytes());
        // The last 6 bytes start inside '€': the tail begins at the next character.
        let tail = read_window(file.path(), Window::Tail { max_bytes: 6 }, &none()).unwrap();
        assert_eq!(std::str::from_utf8(&tail.bytes).unwrap(), "😀");
        assert_eq!(tail.start, 6);
        // Stopping inside '😀' ends before it, and the next read starts at it.
        let head = read_window(
            file.path(),
            Window::From {
                offset: 0,
                max_bytes: 8,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(std::str::from_utf8(&head.bytes).unwrap(), "aé€");
        assert_eq!(head.next_offset, 6);
        // Bytes that can never form a character are still returned rather than stuck on.
        let lone = file_with(&[0xF0]);
        let read = read_window(
            lone.path(),
            Window::From {
                offset: 0,
                max_bytes: 8,
            },
            &none(),
        )
        .unwrap();
        assert_eq!((read.bytes.as_slice(), read.next_offset), (&[0xF0][..], 1));
    }

    #[test]
    fn a_100_mb_file_costs_only_the_window() {
        const SIZE: u64 = 100 * 1024 * 1024;
        let file = tempfile::NamedTempFile::new().unwrap();
        // Sparse: the test does not need 100 MB of disk, only a file that large.
        file.as_file().set_len(SIZE - 8).unwrap();
        let mut writer = file.as_file();
        writer.seek(SeekFrom::End(0)).unwrap();
        writer.write_all(b"THE-END\n").unwrap();

        let tail = read_window(
            file.path(),
            Window::Tail {
                max_bytes: 16 * 1024,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(tail.size, SIZE);
        assert_eq!(tail.bytes.len(), 16 * 1024);
        assert!(
            tail.bytes.capacity() <= 16 * 1024,
            "only the window is allocated"
        );
        assert!(tail.bytes.ends_with(b"THE-END\n"));
        assert_eq!((tail.start, tail.next_offset), (SIZE - 16 * 1024, SIZE));

        let offset = SIZE - 4;
        let from = read_window(
            file.path(),
            Window::From {
                offset,
                max_bytes: 1024,
            },
            &none(),
        )
        .unwrap();
        assert_eq!(
            (from.bytes.as_slice(), from.next_offset),
            (&b"END\n"[..], SIZE)
        );
    }
}
