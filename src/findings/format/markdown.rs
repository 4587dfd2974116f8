//! `markdown`: a pull-request (or merge-request) comment: a heading with the counts, the
//! summary quoted, then each finding with its place, explanation and suggested replacement.
//!
//! It starts with the marker `<!-- zero-review -->`, by which the GitHub Action finds and
//! updates its one comment instead of adding another each run. The reviewer's text is
//! Markdown on purpose; what could break the comment's structure is contained: a title is one
//! line, a path and a suggestion sit in a code span and a fence longer than any run of
//! backticks inside them, a body that leaves a fence open is closed with its own fence, and
//! HTML's `<` is escaped in titles, bodies and the summary outside code (fences and code
//! spans): a line `<!--` would otherwise open a comment that hides everything after it, the
//! next findings included, and `<details>` or `<pre>` would swallow them too.

use crate::findings::Severity;
use crate::findings::place::Report;

/// The first line of every comment, which finds it again.
pub const MARKER: &str = "<!-- zero-review -->";

/// `report` as a comment.
pub(super) fn write(report: &Report) -> String {
    let mut out = format!("{MARKER}\n## zero review: {}\n\n", report.counts());
    for line in escaped(&report.summary).lines() {
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
        out.push_str(escaped(&finding.body).trim_end());
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

/// The reviewer's Markdown with HTML's `<` escaped outside code, and a fence it leaves open
/// closed. A fence opens at a line of three or more backticks or tildes (indented at most three
/// spaces) and closes at a line of the same character, at least as long, and nothing else, as
/// CommonMark has it; a code span is a run of backticks closed by a run as long on the same
/// line (`\``, an escaped backtick, opens none).
fn escaped(text: &str) -> String {
    let mut out = String::new();
    let mut open: Option<(char, usize)> = None;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        match (open, fence(line)) {
            (None, Some((mark, len, _))) => {
                open = Some((mark, len));
                out.push_str(line);
            }
            (Some((mark, len)), Some((found, found_len, true)))
                if found == mark && found_len >= len =>
            {
                open = None;
                out.push_str(line);
            }
            (Some(_), _) => out.push_str(line),
            (None, None) => out.push_str(&outside_code(line)),
        }
        out.push('\n');
    }
    if let Some((mark, len)) = open {
        out.push_str(&mark.to_string().repeat(len));
        out.push('\n');
    }
    out
}

/// The fence `line` is, when it is one: its character, its length, and whether nothing follows
/// it (only such a line can close a fence).
fn fence(line: &str) -> Option<(char, usize, bool)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let mark = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.len() - rest.trim_start_matches(mark).len();
    let after = &rest[len..];
    // A backtick fence's info string cannot hold a backtick (CommonMark).
    let valid = indent <= 3 && len >= 3 && !(mark == '`' && after.contains('`'));
    valid.then(|| (mark, len, after.trim().is_empty()))
}

/// One line outside a fence, with `<` escaped except inside its code spans.
fn outside_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(['`', '<', '\\']) {
        out.push_str(&rest[..at]);
        let from = &rest[at..];
        if let Some(after) = from.strip_prefix('\\') {
            // An escaped character is literal; keep the pair as written.
            let next = after.chars().next().map_or(0, char::len_utf8);
            out.push_str(&from[..1 + next]);
            rest = &after[next..];
        } else if let Some(after) = from.strip_prefix('<') {
            out.push_str("&lt;");
            rest = after;
        } else {
            let ticks = from.len() - from.trim_start_matches('`').len();
            let after = &from[ticks..];
            match closing_run(after, ticks) {
                Some(end) => {
                    out.push_str(&from[..ticks + end + ticks]);
                    rest = &after[end + ticks..];
                }
                None => {
                    out.push_str(&from[..ticks]);
                    rest = after;
                }
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where in `text` a run of exactly `ticks` backticks starts.
fn closing_run(text: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = text[at..].find('`') {
        let start = at + found;
        let len = text[start..].len() - text[start..].trim_start_matches('`').len();
        if len == ticks {
            return Some(start);
        }
        at = start + len;
    }
    None
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
        // A shorter run inside a longer fence does not close it; the fence's own length does.
        report.findings[1].finding.body = "````\n```\ninside".into();
        let written = write(&report);
        assert!(written.contains("```\ninside\n````\n\n"), "{written}");
        report.findings[1].finding.body = "~~~\n<!--\n".into();
        assert!(write(&report).contains("~~~\n<!--\n~~~\n\n"));
    }

    #[test]
    fn html_in_a_body_or_the_summary_cannot_hide_what_follows() {
        let mut report = hostile_report();
        report.summary = "<!-- the summary".into();
        report.findings[0].finding.body = "<!--\nhidden?\n<details><summary>x".into();
        let written = write(&report);
        assert!(written.contains("> &lt;!-- the summary\n"), "{written}");
        assert!(
            written.contains("\n&lt;!--\nhidden?\n&lt;details>&lt;summary>x\n"),
            "{written}"
        );
        // Nothing the reviewer wrote opens HTML outside code: the second finding's heading is
        // not inside a comment.
        let before_second = &written[..written.find("### 2.").unwrap()];
        assert!(!before_second.contains("<!--\n"), "{written}");
        assert_eq!(
            written.matches("<!--").count(),
            1,
            "only the marker: {written}"
        );
    }

    #[test]
    fn code_keeps_its_angle_brackets() {
        let body = "Use `Vec<u8>` or ``a ` <b>`` here, not <b>; \\<i> and \\` <x>.\n```rust\nlet v: Vec<u8>;\n```";
        assert_eq!(
            escaped(body),
            "Use `Vec<u8>` or ``a ` <b>`` here, not &lt;b>; \\<i> and \\` &lt;x>.\n```rust\nlet v: Vec<u8>;\n```\n"
        );
        // A backtick run with no closing run on its line is literal, and what follows is not code.
        assert_eq!(escaped("a ` <!-- b"), "a ` &lt;!-- b\n");
    }
}
