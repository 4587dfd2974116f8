//! placeholder, replaced by the real implementation
use async_trait::async_trait; use serde_json::{Value, json}; use super::{SideEffect, Tool, ToolContext, ToolError, ToolResult};
/// placeholder
pub struct ApplyPatch;
#[async_trait]
impl Tool for ApplyPatch {
    fn name(&self) -> &'static str { "apply_patch" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
