//! The stream-json fixture (`fixtures/stream_json_v3.ndjson`) against what the binary writes.
//!
//! A unit test in `output` decodes every fixture line with zero's event types and encodes it
//! back to the same bytes. This module keeps the fixture honest the other way round: each
//! line a real run writes has only fields the fixture's lines of its type have, and each word
//! of a closed vocabulary it writes (a side effect, a status, a code, …) is one the fixture
//! holds. A new field or word fails here until the fixture has it, and so is checked by the
//! round trip too.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{finished_stream, zero, zero_openai};

/// The old lines.
const FIXTURE: &str = include_str!("fixtures/stream_json_v3.ndjson");

/// The fields whose values are free JSON, not part of the schema's shape.
const FREE: [&str; 3] = ["args", "inputSchema", "structured"];

/// The fields that hold a word of a closed vocabulary, as `type:path`.
const VOCABULARY: [&str; 28] = [
    "run_start:sandbox.filesystem",
    "run_start:promptStyle.style",
    "run_start:promptStyle.reason",
    "tools:rules[].effect",
    "hook:event",
    "hook:decision",
    "model_switch:code",
    "run_start:sandbox.network",
    "run_start:permissionsChanged.before.auto",
    "run_start:permissionsChanged.now.auto",
    "run_start:mcpServers[].transport",
    "run_start:mcpServers[].state",
    "tools:tools[].sideEffect",
    "tool_call:sideEffect",
    "permission_decision:decision",
    "tool_result:status",
    "plan:steps[].status",
    "task_started:kind",
    "task_finished:kind",
    "task_finished:status",
    "compaction:reason",
    "retry:code",
    "waiting:phase",
    "error:code",
    "run_end:status",
    "run_end:contextWindow.source",
    "verify_end:status",
    "run_end:verify[].status",
];

/// Every field path of `value` (`a.b`, `list[].c`), with the string found there, if any.
fn paths(value: &Value, prefix: &str, found: &mut Vec<(String, Option<String>)>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                let path = match prefix {
                    "" => key.clone(),
                    _ => format!("{prefix}.{key}"),
                };
                if FREE.contains(&key.as_str()) {
                    found.push((path, None));
                } else {
                    paths(field, &path, found);
                }
            }
        }
        Value::Array(items) => {
            found.push((format!("{prefix}[]"), None));
            for item in items {
                paths(item, &format!("{prefix}[]"), found);
            }
        }
        Value::String(word) => found.push((prefix.to_owned(), Some(word.clone()))),
        _ => found.push((prefix.to_owned(), None)),
    }
}

/// The `type:path` keys of an event, each with its string value.
fn keyed(event: &Value) -> Vec<(String, Option<String>)> {
    let kind = event["type"].as_str().expect("an event has a type");
    let mut found = Vec::new();
    paths(event, "", &mut found);
    found
        .into_iter()
        .map(|(path, word)| (format!("{kind}:{path}"), word))
        .collect()
}

/// What the fixture holds: every `type:path`, with the words found at each.
fn fixture() -> BTreeMap<String, BTreeSet<String>> {
    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in FIXTURE.lines() {
        let event: Value = serde_json::from_str(line).expect("a JSON line");
        for (key, word) in keyed(&event) {
            known.entry(key).or_default().extend(word);
        }
    }
    known
}

/// Checks `events` against the fixture: known fields only, known words only.
fn assert_in_fixture(events: &[Value]) {
    let known = fixture();
    for event in events {
        for (key, word) in keyed(event) {
            let words = known
                .get(&key)
                .unwrap_or_else(|| panic!("the fixture has no `{key}`; add it:\n{event}"));
            if let (true, Some(word)) = (VOCABULARY.contains(&key.as_str()), word) {
                assert!(
                    words.contains(&word),
                    "the fixture has no `{key}` {word:?}; add it:\n{event}"
                );
            }
        }
    }
}

#[test]
fn the_fixture_holds_every_vocabulary_field() {
    let known = fixture();
    for key in VOCABULARY {
        assert!(known.contains_key(key), "{key}");
    }
}

#[test]
fn a_listing_writes_what_the_fixture_holds() {
    let workspace = tempfile::tempdir().unwrap();
    let events = finished_stream(
        zero()
            .args(["exec", "--list-tools", "-o", "stream-json"])
            .current_dir(workspace.path()),
        0,
    );
    assert_in_fixture(&events);
}

#[test]
fn a_run_with_calls_of_every_kind_writes_what_the_fixture_holds() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "todo\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_calls(vec![
                ("read_file", json!({"path": "notes.txt"})),
                ("no_such_tool", json!({})),
            ]))
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "notes.txt", "content": "done\n"}),
            ))
            .reply(Reply::tool_call(
                "update_plan",
                json!({"plan": [{"step": "read", "status": "completed"},
                                {"step": "answer", "status": "in_progress"}]}),
            ))
            .reply(Reply::text("The note says todo.")),
    );
    let events = finished_stream(
        zero_openai(&server)
            .args([
                "exec",
                "--auto",
                "low",
                "-o",
                "stream-json",
                "read the note",
            ])
            .current_dir(workspace.path()),
        0,
    );
    let types: BTreeSet<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    for expected in ["tool_call", "permission_decision", "tool_result", "plan"] {
        assert!(types.contains(expected), "{expected}: {types:?}");
    }
    assert_in_fixture(&events);
}

#[test]
fn a_failed_run_writes_what_the_fixture_holds() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(Script::new().reply(Reply::error(401, "bad key")));
    let events = finished_stream(
        zero_openai(&server)
            .args(["exec", "-o", "stream-json", "hello"])
            .current_dir(workspace.path()),
        3,
    );
    assert!(events.iter().any(|e| e["code"] == "auth"), "{events:?}");
    assert_in_fixture(&events);
}

#[test]
fn a_verified_run_writes_what_the_fixture_holds() {
    let workspace = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text("Done."))
            .reply(Reply::text("Fixed.")),
    );
    let events = finished_stream(
        zero_openai(&server)
            .args([
                "exec",
                "-o",
                "stream-json",
                "--verify",
                "test -e fixed || { touch fixed; echo not yet; exit 1; }",
                "fix it",
            ])
            .current_dir(workspace.path()),
        0,
    );
    let types: BTreeSet<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    for expected in ["verify_start", "verify_end"] {
        assert!(types.contains(expected), "{expected}: {types:?}");
    }
    assert_in_fixture(&events);
}
