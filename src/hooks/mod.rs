//! Hooks: commands the caller configures that zero runs at points of the run — before a tool
//! call (`pre_tool_use`: may deny it or rewrite its arguments), after it (`post_tool_use`: may
//! add a note to its result), on the final answer (`stop`: may refuse it, a bounded number of
//! times) and once at the start (`session_start`: may add context).
//!
//! A hook is a command like the model's: it runs through the runtime's one door
//! ([`crate::runtime::Runtime::run_foreground`]), so it is sandboxed as the run's commands are,
//! contained in its own group under a guardian (killed with the run, SIGKILL of zero included),
//! given no secret, started in the workspace, bounded by its timeout and the run's deadline,
//! its output captured within bounds. It reads one JSON object on stdin (`input`) and
//! answers with its exit code and an optional JSON object (`reply`), in zero's words or
//! Claude Code's, so a hook script written for Claude Code works unchanged.
//!
//! A hook only ever narrows: `pre_tool_use` runs after the `--auto` level and the rules have
//! allowed a call, so its "allow" means "no objection". A hook that fails (crashes, exits
//! neither 0 nor 2, runs past its timeout, prints what is not a reply) counts as a denial —
//! fail closed — unless the caller chose `--hooks-fail-open`. Hooks of one point run one after
//! another in the order configured: the first objection decides, and a rewrite is what the
//! next hook sees.

mod claude;
pub(crate) mod config;
mod exposure;
mod input;
mod reply;
mod response;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::runtime::{Origin, Runtime, ShellCommand, Termination};
use crate::tools::ToolContext;

pub use config::{Hook, HookPoint, HookSet};
pub use input::RunFacts;
pub(crate) use input::{Call, Moment};
use reply::{Exit, Reply};
pub(crate) use response::Before;

/// How many final answers `stop` hooks may refuse in one run. The answer after the last
/// refusal a hook would make ends the run incomplete (exit 4): a hook that always refuses
/// cannot keep a run going forever.
pub const MAX_STOP_REFUSALS: u32 = 3;

/// Where a hook's reports go (a `hook` event each); `exec` forwards them to the output.
pub type HookSink = Arc<dyn Fn(HookReport) + Send + Sync>;

/// What one hook run did, as the `hook` event reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookReport {
    /// Where it ran.
    pub event: HookPoint,
    /// Its command line.
    pub command: String,
    /// The tool of the call it ran for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The id of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// What came of it.
    pub decision: HookDecision,
    /// Its reason, its note, or why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// What came of one hook run (`hook.decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// No opinion, or an explicit allow: the run goes on as it would have.
    None,
    /// It denied the call (`pre_tool_use`) or refused the answer (`stop`).
    Deny,
    /// It rewrote the call's arguments.
    Rewrite,
    /// It added a note to the result (`post_tool_use`) or context (`session_start`).
    Note,
    /// It failed; counted as a denial, or ignored with `--hooks-fail-open`.
    Failed,
}

/// The verdict of the `pre_tool_use` hooks on a call.
#[derive(Debug, Clone, PartialEq)]
pub enum PreVerdict {
    /// No hook objected; the call runs with these arguments, which a hook rewrote when
    /// `rewritten`.
    Proceed {
        /// The arguments the call runs with.
        arguments: Value,
        /// Whether a hook changed them (then the rules are checked again).
        rewritten: bool,
    },
    /// A hook denied the call (or failed): the reason, naming the hook, is its result.
    Deny(String),
}

/// The verdict of the `stop` hooks on a final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopVerdict {
    /// The answer stands.
    Accept,
    /// The answer is refused: the reason goes to the model as a user message.
    Refuse(String),
    /// The answer is refused once more than [`MAX_STOP_REFUSALS`] allows: the run ends
    /// incomplete.
    Exhausted(String),
}

/// What runs a run's hooks, and what each is told.
pub struct HookRunner {
    /// The runtime every hook runs through, as every command of the run does.
    pub runtime: Arc<Runtime>,
    /// The run's facts every hook's input carries.
    pub facts: RunFacts,
    /// When the run must end: no hook runs past it.
    pub deadline: Option<SystemTime>,
    /// The run's stop token: a hook is stopped with the run.
    pub cancel: CancellationToken,
    /// Where each hook run is reported.
    pub sink: HookSink,
}

/// The run's hooks and what runs them.
pub struct Hooks {
    set: HookSet,
    /// `--hooks-fail-open`: a hook that fails is ignored instead of denying.
    fail_open: bool,
    /// What runs them; `None` with no hooks (a run without hooks needs nothing).
    runner: Option<HookRunner>,
    /// Answers refused so far.
    refusals: AtomicU32,
    /// Input files written so far (each hook run has one of its own).
    inputs: AtomicU64,
}

impl Hooks {
    /// No hooks: every point passes at no cost.
    pub fn none() -> Self {
        Hooks::new(HookSet::default(), false, None)
    }

    /// The hooks of `set`, run by `runner` (`--hooks-fail-open` when `fail_open`).
    pub fn new(set: HookSet, fail_open: bool, runner: Option<HookRunner>) -> Self {
        Hooks {
            set,
            fail_open,
            runner,
            refusals: AtomicU32::new(0),
            inputs: AtomicU64::new(0),
        }
    }

