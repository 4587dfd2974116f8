//! `sarif`: SARIF 2.1.0, the static-analysis format GitHub code scanning uploads
//! (`github/codeql-action/upload-sarif`), so findings appear as code-scanning alerts.
//!
//! One run, its tool `zero` with one rule per distinct finding title (the rule id is the
//! title as a slug: `review/<words>`), and one result per finding: its rule, its level (the
//! severity, whose words SARIF shares), its message (title, explanation, suggested
//! replacement), its place as a repository-relative URI (percent-encoded) with the start and
//! end lines, and the fingerprint under `partialFingerprints` (`zeroReview/v1`), which code
//! scanning keeps alerts apart and together by.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::findings::place::{Placed, Report};

/// The key of the fingerprint in `partialFingerprints`.
const FINGERPRINT_KEY: &str = "zeroReview/v1";

/// The longest rule id slug.
const SLUG_MAX: usize = 60;

/// `report` as a SARIF log.
pub(super) fn write(report: &Report) -> String {
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    let mut rule_list = Vec::new();
    let mut results = Vec::new();
    for placed in &report.findings {
        let id = rule_id(&placed.finding.title);
        let index = *rules.entry(id.clone()).or_insert_with(|| {
            rule_list.push(rule(&id, placed));
            rule_list.len() - 1
        });
        results.push(result(&id, index, placed));
    }
    let mut driver = json!({
        "name": "zero",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rule_list,
    });
    let repository = env!("CARGO_PKG_REPOSITORY");
    if !repository.is_empty() {
        driver["informationUri"] = json!(repository);
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": driver },
            "results": results,
        }],
    });
    format!("{log:#}\n")
}

/// The rule of the findings titled as `placed` is.
fn rule(id: &str, placed: &Placed) -> Value {
    let finding = &placed.finding;
    json!({
        "id": id,
        "name": id,
        "shortDescription": { "text": one_line(&finding.title) },
        "defaultConfiguration": { "level": finding.severity.word() },
    })
}

/// The result of one finding, under rule `id` at `index`.
fn result(id: &str, index: usize, placed: &Placed) -> Value {
    let finding = &placed.finding;
    let mut message = format!("{}\n\n{}", one_line(&finding.title), finding.body);
    if let Some(suggestion) = &finding.suggestion {
        message.push_str("\n\nSuggested replacement:\n");
        message.push_str(suggestion);
    }
    json!({
        "ruleId": id,
        "ruleIndex": index,
        "level": finding.severity.word(),
        "message": { "text": message },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&finding.path), "uriBaseId": "%SRCROOT%" },
                "region": { "startLine": finding.line, "endLine": placed.end_line },
            },
        }],
        "partialFingerprints": { FINGERPRINT_KEY: placed.fingerprint },
    })
}

/// `review/` and the title's words, lower-case ASCII letters and digits joined by `-`.
fn rule_id(title: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut slug = String::new();
    for word in words {
        if slug.len() + word.len() + 1 > SLUG_MAX {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        slug.push_str("finding");
    }
    format!("review/{slug}")
}

/// A relative path as a URI reference: every byte outside RFC 3986's unreserved characters
/// and `/` percent-encoded.
fn uri(path: &str) -> String {
    path.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// A title on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::tests::hostile_report;
    use super::*;

    #[test]
    fn writes_a_run_with_rules_and_placed_results() {
        let report = hostile_report();
        let log: Value = serde_json::from_str(&write(&report)).unwrap();
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "zero");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["id"], "review/bad-0a-and-set-output-name-x-y");
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], rules[0]["id"]);
        assert_eq!(result["level"], "error");
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "src/a%20b.rs");
        assert_eq!(location["region"]["startLine"], 2);
        assert_eq!(location["region"]["endLine"], 3);
        assert_eq!(
            result["partialFingerprints"][FINGERPRINT_KEY],
            report.findings[0].fingerprint
        );
        assert_eq!(run["results"][1]["level"], "note");
        assert_eq!(run["results"][1]["ruleIndex"], 1);
    }

    #[test]
    fn is_valid_against_the_published_schema() {
        // The published text's one faulty pattern (`language`'s stray `]`, a field zero does
        // not write) is not an ECMA-262 regex, which the meta-schema check refuses.
        let published = include_str!("../../../tests/integration/fixtures/sarif-schema-2.1.0.json");
        let text = published.replace(
            r"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$",
            r"^[a-zA-Z]{2}(-[a-zA-Z]{2})?$",
        );
        let schema: Value = serde_json::from_str(&text).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let log: Value = serde_json::from_str(&write(&hostile_report())).unwrap();
        let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn findings_with_one_title_share_a_rule() {
        let mut report = hostile_report();
        report.findings[1].finding.title = report.findings[0].finding.title.clone();
        let log: Value = serde_json::from_str(&write(&report)).unwrap();
        assert_eq!(
            log["runs"][0]["tool"]["driver"]["rules"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(log["runs"][0]["results"][1]["ruleIndex"], 0);
        assert_eq!(rule_id("¿¿"), "review/finding");
    }
}
