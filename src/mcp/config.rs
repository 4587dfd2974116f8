//! Which MCP servers a run has: the `.mcp.json` format (`{"mcpServers": {NAME: entry}}`, as
//! Claude Code and others read it) from `--mcp-config` files and, with `--mcp-project`, the
//! workspace's own `.mcp.json`; and `[mcp_servers.NAME]` tables in `config.toml` with the same
//! keys. Every entry is checked when it is read — a bad file is a usage error naming the file
//! and the server, before anything starts — but `${VAR}` references are expanded only when the
//! server starts (see [`ServerConfig::expanded`]), so an unset variable fails that server alone.
//!
//! What a reference may name is decided when the entry is read, for every source alike: the
//! provider's key variables (and the private files a parent run hands its key through) in no
//! field at all, and a variable whose name looks secret not in `command` or `args`, which every
//! local user can read in `ps` — in the server's command line and in its guardian's. Such a
//! value goes in `env` (the process's environment, readable by its own user only) or, for an
//! HTTP server, `headers`. A key a file has that zero does not know is reported with the
//! closest known key; the keys Claude Code's `.mcp.json` has and zero does not use pass
//! without a word.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config_file::{self, ConfigFile, ConfigFileError, Syntax};
use crate::environ::names::{
    KEY_VARIABLES, ZERO_HANDED_KEY_FILE, ZERO_USAGE_REPORT_FILE, looks_secret,
};
use crate::fsutil;
use crate::runtime::MAX_DURATION;

/// How long a server may take to start and list its tools, unless its entry says otherwise.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one tool call may take, unless the server's entry says otherwise.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest server name: `mcp__NAME__TOOL` must leave a tool room within the 64
/// characters the model APIs allow a function name.
const MAX_NAME: usize = 32;

/// The most an MCP configuration file may hold.
const FILE_LIMIT: u64 = 1024 * 1024;

/// The keys of a server's entry zero reads, as [`Entry`] spells them (aliases included).
/// `entry_keys_are_the_fields` keeps the list in step with the struct.
const ENTRY_KEYS: [&str; 14] = [
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "network",
    "required",
    "disabled",
    "startup_timeout_ms",
    "startupTimeoutMs",
    "tool_timeout_ms",
    "toolTimeoutMs",
];

/// Keys of Claude Code's `.mcp.json` entries that zero does not use: passed over without a
/// word, so that one file serves both.
const CLAUDE_CODE_KEYS: [&str; 2] = ["headersHelper", "oauth"];

/// The keys of a `.mcp.json` file itself.
const FILE_KEYS: [&str; 1] = ["mcpServers"];

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
    /// The keys zero does not know, kept to be reported and never written back.
    #[serde(flatten, skip_serializing)]
    pub(crate) unknown: BTreeMap<String, serde_json::Value>,
}

/// A `.mcp.json` file, as zero writes one for a specialist.
#[derive(Debug, Serialize)]
pub(crate) struct McpFile {
    /// The servers, by name.
    #[serde(rename = "mcpServers")]
    pub(crate) servers: BTreeMap<String, Entry>,
}

/// A `.mcp.json` file as read: its servers and whatever else it holds.
#[derive(Debug, Default, Deserialize)]
struct ReadFile {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, Entry>,
    #[serde(flatten)]
    unknown: BTreeMap<String, serde_json::Value>,
}

/// The `config.toml` keys this module owns.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FileKeys {
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

/// A field of a server's entry that may hold `${VAR}` references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Field {
    /// `command`.
    Command,
    /// One of `args`.
    Args,
    /// The value of one variable of `env`.
    Env(String),
    /// `cwd`.
    Cwd,
    /// `url`.
    Url,
    /// The value of one of `headers`.
    Header(String),
}

