//! `TaskStop`: stopping a background task of this run. A thin adapter over [`Runtime`], which
//! records `killed` before the task's group gets SIGTERM, and SIGKILLs it after the grace.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::describe;
use crate::runtime::Runtime;
use crate::tools::{SideEffect, Tool, ToolContext, ToolId, ToolResult, parse_args, tool_error};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StopArgs {
    task_id: String,
}

/// Stops a background task.
pub(crate) struct TaskStop {
    runtime: Arc<Runtime>,
}

impl TaskStop {
    /// The tool over the run's runtime.
    pub(crate) fn new(runtime: Arc<Runtime>) -> Self {
        TaskStop { runtime }
    }
}

#[async_trait]
impl Tool for TaskStop {
    fn name(&self) -> &'static str {
        ToolId::TaskStop.name()
    }

    fn description(&self) -> &'static str {
        "Stop a background task started earlier in this run: it gets SIGTERM, then SIGKILL if \
         it is still running after a short grace period, together with everything it started. \
         Returns the task's final state. Stopping a task that already ended just returns how \
         it ended."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {
                    "type": "string",
                    "description": "The task's id, e.g. task_0123456789ab."
                }
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::TaskStop.side_effect()
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let args: StopArgs = parse_args(args)?;
        // Not cancellable on purpose: a stop half-done is worse than one that finishes (the
        // runtime completes it anyway), and it is bounded by the grace period.
        let stopped = self.runtime.stop(&args.task_id).await.map_err(tool_error)?;
        let mut report = if stopped.stopped_here {
            String::new()
        } else {
            "note: the task had already ended; this is how\n".to_string()
        };
        report.push_str(&describe(&stopped.record));
        if let Some(error) = stopped.unrecorded {
            report.push_str(&format!(
                "warning: the new state could not be saved: {error}\n"
            ));
        }
        Ok(report)
    }
}
