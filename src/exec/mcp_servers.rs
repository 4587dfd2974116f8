//! Starting a run's MCP servers and reporting how that went: a warning for each server that
//! failed, exit 3 when a required one did, and the `run_start` entries. A run without MCP
//! configuration starts nothing and opens nothing here.

use tokio_util::sync::CancellationToken;

use crate::mcp::{self, Place, ServerConfig, ServerState, Started, TransportKind};
use crate::output::{EventKind, McpServerInfo, McpState, McpTransport, Output};
use crate::runtime::Runtime;

use super::driver::before_stop;
use super::failure::Failure;
use super::settings::{McpSettings, Settings};

/// Starts the run's MCP servers (all at once, each within its start-up time), unless the run
/// is stopped or its deadline passes first. A failed server its entry says is required is
/// exit 3, naming it and why; the others' failures are for [`warn`] once `run_start` is out.
/// On an error the servers that did start are the caller's to close (the runtime's close
/// stops them).
pub(crate) async fn start(
    settings: &Settings,
    runtime: &Runtime,
    output: &Output,
    cancel: &CancellationToken,
) -> Result<Started, Failure> {
    let servers = settings.mcp.servers.clone();
    if servers.is_empty() {
        return Ok(Started::default());
    }
    // The logs of stdio servers go to the run directory, opened only when one is configured.
    let log_dir = match servers.iter().any(ServerConfig::is_stdio) {
        true => Some(runtime.run_dir().await.map_err(|error| {
            Failure::internal(format!(
                "cannot open the run directory for MCP logs: {error}"
            ))
        })?),
        false => None,
    };
    let var = |name: &str| settings.var(name);
    let place = Place {
        runtime,
        workspace: &settings.workspace.root,
        log_dir: log_dir.as_deref(),
        var: &var,
        secrets: output.secrets(),
    };
    let started = before_stop(mcp::start(servers, &place), cancel).await?;
    if let Some(error) = started
        .states
        .iter()
        .filter(|state| state.required)
        .find_map(|state| state.error.as_ref())
    {
        return Err(Failure::mcp_required(error));
    }
    Ok(started)
}

/// A warning for each key of the MCP configuration zero does not know, each tool renamed for
/// a clash of names, each server that failed to start, and when the workspace's own
/// `.mcp.json` went unread.
pub(crate) fn warn(states: &[ServerState], config: &McpSettings, output: &Output) {
    for unknown in &config.unknown_keys {
        output.emit(EventKind::Warning {
            message: unknown.to_string(),
        });
    }
    for clash in states.iter().flat_map(|state| &state.clashes) {
        output.emit(EventKind::Warning {
            message: clash.to_string(),
        });
    }
    for error in states.iter().filter_map(|state| state.error.as_ref()) {
        output.emit(EventKind::Warning {
            message: format!("{error}; the run goes on without its tools"),
        });
    }
    if config.project_unread {
        output.emit(EventKind::Warning {
            message: "the workspace's .mcp.json was not read: its servers start only with \
                      --mcp-project"
                .into(),
        });
    }
}

/// The `run_start` entries of the servers' states.
pub(crate) fn infos(states: &[ServerState]) -> Vec<McpServerInfo> {
    states
        .iter()
        .map(|state| McpServerInfo {
            name: state.name.clone(),
            transport: match state.transport {
                TransportKind::Stdio => McpTransport::Stdio,
                TransportKind::Http => McpTransport::Http,
            },
            state: match state.error {
                Some(_) => McpState::Failed,
                None => McpState::Ready,
            },
            tools: state.tools,
            error: state.error.clone(),
        })
        .collect()
}