impl Field {
    /// Whether the field ends up in the server's command line (and its guardian's), which
    /// every local user can read.
    fn in_command_line(&self) -> bool {
        matches!(self, Field::Command | Field::Args)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Command => f.write_str("`command`"),
            Field::Args => f.write_str("`args`"),
            Field::Env(name) => write!(f, "`env.{name}`"),
            Field::Cwd => f.write_str("`cwd`"),
            Field::Url => f.write_str("`url`"),
            Field::Header(name) => write!(f, "`headers.{name}`"),
        }
    }
}

/// What is wrong with one `${VAR}` reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReferenceError {
    /// `${` with no `}` after it.
    #[error("`${{` without its `}}` in \"{0}\"")]
    Unclosed(String),
    /// What is between the braces is not a variable's name.
    #[error("`${{{0}}}` does not name a variable")]
    NotAName(String),
    /// The variable is unset (or empty) and the reference gives no default.
    #[error("the environment variable {0} is not set (and `${{{0}:-default}}` gives no default)")]
    Unset(String),
}

/// Why a server's `${VAR}` references could not be expanded when it started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("in {field}: {problem}")]
pub(crate) struct ExpandError {
    /// Where the reference is.
    field: Field,
    /// What is wrong with it.
    problem: ReferenceError,
}

/// What is wrong with one server's entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EntryProblem {
    /// The name cannot be part of `mcp__NAME__TOOL` unambiguously.
    #[error(
        "a server's name must be 1 to {MAX_NAME} letters, digits, `-` or `_`, without `__` and \
         not ending in `_` (its tools are called mcp__NAME__TOOL, and a tool's name must say \
         which server it is of)"
    )]
    BadName,
    /// `"type": "sse"`.
    #[error(
        "the SSE transport (which the protocol deprecated) is not supported; use the server's \
         streamable HTTP endpoint with \"type\": \"http\""
    )]
    Sse,
    /// Both `command` and `url`, and no `type` to choose.
    #[error("give either `command` (stdio) or `url` (http), not both")]
    CommandAndUrl,
    /// Neither `command` nor `url`.
    #[error("give `command` (a stdio server) or `url` (an HTTP server)")]
    NoTransport,
    /// `"type": "stdio"` without `command` (or with `url`).
    #[error("a stdio server needs `command`")]
    StdioWithoutCommand,
    /// `"type": "http"` without `url` (or with `command`).
    #[error("an HTTP server needs `url` (and no `command`)")]
    HttpWithoutUrl,
    /// A `type` zero does not know.
    #[error("unknown `type` \"{0}\"; use \"stdio\" or \"http\"")]
    UnknownType(String),
    /// A time limit of 0 ms.
    #[error("`{0}` must be at least 1")]
    ZeroMillis(&'static str),
    /// A time limit past [`MAX_DURATION`], which no clock could be sure to add.
    #[error("`{key}` is {millis} ms, longer than 100 years, the longest duration zero takes")]
    TooManyMillis {
        /// The key.
        key: &'static str,
        /// Its value.
        millis: u64,
    },
    /// A `${` reference that is not well formed.
    #[error("in {0}: {1}")]
    Reference(Field, ReferenceError),
    /// A reference to a provider's key variable (or a file zero hands its key through).
    #[error(
        "`${{{variable}}}` in {field}: the provider's key variables are never given to an MCP \
         server; give the server a key of its own, in a variable of another name"
    )]
    ProviderKey {
        /// The variable.
        variable: String,
        /// Where it is referenced.
        field: Field,
    },
    /// A secret-looking variable in `command` or `args`.
    #[error(
        "`${{{variable}}}` in {field} would put a secret in the server's command line, which \
         every local user can read (`ps`); pass it in `env` instead: \"env\": \
         {{\"{variable}\": \"${{{variable}}}\"}}"
    )]
    SecretInCommandLine {
        /// The variable.
        variable: String,
        /// Where it is referenced.
        field: Field,
    },
}

