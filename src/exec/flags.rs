//! Resolving `zero exec` flags into what a run needs: the workspace, the policy, the tool
//! filters and the `--output-last-message` path. Every problem found here is a usage error
//! (exit 2) with a one-line message.

use std::path::{Path, PathBuf};

use crate::cli::ExecArgs;
use crate::mcp::{self, ServerConfig};
use crate::tools::{Policy, Registry, ToolFilter, ToolId};

use super::failure::Failure;

/// The canonical workspace root: `--cwd`, or the current directory.
pub(crate) fn workspace(cwd: Option<&Path>) -> Result<PathBuf, Failure> {
    let dir = match cwd {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Failure::usage(format!("cannot read the current directory: {e}")))?,
    };
    existing_dir(&dir, "--cwd")
}

/// The run's policy: `--auto`, `--skip-permissions-unsafe`, the workspace and `--add-dir`s.
pub(crate) fn policy(args: &ExecArgs, workspace: &Path) -> Result<Policy, Failure> {
    let mut roots = vec![workspace.to_path_buf()];
    for dir in &args.add_dir {
        roots.push(directory(dir, workspace, "--add-dir")?);
    }
    Ok(Policy::new(args.auto, args.skip_permissions_unsafe, roots))
}

/// The directory `dir` a flag names (`flag`, for the message), relative to `workspace` unless
/// absolute, made canonical; a usage error when it is not a directory.
pub(crate) fn directory(dir: &Path, workspace: &Path, flag: &str) -> Result<PathBuf, Failure> {
    existing_dir(&workspace.join(dir), flag)
}

/// `--enabled-tools` and `--disabled-tools` as given (each a list of comma or space separated
/// lists), checked by [`tool_filter`] once the registry is built.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolLists {
    /// `--enabled-tools`.
    pub(crate) enabled: Vec<String>,
    /// `--disabled-tools`.
    pub(crate) disabled: Vec<String>,
}

/// The tool filters, each name checked against the registry, or naming a configured MCP
/// server (`mcp__SERVER__TOOL`, `mcp__SERVER__*`: its tools are known only once it started).
pub(crate) fn tool_filter(
    lists: &ToolLists,
    registry: &Registry,
    mcp_servers: &[ServerConfig],
) -> Result<ToolFilter, Failure> {
    // Every tool of the catalog is known by name, offered in this run or not (`Skill` without
    // skills, `web_fetch` unasked): a specialist's flags may name them either way.
    let known = |name: &str| {
        registry.contains(name)
            || ToolId::from_name(name).is_some()
            || mcp::names_a_server(name, mcp_servers)
    };
    let enabled = tool_names(&lists.enabled, &known, registry, "--enabled-tools")?;
    let disabled = tool_names(&lists.disabled, &known, registry, "--disabled-tools")?;
    if let Some(both) = enabled.iter().find(|name| disabled.contains(name)) {
        return Err(Failure::usage(format!(
            "tool `{both}` is in both --enabled-tools and --disabled-tools; keep it in one"
        )));
    }
    Ok(ToolFilter { enabled, disabled })
}

/// Splits repeated comma/space separated lists, dropping duplicates, keeping first order.
fn tool_names(
    lists: &[String],
    known: &dyn Fn(&str) -> bool,
    registry: &Registry,
    flag: &str,
) -> Result<Vec<String>, Failure> {
    let mut names: Vec<String> = Vec::new();
    for name in lists
        .iter()
        .flat_map(|list| list.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|name| !name.is_empty())
    {
        if !known(name) {
            let mcp = match mcp::server_of(name) {
                Some(server) => format!(
                    " (`{name}` would be a tool of MCP server `{server}`, which this run has \
                     not configured)"
                ),
                None => String::new(),
            };
            return Err(Failure::usage(format!(
                "unknown tool `{name}` in {flag}{mcp}; valid names: {}, or \
                 mcp__SERVER__TOOL and mcp__SERVER__* for a configured MCP server",
                registry.names().join(", ")
            )));
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

fn existing_dir(dir: &Path, flag: &str) -> Result<PathBuf, Failure> {
    match dir.canonicalize() {
        Ok(path) if path.is_dir() => Ok(path),
        Ok(_) => Err(Failure::usage(format!(
            "{flag} {}: not a directory",
            dir.display()
        ))),
        Err(e) => Err(Failure::usage(format!("{flag} {}: {e}", dir.display()))),
    }
}

/// Checks `--output-last-message` before the run spends tokens: its directory must exist and
/// the path must not be a directory.
pub(crate) fn last_message_path(path: &Path) -> Result<PathBuf, Failure> {
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "--output-last-message {}: is a directory",
            path.display()
        )));
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Failure::usage(format!(
            "--output-last-message {}: directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    Ok(path.to_path_buf())
}
