//! Placing findings on the diff: a finding is reported only where the diff shows the code it
//! names. One off the diff is dropped with the reason (the caller warns), never moved to a
//! line nearby: a finding at a wrong place is worse than none.

use std::collections::BTreeMap;

use super::answer::{Answer, Finding, Severity};
use super::diff::{Diff, check_path};
use super::fingerprint;

/// A finding placed on the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The finding as the reviewer gave it.
    pub finding: Finding,
    /// Its last line: `end_line`, kept within the hunk that shows `line`; `line` without one.
    pub end_line: u32,
    /// Its stable fingerprint ([`fingerprint`]).
    pub fingerprint: String,
    /// GitHub's `primaryLocationLineHash` of its first line ([`fingerprint::line_hashes`]),
    /// once [`Report::hash_lines`] has read its file.
    pub line_hash: Option<String>,
}

/// A review's outcome, ready to be written in any format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The reviewer's verdict on the change.
    pub summary: String,
    /// The findings placed on the diff, in the reviewer's order.
    pub findings: Vec<Placed>,
}

impl Report {
    /// Places `answer`'s findings on `diff`; each one dropped comes back as a warning saying
    /// which and why.
    pub fn place(answer: Answer, diff: &Diff) -> (Report, Vec<String>) {
        let mut findings = Vec::new();
        let mut warnings = Vec::new();
        for finding in answer.findings {
            match place(&finding, diff) {
                Ok((end_line, fingerprint)) => findings.push(Placed {
                    finding,
                    end_line,
                    fingerprint,
                    line_hash: None,
                }),
                Err(reason) => warnings.push(format!(
                    "a finding was dropped ({:?} at {:?} line {}): {reason}",
                    finding.title, finding.path, finding.line
                )),
            }
        }
        let report = Report {
            summary: answer.summary,
            findings,
        };
        (report, warnings)
    }

    /// Replaces every text the reviewer wrote (the summary, and each finding's title, body and
    /// suggestion) with `rewrite` of it: the caller's redaction, before any format escapes
    /// the text and so could cut a secret's shape apart.
    pub fn rewrite_text(&mut self, rewrite: impl Fn(&str) -> String) {
        self.summary = rewrite(&self.summary);
        for placed in &mut self.findings {
            let finding = &mut placed.finding;
            finding.title = rewrite(&finding.title);
            finding.body = rewrite(&finding.body);
            finding.suggestion = finding.suggestion.as_deref().map(&rewrite);
        }
    }

    /// Gives each finding its line's `primaryLocationLineHash`, from the whole new version of
    /// its file as `file` reads it (each file read once); a finding whose file `file` cannot
    /// give keeps none, and code scanning's upload computes it instead.
    pub fn hash_lines(&mut self, file: impl Fn(&str) -> Option<String>) {
        let mut hashed: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
        for placed in &mut self.findings {
            let path = &placed.finding.path;
            let hashes = hashed
                .entry(path.clone())
                .or_insert_with(|| file(path).map(|text| fingerprint::line_hashes(&text)));
            placed.line_hash = hashes
                .as_ref()
                .and_then(|hashes| hashes.get(placed.finding.line as usize - 1))
                .cloned();
        }
    }