/// Why the run's MCP configuration cannot be used: a usage error, before anything starts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A configuration file could not be read, or the workspace's resolves outside it.
    #[error("cannot read MCP config {}: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: fsutil::BeneathError,
    },
    /// A `.mcp.json` file is not JSON of the expected shape.
    #[error("invalid MCP config {}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where and what is wrong, naming the key but never the value
        /// (`config_file::decode`).
        problem: String,
    },
    /// `config.toml` could not be read.
    #[error(transparent)]
    ConfigFile(#[from] ConfigFileError),
    /// One server's entry is wrong.
    #[error("MCP server `{server}` in {origin}: {problem}")]
    Entry {
        /// The server's name.
        server: String,
        /// The file it is configured in.
        origin: String,
        /// What is wrong.
        problem: EntryProblem,
    },
}

/// A key of an MCP configuration that zero does not know: ignored, and reported with the
/// known key closest to it, when one is (a typo is the usual reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key, and the known key it is most likely a typo of.
    found: config_file::UnknownKey,
    /// The server whose entry has it; `None` for a key of the file itself.
    server: Option<String>,
    /// The file.
    origin: String,
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown key `{}` ", self.found.key)?;
        if let Some(server) = &self.server {
            write!(f, "in MCP server `{server}` ")?;
        }
        write!(f, "in {} ignored", self.origin)?;
        match self.found.closest {
            Some(closest) => write!(f, " (the closest known key is `{closest}`)"),
            None => Ok(()),
        }
    }
}

impl UnknownKey {
    /// The keys of `unknown` that are not Claude Code's, each with its closest key in `known`.
    fn all_of(
        unknown: &BTreeMap<String, serde_json::Value>,
        known: &[&'static str],
        server: Option<&str>,
        origin: &str,
    ) -> Vec<UnknownKey> {
        unknown
            .keys()
            .filter(|key| !CLAUDE_CODE_KEYS.contains(&key.as_str()))
            .map(|key| UnknownKey {
                found: config_file::UnknownKey {
                    key: key.clone(),
                    closest: config_file::closest(key, known.iter().copied()),
                },
                server: server.map(str::to_string),
                origin: origin.to_string(),
            })
            .collect()
    }
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
    /// The workspace, when `--mcp-project` asks for its `.mcp.json`.
    pub(crate) project: Option<&'a Path>,
    /// `--strict-mcp-config`: only the `--mcp-config` files count.
    pub(crate) strict: bool,
}

/// The run's MCP configuration: its servers and the keys it has that zero ignored.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The servers, by name.
    pub(crate) servers: Vec<ServerConfig>,
    /// The unknown keys, in the order the sources were read.
    pub(crate) unknown_keys: Vec<UnknownKey>,
}

/// The servers `sources` configure, by name: `config.toml` first, then the project's
/// `.mcp.json`, then each `--mcp-config` file, a later entry of a name replacing an earlier
/// one. Disabled entries are left out. The error names the file and the server.
pub(crate) fn load(sources: Sources<'_>) -> Result<Loaded, ConfigError> {
    let mut loaded = Loaded::default();
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let mut add = |entries: BTreeMap<String, Entry>,
                   origin: &str,
                   loaded: &mut Loaded|
     -> Result<(), ConfigError> {
        for (name, entry) in entries {
            let unknown = UnknownKey::all_of(&entry.unknown, &ENTRY_KEYS, Some(&name), origin);
            loaded.unknown_keys.extend(unknown);
            if let Some(server) = ServerConfig::check(name, entry, origin)? {
                servers.insert(server.name.clone(), server);
            }
        }
        Ok(())
    };
    if !sources.strict {
        if let Some(file) = sources.config_file {
            let keys: FileKeys = file.keys()?;
            let origin = file.location().display().to_string();
            add(keys.mcp_servers, &origin, &mut loaded)?;
        }
        if let Some(workspace) = sources.project
            && let Some(file) = read_file(&JsonFile::Project(workspace))?
        {
            let origin = JsonFile::Project(workspace).path().display().to_string();
            let unknown = UnknownKey::all_of(&file.unknown, &FILE_KEYS, None, &origin);
            loaded.unknown_keys.extend(unknown);
            add(file.servers, &origin, &mut loaded)?;
        }
    }
    for path in sources.files {
        let file = read_file(&JsonFile::Given(path))?.unwrap_or_default();
        let origin = path.display().to_string();
        let unknown = UnknownKey::all_of(&file.unknown, &FILE_KEYS, None, &origin);
        loaded.unknown_keys.extend(unknown);
        add(file.servers, &origin, &mut loaded)?;
    }
    loaded.servers = servers.into_values().collect();
    Ok(loaded)
}

