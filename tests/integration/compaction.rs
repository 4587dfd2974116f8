//! Compaction: a conversation that outgrows the model's window is summarised and goes on.
//! Through the real binary; the fake model reports the token counts that drive it.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::fake_model::{FakeModel, RecordedRequest, Reply, Route, Script};
use crate::support::zero::{Wire, stream_of, zero_std_with};

/// What the summary request says (zero's instructions to the model).
const SUMMARY_REQUEST: &str = "Summarize the conversation so far";
/// What the fake model answers it.
const SUMMARY: &str = "SUMMARY: a.txt holds the old notes.";
/// A line of a.txt, so the test can tell whether its content is still in the conversation.
const A_LINE: &str = "alpha-line-of-the-old-notes";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), format!("{A_LINE}\n").repeat(500)).unwrap();
    std::fs::write(dir.path().join("b.txt"), "bravo\n").unwrap();
    dir
}

fn read(path: &str) -> Reply {
    Reply::tool_call("read_file", json!({"path": path}))
}

fn summary_route() -> Route {
    Route::body_contains(SUMMARY_REQUEST).reply(Reply::text(SUMMARY))
}

/// A run in `workspace` with `read_file` its only tool (see [`ask_about_the_notes`]).
fn run(server: &FakeModel, workspace: &Path, flags: &[&str]) -> (i32, Vec<Value>) {
    let flags = [&["--enabled-tools", "read_file"][..], flags].concat();
    ask_about_the_notes(server, Wire::OpenAi, workspace, &flags)
}

/// `zero exec -o stream-json -C WORKSPACE FLAGS… "Tell me about the notes."` against `server`
/// on `wire`, to its end: the exit code and the events, checked against the stream's contract.
/// The compaction and small-model tests' one run.
pub(crate) fn ask_about_the_notes(
    server: &FakeModel,
    wire: Wire,
    workspace: &Path,
    flags: &[&str],
) -> (i32, Vec<Value>) {
    let output = zero_std_with(server, wire)
        .args(["exec", "-o", "stream-json", "-C"])
        .arg(workspace)
        .args(flags)
        .arg("Tell me about the notes.")
        .output()
        .unwrap();
    let (code, events) = stream_of(&output);
    (code, events)
}

fn compactions(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect()
}

fn conversation(request: &RecordedRequest) -> String {
    request.body["messages"].to_string()
}

#[test]
fn a_conversation_that_passes_the_window_is_compacted_and_goes_on_to_its_answer() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(read("a.txt").with_usage(1_000, 10))
            // The second request was 90k tokens of a 100k window: the third would pass 85 %.
            .reply(read("b.txt").with_usage(90_000, 10))
            .reply(Reply::text("The notes are old.")),
    );
    let (code, events) = run(&server, workspace.path(), &["--context-window", "100000"]);
    assert_eq!(code, 0, "{events:?}");
    let compactions = compactions(&events);
    assert_eq!(compactions.len(), 1, "{events:?}");
    let compaction = compactions[0];
    assert_eq!(compaction["reason"], "threshold");
    let before = compaction["tokensBefore"].as_u64().unwrap();
    let after = compaction["tokensAfter"].as_u64().unwrap();
    assert!(before > 85_000 && after < before / 2, "{compaction}");
    assert_eq!(compaction["messagesSummarized"], 2);

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The summary request offers no tools and carries the older turn (its output dropped:
    // by the counts reported, it would not fit the summary request whole).
    let summary = &requests[2];
    assert!(summary.raw_body.contains(SUMMARY_REQUEST));
    assert!(summary.body.get("tools").is_none(), "{}", summary.raw_body);
    let transcript = conversation(summary);
    assert!(
        transcript.contains("[tool call read_file]") && transcript.contains("a.txt"),
        "{transcript}"
    );
    assert!(
        !transcript.contains("bravo"),
        "the kept turn is not summarised: {transcript}"
    );
    // The conversation goes on from the task, the summary and the newest turn.
    let last = conversation(&requests[3]);
    assert!(last.contains("Tell me about the notes."), "{last}");
    assert!(last.contains(SUMMARY), "{last}");
    assert!(last.contains("bravo"), "{last}");
    assert!(!last.contains(A_LINE), "{last}");
    // The summary is zero's own business: it is not shown as the model's text.
    let shown: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(!shown.contains("SUMMARY"), "{shown}");
    assert_eq!(events.last().unwrap()["turns"], 3);
}

#[test]
fn a_context_length_error_compacts_once_and_retries_the_turn() {
    let workspace = workspace();
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(read("a.txt"))
            .reply(read("b.txt"))
            .reply(Reply::error(
                400,
                "This model's maximum context length is 8192 tokens",
            ))
            .reply(Reply::text("The notes are old.")),
    );
    let (code, events) = run(&server, workspace.path(), &[]);
    assert_eq!(code, 0, "{events:?}");
    let compactions = compactions(&events);
    assert_eq!(compactions.len(), 1, "{events:?}");
    assert_eq!(compactions[0]["reason"], "context_length");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // The retry is the refused turn again, compacted: the newest turn kept, a.txt summarised.
    let retry = conversation(&requests[4]);
    assert!(
        retry.contains(SUMMARY) && retry.contains("bravo"),
        "{retry}"
    );
    assert!(!retry.contains(A_LINE), "{retry}");
}

#[test]
fn a_run_that_still_does_not_fit_after_compacting_exits_3_with_context_length() {
    let workspace = workspace();
    let too_long = || Reply::error(400, "This model's maximum context length is 8192 tokens");
    let server = FakeModel::start(
        Script::new()
            .route(summary_route())
            .reply(read("a.txt"))
            .reply(read("b.txt"))
            .reply(too_long())
            .reply(too_long())
            .reply(Reply::text("never asked for")),
    );
    let (code, events) = run(&server, workspace.path(), &[]);
    assert_eq!(code, 3, "{events:?}");
    assert_eq!(compactions(&events).len(), 1, "{events:?}");
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["code"], "context_length");
    assert_eq!(server.requests().len(), 5);
}
