//! `text`: for a person reading a terminal or a CI log: one block per finding (severity, place
//! and title on its first line, the explanation below), then the counts and the summary.
//!
//! A CI runner reads every line of a log as a possible command (GitHub's, after trimming the
//! line's leading whitespace, starts with `::`), so each line starts with zero's own words or
//! with `  | ` before the reviewer's text: a finding cannot forge a line of its own.

use crate::findings::place::Report;

/// `report` as text.
pub(super) fn write(report: &Report) -> String {
    let mut out = String::new();
    for placed in &report.findings {
        let finding = &placed.finding;
        let span = match placed.end_line == finding.line {
            true => finding.line.to_string(),
            false => format!("{}-{}", finding.line, placed.end_line),
        };
        out.push_str(&format!(
            "{}: {}:{span}: {}\n",
            finding.severity.word(),
            one_line(&finding.path),
            one_line(&finding.title)
        ));
        quoted(&mut out, &finding.body);
        if let Some(suggestion) = &finding.suggestion {
            out.push_str("  suggested replacement:\n");
            quoted(&mut out, suggestion);
        }
        out.push('\n');
    }
    let findings = match report.findings.len() {
        1 => "1 finding".to_string(),
        n => format!("{n} findings"),
    };
    out.push_str(&format!("{findings} ({}); summary:\n", report.counts()));
    quoted(&mut out, &report.summary);
    out
}

/// Each line of the reviewer's `text` after `  | `.
fn quoted(out: &mut String, text: &str) {
    for line in text.lines() {
        out.push_str("  | ");
        out.push_str(line.trim_end_matches('\r'));
        out.push('\n');
    }
}

/// A path or title on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn writes_a_block_per_finding_then_the_counts() {
        let written = write(&hostile_report());
        assert_eq!(
            written,
            "error: src/a b.rs:2-3: Bad: %0A, :: and ::set-output name=x::y\n  | line one\n  \
             | ::add-mask::secret\n  | 100% sure, a:b\n  suggested replacement:\n  | ```\n  \
             | let x = 2;\n  | ```\n\nnote: src/a b.rs:1: A `note`\n  | fine\n\n2 findings \
             (1 error, 0 warnings, 1 note); summary:\n  | Needs changes.\n  | ::error::forged\n"
        );
        for line in written.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
        }
    }
}
