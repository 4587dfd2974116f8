//! `bash`: run a shell command in the workspace, in the foreground with a timeout, or in the
//! background as a task read with `TaskOutput` and stopped with `TaskStop`. Both kinds run
//! through the run's runtime, which owns every command it starts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Bounded, SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args};
use crate::runtime::{CommandOutput, Origin, Runtime, ShellCommand, TaskSpec, Termination};

/// The timeout when the model gives none.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The `timeout_ms` argument: at most 10 minutes.
const TIMEOUT_MS: Bounded<u64> = Bounded {
    name: "timeout_ms",
    min: 1,
    max: Some(600_000),
};
/// The most output (stdout and stderr together) returned to the model.
const OUTPUT_MAX: usize = 64 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    timeout_ms: Option<u64>,
    run_in_background: Option<bool>,
}

/// What the tool is for, written for the model.
const DESCRIPTION: &str = "Run a shell command (bash) in the workspace root and return its exit \
    code, stdout and stderr. Use it to build, run tests, and use command-line tools. The \
    command runs headless: stdin is empty, so never run anything interactive (editors, pagers, \
    prompts); pass flags like --yes or --no-pager instead. It is killed after timeout_ms \
    (default 120000, max 600000) together with everything it started; processes it leaves \
    running in the background are stopped when it returns. Output beyond 64 KiB keeps the \
    beginning and the end. Prefer read_file, grep and glob over cat, grep and find for reading \
    code. For a server, a watcher or a long build, set run_in_background: the call returns at \
    once with a task id, the output goes to a log you read with TaskOutput, TaskStop stops \
    it, and it is stopped when the run ends.";

/// Runs one command with the platform shell in the workspace root, in the foreground or as a
/// background task, through the run's runtime.
pub(crate) struct Bash {
    runtime: Arc<Runtime>,
}

impl Bash {
    /// Commands run by `runtime`.
    pub(crate) fn new(runtime: Arc<Runtime>) -> Self {
        Bash { runtime }
    }
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &'static str {
        ToolId::Bash.name()
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line, run with `bash -c` in the workspace root."
                },
                "timeout_ms": TIMEOUT_MS.schema(
                    "Kill the command after this many milliseconds (default 120000)."
                ),
                "run_in_background": {
                    "type": "boolean",
                    "description": "Start the command as a background task and return at once \
                                    with its task id (no timeout applies)."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::Bash.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: BashArgs = parse_args(args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`command` must not be empty".into(),
            ));
        }
        if args.run_in_background.unwrap_or(false) {
            if args.timeout_ms.is_some() {
                return Err(ToolError::InvalidArguments(
                    "`timeout_ms` does not apply to a background command; stop it with TaskStop"
                        .into(),
                ));
            }
            return self.start_background(&args.command, ctx).await;
        }
        let timeout_ms = TIMEOUT_MS.or(args.timeout_ms, DEFAULT_TIMEOUT_MS)?;
        let output = self
            .runtime
            .run_foreground(
                ShellCommand {
                    command: &args.command,
                    cwd: &ctx.workspace,
                    // Never past the run's deadline.
                    timeout: ctx
                        .policy
                        .time_left()
                        .map_or(Duration::from_millis(timeout_ms), |left| {
                            left.min(Duration::from_millis(timeout_ms))
                        }),
                    origin: Origin::Model,
                },
                &ctx.cancel,
            )
            .await
            .map_err(|e| ToolError::Failed(format!("could not start the command: {e}")))?;
        let report = render(&output, timeout_ms);
        // A program the exec check refused fails with "Permission denied" too, and its
        // stderr says the deny rule did it: no hint about the sandbox then.
        let hint = match output.refused.is_empty() {
            true => ctx.policy.sandbox_hint(&report),
            false => None,
        };
        match output.termination {
            Termination::Exited(0) => Ok(report),
            Termination::Cancelled => Err(ToolError::Cancelled),
            _ => Err(ToolError::Failed(match hint {
                Some(hint) => format!("{report}{hint}\n"),
                None => report,
            })),
        }
    }
}

