//! `json`: the summary and the placed findings, each with its fingerprint and its span, as one
//! JSON object (pretty, with a final newline) for scripts.

use serde_json::{Value, json};

use crate::findings::place::Report;

/// `report` as JSON.
pub(super) fn write(report: &Report) -> String {
    let findings: Vec<Value> = report
        .findings
        .iter()
        .map(|placed| {
            let mut finding = serde_json::to_value(&placed.finding).unwrap_or(Value::Null);
            finding["end_line"] = json!(placed.end_line);
            finding["fingerprint"] = json!(placed.fingerprint);
            finding
        })
        .collect();
    let value = json!({
        "summary": report.summary,
        "findings": findings,
    });
    format!("{value:#}\n")
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn every_field_round_trips() {
        let report = hostile_report();
        let value: Value = serde_json::from_str(&write(&report)).unwrap();
        assert_eq!(value["summary"], report.summary);
        let first = &value["findings"][0];
        assert_eq!(first["title"], report.findings[0].finding.title);
        assert_eq!(first["end_line"], 3);
        assert_eq!(first["severity"], "error");
        assert_eq!(first["fingerprint"], report.findings[0].fingerprint);
        assert_eq!(value["findings"][1]["end_line"], 1);
        assert!(value["findings"][1].get("suggestion").is_none());
    }
}
