//! What a specialist's end looks like to the model that launched it: a long final answer
//! (once reported as "no final answer", because its one stream-json line did not fit the
//! window read back) comes back capped, with a note saying how much was left out and the
//! `TaskOutput` call that reads on — from `Task` in the foreground, from `TaskOutput` in the
//! background, typed answers too — and a specialist ended by a signal is reported with the
//! signal. Through the real binary: the specialists are child `zero exec` processes talking to
//! the same fake model as their parent.

use serde_json::json;

use crate::support::fake_model::{CHILD, FakeModel, Reply, Route, Script, TASK_ID};
use crate::support::runs::Home;
use crate::support::zero::{Wire, finished_stream, zero_std_with};

/// The most of an answer a `Task` result holds.
const TASK_CAP: usize = 32 * 1024;
/// The most of an answer a `TaskOutput` result holds by default.
const OUTPUT_CAP: usize = 16 * 1024;

/// `zero exec --auto <auto> -o stream-json` in a fresh workspace and data directory, against
/// `server`; asserts it ended with exit code 0 and returns each tool result's status and what
/// the model was told (the whole of it, as the last request carried it: the events cut it).
fn tool_outputs(server: &FakeModel, auto: &str) -> Vec<(String, String)> {
    let workspace = tempfile::tempdir().unwrap();
    let home = Home::new();
    let events = finished_stream(
        assert_cmd::Command::from_std(zero_std_with(server, Wire::OpenAi))
            .env("ZERO_HOME", home.path())
            .env("ZERO_KILL_GRACE_MS", "300")
            .args(["exec", "--auto", auto, "-o", "stream-json", "delegate"])
            .current_dir(workspace.path()),
        0,
    );
    let statuses = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["status"].as_str().unwrap().to_string());
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| !r.raw_body.contains(CHILD))
        .unwrap();
    let told = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    let statuses: Vec<String> = statuses.collect();
    assert_eq!(statuses.len(), told.len());
    statuses.into_iter().zip(told).collect()
}

/// An answer of `len` ASCII bytes in numbered words, so that every piece of it is unique.
fn long_answer(len: usize) -> String {
    let mut answer = String::with_capacity(len + 16);
    let mut word = 0;
    while answer.len() < len {
        answer.push_str(&format!("w{word:07} "));
        word += 1;
    }
    answer.truncate(len);
    answer
}

/// A child that answers with `text`, streamed in large pieces.
fn child_answering(text: &str) -> Route {
    Route::body_contains(CHILD).reply(Reply::text(text).in_pieces(4096))
}

/// Asserts `output` shows exactly `answer[from..to]` and, when the answer goes on, the call
/// that reads on from `to`.
fn assert_shows(output: &str, answer: &str, from: usize, to: usize) {
    let piece = &answer[from..to];
    assert!(
        output.contains(piece),
        "bytes {from}..{to} are not shown: {}",
        &output[..output.len().min(1500)]
    );
    if to < answer.len() {
        // Not one byte more than the piece.
        let longer = &answer[from..to + 1];
        assert!(
            !output.contains(longer),
            "more than bytes {from}..{to} shown"
        );
        assert!(
            output.contains(&format!("\"answer\": true, \"offset\": {to}}}")),
            "{}",
            &output[output.len().saturating_sub(600)..]
        );
        assert!(
            output.contains(&format!("[answer cut: {} bytes in all", answer.len())),
            "{}",
            &output[output.len().saturating_sub(600)..]
        );
    }
}

#[test]
fn a_long_foreground_answer_comes_back_capped_and_is_read_on_in_pieces() {
    let answer = long_answer(320 * 1024);
    let second = TASK_CAP + 150_000;
    let server = FakeModel::start(
        Script::new()
            .route(child_answering(&answer))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "Write it all down."}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "answer": true, "offset": TASK_CAP,
                       "max_bytes": 150_000}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "answer": true, "offset": second,
                       "max_bytes": 150_000}),
            ))
            .reply(Reply::text("read it all")),
    );
    let results = tool_outputs(&server, "medium");
    let (status, task) = &results[0];
    assert_eq!(status, "ok", "{task}");
    assert!(task.contains("status: completed"), "{task}");
    assert!(!task.contains("no final answer"), "{task}");
    assert_shows(task, &answer, 0, TASK_CAP);
    let (_, next) = &results[1];
    assert!(
        next.contains(&format!(
            "answer: {} bytes in all; showing bytes {TASK_CAP}..{second}",
            answer.len()
        )),
        "{next}"
    );
    assert_shows(next, &answer, TASK_CAP, second);
    let (_, last) = &results[2];
    assert_shows(last, &answer, second, answer.len());
    assert!(!last.contains("Read on"), "{last}");
}

#[test]
fn a_long_background_answer_is_shown_by_task_output_capped() {
    let answer = long_answer(320 * 1024);
    let server = FakeModel::start(
        Script::new()
            .route(child_answering(&answer))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "Write it all down.",
                       "run_in_background": true}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 30_000}),
            ))
            .reply(Reply::text("read the start")),
    );
    let results = tool_outputs(&server, "medium");
    let (status, waited) = &results[1];
    assert_eq!(status, "ok", "{waited}");
    assert!(waited.contains("status: completed"), "{waited}");
    assert!(
        waited.contains(&format!(
            "answer: {} bytes in all; showing bytes 0..{OUTPUT_CAP}",
            answer.len()
        )),
        "{waited}"
    );
    assert_shows(waited, &answer, 0, OUTPUT_CAP);
}

#[test]
fn a_long_typed_answer_comes_back_capped_as_compact_json() {
    let items: Vec<String> = (0..4000).map(|n| format!("item number {n:05}")).collect();
    let value = json!({"items": items});
    let compact = value.to_string();
    assert!(compact.len() > 2 * TASK_CAP);
    let server = FakeModel::start(
        Script::new()
            .route(child_answering(&compact))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "List the items.",
                       "output_schema": {"type": "object", "required": ["items"]}}),
            ))
            .reply(Reply::text("got them")),
    );
    let results = tool_outputs(&server, "medium");
    let (status, task) = &results[0];
    assert_eq!(status, "ok", "{task}");
    assert_shows(task, &compact, 0, TASK_CAP);
}

#[test]
fn a_foreground_specialist_ended_by_a_signal_is_reported_with_it() {
    // The specialist's own command SIGKILLs it: the command's parent is its guardian, whose
    // parent is the specialist's `zero exec`. (At `--auto high`, where nothing confines who a
    // command may signal.)
    let kill_the_specialist = "kill -KILL $(awk '{print $4}' /proc/$PPID/stat)";
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::tool_call(
                "bash",
                json!({"command": kill_the_specialist}),
            )))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "End yourself."}),
            ))
            .reply(Reply::text("it died")),
    );
    let results = tool_outputs(&server, "high");
    let (status, task): &(String, String) = &results[0];
    assert_eq!(status, "error", "{task}");
    assert!(task.contains("status: failed"), "{task}");
    assert!(task.contains("signal: 9 (SIGKILL)"), "{task}");
    assert!(!task.contains("exit_code: none"), "{task}");
}
