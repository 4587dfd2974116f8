//! The agent loop through the library: cancellation stops the in-flight request and the running
//! tool promptly. (Signals are wired to the same token by the lifecycle code.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use zero::agent::{AgentRun, Ending};
use zero::hooks::Hooks;
use zero::output::Output;
use zero::output::OutputFormat;
use zero::provider::ProviderKind;
use zero::provider::{
    self, ContextWindow, DEFAULT_MAX_OUTPUT_TOKENS, ProviderConfig, Tuning, WindowLookup,
};
use zero::rules::{Narrowing, RuleSet};
use zero::runtime::{RunId, Runtime, RuntimeConfig};
use zero::tools::policy::Autonomy;
use zero::tools::{Policy, Registry, ToolContext, ToolFilter};
use zero::usage::{Ledger, Limits};

use crate::support::fake_model::{FakeModel, Reply, Script};
use crate::support::procs::{assert_gone_soon, processes_with};
use crate::support::wait::{DEADLINE, wait_for};

/// How long a cancelled run may take to return; far above the expected few milliseconds, far
/// below the stalled request or the 30 s sleep it interrupts.
const PROMPT: Duration = Duration::from_secs(5);

/// Runs the agent loop against `server` and cancels it, from another thread as a signal
/// would, once `cancel_when` holds; returns how the run ended and how long it took to return
/// after the cancellation.
fn run_cancelled_after(
    server: &FakeModel,
    cancel_when: impl Fn(&FakeModel) -> bool + Sync,
) -> (Ending, Duration) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _in_tokio = tokio.enter();
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let provider = provider::build(
        &ProviderConfig {
            kind: ProviderKind::Openai,
            base_url: server.base_url_openai(),
            api_key: None,
            model: "fake".into(),
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            reasoning_effort: None,
            fallbacks: Vec::new(),
            tuning: Tuning::default(),
            socket: None,
        },
        "run_agent_test",
    )
    .unwrap();
    let policy = Policy::new(Autonomy::Medium, false, vec![root.clone()]);
    let home = tempfile::tempdir().unwrap();
    let mut config = RuntimeConfig::new(RunId::generate(), home.path());
    // Commands run under guardians, which are the zero binary, not this test harness.
    config.zero_binary = env!("CARGO_BIN_EXE_zero").into();
    let tasks = Arc::new(Runtime::new(config, Arc::new(|_| {})));
    let toolset =
        Registry::with_runtime(Arc::clone(&tasks)).select(&ToolFilter::default(), &policy);
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
        runtime: &tasks,
        ledger: &Ledger::new(Limits::default(), Default::default(), None),
        window: WindowLookup::known(ContextWindow::DEFAULT),
        schema: None,
        transcript: None,
        hooks: &Hooks::none(),
        rules: &RuleSet::default(),
        narrowing: &Narrowing::default(),
        first_reads: Vec::new(),
        checks: &zero::verify::Checks::none(),
    };
    let started = Instant::now();
    let ended = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            // A watcher that gives up ends the run too, so the test fails instead of hanging.
            let _on_failure = cancel.clone().drop_guard();
            let reached = wait_for("the run to reach the cancellation point", DEADLINE, || {
                if ended.load(Ordering::SeqCst) {
                    return Some(false);
                }
                cancel_when(server).then_some(true)
            });
            reached.then(|| {
                cancel.cancel();
                Instant::now()
            })
        });
        let report = tokio.block_on(agent.run(
            "system".into(),
            Vec::new(),
            zero::provider::Message::user("go"),
        ));
        let returned = Instant::now();
        ended.store(true, Ordering::SeqCst);
        let cancelled_at = watcher
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let since_cancel = returned.duration_since(cancelled_at.unwrap_or(started));
        (report.ending, since_cancel)
    })
}

#[test]
fn cancelling_stops_a_request_that_never_ends() {
    let server = FakeModel::start(Script::new().reply(Reply::text("partial").stall()));
    let (ending, took) = run_cancelled_after(&server, |s| !s.requests().is_empty());
    assert!(matches!(ending, Ending::Cancelled), "{ending:?}");
    assert!(took < PROMPT, "took {took:?}");
}

#[test]
fn cancelling_stops_a_running_command_and_its_process_group() {
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
    let (ending, took) = run_cancelled_after(&server, sleeping);
    assert!(matches!(ending, Ending::Cancelled), "{ending:?}");
    assert!(took < PROMPT, "took {took:?}");
    assert_gone_soon(&nonce);
}
