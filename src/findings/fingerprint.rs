//! Stable fingerprints: the same finding on the same code gets the same fingerprint in every
//! run, so code scanning (`partialFingerprints`) and GitLab's Code Quality (`fingerprint`)
//! recognise it as the one they already show, even after the lines around it moved.
//!
//! The fingerprint is the SHA-256, in hex, of (each part followed by a NUL byte):
//! `zero-review/v1`, the path, the flagged lines' text with each line's surrounding
//! whitespace taken off and every run of inner whitespace made one space, and the title
//! lower-cased with its whitespace made single spaces. Line numbers are left out (an edit
//! above the finding moves it, without making it another finding), and so is the severity (a
//! reviewer that calls the same problem a warning this time has not found a new one). The
//! same title on the same text in the same file is one finding: two copies of one flagged
//! line share a fingerprint, as code scanning expects of identical code.
//!
//! GitHub's code scanning matches alerts across runs by `ruleId` and one fingerprint only:
//! `partialFingerprints.primaryLocationLineHash`, which `github/codeql-action/upload-sarif`
//! computes from the checked-out file when a SARIF file lacks it. [`line_hashes`] computes it
//! the same way (its `src/fingerprints.ts`), so a SARIF file zero writes carries it whoever
//! uploads it, and a test can check that a reworded finding keeps it.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// The version of the recipe above; a new recipe is a new version, never a silent change.
pub const VERSION: &str = "zero-review/v1";

