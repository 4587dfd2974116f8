//! Which MCP servers a run has: the `.mcp.json` format (`{"mcpServers": {NAME: entry}}`, as
//! Claude Code and others read it) from `--mcp-config` files and, with `--mcp-project`, the
//! workspace's own `.mcp.json`; and `[mcp_servers.NAME]` tables in `config.toml` with the same
//! keys. Every entry is checked when it is read — a bad file is a usage error naming the file
//! and the server, before anything starts — but `${VAR}` references are expanded only when the
//! server starts (see [`ServerConfig::expanded`]), so an unset variable fails that server alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config_file::ConfigFile;
use crate::fsutil;

/// How long a server may take to start and list its tools, unless its entry says otherwise.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one tool call may take, unless the server's entry says otherwise.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest server name: `mcp__NAME__TOOL` must leave a tool room within the 64
/// characters the model APIs allow a function name.
const MAX_NAME: usize = 32;

/// The most an MCP configuration file may hold.
const FILE_LIMIT: u64 = 1024 * 1024;

/// One server's entry, as a file writes it (JSON or TOML, the same keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// `stdio` or `http` (`streamable-http` too); implied by `command` or `url` when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    /// A stdio server's program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) args: Vec<String>,
    /// Variables set for it on top of what commands inherit.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) env: BTreeMap<String, String>,
    /// Its working directory (relative to the workspace); the workspace by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    /// An HTTP server's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// Headers sent with every request to it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    /// Whether a stdio server may use the network where the run's commands may not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) network: bool,
    /// Whether the run fails (exit 3) when this server cannot start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) required: bool,
    /// Whether the entry is switched off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) disabled: bool,
    /// Milliseconds to start and list tools.
    #[serde(
        default,
        alias = "startupTimeoutMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) startup_timeout_ms: Option<u64>,
    /// Milliseconds one tool call may take.
    #[serde(
        default,
        alias = "toolTimeoutMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) tool_timeout_ms: Option<u64>,
}

/// A `.mcp.json` file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct McpFile {
    /// The servers, by name.
    #[serde(rename = "mcpServers", default)]
    pub(crate) servers: BTreeMap<String, Entry>,
}

/// The `config.toml` keys this module owns.
#[derive(Debug, Default, Deserialize)]
struct FileKeys {
    #[serde(default)]
    mcp_servers: BTreeMap<String, Entry>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A process zero starts, speaking on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: BTreeMap<String, String>,
        /// Its working directory, when not the workspace.
        cwd: Option<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// One server a run may start, checked, `${VAR}` references not yet expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name, which its tools are offered under (`mcp__NAME__TOOL`).
    pub(crate) name: String,
    /// Where it was configured, for messages.
    pub(crate) source: String,
    /// How it is reached.
    pub(crate) transport: Transport,
    /// Whether a stdio server may use the network.
    pub(crate) network: bool,
    /// Whether the run fails when it cannot start.
    pub(crate) required: bool,
    /// How long it may take to start and list its tools.
    pub(crate) startup_timeout: Duration,
    /// How long one call may take.
    pub(crate) tool_timeout: Duration,
    /// The entry as written, to hand to a specialist.
    pub(crate) entry: Entry,
}

/// Where a run's MCP servers are configured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    /// `config.toml`, when there is one.
    pub(crate) config_file: Option<&'a ConfigFile>,
    /// The `--mcp-config` files, in order.
    pub(crate) files: &'a [PathBuf],
    /// The workspace's `.mcp.json`, when `--mcp-project` asks for it.
    pub(crate) project: Option<&'a Path>,
    /// `--strict-mcp-config`: only the `--mcp-config` files count.
    pub(crate) strict: bool,
}

