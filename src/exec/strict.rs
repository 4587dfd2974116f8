//! `--strict`: a run ends non-zero when its work was blocked, once the model's answer is
//! printed. What blocks it, each cause named: the calls refused before they ran (by the
//! `--auto` level, a rule or a hook), an MCP server that did not start or went away, a
//! specialist that failed, and a call cut at the output token limit that the model never made
//! again. Without `--strict` none of this changes the exit code.

use crate::mcp::ServerState;
use crate::output::Obstacles;

/// What the run saw that may have blocked its work.
pub(super) struct Seen<'a> {
    /// What the events said: the denials and the specialists that failed.
    pub(super) obstacles: Obstacles,
    /// How each MCP server's start went.
    pub(super) mcp: &'a [ServerState],
    /// The MCP servers that went away during the run.
    pub(super) mcp_gone: &'a [String],
    /// The tools of the calls cut at the output limit and never made again.
    pub(super) cut_calls: &'a [String],
}

/// Each cause that blocked the run, for a person; empty when nothing did.
pub(super) fn causes(seen: &Seen<'_>) -> Vec<String> {
    let mut causes = Vec::new();
    if let Some(denials) = denials(&seen.obstacles.denied) {
        causes.push(denials);
    }
    let failed = seen.mcp.iter().filter(|state| state.error.is_some());
    causes.extend(failed.map(|state| format!("the MCP server `{}` did not start", state.name)));
    causes.extend(
        seen.mcp_gone
            .iter()
            .map(|name| format!("the MCP server `{name}` went away during the run")),
    );
    causes.extend(
        seen.obstacles
            .failed_specialists
            .iter()
            .map(|specialist| format!("the specialist {specialist} failed")),
    );
    causes.extend(seen.cut_calls.iter().map(|tool| {
        format!(
            "a `{tool}` call was cut at the output token limit (--max-output-tokens) and never \
             made again"
        )
    }));
    causes
}

/// The calls refused before they ran, by tool, in the order first refused: `2 calls were
/// refused before they ran (…): bash ×1, write_file ×1`; `None` when none were.
fn denials(denied: &[String]) -> Option<String> {
    let mut tools: Vec<(&str, usize)> = Vec::new();
    for tool in denied {
        match tools.iter_mut().find(|(name, _)| name == tool) {
            Some((_, count)) => *count += 1,
            None => tools.push((tool, 1)),
        }
    }
    let calls = match denied.len() {
        0 => return None,
        1 => "1 call was refused before it ran".to_string(),
        n => format!("{n} calls were refused before they ran"),
    };
    let by_tool: Vec<String> = tools
        .iter()
        .map(|(tool, count)| format!("{tool} ×{count}"))
        .collect();
    Some(format!(
        "{calls} (by the --auto level, a rule or a hook): {}",
        by_tool.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::TransportKind;

    #[test]
    fn each_cause_is_named_and_nothing_seen_blocks_nothing() {
        let none = Seen {
            obstacles: Obstacles::default(),
            mcp: &[],
            mcp_gone: &[],
            cut_calls: &[],
        };
        assert!(causes(&none).is_empty());
        let failed = ServerState {
            name: "github".into(),
            transport: TransportKind::Stdio,
            tools: 0,
            error: Some("it did not start".into()),
            required: false,
            clashes: Vec::new(),
        };
        let seen = Seen {
            obstacles: Obstacles {
                denied: vec!["bash".into(), "write_file".into(), "bash".into()],
                failed_specialists: vec!["worker (task_0123456789ab)".into()],
            },
            mcp: &[failed],
            mcp_gone: &["docs".into()],
            cut_calls: &["write_file".into()],
        };
        assert_eq!(
            causes(&seen),
            [
                "3 calls were refused before they ran (by the --auto level, a rule or a hook): \
                 bash ×2, write_file ×1",
                "the MCP server `github` did not start",
                "the MCP server `docs` went away during the run",
                "the specialist worker (task_0123456789ab) failed",
                "a `write_file` call was cut at the output token limit (--max-output-tokens) \
                 and never made again",
            ]
        );
    }
}