/// The fingerprint of a finding titled `title` on `lines` of `path`.
pub fn of(path: &str, lines: &[String], title: &str) -> String {
    let code: Vec<String> = lines.iter().map(|line| squeezed(line)).collect();
    let mut hasher = Sha256::new();
    for part in [
        VERSION,
        path,
        &code.join("\n"),
        &squeezed(title).to_lowercase(),
    ] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// How many characters (UTF-16 code units, spaces and tabs left out) a line's hash covers,
/// counted from the line's start: the line and what follows it.
const LINE_HASH_WINDOW: usize = 100;

/// The rolling hash's multiplier.
const LINE_HASH_BASE: u64 = 37;

/// The end of the file, as the hash reads it (JavaScript's `0xFFFF`).
const LINE_HASH_EOF: u16 = 0xFFFF;

/// GitHub's `primaryLocationLineHash` of every line of `text` (the file's whole content), the
/// first line first, as `<hex>:<n>` (the nth line so far with that hash). The recipe, as
/// codeql-action's upload has it: read the text as UTF-16 code units, skip spaces and tabs,
/// make `\r\n` and `\r` a `\n`, append an end-of-file unit and then zeros; a line's hash is the
/// polynomial hash (base 37, wrapping at 64 bits) of the 100 units from its first one. A text
/// that ends with a newline has one more, empty, last line, as GitHub counts them.
pub fn line_hashes(text: &str) -> Vec<String> {
    let mut window = Window::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut hashes: Vec<String> = Vec::new();
    let mut emit = |hash: u64, line: usize| {
        let count = seen.entry(hash).or_default();
        *count += 1;
        debug_assert_eq!(line, hashes.len(), "lines are hashed in order");
        hashes.push(format!("{hash:x}:{count}"));
    };
    let (mut lines, mut line_start, mut after_cr) = (0, true, false);
    for mut unit in text.encode_utf16().chain([LINE_HASH_EOF]) {
        let newline = u16::from(b'\n');
        if unit == u16::from(b' ') || unit == u16::from(b'\t') || (after_cr && unit == newline) {
            after_cr = false;
            continue;
        }
        after_cr = unit == u16::from(b'\r');
        if after_cr {
            unit = newline;
        }
        let starting = line_start.then_some(lines);
        lines += usize::from(line_start);
        line_start = unit == newline;
        window.push(unit, starting, &mut emit);
    }
    for _ in 0..LINE_HASH_WINDOW {
        window.push(0, None, &mut emit);
    }
    hashes
}

/// The last [`LINE_HASH_WINDOW`] units read, their polynomial hash, and which of them starts a
/// line (and which line).
struct Window {
    units: [u16; LINE_HASH_WINDOW],
    starts: [Option<usize>; LINE_HASH_WINDOW],
    hash: u64,
    index: usize,
    /// `LINE_HASH_BASE` to the window's length: what the unit leaving the window weighs.
    leaving_weight: u64,
}

impl Window {
    fn new() -> Window {
        Window {
            units: [0; LINE_HASH_WINDOW],
            starts: [None; LINE_HASH_WINDOW],
            hash: 0,
            index: 0,
            leaving_weight: (0..LINE_HASH_WINDOW)
                .fold(1u64, |power, _| power.wrapping_mul(LINE_HASH_BASE)),
        }
    }

    /// Reads `unit` (the first of line `starting`, when it is one). The line whose first unit
    /// it replaces has now been hashed over the whole window: `emit` gets that hash and line.
    fn push(&mut self, unit: u16, starting: Option<usize>, emit: &mut impl FnMut(u64, usize)) {
        if let Some(line) = self.starts[self.index].take() {
            emit(self.hash, line);
        }
        self.starts[self.index] = starting;
        let leaving = std::mem::replace(&mut self.units[self.index], unit);
        self.hash = self
            .hash
            .wrapping_mul(LINE_HASH_BASE)
            .wrapping_add(u64::from(unit))
            .wrapping_sub(self.leaving_weight.wrapping_mul(u64::from(leaving)));
        self.index = (self.index + 1) % LINE_HASH_WINDOW;
    }
}

/// `text` with surrounding whitespace taken off and each inner run of it made one space.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn is_the_documented_recipe() {
        // Computed independently: printf 'zero-review/v1\0a.rs\0let x = 1;\0off by one\0' | sha256sum
        assert_eq!(
            of("a.rs", &lines(&["  let x = 1;"]), "Off  by one"),
            "c7edc345727b243b18f97519c1733eacb80c2c2600b695b59f4e7795595cb793"
        );
    }

    /// codeql-action's own test vectors for its line hash (`src/fingerprints.test.ts`).
    #[test]
    fn line_hashes_are_github_s() {
        let cases: [(&str, &[&str]); 5] = [
            ("", &["c129715d7a2bc9a3:1"]),
            (
                " a\nb\n  \t\tc\n d",
                &[
                    "271789c17abda88f:1",
                    "54703d4cd895b18:1",
                    "180aee12dab6264:1",
                    "a23a3dc5e078b07b:1",
                ],
            ),
            (
                " hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End",
                &[
                    "8b7cf3e952e7aeb2:1",
                    "b1ae1287ec4718d9:1",
                    "bff680108adb0fcc:1",
                    "c6805c5e1288b612:1",
                    "b86d3392aea1be30:1",
                    "e6ceba753e1a442:1",
                ],
            ),
            (
                " hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n",
                &[
                    "e9496ae3ebfced30:1",
                    "fb7c023a8b9ccb3f:1",
                    "ce8ba1a563dcdaca:1",
                    "e20e36e16fcb0cc8:1",
                    "b3edc88f2938467e:1",
                    "c8e28b0b4002a3a0:1",
                    "c129715d7a2bc9a3:1",
                ],
            ),
            (
                &"Lorem ipsum dolor sit amet.\n".repeat(10),
                &[
                    "a7f2ff13bc495cf2:1",
                    "a7f2ff13bc495cf2:2",
                    "a7f2ff13bc495cf2:3",
                    "a7f2ff13bc495cf2:4",
                    "a7f2ff13bc495cf2:5",
                    "a7f2ff13bc495cf2:6",
                    "a7f2ff1481e87703:1",
                    "a9cf91f7bbf1862b:1",
                    "55ec222b86bcae53:1",
                    "cc97dc7b1d7d8f7b:1",
                    "c129715d7a2bc9a3:1",
                ],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(line_hashes(text), expected, "{text:?}");
        }
    }

    #[test]
    fn ignores_indentation_and_title_case_but_not_code_path_or_title() {
        let base = of("a.rs", &lines(&["let x = 1;"]), "Off by one");
        assert_eq!(base, of("a.rs", &lines(&["\tlet  x = 1; "]), "off by ONE"));
        assert_ne!(base, of("b.rs", &lines(&["let x = 1;"]), "Off by one"));
        assert_ne!(base, of("a.rs", &lines(&["let x = 2;"]), "Off by one"));
        assert_ne!(base, of("a.rs", &lines(&["let x = 1;"]), "Overflow"));
        assert_ne!(
            of("a.rs", &lines(&["a", "b"]), "t"),
            of("a.rs", &lines(&["a b"]), "t")
        );
    }
}
