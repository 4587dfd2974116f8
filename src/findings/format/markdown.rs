//! `markdown`: a pull-request (or merge-request) comment: a heading with the counts, the
//! summary quoted, then each finding with its place, explanation and suggested replacement.
//!
//! It starts with the marker `<!-- zero-review -->`, by which the GitHub Action finds and
//! updates its one comment instead of adding another each run. The reviewer's text is
//! Markdown on purpose; what could break the comment's structure is contained: a title is one
//! line, a path and a suggestion sit in a code span and a fence longer than any run of
//! backticks inside them, and a body that leaves a fence open is closed.

use crate::findings::Severity;
use crate::findings::place::Report;

/// The first line of every comment, which finds it again.
pub const MARKER: &str = "<!-- zero-review -->";

/// `report` as a comment.
pub(super) fn write(report: &Report) -> String {
    let mut out = format!("{MARKER}\n## zero review: {}\n\n", report.counts());
    for line in report.summary.lines() {
        out.push_str(&format!("> {line}\n"));
    }
    out.push('\n');
    for (index, placed) in report.findings.iter().enumerate() {
        let finding = &placed.finding;
        let lines = match placed.end_line == finding.line {
            true => format!("line {}", finding.line),
            false => format!("lines {}–{}", finding.line, placed.end_line),
        };
        out.push_str(&format!(
            "### {}. {} {}\n\n{} {lines}\n\n",
            index + 1,
            badge(finding.severity),
            one_line(&finding.title),
            code_span(&finding.path),
        ));
        out.push_str(finding.body.trim_end());
        if finding
            .body
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count()
            % 2
            == 1
        {
            out.push_str("\n```");
        }
        out.push_str("\n\n");
        if let Some(suggestion) = &finding.suggestion {
            let fence = "`".repeat(longest_backtick_run(suggestion).max(2) + 1);
            out.push_str(&format!(
                "Suggested replacement:\n\n{fence}\n{}\n{fence}\n\n",
                suggestion.trim_end_matches('\n')
            ));
        }
    }
    if report.findings.is_empty() {
        out.push_str("No findings.\n");
    }
    out
}

/// The severity as a heading shows it.
fn badge(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "🔴 **Error:**",
        Severity::Warning => "🟠 **Warning:**",
        Severity::Note => "🔵 **Note:**",
    }
}

/// `text` on one line, with HTML's opening bracket escaped (a heading cannot open a tag).
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('<', "&lt;")
}

/// `text` as an inline code span, however many backticks it holds (padded with a space, which
/// the span drops, only when it starts or ends with one).
fn code_span(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let ticks = "`".repeat(longest_backtick_run(&text) + 1);
    match text.starts_with('`') || text.ends_with('`') {
        true => format!("{ticks} {text} {ticks}"),
        false => format!("{ticks}{text}{ticks}"),
    }
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn writes_a_comment_whose_structure_findings_cannot_break() {
        let written = write(&hostile_report());
        assert!(written.starts_with(&format!(
            "{MARKER}\n## zero review: 1 error, 0 warnings, 1 note\n"
        )));
        assert!(written.contains("> Needs changes.\n> ::error::forged\n"));
        assert!(written.contains(
            "### 1. 🔴 **Error:** Bad: %0A, :: and ::set-output name=x::y\n\n`src/a b.rs` lines 2–3\n"
        ));
        // The suggestion holds a ``` fence: its own fence is longer.
        assert!(
            written.contains("````\n```\nlet x = 2;\n```\n````"),
            "{written}"
        );
        assert!(written.contains("### 2. 🔵 **Note:** A `note`\n"));
    }

    #[test]
    fn an_open_fence_in_a_body_is_closed() {
        let mut report = hostile_report();
        report.findings[1].finding.body = "look:\n```rust\nfn x()".into();
        let written = write(&report);
        assert!(written.contains("fn x()\n```\n\n"), "{written}");
    }
}
