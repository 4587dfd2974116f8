//! A server's tool as the registry offers it: `mcp__SERVER__TOOL`, the server's description and
//! input schema, read-only when the server annotates it so, and a call that goes to the
//! server. What comes back is text for the model: text content as it is, everything else
//! (images, audio, resources) described by type and size, never dumped.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::CallToolResult;
use serde_json::Value;

use super::server::{CallError, Connected};
use crate::tools::{SideEffect, Tool, ToolContext, ToolError, ToolResult};

/// The longest name the model APIs accept for a function.
const MAX_TOOL_NAME: usize = 64;

/// The most of a server's tool description the model is shown.
const MAX_DESCRIPTION: usize = 4096;

/// The most of a result the model is shown, as with a command's output.
const MAX_RESULT: usize = 64 * 1024;

/// One tool of one connected server.
pub(crate) struct McpTool {
    /// The name the model calls it by.
    name: String,
    /// The server's own name for it.
    remote: String,
    description: String,
    schema: Value,
    read_only: bool,
    server: Arc<Connected>,
}

impl McpTool {
    /// Every tool `server` listed, named so that no two collide.
    pub(crate) fn all_of(server: &Arc<Connected>) -> Vec<McpTool> {
        let mut taken: Vec<String> = Vec::new();
        let mut tools = Vec::new();
        for tool in &server.tools {
            let name = offered_name(&server.config.name, &tool.name, &taken);
            taken.push(name.clone());
            let description = tool.description.as_deref().unwrap_or("").trim();
            let description = crate::tools::text::prefix_at_boundary(description, MAX_DESCRIPTION);
            tools.push(McpTool {
                name,
                remote: tool.name.to_string(),
                description: format!("(MCP server `{}`) {description}", server.config.name),
                schema: Value::Object((*tool.input_schema).clone()),
                read_only: tool
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.read_only_hint)
                    .unwrap_or(false),
                server: Arc::clone(server),
            });
        }
        tools
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn side_effect(&self) -> SideEffect {
        if self.read_only {
            SideEffect::Read
        } else {
            SideEffect::External
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => {
                return Err(ToolError::InvalidArguments(
                    "the arguments must be a JSON object".into(),
                ));
            }
        };
        match self.server.call(&self.remote, arguments, &ctx.cancel).await {
            Ok(result) => rendered(&result),
            Err(CallError::Cancelled) => Err(ToolError::Cancelled),
            Err(CallError::TimedOut) => Err(ToolError::Failed(format!(
                "`{}` did not answer within {} (tool_timeout_ms of MCP server `{}`); the server \
                 was told to cancel the call",
                self.name,
                humantime::format_duration(self.server.config.tool_timeout),
                self.server.config.name
            ))),
            Err(CallError::Failed(message)) => Err(ToolError::Failed(message)),
        }
    }
}

/// `mcp__SERVER__TOOL`, with every character the model APIs refuse in a name replaced by `_`;
/// one too long, or equal to a name in `taken`, is cut and given a short hash of the
/// server's own name, so it stays unique, and the same in every run of this build (the
/// hasher is `DefaultHasher::new`, whose keys are fixed) — a specialist's names match its
/// parent's.
fn offered_name(server: &str, tool: &str, taken: &[String]) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{clean}");
    if name.len() <= MAX_TOOL_NAME && !taken.contains(&name) {
        return name;
    }
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(tool, &mut hasher);
    let hash = format!("_{:08x}", std::hash::Hasher::finish(&hasher) as u32);
    let keep = MAX_TOOL_NAME.saturating_sub(hash.len()).min(name.len());
    format!("{}{hash}", &name[..keep])
}

/// The model's text for a result: its content blocks (text as it is, the rest described), or
/// its structured content when it has no content; capped. A result the server marked as an
/// error is a failed call.
fn rendered(result: &CallToolResult) -> ToolResult {
    let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let mut parts: Vec<String> = blocks
        .as_array()
        .into_iter()
        .flatten()
        .map(described)
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = crate::tools::text::head_tail(&parts.join("\n"), MAX_RESULT);
    if result.is_error == Some(true) {
        return Err(ToolError::Failed(if text.is_empty() {
            "the MCP tool reported an error and said nothing more".into()
        } else {
            text
        }));
    }
    Ok(text)
}

/// One content block in the protocol's wire form, as the model reads it.
fn described(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let size = |data: Option<&str>| {
        // Base64: three bytes for every four characters.
        data.map_or(0, |data| data.trim_end_matches('=').len() * 3 / 4)
    };
    match field("type") {
        Some("text") => field("text").unwrap_or("").to_string(),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind} content: {}, {} bytes, not shown]",
            field("mimeType").unwrap_or("of unknown type"),
            size(field("data"))
        ),
        Some("resource") => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let inner = |name: &str| resource.get(name).and_then(Value::as_str);
            let bytes = match (inner("text"), inner("blob")) {
                (Some(text), _) => text.len(),
                (None, blob) => size(blob),
            };
            format!(
                "[embedded resource {}: {}, {bytes} bytes, not shown]",
                inner("uri").unwrap_or("(no uri)"),
                inner("mimeType").unwrap_or("of unknown type"),
            )
        }
        Some("resource_link") => format!(
            "[resource link: {}{}]",
            field("uri").unwrap_or("(no uri)"),
            field("name")
                .map(|name| format!(" ({name})"))
                .unwrap_or_default()
        ),
        Some(other) => format!("[{other} content, not shown]"),
        None => "[content of no type, not shown]".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_are_cleaned_cut_and_kept_unique() {
        assert_eq!(
            offered_name("gh", "list_issues", &[]),
            "mcp__gh__list_issues"
        );
        assert_eq!(offered_name("gh", "get.user/x", &[]), "mcp__gh__get_user_x");
        let long = offered_name("gh", &"a".repeat(80), &[]);
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert_eq!(long, offered_name("gh", &"a".repeat(80), &[]), "stable");
        let taken = vec!["mcp__gh__a_b".to_string()];
        let second = offered_name("gh", "a.b", &taken);
        assert!(
            second.starts_with("mcp__gh__a_b_") && second != taken[0],
            "{second}"
        );
    }

    #[test]
    fn content_other_than_text_is_described_never_dumped() {
        let image = json!({"type": "image", "data": "QUJDRA==", "mimeType": "image/png"});
        assert_eq!(
            described(&image),
            "[image content: image/png, 4 bytes, not shown]"
        );
        let resource =
            json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "QUJD"}});
        assert_eq!(
            described(&resource),
            "[embedded resource file:///a: of unknown type, 3 bytes, not shown]"
        );
        let link = json!({"type": "resource_link", "uri": "https://x/y", "name": "y"});
        assert_eq!(described(&link), "[resource link: https://x/y (y)]");
        assert_eq!(described(&json!({"type": "text", "text": "hi"})), "hi");
    }

    #[test]
    fn an_error_result_is_a_failed_call_and_structured_content_stands_in_for_none() {
        let error: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "no such issue"}], "isError": true
        }))
        .unwrap();
        assert_eq!(
            rendered(&error),
            Err(ToolError::Failed("no such issue".into()))
        );
        let structured: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"n": 1}})).unwrap();
        assert_eq!(rendered(&structured), Ok("{\"n\":1}".into()));
    }
}
