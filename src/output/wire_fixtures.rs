//! Stream-json lines as zero wrote them before the schema's closed vocabularies became enums
//! (`tests/integration/fixtures/stream_json_v3.ndjson`: one line or more per event type,
//! every enum-valued field in each of its values). They must decode with today's types and
//! encode back to the same bytes: the wire of schema version 3 does not change, and a
//! specialist's stream, read back by `tasks::child`, keeps decoding.

use std::collections::BTreeSet;

use serde_json::Value;

use super::event::{Envelope, EventKind};

/// The old lines.
const FIXTURE: &str = include_str!("../../tests/integration/fixtures/stream_json_v3.ndjson");

/// The schema's documentation, whose tables name every event type and `error.code`.
const SCHEMA_DOC: &str = include_str!("../../docs/STREAM_JSON.md");

/// The backticked words in the first column of the table under `heading` in the schema's
/// documentation (its rows below the header).
fn documented(heading: &str) -> BTreeSet<String> {
    let section = SCHEMA_DOC
        .split_once(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("docs/STREAM_JSON.md has no {heading:?}"))
        .1;
    section
        .lines()
        .take_while(|line| !line.starts_with('#'))
        .skip_while(|line| !line.starts_with("|---"))
        .filter_map(|line| line.strip_prefix("| `"))
        .flat_map(|row| {
            let cell = row.split(" |").next().unwrap_or_default();
            cell.split('`')
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Each fixture line as JSON.
fn lines() -> impl Iterator<Item = (&'static str, Value)> {
    FIXTURE
        .lines()
        .map(|line| (line, serde_json::from_str(line).expect("a JSON line")))
}

/// The values of `field` over the fixture's events of type `kind`.
fn values_of(kind: &str, field: &str) -> BTreeSet<String> {
    lines()
        .filter(|(_, value)| value["type"] == kind)
        .filter_map(|(_, value)| value[field].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn old_lines_decode_and_encode_to_the_same_bytes() {
    for (line, value) in lines() {
        let event: EventKind =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("{line}\n{error}"));
        let again = serde_json::to_string(&Envelope {
            schema_version: value["schemaVersion"].as_u64().unwrap() as u32,
            run_id: value["runId"].as_str().unwrap(),
            event: &event,
        })
        .unwrap();
        assert_eq!(again, line);
    }
}

#[test]
fn old_lines_have_every_documented_event_type() {
    let types: BTreeSet<String> = lines()
        .map(|(_, value)| value["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, documented("## Events"));
}

#[test]
fn old_lines_have_every_documented_error_code() {
    assert_eq!(values_of("error", "code"), documented("### `error.code`"));
}

#[test]
fn a_word_outside_the_vocabulary_is_refused() {
    let (line, _) = lines()
        .find(|(_, value)| value["type"] == "tool_call")
        .unwrap();
    let value: Value = serde_json::from_str(line).unwrap();
    let known = value["sideEffect"].as_str().unwrap();
    let changed = line.replace(&format!("\"{known}\""), "\"teleport\"");
    assert!(
        serde_json::from_str::<EventKind>(&changed).is_err(),
        "{changed}"
    );
}