    /// Its counts in words, most severe first: "1 error, 2 warnings, 0 notes".
    pub fn counts(&self) -> String {
        Severity::ALL
            .iter()
            .rev()
            .map(|severity| match self.count(*severity) {
                1 => format!("1 {}", severity.word()),
                n => format!("{n} {}s", severity.word()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many findings of `severity` it holds.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|placed| placed.finding.severity == severity)
            .count()
    }
}

/// Where `finding` lies on `diff`: its last line and its fingerprint, or why it cannot be
/// placed.
fn place(finding: &Finding, diff: &Diff) -> Result<(u32, String), String> {
    check_path(&finding.path).map_err(|reason| format!("its path is refused: {reason}"))?;
    let file = diff
        .file(&finding.path)
        .ok_or("its file is not one the diff changes")?;
    let hunk = file
        .hunk_at(finding.line)
        .ok_or("its line is not one the diff shows for that file")?;
    let end_line = finding
        .end_line
        .unwrap_or(finding.line)
        .clamp(finding.line, hunk.end());
    let lines = hunk.text(finding.line, end_line);
    Ok((
        end_line,
        fingerprint::of(&finding.path, lines, &finding.title),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Category;

    const DIFF: &str = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +10,3 @@\n x\n-y\n+z\n+w\n";

    fn finding(path: &str, line: u32, end_line: Option<u32>) -> Finding {
        Finding {
            path: path.into(),
            line,
            end_line,
            severity: Severity::Warning,
            category: Category::Correctness,
            title: "t".into(),
            body: "b".into(),
            suggestion: None,
        }
    }

    fn placed(findings: Vec<Finding>) -> (Report, Vec<String>) {
        let answer = Answer {
            summary: "s".into(),
            findings,
        };
        Report::place(answer, &Diff::parse(DIFF).unwrap())
    }

    #[test]
    fn a_finding_on_a_shown_line_is_placed_with_its_span_kept_in_the_hunk() {
        let (report, warnings) = placed(vec![
            finding("src/a.rs", 10, None),
            finding("src/a.rs", 11, Some(99)),
            finding("src/a.rs", 12, Some(3)),
        ]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let ends: Vec<u32> = report.findings.iter().map(|p| p.end_line).collect();
        assert_eq!(ends, [10, 12, 12]);
        assert_eq!(
            report.findings[0].fingerprint,
            fingerprint::of("src/a.rs", &["x".to_string()], "t")
        );
    }

    #[test]
    fn every_text_the_reviewer_wrote_is_rewritten() {
        let mut one = finding("src/a.rs", 10, None);
        one.suggestion = Some("b".into());
        let (mut report, _) = placed(vec![one]);
        report.rewrite_text(|text| format!("<{text}>"));
        assert_eq!(report.summary, "<s>");
        let finding = &report.findings[0].finding;
        assert_eq!(
            (
                finding.title.as_str(),
                finding.body.as_str(),
                finding.suggestion.as_deref()
            ),
            ("<t>", "<b>", Some("<b>"))
        );
        assert_eq!(
            finding.path, "src/a.rs",
            "the path was checked against the diff"
        );
    }

    #[test]
    fn line_hashes_come_from_the_whole_file_read_once() {
        let (mut report, _) = placed(vec![
            finding("src/a.rs", 10, None),
            finding("src/a.rs", 12, None),
        ]);
        let text: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let reads = std::cell::Cell::new(0);
        report.hash_lines(|path| {
            reads.set(reads.get() + 1);
            (path == "src/a.rs").then(|| text.clone())
        });
        assert_eq!(reads.get(), 1);
        let hashes = fingerprint::line_hashes(&text);
        assert_eq!(report.findings[0].line_hash.as_ref(), Some(&hashes[9]));
        assert_eq!(report.findings[1].line_hash.as_ref(), Some(&hashes[11]));
        // A file that cannot be read, or is shorter than the diff says, leaves no hash.
        report.hash_lines(|_| None);
        assert!(report.findings[0].line_hash.is_none());
        report.hash_lines(|_| Some("one line".into()));
        assert!(report.findings[1].line_hash.is_none());
    }

    #[test]
    fn a_finding_off_the_diff_is_dropped_with_the_reason() {
        let (report, warnings) = placed(vec![
            finding("src/b.rs", 10, None),
            finding("src/a.rs", 9, None),
            finding("src/a.rs", 13, None),
            finding("../src/a.rs", 10, None),
            finding("src/a.rs\n::error::x", 10, None),
        ]);
        assert!(report.findings.is_empty());
        assert_eq!(warnings.len(), 5);
        assert!(
            warnings[0].contains("not one the diff changes"),
            "{}",
            warnings[0]
        );
        assert!(warnings[1].contains("line is not one the diff shows"));
        assert!(warnings[2].contains("line 13"));
        assert!(warnings[3].contains("`..`"));
        // The path is quoted: its newline cannot start a line of its own on stderr.
        assert!(!warnings[4].contains('\n'), "{}", warnings[4]);
    }
}
