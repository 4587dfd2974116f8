//! placeholder, replaced by the real implementation
use async_trait::async_trait; use serde_json::{Value, json}; use super::{SideEffect, Tool, ToolContext, ToolError, ToolResult};
/// placeholder
pub struct ListDirectory;
#[async_trait]
impl Tool for ListDirectory {
    fn name(&self) -> &'static str { "list_directory" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
/// placeholder
pub struct Glob;
#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &'static str { "glob" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
/// placeholder
pub struct Grep;
#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &'static str { "grep" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