impl Bash {
    /// Starts `command` as a background task and tells the model how to follow it.
    async fn start_background(&self, command: &str, ctx: &ToolContext) -> ToolResult {
        let record = self
            .runtime
            .start(TaskSpec::shell(command, &ctx.workspace))
            .await
            .map_err(super::tool_error)?;
        let id = &record.id;
        Ok(format!(
            "started background task {id} (pid {pid})\n\
             Its stdout and stderr go to a log. Read it with TaskOutput {{\"task_id\": \"{id}\"}} \
             (add \"block\": true to wait for the command to end, or \"offset\" to read from a \
             position). Stop it with TaskStop {{\"task_id\": \"{id}\"}}. It is stopped when \
             the run ends.\n",
            pid = record.pid.unwrap_or_default(),
        ))
    }
}

/// The model-facing report: how the command ended, then each non-empty stream.
fn render(output: &CommandOutput, timeout_ms: u64) -> String {
    let mut report = match output.termination {
        Termination::Exited(code) => format!("exit code: {code}\n"),
        Termination::Signalled(signal) => format!("killed by signal {signal}\n"),
        Termination::TimedOut => format!(
            "timed out after {timeout_ms} ms: the command and everything it started were killed\n"
        ),
        Termination::Cancelled => "cancelled: the run is stopping\n".to_string(),
    };
    let stdout = output.stdout.render();
    let stderr = output.stderr.render();
    // Share the budget: a quiet stream leaves its half to the other.
    let stderr_budget = (OUTPUT_MAX / 2).max(OUTPUT_MAX.saturating_sub(stdout.len()));
    let stdout_budget = OUTPUT_MAX.saturating_sub(stderr.len().min(stderr_budget));
    for (name, text, budget) in [
        ("stdout", stdout, stdout_budget),
        ("stderr", stderr, stderr_budget),
    ] {
        if !text.is_empty() {
            report.push_str(&format!(
                "{name}:\n{}",
                super::text::head_tail(&text, budget)
            ));
            if !report.ends_with('\n') {
                report.push('\n');
            }
        }
    }
    if output.stdout.total() == 0 && output.stderr.total() == 0 {
        report.push_str("(no output)\n");
    }
    match output.leftovers {
        0 => {}
        1 => report.push_str("stopped 1 leftover process the command left running\n"),
        n => report.push_str(&format!(
            "stopped {n} leftover processes the command left running\n"
        )),
    }
    report
}

/// The stdout and the stderr a successful command's report ([`render`]) shows, each without
/// its trailing newlines (as Claude Code reports a `Bash` call's streams to its hooks); `None`
/// for what is not such a report (a background task's start). A stdout that itself holds a
/// line `stderr:` is split at the last such line.
pub(crate) fn streams(report: &str) -> Option<(&str, &str)> {
    let body = report.strip_prefix("exit code: 0\n")?;
    let body = body.strip_suffix("(no output)\n").unwrap_or(body);
    let body = match body.rfind("stopped ") {
        Some(at)
            if body.ends_with(" left running\n") && (at == 0 || body[..at].ends_with('\n')) =>
        {
            &body[..at]
        }
        _ => body,
    };
    let (stdout, stderr) = match body.strip_prefix("stderr:\n") {
        Some(stderr) => ("", stderr),
        None => {
            let stdout = body.strip_prefix("stdout:\n").unwrap_or(body);
            match stdout.rfind("\nstderr:\n") {
                Some(at) => (&stdout[..=at], &stdout[at + "\nstderr:\n".len()..]),
                None => (stdout, ""),
            }
        }
    };
    Some((stdout.trim_end_matches('\n'), stderr.trim_end_matches('\n')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reports_streams_are_read_back() {
        let report = "exit code: 0\nstdout:\nout\nmore\nstderr:\nerr\n";
        assert_eq!(streams(report), Some(("out\nmore", "err")));
        assert_eq!(streams("exit code: 0\nstderr:\nerr\n"), Some(("", "err")));
        assert_eq!(streams("exit code: 0\n(no output)\n"), Some(("", "")));
        let left =
            "exit code: 0\nstdout:\nx\nstopped 1 leftover process the command left running\n";
        assert_eq!(streams(left), Some(("x", "")));
        assert_eq!(streams("started background task t1 (pid 3)\n"), None);
        assert_eq!(streams("exit code: 1\nstdout:\nx\n"), None);
    }
}
