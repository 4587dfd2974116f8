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
