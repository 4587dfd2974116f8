//! `gitlab`: GitLab's Code Quality report, a CodeClimate JSON array, which a job exposes as
//! `artifacts:reports:codequality` for the merge request's widget and diff.
//!
//! Each finding has the fields GitLab requires: `description` (the title), `check_name` (its
//! category's rule, as SARIF's),
//! `fingerprint`, `severity` and `location.path` with `location.lines.begin` (and `end`);
//! `content.body` holds the explanation. Severities map onto CodeClimate's five words as
//! zero's three mean them: `error` → `critical` (a bug or vulnerability to fix before
//! merging; `blocker` is kept for what a person decides), `warning` → `major`, `note` →
//! `info`.

use serde_json::{Value, json};

use crate::findings::place::Report;
use crate::findings::{Category, Severity};

/// CodeClimate's word for `severity`; see the module documentation.
fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Note => "info",
    }
}

/// CodeClimate's category for `category`.
fn category(category: Category) -> &'static str {
    match category {
        Category::Correctness => "Bug Risk",
        Category::Security => "Security",
        Category::Performance => "Performance",
        Category::Maintainability => "Clarity",
    }
}

/// `report` as a Code Quality report.
pub(super) fn write(report: &Report) -> String {
    let issues: Vec<Value> = report
        .findings
        .iter()
        .map(|placed| {
            let finding = &placed.finding;
            let mut body = finding.body.clone();
            if let Some(suggestion) = &finding.suggestion {
                body.push_str("\n\nSuggested replacement:\n\n");
                body.push_str(suggestion);
            }
            json!({
                "type": "issue",
                "check_name": finding.category.rule_id(),
                "description": finding.title,
                "content": { "body": body },
                "categories": [category(finding.category)],
                "fingerprint": placed.fingerprint,
                "severity": severity(finding.severity),
                "location": {
                    "path": finding.path,
                    "lines": { "begin": finding.line, "end": placed.end_line },
                },
            })
        })
        .collect();
    format!("{:#}\n", Value::Array(issues))
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn every_issue_has_the_fields_gitlab_requires() {
        let report = hostile_report();
        let issues: Value = serde_json::from_str(&write(&report)).unwrap();
        let issues = issues.as_array().unwrap();
        assert_eq!(issues.len(), 2);
        for (issue, placed) in issues.iter().zip(&report.findings) {
            for pointer in [
                "/description",
                "/check_name",
                "/fingerprint",
                "/severity",
                "/location/path",
                "/location/lines/begin",
            ] {
                assert!(issue.pointer(pointer).is_some(), "{pointer} in {issue}");
            }
            assert_eq!(issue["fingerprint"], placed.fingerprint);
            assert_eq!(issue["location"]["path"], "src/a b.rs");
        }
        assert_eq!(issues[0]["severity"], "critical");
        assert_eq!(issues[0]["description"], report.findings[0].finding.title);
        assert_eq!(issues[1]["severity"], "info");
        assert_eq!(issues[0]["check_name"], "zero-review/security");
        assert_eq!(issues[0]["categories"], json!(["Security"]));
    }
}
