//! The agent loop and background tasks: a model that answers while a task still runs is told
//! once, and a second answer ends the run, whose close stops the task and reports it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zero::agent::{AgentRun, Ending};
use zero::cli::Autonomy;
use zero::output::{EventKind, Output, Writer};
use zero::provider::{
    Completion, Message, Provider, ProviderError, Request, StopReason, StreamDelta, ToolCall,
};
use zero::runtime::{Runtime, RuntimeConfig, TaskEvent, TaskStatus};
use zero::tools::{Policy, Registry, ToolContext, ToolFilter};

/// Answers each request with the next scripted completion and remembers the requests.
struct Scripted {
    replies: Mutex<VecDeque<Completion>>,
    requests: Mutex<Vec<Request>>,
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &Request,
        _on_delta: &mut (dyn FnMut(StreamDelta) + Send),
        _cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        self.requests.lock().unwrap().push(request.clone());
        Ok(self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted reply"))
    }
}

fn reply(text: &str, tool_calls: Vec<ToolCall>) -> Completion {
    Completion {
        text: text.into(),
        tool_calls,
        usage: None,
        stop: StopReason::EndTurn,
    }
}

/// Keeps every event the run reports.
struct Recorder(Arc<Mutex<Vec<EventKind>>>);

impl Writer for Recorder {
    fn write(&mut self, event: &EventKind) -> std::io::Result<()> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answering_over_running_tasks_is_told_once_then_close_stops_them() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let output = Arc::new(Output::with_writer(
        "run_agent_a".into(),
        Box::new(Recorder(Arc::clone(&events))),
    ));
    let sink_output = Arc::clone(&output);
    let mut config = RuntimeConfig::new("run_agent_a", home.path());
    config.kill_grace = std::time::Duration::from_millis(300);
    let tasks = Arc::new(Runtime::new(
        config,
        Arc::new(move |event| {
            if let TaskEvent::Finished(record) = event {
                sink_output.emit(EventKind::TaskFinished {
                    task_id: record.id.to_string(),
                    kind: record.kind,
                    status: record.status,
                    exit_code: record.exit_code,
                });
            }
        }),
    ));
    let root = workspace.path().canonicalize().unwrap();
    let policy = Policy::new(Autonomy::Medium, false, vec![root.clone()]);
    let toolset =
        Registry::with_runtime(Arc::clone(&tasks)).select(&ToolFilter::default(), &policy);
    let provider = Scripted {
        replies: Mutex::new(VecDeque::from([
            reply(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "sleep 100", "run_in_background": true})
                        .to_string(),
                }],
            ),
            reply("Started the server.", Vec::new()),
            reply("Done; it can be stopped.", Vec::new()),
        ])),
        requests: Mutex::new(Vec::new()),
    };
    let agent = AgentRun {
        provider: &provider,
        toolset: &toolset,
        context: ToolContext {
            workspace: root,
            policy: Arc::new(policy),
            cancel: CancellationToken::new(),
            plan_updates: None,
        },
        output: &output,
        max_turns: 10,
        tasks: &tasks,
    };

    let report = agent.run("system".into(), "start a server".into()).await;
    let Ending::Answered(text) = report.ending else {
        panic!("{:?}", report.ending);
    };
    assert_eq!(text, "Done; it can be stopped.");
    let requests = provider.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    let Some(Message::User { content }) = requests[2].messages.last() else {
        panic!("the third request ends with the reminder");
    };
    let running = tasks.running().await;
    assert_eq!(running.len(), 1);
    assert!(
        content.starts_with("1 background task is still running: task_")
            && content.contains(running[0].id.as_str())
            && content.contains("TaskOutput")
            && content.contains("TaskStop"),
        "{content}"
    );

    let closed = tasks.close().await;
    assert_eq!(closed.stopped.len(), 1);
    assert_eq!(closed.stopped[0].status, TaskStatus::Killed);
    // The kill was reported by the time close returned.
    let finished: Vec<EventKind> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, EventKind::TaskFinished { .. }))
        .cloned()
        .collect();
    assert!(
        matches!(
            &finished[..],
            [EventKind::TaskFinished {
                status: TaskStatus::Killed,
                ..
            }]
        ),
        "{finished:?}"
    );
}
