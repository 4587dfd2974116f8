//! A server's tool as the registry offers it: `mcp__SERVER__TOOL`, the server's description and
//! input schema, read-only when the server annotates it so, and a call that goes to the
//! server. What comes back is text for the model: text content as it is, everything else
//! (images, audio, resources) described by type and size, never dumped.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::CallToolResult;
use serde_json::Value;

use super::server::{CallError, Connected};
use super::stdio::MAX_MESSAGE;
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
    /// Every tool `server` listed, each under a name no other tool of the run has, and the
    /// clashes that made a name differ from the one it would have had.
    pub(crate) fn all_of(server: &Arc<Connected>) -> (Vec<McpTool>, Vec<NameClash>) {
        let remote: Vec<&str> = server.tools.iter().map(|tool| tool.name.as_ref()).collect();
        let (names, clashes) = offered_names(&server.config.name, &remote);
        let tools = server
            .tools
            .iter()
            .zip(names)
            .map(|(tool, name)| {
                let description = tool.description.as_deref().unwrap_or("").trim();
                let description =
                    crate::tools::text::prefix_at_boundary(description, MAX_DESCRIPTION);
                McpTool {
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
                }
            })
            .collect();
        (tools, clashes)
    }
}

/// Two tools of one server that would have had one name: the second is offered under a
/// name of its own, and the run warns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameClash {
    /// The server.
    server: String,
    /// The tool that keeps the name.
    kept: String,
    /// The tool that is renamed.
    renamed: String,
    /// The name both would have had.
    wanted: String,
    /// The name the renamed tool is offered under.
    given: String,
}

impl std::fmt::Display for NameClash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MCP server `{}`: its tools `{}` and `{}` would both be called `{}`; `{}` is offered \
             as `{}`",
            self.server, self.kept, self.renamed, self.wanted, self.renamed, self.given
        )
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
            Err(CallError::TooLarge { size }) => Err(ToolError::Failed(format!(
                "the result of `{}` was a message of {} from MCP server `{}`, over the {} one \
                 message may be; it was dropped, and the server stays connected",
                self.name,
                bytes(size),
                self.server.config.name,
                bytes(MAX_MESSAGE as u64)
            ))),
            Err(CallError::Failed(message)) => Err(ToolError::Failed(message)),
        }
    }
}

/// The names `tools` (one server's, as it listed them) are offered under, in their order,
/// and the clashes on the way. A tool's name is `mcp__SERVER__TOOL` with every character the
/// model APIs refuse in a name replaced by `_`; one longer than [`MAX_TOOL_NAME`], or equal to
/// a name already given, is cut and given a hash of the tool's own name (and, should that
/// name be taken too, of its number of tries). Names are given first to the tools whose names
/// need no change, then to the rest, each group in the order of the tools' own names — so
/// the names do not depend on the order the server lists its tools in, and are the same in
/// every run, a specialist's included (it starts the same server). Tools of different
/// servers never clash: a server's name is the one `mcp__SERVER__` prefix of its tools'
/// names (see `config::check_name`, and the cut, which never reaches the server's part).
fn offered_names(server: &str, tools: &[&str]) -> (Vec<String>, Vec<NameClash>) {
    let wanted: Vec<String> = tools
        .iter()
        .map(|tool| format!("mcp__{server}__{}", cleaned(tool)))
        .collect();
    let unchanged = |i: usize| wanted[i].len() <= MAX_TOOL_NAME && cleaned(tools[i]) == tools[i];
    let mut order: Vec<usize> = (0..tools.len()).collect();
    order.sort_by_key(|&i| (!unchanged(i), tools[i]));
    let mut holder: HashMap<String, usize> = HashMap::new();
    let mut names = vec![String::new(); tools.len()];
    let mut clashes = Vec::new();
    for i in order {
        let mut name = wanted[i].clone();
        let mut met = Vec::new();
        let mut tries = 0;
        while name.len() > MAX_TOOL_NAME || holder.contains_key(&name) {
            if let Some(&other) = holder.get(&name) {
                met.push((other, name.clone()));
            }
            name = hashed(&wanted[i], tools[i], tries);
            tries += 1;
        }
        clashes.extend(met.into_iter().map(|(other, wanted)| NameClash {
            server: server.to_string(),
            kept: tools[other].to_string(),
            renamed: tools[i].to_string(),
            wanted,
            given: name.clone(),
        }));
        holder.insert(name.clone(), i);
        names[i] = name;
    }
    (names, clashes)
}