/// A `.mcp.json` file to read.
enum JsonFile<'a> {
    /// A `--mcp-config` file: the user named it, so it is read wherever its links lead, and it
    /// must exist.
    Given(&'a Path),
    /// The `.mcp.json` of this workspace, for `--mcp-project`: read beneath the workspace (a
    /// checkout's link out of it is refused, as for every file zero reads from a workspace on
    /// its caller's behalf), and absent when missing.
    Project(&'a Path),
}

impl JsonFile<'_> {
    /// The file's name in the workspace, for `--mcp-project`.
    const PROJECT: &'static str = ".mcp.json";

    /// Where it is, for messages.
    fn path(&self) -> PathBuf {
        match self {
            JsonFile::Given(path) => path.to_path_buf(),
            JsonFile::Project(workspace) => workspace.join(JsonFile::PROJECT),
        }
    }

    /// Its bytes, at most [`FILE_LIMIT`] of them.
    fn read(&self) -> Result<Vec<u8>, fsutil::BeneathError> {
        let (bytes, _) = match self {
            JsonFile::Given(path) => fsutil::read_regular(path, FILE_LIMIT)?,
            JsonFile::Project(workspace) => {
                fsutil::read_beneath(workspace, Path::new(JsonFile::PROJECT), FILE_LIMIT)?
            }
        };
        Ok(bytes)
    }
}

/// Reads a `.mcp.json` file; a missing project file is `None`.
fn read_file(file: &JsonFile<'_>) -> Result<Option<ReadFile>, ConfigError> {
    let bytes = match file.read() {
        Ok(bytes) => bytes,
        Err(fsutil::BeneathError::Open(fsutil::OpenError::Io(error)))
            if error.kind() == std::io::ErrorKind::NotFound
                && matches!(file, JsonFile::Project(_)) =>
        {
            return Ok(None);
        }
        Err(error) => {
            return Err(ConfigError::Unreadable {
                path: file.path(),
                error,
            });
        }
    };
    let invalid = |problem: String| ConfigError::Invalid {
        path: file.path(),
        problem,
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid("it is not UTF-8 text".into()))?;
    config_file::decode(text, Syntax::Json)
        .map(Some)
        .map_err(invalid)
}

impl Transport {
    /// The transport with the text of every field that may hold `${VAR}` references replaced
    /// by what `text` makes of it (given the field and the text as written): the one walk
    /// over those fields, for checking and for expanding alike.
    fn map_texts<E>(
        &self,
        mut text: impl FnMut(Field, &str) -> Result<String, E>,
    ) -> Result<Transport, E> {
        Ok(match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => Transport::Stdio {
                command: text(Field::Command, command)?,
                args: args
                    .iter()
                    .map(|arg| text(Field::Args, arg))
                    .collect::<Result<_, _>>()?,
                env: env
                    .iter()
                    .map(|(name, value)| Ok((name.clone(), text(Field::Env(name.clone()), value)?)))
                    .collect::<Result<_, _>>()?,
                cwd: cwd
                    .as_deref()
                    .map(|cwd| text(Field::Cwd, cwd))
                    .transpose()?,
            },
            Transport::Http { url, headers } => Transport::Http {
                url: text(Field::Url, url)?,
                headers: headers
                    .iter()
                    .map(|(name, value)| {
                        Ok((name.clone(), text(Field::Header(name.clone()), value)?))
                    })
                    .collect::<Result<_, _>>()?,
            },
        })
    }
}

