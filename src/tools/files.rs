//! placeholder, replaced by the real implementation
use async_trait::async_trait; use serde_json::{Value, json}; use super::{SideEffect, Tool, ToolContext, ToolError, ToolResult};
/// placeholder
pub struct ReadFile;
#[async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &'static str { "read_file" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
/// placeholder
pub struct WriteFile;
#[async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &'static str { "write_file" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
/// placeholder
pub struct EditFile;
#[async_trait]
impl Tool for EditFile {
    fn name(&self) -> &'static str { "edit_file" }
    fn description(&self) -> &'static str { "TODO" }
    fn input_schema(&self) -> Value { json!({"type":"object"}) }
    fn side_effect(&self) -> SideEffect { SideEffect::Read }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult { Err(ToolError::Failed("not yet".into())) }
}