/// `tool` with every character the model APIs refuse in a function name replaced by `_`.
fn cleaned(tool: &str) -> String {
    tool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `name` cut to leave room for `_` and eight hex digits of the FNV-1a hash of `tool` (and,
/// after the first try, of the try's number). FNV-1a is written out: the names must stay
/// the same from build to build (std's hashers promise no such thing), and these three
/// lines are its whole definition.
fn hashed(name: &str, tool: &str, tries: u32) -> String {
    let salt = if tries > 0 {
        format!("#{tries}")
    } else {
        String::new()
    };
    let hash = tool
        .bytes()
        .chain(salt.bytes())
        .fold(0x811c_9dc5_u32, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
        });
    let suffix = format!("_{hash:08x}");
    let keep = MAX_TOOL_NAME.saturating_sub(suffix.len()).min(name.len());
    // `name` is ASCII (cleaned), so every byte is a boundary.
    format!("{}{suffix}", &name[..keep])
}

/// `size` bytes as a person reads it: `20.0 MiB (20971520 bytes)`.
fn bytes(size: u64) -> String {
    format!("{:.1} MiB ({size} bytes)", size as f64 / (1024.0 * 1024.0))
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
    fn names_are_cleaned_cut_and_stable() {
        let names = |tools: &[&str]| offered_names("gh", tools).0;
        assert_eq!(names(&["list_issues"]), ["mcp__gh__list_issues"]);
        assert_eq!(names(&["get.user/x"]), ["mcp__gh__get_user_x"]);
        let long = "a".repeat(80);
        let cut = names(&[&long]);
        assert_eq!(cut[0].len(), MAX_TOOL_NAME);
        assert_eq!(cut, names(&[&long]), "stable");
        assert_eq!(
            hashed("mcp__gh__a_b", "a.b", 0),
            "mcp__gh__a_b_108bf50c",
            "the same in every build: FNV-1a"
        );
    }

    #[test]
    fn every_way_two_tools_meet_on_one_name_is_a_stable_renaming_and_a_clash() {
        // Cleaned alike, in either listing order: the tool whose name needs no change keeps it.
        for tools in [["a.b", "a_b"], ["a_b", "a.b"]] {
            let (names, clashes) = offered_names("s", &tools);
            let of = |tool: &str| names[tools.iter().position(|t| *t == tool).unwrap()].clone();
            assert_eq!(of("a_b"), "mcp__s__a_b");
            assert_eq!(of("a.b"), hashed("mcp__s__a_b", "a.b", 0));
            assert_eq!(
                clashes,
                [NameClash {
                    server: "s".into(),
                    kept: "a_b".into(),
                    renamed: "a.b".into(),
                    wanted: "mcp__s__a_b".into(),
                    given: of("a.b"),
                }]
            );
        }
        // A renamed tool's new name taken already by a tool literally called so.
        let taken = hashed("mcp__s__a_b", "a.b", 0);
        let literal = taken.strip_prefix("mcp__s__").unwrap().to_string();
        let tools = ["a.b", "a_b", literal.as_str()];
        let (names, clashes) = offered_names("s", &tools);
        assert_eq!(
            names[2], taken,
            "the literal name needs no change and keeps it"
        );
        assert_eq!(names[0], hashed("mcp__s__a_b", "a.b", 1));
        assert_eq!(clashes.len(), 2, "{clashes:?}");
        // Two long names cut alike differ by their hashes, and nothing clashed.
        let (a, b) = (
            format!("{}a", "x".repeat(70)),
            format!("{}b", "x".repeat(70)),
        );
        let (names, clashes) = offered_names("s", &[&a, &b]);
        assert_ne!(names[0], names[1]);
        assert!(clashes.is_empty());
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
