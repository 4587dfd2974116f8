//! `bash` with `run_in_background`, `TaskOutput` and `TaskStop`, called as the model calls
//! them: through the registry, with real processes.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use zero::runtime::{RunId, Runtime, RuntimeConfig, TaskSpec};
use zero::tools::policy::Autonomy;
use zero::tools::{Policy, Registry, ToolContext, ToolError, ToolFilter, Toolset};

struct Setup {
    _home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    runtime: Arc<Runtime>,
    toolset: Toolset,
    context: ToolContext,
}

fn setup(max_running: usize) -> Setup {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut config = RuntimeConfig::new(RunId::generate(), home.path());
    // Commands run under guardians, which are the zero binary, not this test harness.
    config.zero_binary = env!("CARGO_BIN_EXE_zero").into();
    config.max_running = max_running;
    config.kill_grace = std::time::Duration::from_millis(300);
    let runtime = Arc::new(Runtime::new(config, Arc::new(|_| {})));
    let root = workspace.path().canonicalize().unwrap();
    let policy = Policy::new(Autonomy::Medium, false, vec![root.clone()]);
    let mut registry = Registry::with_runtime(Arc::clone(&runtime));
    zero::tasks::register(&mut registry, &runtime, None);
    let toolset = registry.select(&ToolFilter::default(), &policy);
    let context = ToolContext {
        workspace: root,
        policy: Arc::new(policy),
        cancel: CancellationToken::new(),
        plan_updates: None,
    };
    Setup {
        _home: home,
        workspace,
        runtime,
        toolset,
        context,
    }
}

impl Setup {
    async fn call(&self, tool: &str, args: Value) -> Result<String, ToolError> {
        self.toolset.call(tool, args, &self.context).await
    }

    async fn background(&self, command: &str) -> String {
        let started = self
            .call(
                "bash",
                json!({"command": command, "run_in_background": true}),
            )
            .await
            .unwrap();
        let id = started
            .split_whitespace()
            .find(|word| word.starts_with("task_"))
            .expect("the result names the task")
            .to_string();
        assert!(
            started.contains("TaskOutput") && started.contains("TaskStop"),
            "{started}"
        );
        id
    }
}

fn field<'a>(report: &'a str, name: &str) -> Option<&'a str> {
    report
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
}

#[tokio::test]
async fn a_background_command_is_followed_with_task_output() {
    let s = setup(8);
    let id = s.background("echo hello; exit 3").await;
    let report = s
        .call("TaskOutput", json!({"task_id": id, "block": true}))
        .await
        .unwrap();
    assert_eq!(field(&report, "status"), Some("failed"), "{report}");
    assert_eq!(field(&report, "exit_code"), Some("3"));
    assert_eq!(field(&report, "command"), Some("echo hello; exit 3"));
    assert!(report.ends_with("next_offset: 6\nhello\n"), "{report}");
    s.runtime.close().await;
}

#[tokio::test]
async fn task_output_pages_with_offsets_and_reports_a_timeout_as_still_running() {
    let s = setup(8);
    let id = s
        .background("printf 'abcdef'; while [ ! -e go ]; do sleep 0.02; done")
        .await;
    let report = s
        .call(
            "TaskOutput",
            json!({"task_id": id, "block": true, "timeout_ms": 200, "offset": 0, "max_bytes": 4}),
        )
        .await
        .unwrap();
    assert_eq!(field(&report, "status"), Some("running"));
    assert!(
        report.contains("still running after waiting 200 ms"),
        "{report}"
    );
    // The first bytes may still be on their way; what is there is read in order.
    let next: u64 = field(&report, "output")
        .and_then(|line| line.rsplit("next_offset: ").next())
        .map_or(0, |n| n.trim().parse().unwrap());
    assert!(next <= 4);
    std::fs::write(s.workspace.path().join("go"), "").unwrap();
    let rest = s
        .call(
            "TaskOutput",
            json!({"task_id": id, "block": true, "offset": next}),
        )
        .await
        .unwrap();
    assert_eq!(field(&rest, "status"), Some("completed"));
    let shown = rest.lines().last().unwrap();
    assert_eq!(shown, &"abcdef"[next as usize..]);
    let past = s
        .call("TaskOutput", json!({"task_id": id, "offset": 99}))
        .await
        .unwrap_err();
    assert!(matches!(past, ToolError::InvalidArguments(ref m) if m.contains("past the end")));
    s.runtime.close().await;
}