impl ServerConfig {
    /// Whether zero starts this server's process (rather than reaching it over HTTP).
    pub fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }

    /// Checks one entry; `None` when it is disabled.
    fn check(name: String, entry: Entry, origin: &str) -> Result<Option<Self>, ConfigError> {
        let fail = |problem: EntryProblem| ConfigError::Entry {
            server: name.clone(),
            origin: origin.to_string(),
            problem,
        };
        check_name(&name).map_err(fail)?;
        if entry.disabled {
            return Ok(None);
        }
        let transport = transport_of(&entry).map_err(fail)?;
        transport
            .map_texts(|field, text| check_references(field, text).map(|()| String::new()))
            .map_err(fail)?;
        let millis = |value: Option<u64>, key: &'static str, default: Duration| match value {
            Some(0) => Err(fail(EntryProblem::ZeroMillis(key))),
            Some(millis) if Duration::from_millis(millis) > MAX_DURATION => {
                Err(fail(EntryProblem::TooManyMillis { key, millis }))
            }
            Some(millis) => Ok(Duration::from_millis(millis)),
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
            source: origin.to_string(),
            transport,
            network: entry.network,
            required: entry.required,
            entry,
            name,
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
    ) -> Result<(Transport, Vec<String>), ExpandError> {
        let mut secrets = Vec::new();
        let transport = self.transport.map_texts(|field, text| {
            let mut used = Vec::new();
            let expanded = expand(text, var, &mut used).map_err(|problem| ExpandError {
                field: field.clone(),
                problem,
            })?;
            let in_header = matches!(field, Field::Header(_));
            secrets.extend(
                used.into_iter()
                    .filter(|(name, _)| in_header || looks_secret(name))
                    .map(|(_, value)| value),
            );
            Ok(expanded)
        })?;
        Ok((transport, secrets))
    }

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

/// How `entry` says its server is reached.
fn transport_of(entry: &Entry) -> Result<Transport, EntryProblem> {
    let kind = entry.kind.as_deref().map(str::to_ascii_lowercase);
    match (kind.as_deref(), &entry.command, &entry.url) {
        (Some("sse"), _, _) => Err(EntryProblem::Sse),
        (Some("stdio") | None, Some(command), None) => Ok(Transport::Stdio {
            command: command.clone(),
            args: entry.args.clone(),
            env: entry.env.clone(),
            cwd: entry.cwd.clone(),
        }),
        (Some("http" | "streamable-http" | "streamable_http") | None, None, Some(url)) => {
            Ok(Transport::Http {
                url: url.clone(),
                headers: entry.headers.clone(),
            })
        }
        (None, Some(_), Some(_)) => Err(EntryProblem::CommandAndUrl),
        (None, None, None) => Err(EntryProblem::NoTransport),
        (Some("stdio"), _, _) => Err(EntryProblem::StdioWithoutCommand),
        (Some("http" | "streamable-http" | "streamable_http"), _, _) => {
            Err(EntryProblem::HttpWithoutUrl)
        }
        (Some(other), _, _) => Err(EntryProblem::UnknownType(other.to_string())),
    }
}

/// A server name is what its tools are called by: letters, digits, `-` and `_`, no `__`
/// (which separates the parts of `mcp__NAME__TOOL`) and no `_` at its end, at most
/// [`MAX_NAME`] characters. The last two make the name the one `mcp__NAME__` prefix of its
/// tools' names: were `x_` allowed, its tool `t` and server `x`'s tool `_t` would both be
/// `mcp__x___t`, and `mcp__x__*` would take in the tools of both.
fn check_name(name: &str) -> Result<(), EntryProblem> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__")
        && !name.ends_with('_');
    valid.then_some(()).ok_or(EntryProblem::BadName)
}

/// Whether the variable `name` is one no server's entry may name: a provider's key, or the
/// private files a parent run hands its key and its spending report through.
fn never_expanded(name: &str) -> bool {
    KEY_VARIABLES.contains(&name) || name == ZERO_HANDED_KEY_FILE || name == ZERO_USAGE_REPORT_FILE
}