/// The servers `sources` configure, by name: `config.toml` first, then the project's
/// `.mcp.json`, then each `--mcp-config` file, a later entry of a name replacing an earlier
/// one. Disabled entries are left out. The error names the file and the server.
pub(crate) fn load(sources: Sources<'_>) -> Result<Vec<ServerConfig>, String> {
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let mut add = |entries: BTreeMap<String, Entry>, source: &str| -> Result<(), String> {
        for (name, entry) in entries {
            let server = ServerConfig::check(name, entry, source)?;
            match server {
                Some(server) => servers.insert(server.name.clone(), server),
                None => None,
            };
        }
        Ok(())
    };
    if !sources.strict {
        if let Some(file) = sources.config_file {
            let keys: FileKeys = file.keys().map_err(|e| e.to_string())?;
            add(keys.mcp_servers, &file.location().display().to_string())?;
        }
        if let Some(project) = sources.project
            && let Some(file) = read_file(project, false)?
        {
            add(file.servers, &project.display().to_string())?;
        }
    }
    for path in sources.files {
        let file = read_file(path, true)?.unwrap_or_default();
        add(file.servers, &path.display().to_string())?;
    }
    Ok(servers.into_values().collect())
}

/// Reads a `.mcp.json` file; a missing one is `None` unless `must_exist`.
fn read_file(path: &Path, must_exist: bool) -> Result<Option<McpFile>, String> {
    let bytes = match fsutil::read_regular(path, FILE_LIMIT) {
        Ok((bytes, _)) => bytes,
        Err(fsutil::OpenError::Io(error))
            if error.kind() == std::io::ErrorKind::NotFound && !must_exist =>
        {
            return Ok(None);
        }
        Err(error) => {
            return Err(format!(
                "cannot read MCP config {}: {error}",
                path.display()
            ));
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| format!("invalid MCP config {}: {error}", path.display()))
}

impl ServerConfig {
    /// Whether zero starts this server's process (rather than reaching it over HTTP).
    pub fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }

    /// Checks one entry; `None` when it is disabled.
    fn check(name: String, entry: Entry, source: &str) -> Result<Option<Self>, String> {
        let fail = |problem: String| format!("MCP server `{name}` in {source}: {problem}");
        check_name(&name).map_err(fail)?;
        if entry.disabled {
            return Ok(None);
        }
        let kind = entry.kind.as_deref().map(str::to_ascii_lowercase);
        let transport = match (kind.as_deref(), &entry.command, &entry.url) {
            (Some("sse"), _, _) => {
                return Err(fail(
                    "the SSE transport (which the protocol deprecated) is not supported; use \
                     the server's streamable HTTP endpoint with \"type\": \"http\""
                        .into(),
                ));
            }
            (Some("stdio") | None, Some(command), None) => Transport::Stdio {
                command: command.clone(),
                args: entry.args.clone(),
                env: entry.env.clone(),
                cwd: entry.cwd.clone(),
            },
            (Some("http" | "streamable-http" | "streamable_http") | None, None, Some(url)) => {
                Transport::Http {
                    url: url.clone(),
                    headers: entry.headers.clone(),
                }
            }
            (None, Some(_), Some(_)) => {
                return Err(fail(
                    "give either `command` (stdio) or `url` (http), not both".into(),
                ));
            }
            (None, None, None) => {
                return Err(fail(
                    "give `command` (a stdio server) or `url` (an HTTP server)".into(),
                ));
            }
            (Some("stdio"), _, _) => return Err(fail("a stdio server needs `command`".into())),
            (Some("http" | "streamable-http" | "streamable_http"), _, _) => {
                return Err(fail("an HTTP server needs `url` (and no `command`)".into()));
            }
            (Some(other), _, _) => {
                return Err(fail(format!(
                    "unknown `type` \"{other}\"; use \"stdio\" or \"http\""
                )));
            }
        };
        let millis = |value: Option<u64>, key: &str, default: Duration| match value {
            Some(0) => Err(fail(format!("`{key}` must be at least 1"))),
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Ok(default),
        };
        Ok(Some(ServerConfig {
            startup_timeout: millis(
                entry.startup_timeout_ms,
                "startup_timeout_ms",
                DEFAULT_STARTUP_TIMEOUT,
            )?,
            tool_timeout: millis(
                entry.tool_timeout_ms,
                "tool_timeout_ms",
                DEFAULT_TOOL_TIMEOUT,
            )?,
            name,
            source: source.to_string(),
            transport,
            network: entry.network,
            required: entry.required,
            entry,
        }))
    }

    /// Its transport with every `${VAR}` and `${VAR:-default}` in the command, arguments,
    /// environment, working directory, URL and headers replaced from `var`, and the values
    /// that must be kept out of everything zero writes: those of variables whose names look
    /// secret, and every value put into a header (which is where tokens go). Fails on an
    /// unset variable without a default.
    pub(crate) fn expanded(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Transport, Vec<String>), String> {
        let mut used = Vec::new();
        let mut in_headers = Vec::new();
        let mut expand = |text: &str, place: &str| {
            expand(text, var, &mut used).map_err(|problem| format!("in {place}: {problem}"))
        };
        let transport = match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => Transport::Stdio {
                command: expand(command, "`command`")?,
                args: args
                    .iter()
                    .map(|arg| expand(arg, "`args`"))
                    .collect::<Result<_, _>>()?,
                env: env
                    .iter()
                    .map(|(name, value)| Ok((name.clone(), expand(value, &format!("env.{name}"))?)))
                    .collect::<Result<_, String>>()?,
                cwd: cwd.as_deref().map(|cwd| expand(cwd, "`cwd`")).transpose()?,
            },
            Transport::Http { url, headers } => {
                let url = expand(url, "`url`")?;
                let mut expanded = BTreeMap::new();
                for (name, value) in headers {
                    let mut header_vars = Vec::new();
                    let value = crate::mcp::config::expand(value, var, &mut header_vars)
                        .map_err(|problem| format!("in headers.{name}: {problem}"))?;
                    in_headers.extend(header_vars.into_iter().map(|(_, value)| value));
                    expanded.insert(name.clone(), value);
                }
                Transport::Http {
                    url,
                    headers: expanded,
                }
            }
        };
        let secrets = used
            .into_iter()
            .filter(|(name, _)| crate::redact::looks_secret(name))
            .map(|(_, value)| value)
            .chain(in_headers)
            .collect();
        Ok((transport, secrets))
    }
}

