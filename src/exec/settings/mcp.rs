//! The run's MCP servers as the settings know them: config.toml's `[mcp_servers]`,
//! `--mcp-project` and `--mcp-config`, with what to warn about and what a specialist is handed.

use std::path::Path;

use crate::cli::ExecArgs;
use crate::config_file::ConfigFile;
use crate::mcp::config::{self as mcp_config, Entry};
use crate::mcp::{ServerConfig, UnknownKey};

use crate::exec::failure::Failure;
use crate::exec::inputs::Environment;

/// The run's MCP configuration: config.toml, `--mcp-project`, `--mcp-config`.
pub(crate) struct McpSettings {
    /// The servers the run starts.
    pub(crate) servers: Vec<ServerConfig>,
    /// The keys of the MCP configuration zero does not know, for a warning each.
    pub(crate) unknown_keys: Vec<UnknownKey>,
    /// Whether the workspace has a `.mcp.json` this run does not read (no `--mcp-project`).
    pub(crate) project_unread: bool,
    /// Each server's entry as a specialist gets it, `${VAR}` expanded (a child's environment
    /// may lack the variables).
    pub(super) handed: Vec<(String, Entry)>,
}

impl McpSettings {
    /// Loads the servers the flags and the config file name; `env` expands their entries
    /// for specialists.
    pub(super) fn resolve(
        args: &ExecArgs,
        file: Option<&ConfigFile>,
        env: &Environment,
        workspace: &Path,
    ) -> Result<Self, Failure> {
        let mcp = mcp_config::load(mcp_config::Sources {
            config_file: file,
            files: &args.mcp_config,
            project: args.mcp_project.then_some(workspace),
            strict: args.strict_mcp_config,
        })
        .map_err(|error| Failure::usage(error.to_string()))?;
        let handed = mcp
            .servers
            .iter()
            .map(|server| {
                let entry = server.handed_entry(&|name| env.var(name));
                (server.name.clone(), entry)
            })
            .collect();
        Ok(McpSettings {
            handed,
            servers: mcp.servers,
            unknown_keys: mcp.unknown_keys,
            project_unread: !args.mcp_project
                && !args.strict_mcp_config
                && project_mcp_json_there(workspace),
        })
    }
}

/// Whether the workspace holds a `.mcp.json` that `--mcp-project` would read: a regular file
/// beneath it (one that links out would be refused, so it is not "skipped" either).
fn project_mcp_json_there(workspace: &Path) -> bool {
    crate::fsutil::open_beneath(workspace, Path::new(".mcp.json"))
        .is_ok_and(|(_, metadata)| metadata.is_file())
}