/// Checks the references in `text`, the value of `field`: well formed, no provider key
/// anywhere, and nothing secret-looking in the command line.
fn check_references(field: Field, text: &str) -> Result<(), EntryProblem> {
    let pieces = pieces(text).map_err(|problem| EntryProblem::Reference(field.clone(), problem))?;
    for piece in pieces {
        let Piece::Variable { name, .. } = piece else {
            continue;
        };
        if never_expanded(name) {
            return Err(EntryProblem::ProviderKey {
                variable: name.to_string(),
                field,
            });
        }
        if field.in_command_line() && looks_secret(name) {
            return Err(EntryProblem::SecretInCommandLine {
                variable: name.to_string(),
                field,
            });
        }
    }
    Ok(())
}

/// A part of a text that may hold `${VAR}` references.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// Text as it is.
    Literal(&'a str),
    /// `${NAME}` or `${NAME:-default}`.
    Variable {
        /// The variable's name.
        name: &'a str,
        /// What stands in when it is unset or empty.
        default: Option<&'a str>,
    },
}

/// `text` cut into literal text and references. A `$` not followed by `{` is literal.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, ReferenceError> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        pieces.push(Piece::Literal(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| ReferenceError::Unclosed(text.to_string()))?;
        let reference = &after[..end];
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(ReferenceError::NotAName(reference.to_string()));
        }
        pieces.push(Piece::Variable { name, default });
        rest = &after[end + 1..];
    }
    pieces.push(Piece::Literal(rest));
    Ok(pieces)
}