    /// Runs the `pre_tool_use` hooks on the call `id` of `tool` with `arguments`: the first
    /// objection (or failure, unless fail-open) denies it; a rewrite is what the next hook
    /// sees and what the call runs with.
    pub(crate) async fn pre_tool_use(&self, id: &str, tool: &str, arguments: Value) -> PreVerdict {
        let mut arguments = arguments;
        let mut rewritten = false;
        for hook in self.set.matching(HookPoint::PreToolUse, tool) {
            let moment = Moment::PreToolUse(Call {
                id,
                tool,
                arguments: &arguments,
            });
            let reply = match self.run(hook, &moment).await {
                Ok(reply) => reply,
                Err(_) if self.fail_open => continue,
                Err(failure) => return PreVerdict::Deny(failure),
            };
            if reply.objects {
                return PreVerdict::Deny(denial(hook, reply.reason));
            }
            if let Some(new) = reply.arguments {
                arguments = new;
                rewritten = true;
            }
        }
        PreVerdict::Proceed {
            arguments,
            rewritten,
        }
    }

    /// Whether any `post_tool_use` hook runs for `tool` (a call keeps its arguments for them
    /// only then).
    pub(crate) fn runs_after(&self, tool: &str) -> bool {
        self.set
            .matching(HookPoint::PostToolUse, tool)
            .next()
            .is_some()
    }

    /// Runs the `post_tool_use` hooks on a call that succeeded with `output` after
    /// `duration` (`before`: its file as it was, see [`Before::take`]): the notes they add (a
    /// reason given with "block", or context), and a failed hook's failure, for the model.
    /// A call that failed has none run after it, as Claude Code runs no `PostToolUse` then.
    pub(crate) async fn post_tool_use(
        &self,
        call: Call<'_>,
        output: &str,
        before: &Before,
        duration: Duration,
        ctx: &ToolContext,
    ) -> Vec<String> {
        let response = response::claude(call.tool, call.arguments, output, before, ctx).await;
        let moment = Moment::PostToolUse {
            call,
            output,
            response: &response,
            duration_ms: duration.as_millis().try_into().unwrap_or(u64::MAX),
        };
        let mut notes = Vec::new();
        for hook in self.set.matching(HookPoint::PostToolUse, call.tool) {
            match self.run(hook, &moment).await {
                Ok(reply) => notes.extend(reply.reason.into_iter().chain(reply.context)),
                Err(_) if self.fail_open => {}
                Err(failure) => notes.push(failure),
            }
        }
        notes
    }

    /// Runs the `stop` hooks on the final answer `answer`: the first objection (or failure,
    /// unless fail-open) refuses it, up to [`MAX_STOP_REFUSALS`] times in a run.
    pub(crate) async fn stop(&self, answer: &str) -> StopVerdict {
        let refusals = self.refusals.load(Ordering::Relaxed);
        let moment = Moment::Stop { answer, refusals };
        for hook in self.set.matching(HookPoint::Stop, "") {
            let reason = match self.run(hook, &moment).await {
                // `continue: false` asks the run to stop: the answer stands.
                Ok(reply) if reply.halt || !reply.objects => continue,
                Ok(reply) => denial(hook, reply.reason),
                Err(_) if self.fail_open => continue,
                Err(failure) => failure,
            };
            let refusals = self.refusals.fetch_add(1, Ordering::Relaxed) + 1;
            return match refusals > MAX_STOP_REFUSALS {
                true => StopVerdict::Exhausted(reason),
                false => StopVerdict::Refuse(reason),
            };
        }
        StopVerdict::Accept
    }

    /// Runs the `session_start` hooks for a run that starts as `source` (`startup` or
    /// `resume`): the context they add, in order, or the failure of the first that failed
    /// (unless fail-open).
    pub async fn session_start(&self, source: &str) -> Result<Vec<String>, String> {
        let moment = Moment::SessionStart { source };
        let mut context = Vec::new();
        for hook in self.set.matching(HookPoint::SessionStart, source) {
            match self.run(hook, &moment).await {
                Ok(reply) => context.extend(reply.context),
                Err(_) if self.fail_open => {}
                Err(failure) => return Err(failure),
            }
        }
        Ok(context)
    }

