//! The findings of a review (`zero review`), from the model's answer to what CI reads.
//!
//! The reviewer answers in one fixed shape ([`answer`]: the `--output-schema` machinery checks
//! it, with its retries). Each finding is then placed on the diff under review ([`place`],
//! using [`diff`]'s reading of it): a finding whose path is not a changed file, or whose line
//! is not among the diff's new-side lines, is dropped with the reason, so nothing is ever
//! reported at a wrong place. A placed finding carries a stable fingerprint ([`fingerprint`])
//! that code scanning and GitLab deduplicate on, and is written in each format CI shows
//! ([`format`](mod@format)). `--fail-on` ([`FailOn`]) turns what was found into the exit code.
//!
//! A leaf: the text of the diff comes in, the bytes of each format go out; running the review
//! and reading git belong to `review`.

pub mod answer;
pub mod diff;
pub mod fingerprint;
pub mod format;
pub mod place;

pub use answer::{Answer, Category, Finding, Severity};
pub use diff::{Diff, DiffError, MAX_DIFF_BYTES};
pub use format::{Format, FormatTarget};
pub use place::{Placed, Report};

/// `--fail-on`: the least severe finding that fails the review (exit 5), or `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Fail on an error.
    Error,
    /// Fail on a warning or an error.
    Warning,
    /// Fail on any finding.
    Note,
    /// Never fail because of findings.
    Never,
}

impl FailOn {
    /// Whether a finding of `severity` fails the review.
    pub fn fails(self, severity: Severity) -> bool {
        let threshold = match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Note => Severity::Note,
            FailOn::Never => return false,
        };
        severity >= threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_counts_findings_at_or_above_it() {
        use Severity::{Error, Note, Warning};
        let table = [
            (FailOn::Error, [false, false, true]),
            (FailOn::Warning, [false, true, true]),
            (FailOn::Note, [true, true, true]),
            (FailOn::Never, [false, false, false]),
        ];
        for (fail_on, expected) in table {
            let got = [Note, Warning, Error].map(|severity| fail_on.fails(severity));
            assert_eq!(got, expected, "{fail_on:?}");
        }
    }
}
