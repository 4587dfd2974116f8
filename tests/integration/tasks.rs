//! The `Task` tool end to end: the real binary launches specialists as child `zero exec`
//! processes, which talk to the same fake model server as their parent. A child's requests
//! are told apart by the "## Assigned task" heading of the prompt the parent gives it, which
//! never appears in the parent's own requests.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::fake_model::{
    CHILD, FakeModel, RecordedRequest, Reply, Route, Script, TASK_ID,
};
use crate::support::procs::{KillOnDrop, assert_gone_soon, nonce};
use crate::support::zero::{Wire, assert_stream_contract, events, zero_std_with};

const API_KEY: &str = "sk-task-test-secret-4711";

/// A parent run in `workspace` with its data in `home`; returns its stream-json events.
fn run_parent(server: &FakeModel, workspace: &Path, home: &Path, prompt: &str) -> Vec<Value> {
    run_parent_with(server, workspace, home, prompt, 300, &[])
}

/// [`run_parent`] with its tasks (and theirs) given `grace_ms` between SIGTERM and SIGKILL,
/// and `extra` flags for `zero exec`.
fn run_parent_with(
    server: &FakeModel,
    workspace: &Path,
    home: &Path,
    prompt: &str,
    grace_ms: u64,
    extra: &[&std::ffi::OsStr],
) -> Vec<Value> {
    let output = zero_std_with(server, Wire::OpenAi)
        .env("ZERO_HOME", home)
        .env("ZERO_API_KEY", API_KEY)
        .env("ZERO_KILL_GRACE_MS", grace_ms.to_string())
        .args(["exec", "--auto", "medium", "-o", "stream-json"])
        .args(extra)
        .arg(prompt)
        .current_dir(workspace)
        .output()
        .unwrap();
    let events = events(&output.stdout);
    assert_stream_contract(&events, 0);
    events
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The requests the children made.
fn child_requests(server: &FakeModel) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains(CHILD))
        .collect()
}

fn offered_tools(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The entries of a directory, sorted (none when it does not exist).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|read| read.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

#[test]
fn a_foreground_specialist_returns_its_answer() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("main.rs"), "fn main() {}\n").unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::text("main is in main.rs:1")))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "Where is main defined?",
                       "description": "find main"}),
            ))
            .reply(Reply::text("main.rs:1, says the explorer")),
    );
    let events = run_parent(&server, workspace.path(), home.path(), "find main");

    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["status"], "ok", "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("main is in main.rs:1"), "{output}");
    assert!(output.contains("status: completed"), "{output}");
    let started = of_type(&events, "task_started")[0];
    assert_eq!(started["kind"], "specialist");
    assert_eq!(started["name"], "explorer");
    let finished = of_type(&events, "task_finished")[0];
    assert_eq!(finished["status"], "completed");
    assert_eq!(finished["exitCode"], 0);
    // The child's events stay in its output file, not the parent's stdout.
    assert_eq!(of_type(&events, "run_start").len(), 1);

    let children = child_requests(&server);
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert_eq!(
        offered_tools(child),
        ["glob", "grep", "list_directory", "read_file"]
    );
    assert!(child.raw_body.contains("Where is main defined?"));
    // The key reached the child through its environment, and only in the header.
    assert_eq!(
        child.header("authorization"),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert!(!child.raw_body.contains(API_KEY));

    // The prompt file lived in the run directory, which is gone; the workspace is untouched.
    assert_eq!(entries(&home.path().join("runs")), Vec::<PathBuf>::new());
    assert_eq!(
        entries(workspace.path()),
        [workspace.path().join("main.rs")]
    );
    let outputs: Vec<PathBuf> = entries(&home.path().join("tasks"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson"))
        .collect();
    assert_eq!(outputs.len(), 1);
    let stream = std::fs::read_to_string(&outputs[0]).unwrap();
    assert!(stream.contains(r#""type":"final""#), "{stream}");
}

#[test]
fn a_background_specialist_finishes_on_its_own() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(Route::body_contains(CHILD).reply(Reply::text("the worker is done")))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Do the thing.", "run_in_background": true}),
            ))
            .reply(Reply::tool_call(
                "TaskOutput",
                json!({"task_id": TASK_ID, "block": true, "timeout_ms": 30000}),
            ))
            .reply(Reply::text("the worker finished")),
    );
    let events = run_parent(&server, workspace.path(), home.path(), "do it");

    let results = of_type(&events, "tool_result");
    let started = results[0]["output"].as_str().unwrap();
    assert!(
        started.contains("background task task_") && started.contains("TaskOutput"),
        "{started}"
    );
    let waited = results[1]["output"].as_str().unwrap();
    assert!(
        waited.contains("status: completed") && waited.contains("the worker is done"),
        "TaskOutput blocks until the child ends and shows its answer: {waited}"
    );
    let finished = of_type(&events, "task_finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["name"], "worker");
    assert_eq!(finished[0]["status"], "completed");
    assert_eq!(of_type(&events, "final")[0]["text"], "the worker finished");

    // A worker has bash, so it may manage its own background shells, but never launch tasks.
    let tools = offered_tools(&child_requests(&server)[0]);
    assert!(tools.contains(&"bash".to_string()), "{tools:?}");
    assert!(tools.contains(&"TaskOutput".to_string()), "{tools:?}");
    assert!(tools.contains(&"TaskStop".to_string()), "{tools:?}");
    assert!(!tools.contains(&"Task".to_string()), "{tools:?}");
    let id = finished[0]["taskId"].as_str().unwrap();
    let output = home.path().join("tasks").join(format!("{id}.ndjson"));
    let stream = std::fs::read_to_string(output).unwrap();
    assert!(stream.contains("the worker is done"), "{stream}");
}

#[test]
fn closing_the_run_stops_a_specialist_and_its_commands() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let marker = nonce();
    let _cleanup = KillOnDrop(marker.clone());
    let server = FakeModel::start(
        sleeping_child(&marker)
            .reply(Reply::text("leaving it running"))
            .reply(Reply::text("stop it then")),
    );
    // A generous grace period: the child must end by its own SIGTERM handling, not SIGKILL.
    let events = run_parent_with(
        &server,
        workspace.path(),
        home.path(),
        "start and leave",
        5000,
        &[],
    );

    let results = of_type(&events, "tool_result");
    assert_eq!(
        results[1]["status"], "ok",
        "the child's sleep never started"
    );
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let finished = kinds.iter().position(|k| *k == "task_finished").unwrap();
    assert!(finished < kinds.len() - 1);
    assert_eq!(events[finished]["status"], "killed");
    assert_eq!(of_type(&events, "final")[0]["text"], "stop it then");
    // The child heard SIGTERM, cancelled its run, closed, and said so.
    assert_eq!(events[finished]["exitCode"], 143, "{}", events[finished]);
    let id = events[finished]["taskId"].as_str().unwrap();
    let stream =
        std::fs::read_to_string(home.path().join("tasks").join(format!("{id}.ndjson"))).unwrap();
    // The file holds the child's stderr too: its events are the JSON lines.
    let child: Vec<Value> = stream
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_stream_contract(&child, 143);
    assert_eq!(of_type(&child, "error")[0]["code"], "terminated");

    assert_gone_soon(&marker);
}