    /// Runs one hook at `moment` and reports it; an error says why it failed, naming it.
    async fn run(&self, hook: &Hook, moment: &Moment<'_>) -> Result<Reply, String> {
        let failed = |why: String| {
            format!(
                "the {} hook `{}` failed: {why}",
                hook.point.key(),
                hook.command
            )
        };
        let Some(runner) = &self.runner else {
            return Err(failed("this run cannot start commands".into()));
        };
        let started = Instant::now();
        let call = moment.call();
        let tool = call.map(|call| call.tool);
        let replied = match self.execute(runner, hook, moment).await {
            Ok((exit, stdout, stderr)) => reply::read(
                exit,
                &stdout,
                &stderr,
                tool,
                hook.point == HookPoint::SessionStart,
            ),
            Err(error) => Err(error),
        }
        .map_err(failed);
        let (decision, reason) = match &replied {
            Err(failure) => (HookDecision::Failed, Some(failure.clone())),
            // After the call nothing can be refused: an objection is a note to the model.
            Ok(reply) if reply.objects && hook.point == HookPoint::PostToolUse => {
                (HookDecision::Note, reply.reason.clone())
            }
            Ok(reply) if reply.objects => (HookDecision::Deny, reply.reason.clone()),
            Ok(reply) if reply.arguments.is_some() => (HookDecision::Rewrite, None),
            Ok(reply) if reply.context.is_some() => (HookDecision::Note, reply.context.clone()),
            Ok(_) => (HookDecision::None, None),
        };
        (runner.sink)(HookReport {
            event: hook.point,
            command: hook.command.clone(),
            tool: tool.map(str::to_string),
            call_id: call.map(|call| call.id.to_string()),
            decision,
            reason,
            duration_ms: started.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
        });
        replied
    }

    /// Runs `hook`'s command with `moment`'s input on stdin: how it ended, its stdout and its
    /// stderr. The input is a private file of the run directory, read through a redirection
    /// (the runtime gives every command an empty stdin), removed once the hook is over.
    async fn execute(
        &self,
        runner: &HookRunner,
        hook: &Hook,
        moment: &Moment<'_>,
    ) -> Result<(Exit, String, String), String> {
        let HookRunner {
            runtime,
            facts,
            deadline,
            cancel,
            ..
        } = runner;
        let input = moment.input(facts).to_string();
        let file = self.write_input(runtime, input).await?;
        // The hook's own line is run by `/bin/sh -c`, as Claude Code runs it (measured: dash on
        // Debian): what it means — `: > /missing/x` exits 2 there, 1 under bash — is what the
        // script's author tested it with.
        let script = format!(
            "exec <{}\nexport CLAUDE_PROJECT_DIR={}\nexec /bin/sh -c {}",
            quoted(&file.to_string_lossy()),
            quoted(&facts.workspace.to_string_lossy()),
            quoted(&hook.command)
        );
        let timeout = match deadline {
            Some(deadline) => hook.timeout.min(
                deadline
                    .duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            ),
            None => hook.timeout,
        };
        let ran = runtime
            .run_foreground(
                ShellCommand {
                    command: &script,
                    cwd: &facts.workspace,
                    timeout,
                    origin: Origin::Caller,
                },
                cancel,
            )
            .await;
        let _ = tokio::fs::remove_file(&file).await;
        let output = ran.map_err(|e| format!("it could not start: {e}"))?;
        let exit = match output.termination {
            Termination::Exited(code) => Exit::Code(code),
            Termination::Signalled(signal) => Exit::Signal(signal),
            Termination::TimedOut => Exit::TimedOut,
            Termination::Cancelled => Exit::Cancelled,
        };
        Ok((exit, output.stdout.render(), output.stderr.render()))
    }

    /// Writes a hook's input to a fresh 0600 file in the run's private directory.
    async fn write_input(&self, runtime: &Runtime, input: String) -> Result<PathBuf, String> {
        let dir = runtime
            .run_dir()
            .await
            .map_err(|e| format!("its input could not be written: {e}"))?;
        let number = self.inputs.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("hook-input-{number}.json"));
        let written = path.clone();
        tokio::task::spawn_blocking(move || {
            crate::fsutil::write_private_new(&written, input.as_bytes())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|written| written.map_err(|e| e.to_string()))
        .map_err(|e| format!("its input could not be written to {}: {e}", path.display()))?;
        Ok(path)
    }
}

/// The result a denied call gets: which hook denied it, and why.
fn denial(hook: &Hook, reason: Option<String>) -> String {
    let by = format!("the {} hook `{}`", hook.point.key(), hook.command);
    match reason {
        Some(reason) if !reason.trim().is_empty() => format!("{by} refused: {}", reason.trim()),
        _ => format!("{by} refused, without a reason"),
    }
}

/// `text` as one shell word, in single quotes.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Hooks with one `stop` hook and nothing to run it: each of its runs fails.
    fn failing_stop(fail_open: bool) -> Hooks {
        let mut set = HookSet::default();
        set.add_file_value(&json!({"hooks": {"stop": [{"command": "check"}]}}), &|_| {
            Ok(Duration::from_secs(1))
        })
        .unwrap();
        Hooks::new(set, fail_open, None)
    }

    #[tokio::test]
    async fn stop_refusals_are_bounded_and_a_failure_refuses_unless_fail_open() {
        let hooks = failing_stop(false);
        for _ in 0..MAX_STOP_REFUSALS {
            match hooks.stop("done").await {
                StopVerdict::Refuse(reason) => {
                    assert!(reason.contains("stop hook `check` failed"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            hooks.stop("done").await,
            StopVerdict::Exhausted(_)
        ));
        assert_eq!(failing_stop(true).stop("done").await, StopVerdict::Accept);
        assert_eq!(Hooks::none().stop("done").await, StopVerdict::Accept);
    }
}
