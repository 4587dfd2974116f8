//! `sarif`: SARIF 2.1.0, the static-analysis format GitHub code scanning uploads
//! (`github/codeql-action/upload-sarif`), so findings appear as code-scanning alerts.
//!
//! One run. Its tool `zero` has one rule per [`Category`], always the same four, with stable
//! ids (`zero-review/correctness`, …), a name that is not the id, short and full
//! descriptions and help: code scanning keeps an alert by its rule and its line, so a
//! finding the reviewer words differently next time is still the same alert. One result per
//! finding: its rule, its level (the severity, whose words SARIF shares), its message (title,
//! explanation, suggested replacement), its place as a path relative to `%SRCROOT%` (declared
//! in `originalUriBaseIds`, percent-encoded) with the start and end lines, and two
//! fingerprints under `partialFingerprints`: GitHub's `primaryLocationLineHash` (computed as
//! its upload does, [`crate::findings::fingerprint::line_hashes`], when the review could read
//! the file; otherwise the upload computes it) and zero's own (`zeroReview/v1`), which GitHub
//! keeps but does not match alerts by.

use serde_json::{Value, json};

use crate::findings::Category;
use crate::findings::place::{Placed, Report};

/// The key of zero's own fingerprint in `partialFingerprints`.
const FINGERPRINT_KEY: &str = "zeroReview/v1";

/// The key GitHub matches alerts by in `partialFingerprints`.
const LINE_HASH_KEY: &str = "primaryLocationLineHash";

/// The base every result's path is relative to.
const SOURCE_ROOT: &str = "%SRCROOT%";

/// `report` as a SARIF log.
pub(super) fn write(report: &Report) -> String {
    let rules: Vec<Value> = Category::ALL.iter().map(|c| rule(*c)).collect();
    let results: Vec<Value> = report.findings.iter().map(result).collect();
    let mut driver = json!({
        "name": "zero",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rules,
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
            "originalUriBaseIds": {
                SOURCE_ROOT: {
                    "description": {
                        "text": "The root of the repository under review: every result's path is relative to it."
                    }
                }
            },
            "results": results,
        }],
    });
    format!("{log:#}\n")
}

/// The rule of `category`.
fn rule(category: Category) -> Value {
    let word = category.word();
    let mut name = word.to_string();
    name[..1].make_ascii_uppercase();
    let full = format!(
        "{} Reported by zero's review of a change: the model read the diff and the changed \
         files, and each result's message says what is wrong there, why it matters and how \
         to fix it.",
        category.description()
    );
    let help = format!(
        "{} Read the result's message: it explains the problem on the lines it marks and, \
         when the fix is that simple, gives the replacement. Dismiss the alert when the \
         reviewer is wrong; the same finding on the same line stays dismissed.",
        category.description()
    );
    json!({
        "id": category.rule_id(),
        "name": format!("{name}Problem"),
        "shortDescription": { "text": format!("{name}: {}", category.description()) },
        "fullDescription": { "text": full },
        "help": { "text": help, "markdown": format!("**{name}.** {help}") },
        "defaultConfiguration": { "level": "warning" },
        "properties": { "tags": [word] },
    })
}

