//! `github`: one workflow command per finding (`::error file=…,line=…,endLine=…,title=…::…`),
//! which the Actions runner turns into an annotation on the pull request's diff.
//!
//! The runner reads every line of a step's output as a possible command, so a finding must
//! stay one line and its fields cannot end early: values are escaped as the runner unescapes
//! them (`%` → `%25`, `\r` → `%0D`, `\n` → `%0A`, and in properties also `:` → `%3A` and
//! `,` → `%2C`). Text that looks like `::add-mask::` or `::set-output` inside a finding is
//! then just text in an annotation.

use crate::findings::Severity;
use crate::findings::place::Report;

/// The workflow commands of `report`'s findings, one line each.
pub(super) fn write(report: &Report) -> String {
    let mut out = String::new();
    for placed in &report.findings {
        let finding = &placed.finding;
        let command = match finding.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut message = finding.body.clone();
        if let Some(suggestion) = &finding.suggestion {
            message.push_str("\n\nSuggested replacement:\n");
            message.push_str(suggestion);
        }
        out.push_str(&format!(
            "::{command} file={},line={},endLine={},title={}::{}\n",
            property(&finding.path),
            finding.line,
            placed.end_line,
            property(&finding.title),
            data(&message),
        ));
    }
    out
}

/// A command's message, escaped.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value, escaped.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn writes_one_escaped_command_per_finding() {
        let written = write(&hostile_report());
        assert_eq!(
            written,
            "::error file=src/a b.rs,line=2,endLine=3,title=Bad%3A %250A%2C %3A%3A and%0A%3A%3Aset-output name=x%3A%3Ay::line one%0D%0A::add-mask::secret%0A100%25 sure, a:b%0A%0ASuggested replacement:%0A```%0Alet x = 2;%0A```\n\
             ::notice file=src/a b.rs,line=1,endLine=1,title=A `note`::fine\n"
        );
        // Nothing a finding says starts a line of its own.
        for line in written.lines() {
            assert!(line.starts_with("::error file=") || line.starts_with("::notice file="));
        }
    }

    #[test]
    fn escaping_is_undone_by_the_runners_unescaping() {
        let hostile = "a%0A:b,c\r\n::x::%25";
        let unescape = |s: &str| {
            s.replace("%3A", ":")
                .replace("%2C", ",")
                .replace("%0D", "\r")
                .replace("%0A", "\n")
                .replace("%25", "%")
        };
        assert_eq!(unescape(&property(hostile)), hostile);
        assert_eq!(unescape(&data(hostile)), hostile);
    }
}
