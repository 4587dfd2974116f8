//! The agent loop through the library: cancellation stops the in-flight request and the running
//! tool promptly. (Signals are wired to the same token by the lifecycle code.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::procs::processes_with;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zero::agent::{AgentRun, Ending};
use zero::cli::{Autonomy, OutputFormat, ProviderKind};
use zero::output::Output;
use zero::provider::{self, DEFAULT_MAX_OUTPUT_TOKENS, ProviderConfig, Tuning};
use zero::runtime::{RunId, Runtime, RuntimeConfig};
use zero::tools::{Policy, Registry, ToolContext, ToolFilter};

/// How long a cancelled run may take to return; far above the expected few milliseconds, far
/// below the stalled request or the 30 s sleep it interrupts.
const PROMPT: Duration = Duration::from_secs(5);

async fn run_cancelled_after(
    server: &FakeModel,
    cancel_when: impl Fn(&FakeModel) -> bool,
) -> (Ending, Duration) {
    // Commands run under guardians, which are the zero binary, not this test harness.
    zero::runtime::process::use_guardian_program(env!("CARGO_BIN_EXE_zero"));
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let provider = provider::build(&ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: server.base_url_openai(),
        api_key: None,
        model: "fake".into(),
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        tuning: Tuning::default(),
    })
    .unwrap();
    let policy = Policy::new(Autonomy::Medium, false, vec![root.clone()]);
    let home = tempfile::tempdir().unwrap();
    let tasks = Runtime::new(
        RuntimeConfig::new(RunId::generate(), home.path()),
        Arc::new(|_| {}),
    );
    let toolset = Registry::core().select(&ToolFilter::default(), &policy);
    let cancel = CancellationToken::new();
    let output = Output::new(OutputFormat::Json, Default::default());
    let agent = AgentRun {
        provider: provider.as_ref(),
        toolset: &toolset,
        context: ToolContext {
            workspace: root,
            policy: Arc::new(policy),
            cancel: cancel.clone(),
            plan_updates: None,
        },
        output: &output,
        max_turns: 10,
        tasks: &tasks,
    };
    let started = Instant::now();
    let run = agent.run("system".into(), "go".into());
    tokio::pin!(run);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut cancelled_at = None;
    let report = loop {
        tokio::select! {
            report = &mut run => break report,
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                if cancelled_at.is_none() && cancel_when(server) {
                    cancel.cancel();
                    cancelled_at = Some(Instant::now());
                }
                assert!(Instant::now() < deadline, "the run never reached the cancellation point");
            }
        }
    };
    let since_cancel = cancelled_at.map_or(started.elapsed(), |at| at.elapsed());
    (report.ending, since_cancel)
}

#[tokio::test]
async fn cancelling_stops_a_request_that_never_ends() {
    let server = FakeModel::start(Script::new().reply(Reply::text("partial").stall()));
    let (ending, took) = run_cancelled_after(&server, |s| !s.requests().is_empty()).await;
    assert!(matches!(ending, Ending::Cancelled), "{ending:?}");
    assert!(took < PROMPT, "took {took:?}");
}

#[tokio::test]
async fn cancelling_stops_a_running_command_and_its_process_group() {
    let nonce = format!("3000.{}", std::process::id());
    let server = FakeModel::start(
        Script::new()
            .reply(Reply::tool_call(
                "bash",
                json!({"command": format!("sleep {nonce}")}),
            ))
            .reply(Reply::text("never reached")),
    );
    let sleeping = |_: &FakeModel| !processes_with(&nonce).is_empty();
    let (ending, took) = run_cancelled_after(&server, sleeping).await;
    assert!(matches!(ending, Ending::Cancelled), "{ending:?}");
    assert!(took < PROMPT, "took {took:?}");
    let gone_by = Instant::now() + Duration::from_secs(5);
    while !processes_with(&nonce).is_empty() {
        assert!(
            Instant::now() < gone_by,
            "sleep {nonce} outlived the cancelled run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