/// The result of one finding.
fn result(placed: &Placed) -> Value {
    let finding = &placed.finding;
    let mut message = format!("{}\n\n{}", one_line(&finding.title), finding.body);
    if let Some(suggestion) = &finding.suggestion {
        message.push_str("\n\nSuggested replacement:\n");
        message.push_str(suggestion);
    }
    let index = Category::ALL
        .iter()
        .position(|c| *c == finding.category)
        .expect("every category has a rule");
    let mut fingerprints = json!({ FINGERPRINT_KEY: placed.fingerprint });
    if let Some(hash) = &placed.line_hash {
        fingerprints[LINE_HASH_KEY] = json!(hash);
    }
    json!({
        "ruleId": finding.category.rule_id(),
        "ruleIndex": index,
        "level": finding.severity.word(),
        "message": { "text": message },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&finding.path), "uriBaseId": SOURCE_ROOT },
                "region": { "startLine": finding.line, "endLine": placed.end_line },
            },
        }],
        "partialFingerprints": fingerprints,
    })
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
    use crate::findings::{Answer, Diff, Finding, Severity};

    #[test]
    fn writes_a_run_with_rules_and_placed_results() {
        let mut report = hostile_report();
        report.findings[0].line_hash = Some("abc:1".into());
        let log: Value = serde_json::from_str(&write(&report)).unwrap();
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "zero");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "zero-review/correctness",
                "zero-review/security",
                "zero-review/performance",
                "zero-review/maintainability"
            ]
        );
        assert_eq!(rules[1]["name"], "SecurityProblem");
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "zero-review/security");
        assert_eq!(result["ruleIndex"], 1);
        assert_eq!(result["level"], "error");
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "src/a%20b.rs");
        assert_eq!(location["region"]["startLine"], 2);
        assert_eq!(location["region"]["endLine"], 3);
        assert_eq!(
            result["partialFingerprints"][FINGERPRINT_KEY],
            report.findings[0].fingerprint
        );
        assert_eq!(result["partialFingerprints"][LINE_HASH_KEY], "abc:1");
        // Without the file's text the line hash is left to the upload.
        let second = &run["results"][1];
        assert_eq!(second["level"], "note");
        assert_eq!(second["ruleIndex"], 0);
        assert!(second["partialFingerprints"].get(LINE_HASH_KEY).is_none());
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
        let mut report = hostile_report();
        report.findings[0].line_hash = Some("abc:1".into());
        let log: Value = serde_json::from_str(&write(&report)).unwrap();
        let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }

    /// What GitHub's code scanning requires of an upload, as its documentation ("SARIF support
    /// for code scanning") and the SARIF multitool's GitHub rules state them, checked one by
    /// one: the tool's name; each rule with an id, a `name` that is not the id, a short and a
    /// full description and help; each result with a rule the run declares (its `ruleIndex`
    /// pointing at it), a message, a location whose URI is relative and whose base is declared,
    /// a start line, and the line hash; the limits (25,000 results a run, 1,000 locations a
    /// result, ids of at most 255 characters).
    #[test]
    fn meets_github_s_upload_rules() {
        let mut report = hostile_report();
        for placed in &mut report.findings {
            placed.line_hash = Some("0:1".into());
        }
        let log: Value = serde_json::from_str(&write(&report)).unwrap();
        let run = &log["runs"][0];
        let driver = &run["tool"]["driver"];
        assert!(!driver["name"].as_str().unwrap().is_empty());
        let rules = driver["rules"].as_array().unwrap();
        for rule in rules {
            let id = rule["id"].as_str().unwrap();
            assert!(!id.is_empty() && id.len() <= 255, "{rule}");
            assert_ne!(rule["name"].as_str().unwrap(), id, "{rule}");
            for text in [
                "/shortDescription/text",
                "/fullDescription/text",
                "/help/text",
            ] {
                let text = rule.pointer(text).and_then(Value::as_str).unwrap_or("");
                assert!(!text.is_empty(), "{rule} lacks {text}");
            }
            assert!(rule["shortDescription"]["text"].as_str().unwrap().len() <= 1024);
        }
        let bases = run["originalUriBaseIds"].as_object().unwrap();
        let results = run["results"].as_array().unwrap();
        assert!(results.len() <= 25_000);
        for result in results {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], result["ruleId"], "{result}");
            assert!(!result["message"]["text"].as_str().unwrap().is_empty());
            let locations = result["locations"].as_array().unwrap();
            assert!(!locations.is_empty() && locations.len() <= 1000);
            let location = &locations[0]["physicalLocation"];
            let uri = location["artifactLocation"]["uri"].as_str().unwrap();
            assert!(!uri.starts_with('/') && !uri.contains("://"), "{uri}");
            let base = location["artifactLocation"]["uriBaseId"].as_str().unwrap();
            assert!(bases.contains_key(base), "{base} is not declared");
            assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
            assert!(result["partialFingerprints"][LINE_HASH_KEY].is_string());
        }
    }

    #[test]
    fn a_reworded_finding_keeps_its_rule_and_its_line_hash() {
        let file = "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n";
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn add(a: i32, b: i32) -> i32 {\n-    a + b\n+    a - b\n }\n";
        let run = |title: &str, body: &str| {
            let answer = Answer {
                summary: "s".into(),
                findings: vec![Finding {
                    path: "src/lib.rs".into(),
                    line: 2,
                    end_line: None,
                    severity: Severity::Error,
                    category: Category::Correctness,
                    title: title.into(),
                    body: body.into(),
                    suggestion: None,
                }],
            };
            let (mut report, _) = Report::place(answer, &Diff::parse(diff).unwrap());
            report.hash_lines(|_| Some(file.to_string()));
            let log: Value = serde_json::from_str(&write(&report)).unwrap();
            log["runs"][0]["results"][0].clone()
        };
        let first = run("add subtracts", "`a - b` should be `a + b`.");
        let second = run("Wrong operator in add", "This subtracts instead of adding.");
        assert_eq!(first["ruleId"], second["ruleId"]);
        assert_eq!(
            first["partialFingerprints"][LINE_HASH_KEY],
            second["partialFingerprints"][LINE_HASH_KEY]
        );
        assert_eq!(
            first["partialFingerprints"][LINE_HASH_KEY],
            json!(crate::findings::fingerprint::line_hashes(file)[1])
        );
        // zero's own fingerprint follows the title, as documented; GitHub does not match by it.
        assert_ne!(
            first["partialFingerprints"][FINGERPRINT_KEY],
            second["partialFingerprints"][FINGERPRINT_KEY]
        );
    }
}