/// `text` with `${NAME}` and `${NAME:-default}` replaced from `var`; each variable used is
/// added to `used` with its value.
fn expand(
    text: &str,
    var: &dyn Fn(&str) -> Option<String>,
    used: &mut Vec<(String, String)>,
) -> Result<String, ReferenceError> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        match piece {
            Piece::Literal(literal) => out.push_str(literal),
            Piece::Variable { name, default } => {
                match (var(name).filter(|value| !value.is_empty()), default) {
                    (Some(value), _) => {
                        out.push_str(&value);
                        used.push((name.to_string(), value));
                    }
                    (None, Some(default)) => out.push_str(default),
                    (None, None) => return Err(ReferenceError::Unset(name.to_string())),
                }
            }
        }
    }
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

    fn check(name: &str, json: serde_json::Value) -> Result<Option<ServerConfig>, ConfigError> {
        let entry: Entry = serde_json::from_value(json).unwrap();
        ServerConfig::check(name.into(), entry, "f.json")
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
        assert_eq!(unset, ReferenceError::Unset("NOPE".into()));
        assert!(unset.to_string().contains("NOPE is not set"), "{unset}");
        assert!(matches!(
            expand("${TOKEN", &env, &mut used),
            Err(ReferenceError::Unclosed(_))
        ));
        assert!(matches!(
            expand("${1X}", &env, &mut used),
            Err(ReferenceError::NotAName(_))
        ));
        assert!(expand("${A B}", &env, &mut used).is_err());
    }

    #[test]
    fn header_values_and_secret_looking_variables_are_kept_secret() {
        let server = check(
            "web",
            serde_json::json!({
                "url": "https://x/${PLAIN}",
                "headers": {"Authorization": "Bearer ${PLAIN}"}
            }),
        )
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
        let server = check(
            "s",
            serde_json::json!({"command": "x", "args": ["${PLAIN}"], "env": {"T": "${TOKEN}"}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(server.expanded(&var).unwrap().1, ["t1"]);
    }

    #[test]
    fn entries_are_checked_and_name_their_file_and_server() {
        let stdio = check("fs", serde_json::json!({"command": "srv", "args": ["-v"]}))
            .unwrap()
            .unwrap();
        assert!(matches!(stdio.transport, Transport::Stdio { .. }));
        assert_eq!(stdio.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        let http = check(
            "web",
            serde_json::json!({"type": "http", "url": "http://x", "tool_timeout_ms": 5}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(http.tool_timeout, Duration::from_millis(5));
        assert!(
            check("off", serde_json::json!({"command": "x", "disabled": true}))
                .unwrap()
                .is_none()
        );
        for (name, json, says) in [
            ("a__b", r#"{"command": "x"}"#, "without `__`"),
            ("a_", r#"{"command": "x"}"#, "not ending in `_`"),
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
            (
                "s",
                r#"{"command": "x", "tool_timeout_ms": 18446744073709551615}"#,
                "longer than 100 years",
            ),
            ("s", r#"{"command": "x", "args": ["${A"]}"#, "without its"),
        ] {
            let error = check(name, serde_json::from_str(json).unwrap())
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{error}");
            assert!(error.contains("f.json") && error.contains(name), "{error}");
        }
    }

    #[test]
    fn time_limits_reach_a_hundred_years_and_not_one_millisecond_more() {
        let longest = MAX_DURATION.as_millis() as u64;
        let entry = |ms: u64| serde_json::json!({"command": "x", "startup_timeout_ms": ms, "tool_timeout_ms": ms});
        let server = check("s", entry(longest)).unwrap().unwrap();
        assert_eq!(server.startup_timeout, MAX_DURATION);
        assert_eq!(server.tool_timeout, MAX_DURATION);
        for past in [longest + 1, u64::MAX] {
            match check("s", entry(past)) {
                Err(ConfigError::Entry {
                    problem: EntryProblem::TooManyMillis { key, millis },
                    ..
                }) => assert_eq!((key, millis), ("startup_timeout_ms", past)),
                other => panic!("{past} ms: {other:?}"),
            }
        }
    }

    #[test]
    fn a_provider_key_variable_is_refused_in_every_field() {
        for variable in KEY_VARIABLES
            .into_iter()
            .chain([ZERO_HANDED_KEY_FILE, ZERO_USAGE_REPORT_FILE])
        {
            let reference = format!("${{{variable}:-x}}");
            for (json, field) in [
                (serde_json::json!({"command": reference}), Field::Command),
                (
                    serde_json::json!({"command": "x", "args": ["-k", reference]}),
                    Field::Args,
                ),
                (
                    serde_json::json!({"command": "x", "env": {"K": reference}}),
                    Field::Env("K".into()),
                ),
                (
                    serde_json::json!({"command": "x", "cwd": reference}),
                    Field::Cwd,
                ),
                (serde_json::json!({"url": reference}), Field::Url),
                (
                    serde_json::json!({"url": "http://x", "headers": {"A": reference}}),
                    Field::Header("A".into()),
                ),
            ] {
                let error = check("s", json).unwrap_err();
                assert!(
                    matches!(
                        &error,
                        ConfigError::Entry { problem: EntryProblem::ProviderKey { variable: v, field: f }, .. }
                            if v == variable && *f == field
                    ),
                    "{error}"
                );
            }
        }
    }

    #[test]
    fn a_secret_looking_variable_is_refused_in_the_command_line_only() {
        for json in [
            serde_json::json!({"command": "x", "args": ["--token=${GITHUB_TOKEN}"]}),
            serde_json::json!({"command": "/bin/${DB_PASSWORD}"}),
        ] {
            let error = check("gh", json).unwrap_err();
            assert!(
                matches!(
                    &error,
                    ConfigError::Entry {
                        problem: EntryProblem::SecretInCommandLine { .. },
                        ..
                    }
                ),
                "{error}"
            );
            assert!(error.to_string().contains("pass it in `env`"), "{error}");
        }
        for json in [
            serde_json::json!({"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}),
            serde_json::json!({"url": "http://x", "headers": {"A": "Bearer ${GITHUB_TOKEN}"}}),
            serde_json::json!({"command": "x", "args": ["${PLAIN}"]}),
        ] {
            assert!(check("gh", json).unwrap().is_some());
        }
    }

    #[test]
    fn unknown_keys_are_reported_with_the_closest_known_key_and_claude_codes_pass() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.json");
        std::fs::write(
            &file,
            r#"{"mcpServer": {}, "mcpServers": {"a": {"comand": "x", "command": "x",
                "oauth": {"clientId": "c"}, "headersHelper": "h", "startupTimeoutMS": 5, "xyzzy": 1}}}"#,
        )
        .unwrap();
        let files = [file];
        let loaded = load(Sources {
            config_file: None,
            files: &files,
            project: None,
            strict: true,
        })
        .unwrap();
        let lines: Vec<String> = loaded
            .unknown_keys
            .iter()
            .map(ToString::to_string)
            .collect();
        let origin = files[0].display();
        assert_eq!(
            lines,
            [
                format!(
                    "unknown key `mcpServer` in {origin} ignored (the closest known key is \
                     `mcpServers`)"
                ),
                format!(
                    "unknown key `comand` in MCP server `a` in {origin} ignored (the closest \
                     known key is `command`)"
                ),
                format!(
                    "unknown key `startupTimeoutMS` in MCP server `a` in {origin} ignored (the \
                     closest known key is `startupTimeoutMs`)"
                ),
                format!("unknown key `xyzzy` in MCP server `a` in {origin} ignored"),
            ]
        );
        assert_eq!(loaded.servers.len(), 1);
    }

    #[test]
    fn entry_keys_are_the_fields() {
        let full = Entry {
            kind: Some("stdio".into()),
            command: Some("x".into()),
            args: vec!["a".into()],
            env: [("A".to_string(), "b".to_string())].into(),
            cwd: Some("d".into()),
            url: Some("u".into()),
            headers: [("H".to_string(), "v".to_string())].into(),
            network: true,
            required: true,
            disabled: true,
            startup_timeout_ms: Some(1),
            tool_timeout_ms: Some(1),
            unknown: BTreeMap::new(),
        };
        let written = serde_json::to_value(&full).unwrap();
        let keys: Vec<&str> = written
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(keys.iter().all(|key| ENTRY_KEYS.contains(key)), "{keys:?}");
        assert_eq!(keys.len() + 2, ENTRY_KEYS.len(), "the two aliases");
        let aliases: Entry =
            serde_json::from_str(r#"{"startupTimeoutMs": 1, "toolTimeoutMs": 1}"#).unwrap();
        assert!(aliases.unknown.is_empty());
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
            "[mcp_servers.a]\ncommand = \"from-toml\"\nmodle = 1\n[mcp_servers.b]\ncommand = \"b\"\n",
        );
        let config = ConfigFile::read(&toml).unwrap().unwrap();
        write(".mcp.json", r#"{"mcpServers": {"c": {"command": "c"}}}"#);
        let flag = write(
            "m.json",
            r#"{"mcpServers": {"a": {"command": "from-flag"}}}"#,
        );
        let files = [flag];
        let sources = Sources {
            config_file: Some(&config),
            files: &files,
            project: Some(dir.path()),
            strict: false,
        };
        let loaded = load(sources).unwrap();
        let names: Vec<_> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(
            matches!(&loaded.servers[0].transport, Transport::Stdio { command, .. } if command == "from-flag")
        );
        let unknown = loaded.unknown_keys[0].to_string();
        assert!(
            unknown.contains("`modle`") && unknown.contains("config.toml"),
            "a [mcp_servers] table's keys are checked too: {unknown}"
        );
        let strict = load(Sources {
            strict: true,
            ..sources
        })
        .unwrap();
        assert_eq!(strict.servers.len(), 1);
        let missing = [dir.path().join("none.json")];
        let error = load(Sources {
            files: &missing,
            ..sources
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("none.json"), "{error}");
        let broken = [write("bad.json", "{\"mcpServers\": {")];
        let error = load(Sources {
            files: &broken,
            ..sources
        })
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("bad.json") && error.contains("line 1"),
            "{error}"
        );
    }
}