#[tokio::test]
async fn task_stop_stops_and_reports_the_final_state() {
    let s = setup(8);
    let id = s.background("sleep 100").await;
    let report = s.call("TaskStop", json!({"task_id": id})).await.unwrap();
    assert_eq!(field(&report, "status"), Some("killed"), "{report}");
    assert_eq!(field(&report, "reason"), Some("stopped by TaskStop"));
    let again = s.call("TaskStop", json!({"task_id": id})).await.unwrap();
    assert!(
        again.starts_with("note: the task had already ended"),
        "{again}"
    );
    assert_eq!(field(&again, "status"), Some("killed"));
    s.runtime.close().await;
}

#[tokio::test]
async fn the_limit_says_how_to_free_a_slot() {
    let s = setup(1);
    s.background("sleep 100").await;
    let refused = s
        .call(
            "bash",
            json!({"command": "true", "run_in_background": true}),
        )
        .await
        .unwrap_err();
    let ToolError::Failed(message) = refused else {
        panic!("{refused:?}");
    };
    assert!(
        message.contains("1 background tasks are already running"),
        "{message}"
    );
    assert!(
        message.contains("TaskStop") && message.contains("block=true"),
        "{message}"
    );
    s.runtime.close().await;
}

#[tokio::test]
async fn bad_ids_and_arguments_are_explained() {
    let s = setup(8);
    let malformed = s
        .call("TaskOutput", json!({"task_id": "12"}))
        .await
        .unwrap_err();
    assert!(matches!(malformed, ToolError::InvalidArguments(ref m) if m.contains("not a task id")));
    let unknown = s
        .call("TaskStop", json!({"task_id": "task_0123456789ab"}))
        .await
        .unwrap_err();
    assert!(matches!(unknown, ToolError::Failed(ref m) if m.contains("there is no task")));
    let timeout = s
        .call(
            "bash",
            json!({"command": "true", "run_in_background": true, "timeout_ms": 5}),
        )
        .await
        .unwrap_err();
    assert!(matches!(timeout, ToolError::InvalidArguments(_)));
    let too_much = s
        .call(
            "TaskOutput",
            json!({"task_id": "task_0123456789ab", "max_bytes": 10_000_000}),
        )
        .await
        .unwrap_err();
    assert!(matches!(too_much, ToolError::InvalidArguments(_)));

    // Another run's task is named as such.
    let other_run = RunId::generate();
    let mut config = RuntimeConfig::new(other_run.clone(), s._home.path());
    config.zero_binary = env!("CARGO_BIN_EXE_zero").into();
    let other = Runtime::new(config, Arc::new(|_| {}));
    let theirs = other
        .start(TaskSpec::shell("true", s.workspace.path()))
        .await
        .unwrap();
    let foreign = s
        .call("TaskOutput", json!({"task_id": theirs.id.as_str()}))
        .await
        .unwrap_err();
    assert_eq!(
        foreign,
        ToolError::Failed(format!(
            "task {} belongs to another run ({other_run})",
            theirs.id
        ))
    );
    other.close().await;
    s.runtime.close().await;
}

#[tokio::test]
async fn bash_offers_the_background_option_with_the_task_tools() {
    let policy = Policy::new(Autonomy::Medium, false, vec![std::env::temp_dir()]);
    let runtime = Arc::new(Runtime::new(
        RuntimeConfig::new(RunId::generate(), std::env::temp_dir().join("unused")),
        Arc::new(|_| {}),
    ));
    let mut with = Registry::with_runtime(Arc::clone(&runtime));
    zero::tasks::register(&mut with, &runtime, None);
    let toolset = with.select(&ToolFilter::default(), &policy);
    let bash = toolset.lookup("bash").unwrap();
    assert_eq!(
        bash.input_schema()["properties"]["run_in_background"]["type"],
        "boolean"
    );
    assert!(toolset.lookup("TaskStop").is_ok());
}
