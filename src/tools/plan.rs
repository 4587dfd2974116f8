//! `update_plan`: the model's running checklist, surfaced to the caller as a `plan` event.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{SideEffect, Tool, ToolContext, ToolError, ToolId, ToolResult, parse_args};

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a few words.
    pub(crate) step: String,
    /// Where the step stands.
    pub(crate) status: StepStatus,
}

/// Progress of one plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdatePlanArgs {
    plan: Vec<PlanStep>,
}

/// Replaces the plan with the one given.
pub(crate) struct UpdatePlan;

#[async_trait]
impl Tool for UpdatePlan {
    fn name(&self) -> &'static str {
        ToolId::UpdatePlan.name()
    }

    fn description(&self) -> &'static str {
        "Record your plan for the task as a short checklist, replacing any earlier plan. Use it \
         for work with several steps: keep exactly one step in_progress while you work and \
         mark steps completed as you finish them. The plan is shown to whoever runs you; it \
         does not change any file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": {
                    "type": "array",
                    "description": "The whole plan, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "description": "What the step does."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        ToolId::UpdatePlan.side_effect()
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: UpdatePlanArgs = parse_args(args)?;
        if args.plan.iter().any(|s| s.step.trim().is_empty()) {
            return Err(ToolError::InvalidArguments(
                "every step needs a non-empty `step`".into(),
            ));
        }
        let in_progress = args
            .plan
            .iter()
            .filter(|s| s.status == StepStatus::InProgress)
            .count();
        if in_progress > 1 {
            return Err(ToolError::InvalidArguments(format!(
                "{in_progress} steps are in_progress; keep at most one"
            )));
        }
        let done = args
            .plan
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count();
        let total = args.plan.len();
        if let Some(updates) = &ctx.plan_updates {
            // The receiver is gone only when the run is ending; the plan no longer matters then.
            let _ = updates.send(args.plan);
        }
        Ok(format!("Plan updated: {done} of {total} steps completed."))
    }
}
