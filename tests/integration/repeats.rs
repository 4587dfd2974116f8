//! A model that asks again for what it already has: the repeat is answered with a note rather
//! than run, the second repeat gets a request for the answer with no tools on offer, and a
//! call written out as that answer is no success. A call written out as text in place of an
//! answer is sent back once, and is no success the second time.

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::zero::{assert_stream_contract, events, zero_openai};

fn run(server: &FakeModel, ws: &tempfile::TempDir, auto: &str, code: i32) -> Vec<Value> {
    let output = zero_openai(server)
        .current_dir(ws.path())
        .args([
            "exec",
            "--auto",
            auto,
            "-o",
            "stream-json",
            "what does a.txt say?",
        ])
        .assert()
        .code(code);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, code);
    events
}

fn results(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| {
            (
                e["status"].as_str().unwrap().to_string(),
                e["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A workspace with `a.txt`, which says "alpha".
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    ws
}

fn read_a() -> Reply {
    Reply::tool_call("read_file", json!({"path": "a.txt"}))
}

#[test]
fn repeated_reads_are_not_run_again_and_then_the_answer_is_asked_for_without_tools() {
    let ws = workspace();
    let list = Reply::tool_call("list_directory", json!({}));
    // A cycle, not only a run of one call: read, list, read (known), list (known).
    let server = FakeModel::start(
        Script::new()
            .reply(read_a())
            .reply(list.clone())
            .reply(read_a())
            .reply(list)
            .reply(Reply::text("a.txt says alpha")),
    );
    let events = run(&server, &ws, "low", 0);
    let results = results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[0].0, "ok");
    assert!(results[0].1.contains("alpha"));
    for (status, output) in &results[2..] {
        assert_eq!(status, "error");
        assert!(output.contains("not run again"), "{output}");
    }
    let final_event = events.iter().find(|e| e["type"] == "final").unwrap();
    assert_eq!(final_event["text"], "a.txt says alpha");
    let requests = server.requests();
    let last = &requests.last().unwrap().body;
    assert!(
        last["tools"].as_array().is_none_or(Vec::is_empty),
        "the answer is asked for with no tools: {last}"
    );
    let earlier = &requests[requests.len() - 2].body;
    assert!(!earlier["tools"].as_array().unwrap().is_empty());
}

#[test]
fn a_change_in_between_makes_the_same_read_new_again() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(read_a())
            .reply(Reply::tool_call(
                "write_file",
                json!({"path": "a.txt", "content": "beta\n"}),
            ))
            .reply(read_a())
            .reply(Reply::text("a.txt says beta")),
    );
    let events = run(&server, &ws, "medium", 0);
    let results = results(&events);
    assert!(
        results.iter().all(|(status, _)| status == "ok"),
        "{results:?}"
    );
    assert!(results[2].1.contains("beta"), "{results:?}");
}

#[test]
fn the_same_failing_edit_is_not_run_a_third_time() {
    let ws = workspace();
    let edit = Reply::tool_call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "missing", "new_string": "x"}),
    );
    let server = FakeModel::start(
        Script::new()
            .reply(edit.clone())
            .reply(edit.clone())
            .reply(edit)
            .reply(Reply::text("I could not find the text to replace.")),
    );
    let events = run(&server, &ws, "medium", 0);
    let results = results(&events);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].1.contains("not run again"), "{results:?}");
    assert!(results[1].1.contains("not run again"), "{results:?}");
    assert!(results[2].1.contains("not run again"), "{results:?}");
}

#[test]
fn a_call_written_out_as_the_answer_is_incomplete_not_success() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(read_a())
            .reply(read_a())
            .reply(read_a())
            .reply(Reply::text(
                "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            )),
    );
    let events = run(&server, &ws, "low", 4);
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["code"], "incomplete");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("gave no answer"),
        "{error}"
    );
    assert!(
        events.iter().all(|e| e["type"] != "final"),
        "a written-out call is never delivered as the answer: {events:?}"
    );
}