/// A script whose parent starts a background `worker` whose own foreground `bash` sleeps with
/// `marker` in its command line, and then waits until that sleep exists.
pub(crate) fn sleeping_child(marker: &str) -> Script {
    // Matched as a regex, so this command's own command line (with `\.`) does not count.
    let escaped = marker.replace('.', "\\.");
    let wait_for_sleep = format!(
        "for i in $(seq 200); do grep -qs '{escaped}' /proc/[0-9]*/cmdline && exit 0; \
         sleep 0.05; done; exit 1"
    );
    Script::new()
        .route(Route::body_contains(CHILD).reply(Reply::tool_call(
            "bash",
            json!({"command": format!("sleep {marker}")}),
        )))
        .reply(Reply::tool_call(
            "Task",
            json!({"name": "worker", "prompt": "Wait a long time.", "run_in_background": true}),
        ))
        .reply(Reply::tool_call("bash", json!({"command": wait_for_sleep})))
}

#[test]
fn task_stop_stops_a_running_specialist_and_its_commands() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let marker = nonce();
    let _cleanup = KillOnDrop(marker.clone());
    let server = FakeModel::start(
        sleeping_child(&marker)
            .reply(Reply::tool_call("TaskStop", json!({"task_id": TASK_ID})))
            .reply(Reply::text("stopped it")),
    );
    let events = run_parent(&server, workspace.path(), home.path(), "start, then stop");
    let results = of_type(&events, "tool_result");
    assert_eq!(
        results[1]["status"], "ok",
        "the child's sleep never started"
    );
    let stopped = results[2]["output"].as_str().unwrap();
    assert!(stopped.contains("killed"), "{stopped}");
    assert_gone_soon(&marker);
    let finished = of_type(&events, "task_finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "killed");
    assert_eq!(of_type(&events, "final")[0]["text"], "stopped it");
}

#[test]
fn unknown_and_failing_specialists_are_error_results() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD).reply(Reply::error(400, "the child's request is bad")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "nobody", "prompt": "Anything."}),
            ))
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "explorer", "prompt": "Look around."}),
            ))
            .reply(Reply::text("both failed")),
    );
    let events = run_parent(&server, workspace.path(), home.path(), "try");

    let results = of_type(&events, "tool_result");
    assert_eq!(results[0]["status"], "error");
    let unknown = results[0]["output"].as_str().unwrap();
    assert!(
        unknown.contains("unknown specialist `nobody`")
            && unknown.contains("code-review, explorer, worker"),
        "{unknown}"
    );
    assert_eq!(results[1]["status"], "error");
    let failed = results[1]["output"].as_str().unwrap();
    assert!(
        failed.contains("status: failed")
            && failed.contains("exit_code: 3")
            && failed.contains("the child's request is bad"),
        "{failed}"
    );
    assert_eq!(of_type(&events, "task_finished")[0]["status"], "failed");
}

#[test]
fn a_specialist_may_write_where_its_parent_may() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let target = extra.path().canonicalize().unwrap().join("notes.txt");
    let server = FakeModel::start(
        Script::new()
            .route(
                Route::body_contains(CHILD)
                    .reply(Reply::tool_call(
                        "write_file",
                        json!({"path": target, "content": "from the worker"}),
                    ))
                    .reply(Reply::text("wrote it")),
            )
            .reply(Reply::tool_call(
                "Task",
                json!({"name": "worker", "prompt": "Write the notes."}),
            ))
            .reply(Reply::text("the worker wrote the notes")),
    );
    let events = run_parent_with(
        &server,
        workspace.path(),
        home.path(),
        "delegate",
        300,
        &["--add-dir".as_ref(), extra.path().as_os_str()],
    );
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "from the worker");
}
