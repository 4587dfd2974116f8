//! MCP servers as tools. The run's servers (see `mcp::config`) start in parallel, each within its
//! start-up time; a stdio server is a service of the run's runtime — guardian, lifeline,
//! sandbox and environment rules like every command, gone when the run is, SIGKILL of zero
//! included. Each server's tools are offered to the registry as `mcp__SERVER__TOOL`, a name
//! no other tool of the run has (see `tool`: a clash within one server renames a tool, stably,
//! with a warning; the server names `config` accepts keep servers apart). A server that fails
//! to start is reported and left out, unless its entry says it is required. What a stdio
//! server says is read through `stdio`, which fails a call whose answer is too large at once
//! rather than letting it be lost.
//!
//! A run with no MCP configuration does none of this: nothing is read beyond `config.toml`
//! (which is read anyway) and nothing is started.

pub(crate) mod config;
mod server;
mod stdio;
mod tool;

use std::sync::Arc;

use futures_util::future::join_all;

pub use config::{ServerConfig, UnknownKey};
pub(crate) use server::Place;
pub use tool::NameClash;

use crate::tools::Tool;
use config::Transport;
use server::Connected;
use tool::McpTool;

/// How one configured server's start went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerState {
    /// The server's name.
    pub name: String,
    /// How it is reached.
    pub transport: TransportKind,
    /// How many tools it offers (0 when it failed).
    pub tools: usize,
    /// Why it failed to start, when it did.
    pub error: Option<String>,
    /// Whether its entry says the run cannot go on without it.
    pub required: bool,
    /// The tools of its that are offered under another name than their own would give.
    pub clashes: Vec<NameClash>,
}

/// How a server is reached, without the details of where: what `run_start` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A process zero starts, speaking on its stdin and stdout.
    Stdio,
    /// A streamable HTTP endpoint.
    Http,
}

/// The run's connected servers. [`Servers::close`] ends them; until then their tools work.
#[derive(Default)]
pub struct Servers {
    connected: Vec<Arc<Connected>>,
}

/// What starting the run's servers gave.
#[derive(Default)]
pub struct Started {
    /// The servers that are up.
    pub servers: Servers,
    /// How each configured server's start went, in name order.
    pub states: Vec<ServerState>,
    /// Every tool of every server that is up.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// Starts every server in `configs` at once, each bounded by its start-up time, and lists
/// their tools. A server that fails or runs out of time is left out (its state says why) and
/// whatever it started is stopped.
pub(crate) async fn start(configs: Vec<ServerConfig>, place: &Place<'_>) -> Started {
    let starts = configs.into_iter().map(|config| async move {
        let name = config.name.clone();
        let limit = config.startup_timeout;
        let started = tokio::time::timeout(limit, Connected::start(config.clone(), place)).await;
        let started = started.unwrap_or_else(|_| {
            Err(format!(
                "it did not start and list its tools within {} (startup_timeout_ms)",
                humantime::format_duration(limit)
            ))
        });
        (
            config,
            started.map_err(|error| format!("MCP server `{name}`: {error}")),
        )
    });
    let mut started = Started {
        servers: Servers::default(),
        states: Vec::new(),
        tools: Vec::new(),
    };
    for (config, result) in join_all(starts).await {
        let transport = match config.transport {
            Transport::Stdio { .. } => TransportKind::Stdio,
            Transport::Http { .. } => TransportKind::Http,
        };
        let mut state = ServerState {
            name: config.name.clone(),
            transport,
            tools: 0,
            error: None,
            required: config.required,
            clashes: Vec::new(),
        };
        match result {
            Ok(connected) => {
                let connected = Arc::new(connected);
                let (tools, clashes) = McpTool::all_of(&connected);
                state.tools = tools.len();
                state.clashes = clashes;
                started.tools.extend(
                    tools
                        .into_iter()
                        .map(|tool| Arc::new(tool) as Arc<dyn Tool>),
                );
                started.servers.connected.push(connected);
            }
            Err(error) => state.error = Some(error),
        }
        started.states.push(state);
    }
    started
}

impl Servers {
    /// The names of the servers that went away while the run still had them: a stdio server
    /// whose process ended before the run's close (its tools fail from then on), an HTTP
    /// server whose last call could not reach it. What
    /// `--strict` fails a run for; asked before [`Servers::close`].
    pub fn gone(&self) -> Vec<String> {
        self.connected
            .iter()
            .filter(|server| server.is_gone())
            .map(|server| server.config.name.clone())
            .collect()
    }

    /// Ends every connection at once — each stdio server's stdin closes and its process is
    /// stopped — and waits until every process is over. Their tools fail from then on.
    pub async fn close(&self) {
        join_all(self.connected.iter().map(|server| server.close())).await;
    }
}

/// Whether `name` is a tool name or pattern for one of `servers`: `mcp__SERVER__TOOL`, or
/// `mcp__SERVER__*` for all of that server's tools.
pub(crate) fn names_a_server(name: &str, servers: &[ServerConfig]) -> bool {
    server_of(name).is_some_and(|server| servers.iter().any(|s| s.name == server))
}

/// The server part of `mcp__SERVER__TOOL` or `mcp__SERVER__*`.
pub(crate) fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some(server)
}