/// The text of the last user message of `request`.
fn last_user_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

#[test]
fn a_call_written_as_text_goes_back_to_the_model_and_its_real_answer_counts() {
    let ws = workspace();
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text(
                "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            ))
            .reply(read_a())
            .reply(Reply::text("a.txt says alpha")),
    );
    let events = run(&server, &ws, "low", 0);
    let warning = events.iter().find(|e| e["type"] == "warning").unwrap();
    assert!(
        warning["message"].as_str().unwrap().contains("`read_file`"),
        "{warning}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let note = last_user_message(&requests[1].body);
    assert!(note.contains("not run"), "the model is told: {note}");
    assert!(note.contains("read_file"), "{note}");
    let results = results(&events);
    assert_eq!(
        results.len(),
        1,
        "the written call itself never ran: {results:?}"
    );
    let final_event = events.iter().find(|e| e["type"] == "final").unwrap();
    assert_eq!(final_event["text"], "a.txt says alpha");
}

#[test]
fn calls_written_as_text_twice_in_a_row_are_incomplete_not_success() {
    let ws = workspace();
    // What llama.cpp's stock template gets from a small model: markup, not a call.
    let markup = "<tools>\n<function name=\"read_file\" path=\"a.txt\"/>\n</tools>";
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::text(markup))
            .reply(Reply::text(markup)),
    );
    let events = run(&server, &ws, "low", 4);
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["code"], "incomplete");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("as text"), "{message}");
    assert!(message.contains("`read_file`"), "{message}");
    assert!(
        events.iter().all(|e| e["type"] != "final"),
        "markup is never delivered as the answer: {events:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_real_call_in_between_starts_the_count_of_written_calls_again() {
    let ws = workspace();
    let written = Reply::text("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}");
    let server = FakeModel::start(
        Script::new()
            .reply(written.clone())
            .reply(read_a())
            .reply(written)
            .reply(Reply::text("a.txt says alpha")),
    );
    let events = run(&server, &ws, "low", 0);
    let warnings = events.iter().filter(|e| e["type"] == "warning").count();
    assert_eq!(warnings, 2, "{events:?}");
    let final_event = events.iter().find(|e| e["type"] == "final").unwrap();
    assert_eq!(final_event["text"], "a.txt says alpha");
}

#[test]
fn an_answer_that_shows_a_call_in_prose_is_an_answer() {
    let ws = workspace();
    let answer = "To see it yourself, run read_file with \
                  {\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}.";
    let server = FakeModel::start(Script::new().reply(Reply::text(answer)));
    let events = run(&server, &ws, "low", 0);
    assert!(events.iter().all(|e| e["type"] != "warning"), "{events:?}");
    let final_event = events.iter().find(|e| e["type"] == "final").unwrap();
    assert_eq!(final_event["text"], answer);
}

#[test]
fn an_answer_the_output_schema_accepts_is_the_answer_even_shaped_like_a_call() {
    let ws = workspace();
    let schema = ws.path().join("call.schema.json");
    std::fs::write(
        &schema,
        json!({
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}
        })
        .to_string(),
    )
    .unwrap();
    let answer = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}";
    let server = FakeModel::start(Script::new().reply(Reply::text(answer)));
    let output = zero_openai(&server)
        .current_dir(ws.path())
        .args(["exec", "--output-schema"])
        .arg(&schema)
        .args(["-o", "stream-json", "which call reads a.txt?"])
        .assert()
        .code(0);
    let events = events(&output.get_output().stdout);
    assert_stream_contract(&events, 0);
    assert!(events.iter().all(|e| e["type"] != "warning"), "{events:?}");
    let final_event = events.iter().find(|e| e["type"] == "final").unwrap();
    assert_eq!(final_event["structured"]["name"], "read_file");
    assert_eq!(server.requests().len(), 1);
}