impl ServerConfig {
    /// Its entry as a specialist gets it: every `${VAR}` expanded from `var` (a child's
    /// environment lacks the variables withheld from commands), or, when that fails, as
    /// written, so the child reports the same error.
    pub(crate) fn handed_entry(&self, var: &dyn Fn(&str) -> Option<String>) -> Entry {
        let mut entry = self.entry.clone();
        match self.expanded(var) {
            Ok((
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                },
                _,
            )) => {
                entry.command = Some(command);
                entry.args = args;
                entry.env = env;
                entry.cwd = cwd;
            }
            Ok((Transport::Http { url, headers }, _)) => {
                entry.url = Some(url);
                entry.headers = headers;
            }
            Err(_) => {}
        }
        entry
    }
}

/// A server name is what its tools are called by: letters, digits, `-` and `_`, no `__`
/// (which separates the parts of `mcp__NAME__TOOL`), at most [`MAX_NAME`] characters.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__");
    if valid {
        Ok(())
    } else {
        Err(format!(
            "a server's name must be 1 to {MAX_NAME} letters, digits, `-` or `_`, without `__`"
        ))
    }
}

/// `text` with `${NAME}` and `${NAME:-default}` replaced from `var`; each variable used is
/// added to `used` with its value. A `$` not followed by `{` stays as it is.
fn expand(
    text: &str,
    var: &dyn Fn(&str) -> Option<String>,
    used: &mut Vec<(String, String)>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without its `}}` in \"{text}\""))?;
        let reference = &after[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(format!("`${{{reference}}}` does not name a variable"));
        }
        match (var(name).filter(|value| !value.is_empty()), default) {
            (Some(value), _) => {
                out.push_str(&value);
                used.push((name.to_string(), value));
            }
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "the environment variable {name} is not set (and `${{{name}:-default}}` \
                     gives no default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn references_are_expanded_with_defaults_and_an_unset_one_is_named() {
        let mut used = Vec::new();
        assert_eq!(
            expand("Bearer ${TOKEN}", &env, &mut used).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(used, [("TOKEN".to_string(), "s3cret".to_string())]);
        assert_eq!(
            expand("${NOPE:-x}/$HOME", &env, &mut used).unwrap(),
            "x/$HOME"
        );
        assert_eq!(expand("${EMPTY:-d}", &env, &mut used).unwrap(), "d");
        let unset = expand("${NOPE}", &env, &mut used).unwrap_err();
        assert!(unset.contains("NOPE is not set"), "{unset}");
        assert!(expand("${TOKEN", &env, &mut used).is_err());
        assert!(expand("${1X}", &env, &mut used).is_err());
        assert!(expand("${A B}", &env, &mut used).is_err());
    }

    #[test]
    fn header_values_and_secret_looking_variables_are_kept_secret() {
        let entry: Entry = serde_json::from_value(serde_json::json!({
            "url": "https://x/${PLAIN}",
            "headers": {"Authorization": "Bearer ${PLAIN}"}
        }))
        .unwrap();
        let server = ServerConfig::check("web".into(), entry, "f")
            .unwrap()
            .unwrap();
        let var = |name: &str| match name {
            "PLAIN" => Some("p1".to_string()),
            "TOKEN" => Some("t1".to_string()),
            _ => None,
        };
        let (transport, secrets) = server.expanded(&var).unwrap();
        assert!(matches!(&transport, Transport::Http { url, .. } if url == "https://x/p1"));
        assert_eq!(
            secrets,
            ["p1"],
            "the header's variable, though its name looks plain"
        );
        let entry: Entry = serde_json::from_value(
            serde_json::json!({"command": "x", "args": ["${TOKEN}", "${PLAIN}"]}),
        )
        .unwrap();
        let server = ServerConfig::check("s".into(), entry, "f")
            .unwrap()
            .unwrap();
        assert_eq!(server.expanded(&var).unwrap().1, ["t1"]);
    }

    #[test]
    fn entries_are_checked_and_name_their_file_and_server() {
        let check = |name: &str, json: &str| {
            let entry: Entry = serde_json::from_str(json).unwrap();
            ServerConfig::check(name.into(), entry, "f.json")
        };
        let stdio = check("fs", r#"{"command": "srv", "args": ["-v"]}"#)
            .unwrap()
            .unwrap();
        assert!(matches!(stdio.transport, Transport::Stdio { .. }));
        assert_eq!(stdio.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        let http = check(
            "web",
            r#"{"type": "http", "url": "http://x", "tool_timeout_ms": 5}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(http.tool_timeout, Duration::from_millis(5));
        assert!(
            check("off", r#"{"command": "x", "disabled": true}"#)
                .unwrap()
                .is_none()
        );
        for (name, json, says) in [
            ("a__b", r#"{"command": "x"}"#, "without `__`"),
            ("a.b", r#"{"command": "x"}"#, "letters, digits"),
            ("s", r#"{"type": "sse", "url": "http://x"}"#, "SSE"),
            ("s", r#"{"command": "x", "url": "http://x"}"#, "not both"),
            ("s", r#"{}"#, "give `command`"),
            ("s", r#"{"type": "ws", "url": "x"}"#, "unknown `type`"),
            (
                "s",
                r#"{"command": "x", "startup_timeout_ms": 0}"#,
                "at least 1",
            ),
        ] {
            let error = check(name, json).unwrap_err();
            assert!(error.contains(says), "{error}");
            assert!(error.contains("f.json") && error.contains(name), "{error}");
        }
    }

    #[test]
    fn later_sources_replace_earlier_ones_and_strict_reads_only_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let toml = write(
            "config.toml",
            "[mcp_servers.a]\ncommand = \"from-toml\"\n[mcp_servers.b]\ncommand = \"b\"\n",
        );
        let config = ConfigFile::read(&toml).unwrap().unwrap();
        let project = write(".mcp.json", r#"{"mcpServers": {"c": {"command": "c"}}}"#);
        let flag = write(
            "m.json",
            r#"{"mcpServers": {"a": {"command": "from-flag"}}}"#,
        );
        let files = [flag];
        let sources = Sources {
            config_file: Some(&config),
            files: &files,
            project: Some(&project),
            strict: false,
        };
        let servers = load(sources).unwrap();
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { command, .. } if command == "from-flag")
        );
        let strict = load(Sources {
            strict: true,
            ..sources
        })
        .unwrap();
        assert_eq!(strict.len(), 1);
        let missing = [dir.path().join("none.json")];
        let error = load(Sources {
            files: &missing,
            ..sources
        })
        .unwrap_err();
        assert!(error.contains("none.json"), "{error}");
        let broken = [write("bad.json", "{\"mcpServers\": {")];
        let error = load(Sources {
            files: &broken,
            ..sources
        })
        .unwrap_err();
        assert!(
            error.contains("bad.json") && error.contains("line 1"),
            "{error}"
        );
    }
}
