//! What one run may do: which side effects its `--auto` level allows, and where on disk it may
//! read and write.
//!
//! Confinement is decided on the *resolved* path: `..` and every symlink (dangling ones too)
//! are followed before the path is compared with the allowed roots, so a link inside the
//! workspace that points outside is outside. A path that does not exist yet is judged by where
//! it would be created.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::{SideEffect, ToolError, ToolId};
use crate::runtime::sandbox::{Network, Sandbox, SandboxMode, Writes};

/// How much the agent may do on its own. `--auto` and sessions (serde) name the levels alike.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Autonomy {
    /// Read-only tools and planning.
    Low,
    /// Adds writes inside the workspace and `--add-dir` roots, and shell commands. (At low,
    /// `bash` is offered too when the sandbox makes commands read-only.)
    Medium,
    /// Everything, including writes anywhere.
    High,
}

impl std::fmt::Display for Autonomy {
    /// The word `--auto` takes for this level, as clap names it (for messages that name the
    /// flag; serde writes the same word).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let value = self.to_possible_value().ok_or(std::fmt::Error)?;
        f.write_str(value.get_name())
    }
}

/// What a run may do, in words: its `--auto` level and what confines its commands. A session
/// keeps its last run's, and a resumed run's `run_start` says when its own differ (a resumed
/// run never inherits them: they come from its own command line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Permissions {
    /// `--auto`.
    pub auto: Autonomy,
    /// What confines commands (`filesystem` and `network` beside `auto`).
    #[serde(flatten)]
    pub sandbox: SandboxInForce,
}

impl Permissions {
    /// The permissions of `autonomy` with commands confined by `sandbox`.
    pub fn of(autonomy: Autonomy, sandbox: &Sandbox) -> Permissions {
        Permissions {
            auto: autonomy,
            sandbox: SandboxInForce::of(sandbox),
        }
    }
}

/// What confines a run's commands, in the words `run_start.sandbox` and sessions use: fewer
/// than the sandbox has (a client's sockets are the network as a user means it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SandboxInForce {
    /// What confines commands' writes.
    pub filesystem: FilesystemConfinement,
    /// Whether commands may use the network.
    pub network: NetworkAccess,
}

impl SandboxInForce {
    /// How `sandbox` is reported.
    pub fn of(sandbox: &Sandbox) -> SandboxInForce {
        let filesystem = match sandbox.writes {
            Writes::Anywhere => FilesystemConfinement::None,
            Writes::Beneath(_) => FilesystemConfinement::Landlock,
        };
        let network = match sandbox.network {
            // A client's sockets are the network as a user means it; the families a client
            // never needs stay refused either way (docs/ARCHITECTURE.md, "Sandbox").
            Network::Open | Network::Clients => NetworkAccess::Open,
            Network::Blocked => NetworkAccess::Blocked,
        };
        SandboxInForce {
            filesystem,
            network,
        }
    }
}

/// What confines commands' writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilesystemConfinement {
    /// Landlock: only beneath the run's roots.
    Landlock,
    /// Nothing: anywhere the user may write.
    None,
}

/// Whether commands may open network sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkAccess {
    /// Unix sockets only.
    Blocked,
    /// A network client's sockets, or any.
    Open,
}

/// Symlink hops followed before a path is treated as a loop (the kernel's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Whether a path is about to be read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The tool only reads the path.
    Read,
    /// The tool creates, changes or deletes the path.
    Write,
}

impl Access {
    /// The access as a gerund, for messages: `reading`, `writing`.
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reading",
            Access::Write => "writing",
        }
    }

    /// What else would allow the access outside the roots, for messages.
    fn remedy(self) -> &'static str {
        match self {
            Access::Read => "",
            Access::Write => " (or add its directory with --add-dir)",
        }
    }
}

/// The permissions of one run.
#[derive(Debug, Clone)]
pub struct Policy {
    autonomy: Autonomy,
    /// Which flag made this run unrestricted, for the one-time warning.
    unrestricted_by: Option<&'static str>,
    /// Canonical workspace root first, then the canonical `--add-dir` roots.
    roots: Vec<PathBuf>,
    /// Canonical directories the tools may read but not write (the run's skills outside the
    /// workspace); never handed to a specialist as roots of its own.
    read_roots: Vec<PathBuf>,
    /// How commands are confined.
    commands: Commands,
    /// When the run must end (`--timeout`, or the launching run's deadline).
    deadline: Option<SystemTime>,
    /// What the caller's rules keep from the searches' walks and listings.
    reads: Option<Arc<dyn ReadFilter>>,
}

/// What the caller's rules keep from the model when a search walks a tree or lists a
/// directory (a `Read(secrets/**)` deny, or files no `Read` allow rule covers): a search is
/// judged by where it starts, and this hides what it finds beneath. Built by `exec` from the
/// rules (`tools` does not know them), held by the [`Policy`].
pub(crate) trait ReadFilter: Send + Sync + std::fmt::Debug {
    /// Whether `tool` (a search) must leave `path` (absolute, as its walk found it, no link
    /// followed) out of what it shows.
    fn hides(&self, tool: ToolId, path: &Path) -> bool;
    /// Whether `tool` must not look inside the directory `dir` at all.
    fn prunes(&self, tool: ToolId, dir: &Path) -> bool;
}

/// How the run's commands are confined, as far as the tools need to know: whether `bash` may
/// be offered read-only at low, what a refused command's result says, and what a specialist
/// child is given (the same, never more).
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// `--sandbox`, as the run resolved it.
    pub mode: SandboxMode,
    /// `--network` (or `network = true`).
    pub network: bool,
    /// The `--env-keep` names (flags and config file).
    pub env_keep: Vec<String>,
    /// What every command is confined by.
    pub sandbox: Sandbox,
}

impl Policy {
    /// Builds the policy from the flags. `roots` must already be canonical directories, the
    /// workspace first.
    pub fn new(autonomy: Autonomy, skip_permissions_unsafe: bool, roots: Vec<PathBuf>) -> Self {
        let (autonomy, unrestricted_by) = if skip_permissions_unsafe {
            (Autonomy::High, Some("--skip-permissions-unsafe"))
        } else if autonomy == Autonomy::High {
            (Autonomy::High, Some("--auto high"))
        } else {
            (autonomy, None)
        };
        Policy {
            autonomy,
            unrestricted_by,
            roots,
            read_roots: Vec::new(),
            commands: Commands::default(),
            deadline: None,
            reads: None,
        }
    }

    /// This policy with the run ending at `deadline`.
    pub fn with_deadline(mut self, deadline: Option<SystemTime>) -> Self {
        self.deadline = deadline;
        self
    }

    /// This policy with the searches hiding what `reads` keeps from them.
    pub(crate) fn with_reads(mut self, reads: Option<Arc<dyn ReadFilter>>) -> Self {
        self.reads = reads;
        self
    }

    /// What the caller's rules keep from the searches, if anything.
    pub(crate) fn reads(&self) -> Option<&Arc<dyn ReadFilter>> {
        self.reads.as_ref()
    }

    /// This policy with `dirs` (canonical) readable too, never writable: what a run's skills
    /// outside the workspace need for `read_file`.
    pub(crate) fn with_read_roots(mut self, dirs: Vec<PathBuf>) -> Self {
        self.read_roots = dirs;
        self
    }

    /// When the run must end, if it has a deadline.
    pub(crate) fn deadline(&self) -> Option<SystemTime> {
        self.deadline
    }

    /// How long until the deadline (zero once it has passed); `None` without one.
    pub(crate) fn time_left(&self) -> Option<std::time::Duration> {
        self.deadline.map(|deadline| {
            deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default()
        })
    }

    /// This policy with its commands confined as `commands` says.
    pub fn with_commands(mut self, commands: Commands) -> Self {
        self.commands = commands;
        self
    }

    /// How commands are confined.
    pub(crate) fn commands(&self) -> &Commands {
        &self.commands
    }

    /// Whether commands run read-only: the sandbox confines their writes and the level
    /// allows no writes (`--auto low`).
    fn read_only_commands(&self) -> bool {
        self.autonomy == Autonomy::Low && matches!(self.commands.sandbox.writes, Writes::Beneath(_))
    }

    /// The `--add-dir` roots (canonical), without the workspace; a specialist child gets them
    /// too, so it may touch exactly what its parent may.
    pub(crate) fn extra_roots(&self) -> &[PathBuf] {
        self.roots.get(1..).unwrap_or_default()
    }

    /// The effective autonomy level (`--skip-permissions-unsafe` counts as high).
    pub(crate) fn autonomy(&self) -> Autonomy {
        self.autonomy
    }

    /// The warning to show once when the run may do anything, naming the flag responsible.
    pub(crate) fn unrestricted_warning(&self) -> Option<String> {
        self.unrestricted_by.map(|flag| {
            format!(
                "unsafe permissions are active because {flag} was passed: the agent may write \
                 anywhere and run any command"
            )
        })
    }

    /// Whether a tool with this side effect may run; the error says which level allows it.
    pub(crate) fn permits(&self, effect: SideEffect) -> Result<(), String> {
        let needed = match effect {
            SideEffect::Read | SideEffect::None => Autonomy::Low,
            SideEffect::Write | SideEffect::Shell | SideEffect::External => Autonomy::Medium,
        };
        if self.autonomy >= needed || (effect == SideEffect::Shell && self.read_only_commands()) {
            return Ok(());
        }
        let what = match effect {
            SideEffect::Write => "tools that change files",
            SideEffect::External => "MCP tools not marked read-only",
            _ => "tools that run commands",
        };
        Err(format!(
            "{what} need --auto medium or higher (this run is --auto {})",
            self.autonomy
        ))
    }

    /// The line a failed command's result ends with when its output reads like the sandbox
    /// refused it (a denied write or socket): what was blocked and which flag allows it.
    pub(crate) fn sandbox_hint(&self, output: &str) -> Option<String> {
        const REFUSALS: [&str; 3] = [
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
        ];
        if !REFUSALS.iter().any(|refusal| output.contains(refusal)) {
            return None;
        }
        let mut blocked = Vec::new();
        if let Writes::Beneath(_) = &self.commands.sandbox.writes {
            blocked.push(if self.autonomy == Autonomy::Low {
                "commands are read-only at --auto low except for $TMPDIR (--auto medium lets them \
                 write inside the workspace)"
                    .to_string()
            } else {
                let roots: Vec<String> =
                    self.roots.iter().map(|r| r.display().to_string()).collect();
                format!(
                    "commands may write only inside {} and $TMPDIR (--add-dir DIR adds a \
                     directory, --auto high lifts the limit)",
                    roots.join(", ")
                )
            });
        }
        if self.commands.sandbox.network == Network::Blocked {
            blocked
                .push("commands may not open network connections (--network allows them)".into());
        }
        (!blocked.is_empty()).then(|| {
            format!(
                "zero's sandbox may have refused this: {}.",
                blocked.join("; ")
            )
        })
    }

    /// Resolves `path` (relative to `workspace`, or absolute) and checks it against the allowed
    /// roots unless the run is unrestricted. A path spelled as a directory (`dir/`, `dir/.`,
    /// `dir/..`) must name one, and every component a path goes through must be a directory,
    /// as the kernel has it: `a.txt/` is never taken for `a.txt` (see [`PathError`]).
    pub fn resolve(
        &self,
        workspace: &Path,
        path: &str,
        access: Access,
    ) -> Result<PathBuf, ToolError> {
        self.confine(workspace, path, access)
            .map_err(ToolError::from)
    }

    /// [`Policy::resolve`], its refusals as their kinds. The steps: the path is resolved
    /// (following `..` and links), confined to the roots, and its spelling checked against
    /// what is there — in that order, so nothing outside the roots is described.
    fn confine(&self, workspace: &Path, path: &str, access: Access) -> Result<PathBuf, PathError> {
        if path.trim().is_empty() {
            return Err(PathError::Empty);
        }
        let resolution = resolve_path(workspace, path);
        let reached = match &resolution {
            Ok(resolved) => resolved,
            Err(NotADirectory(file)) => file,
        };
        self.check_roots(path, reached, access)?;
        let resolved = resolution.map_err(|NotADirectory(file)| PathError::ThroughFile {
            shown: path.to_string(),
            file,
        })?;
        if names_directory(path) {
            check_directory(path, &resolved)?;
        }
        Ok(resolved)
    }

    /// Refuses `resolved` (what `shown` resolved to) when it is outside every root of a
    /// confined run.
    fn check_roots(&self, shown: &str, resolved: &Path, access: Access) -> Result<(), PathError> {
        let readable =
            access == Access::Read && self.read_roots.iter().any(|r| resolved.starts_with(r));
        if self.autonomy == Autonomy::High
            || readable
            || self.roots.iter().any(|r| resolved.starts_with(r))
        {
            return Ok(());
        }
        Err(PathError::Outside {
            shown: shown.to_string(),
            resolved: resolved.to_path_buf(),
            access,
            add_dirs: self.roots.len() > 1,
        })
    }
}

/// Why a path the model gave is refused before any tool touches it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is empty (or only white space).
    #[error("`path` must not be empty")]
    Empty,
    /// The resolved path is outside the workspace and the `--add-dir` roots of a confined run.
    #[error(
        "`{shown}` resolves to {} which is outside {}; {} there needs --auto high{}",
        .resolved.display(),
        roots_words(.add_dirs),
        .access.verb(),
        .access.remedy(),
    )]
    Outside {
        /// The path as the model wrote it.
        shown: String,
        /// Where it leads, `..` and links followed.
        resolved: PathBuf,
        /// What the tool was about to do there.
        access: Access,
        /// Whether the run has `--add-dir` roots besides the workspace.
        add_dirs: bool,
    },
    /// A component the path goes through (`a.txt` in `a.txt/b`, `a.txt/..`) exists and is
    /// not a directory: the kernel would refuse the path (`ENOTDIR`), and so does zero
    /// rather than resolve around it.
    #[error(
        "`{shown}` goes through {} as if it were a directory, but it is a file; name the \
         file itself, without anything after it",
        .file.display()
    )]
    ThroughFile {
        /// The path as the model wrote it.
        shown: String,
        /// The component that is not a directory.
        file: PathBuf,
    },
    /// The path is spelled as a directory (it ends in `/`, `/.` or `/..`) but what it names
    /// is not one: `a.txt/` is not `a.txt`, and `newdir/` is not a file to create.
    #[error(
        "`{shown}` names a directory (it ends in `{ending}`), but {} {}; to name a file, write \
         its path without the trailing `{ending}`",
        .path.display(),
        .found.words(),
        ending = directory_ending(.shown),
    )]
    NotADirectory {
        /// The path as the model wrote it.
        shown: String,
        /// Where it leads.
        path: PathBuf,
        /// What is there instead of a directory.
        found: Found,
    },
}

/// What a path spelled as a directory led to instead of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Something that is not a directory: a regular file, a FIFO, a device.
    File,
    /// Nothing at all.
    Nothing,
}

impl Found {
    /// What is there, as the end of a sentence about the path.
    fn words(self) -> &'static str {
        match self {
            Found::File => "is a file, not a directory",
            Found::Nothing => "does not exist",
        }
    }
}

/// The roots a confined run may use, in words.
fn roots_words(add_dirs: &bool) -> &'static str {
    if *add_dirs {
        "the workspace and the --add-dir roots"
    } else {
        "the workspace"
    }
}

impl From<PathError> for ToolError {
    /// A path outside the roots is the policy's refusal; every other is the model's to fix.
    fn from(error: PathError) -> ToolError {
        match error {
            PathError::Outside { .. } => ToolError::Denied(error.to_string()),
            PathError::Empty | PathError::ThroughFile { .. } | PathError::NotADirectory { .. } => {
                ToolError::InvalidArguments(error.to_string())
            }
        }
    }
}

/// Whether `path` is spelled as a directory: it ends in `/`, or its last component is `.` or
/// `..`. `Path::components` forgets both spellings (`a.txt/` and `a.txt/.` read as `a.txt`),
/// so the text is looked at.
fn names_directory(path: &str) -> bool {
    path.ends_with('/') || matches!(path.rsplit('/').next(), Some("." | ".."))
}

/// The end of `path` that spells it as a directory: `/`, or its last component `.` or `..`
/// with the `/` before it.
fn directory_ending(path: &str) -> &str {
    if path.ends_with('/') {
        return "/";
    }
    &path[path.rfind('/').unwrap_or(0)..]
}

/// Fails unless `resolved` (what `shown`, spelled as a directory, resolved to) is a directory.
fn check_directory(shown: &str, resolved: &Path) -> Result<(), PathError> {
    let found = match fs::metadata(resolved) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => Found::File,
        Err(_) => Found::Nothing,
    };
    Err(PathError::NotADirectory {
        shown: shown.to_string(),
        path: resolved.to_path_buf(),
        found,
    })
}

/// A component a path goes through that exists and is not a directory (see
/// [`PathError::ThroughFile`]): where the resolution stopped.
#[derive(Debug)]
pub(crate) struct NotADirectory(pub(crate) PathBuf);

/// Where `path` (relative to `workspace`, or absolute) leads when a tool opens it: `..` and
/// every link resolved component by component, as the kernel resolves them. The one
/// resolution the tools ([`Policy::resolve`]) and the permission rules share, so a rule
/// judges the file the tool will touch (`link/../x` is beside the link's target, not beside
/// the link).
pub(crate) fn resolve_path(workspace: &Path, path: &str) -> Result<PathBuf, NotADirectory> {
    let requested = Path::new(path);
    if requested.is_absolute() {
        resolve_symlinks(requested)
    } else {
        resolve_symlinks(&workspace.join(requested))
    }
}

/// Resolves `..` and symlinks component by component, as the kernel would when opening the
/// path, but without requiring the path to exist: missing components are taken literally. A
/// component with more to come that exists and is not a directory ends the resolution, as
/// it ends the kernel's (`ENOTDIR`).
///
/// `std::fs::canonicalize` cannot do this (it fails on the first missing component), and a
/// lexical clean-up first would be wrong (`link/..` is not the link's directory).
fn resolve_symlinks(absolute: &Path) -> Result<PathBuf, NotADirectory> {
    let mut resolved = PathBuf::from("/");
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, absolute, &mut resolved);
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&part);
        let meta = fs::symlink_metadata(&next).ok();
        let link = meta
            .as_ref()
            .filter(|m| m.file_type().is_symlink())
            .and_then(|_| fs::read_link(&next).ok());
        match link {
            Some(target) if hops < MAX_SYMLINK_HOPS => {
                hops += 1;
                let rest: Vec<OsString> = pending.drain(..).collect();
                push_components(&mut pending, &target, &mut resolved);
                pending.extend(rest);
            }
            _ if !pending.is_empty()
                && meta.is_some_and(|m| !m.is_dir() && !m.file_type().is_symlink()) =>
            {
                return Err(NotADirectory(next));
            }
            _ => resolved = next,
        }
    }
    Ok(resolved)
}

/// Queues the components of `path`; an absolute path restarts resolution at `/`.
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, resolved: &mut PathBuf) {
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => *resolved = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => pending.push_back(OsString::from("..")),
            Component::Normal(name) => pending.push_back(name.to_os_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn policy(level: Autonomy, root: &Path) -> Policy {
        Policy::new(level, false, vec![root.canonicalize().unwrap()])
    }

    /// `policy` with its commands confined as at `level` with the sandbox on.
    fn sandboxed(level: Autonomy, root: &Path, network: Network) -> Policy {
        let writes = Writes::Beneath(match level {
            Autonomy::Low => Vec::new(),
            _ => vec![root.to_path_buf()],
        });
        policy(level, root).with_commands(Commands {
            sandbox: Sandbox {
                writes,
                network,
                ..Sandbox::open()
            },
            ..Commands::default()
        })
    }

    #[test]
    fn permissions_keep_the_words_sessions_were_written_with() {
        let cases = [
            (Autonomy::Low, Writes::Beneath(Vec::new()), Network::Blocked),
            (
                Autonomy::Medium,
                Writes::Beneath(Vec::new()),
                Network::Clients,
            ),
            (Autonomy::High, Writes::Anywhere, Network::Open),
        ];
        let written = [
            r#"{"auto":"low","filesystem":"landlock","network":"blocked"}"#,
            r#"{"auto":"medium","filesystem":"landlock","network":"open"}"#,
            r#"{"auto":"high","filesystem":"none","network":"open"}"#,
        ];
        for ((autonomy, writes, network), json) in cases.into_iter().zip(written) {
            let sandbox = Sandbox {
                writes,
                network,
                ..Sandbox::open()
            };
            let permissions = Permissions::of(autonomy, &sandbox);
            assert_eq!(serde_json::to_string(&permissions).unwrap(), json);
            let read: Permissions = serde_json::from_str(json).unwrap();
            assert_eq!(read, permissions);
        }
    }

    #[test]
    fn a_read_root_is_readable_and_never_writable() {
        let (workspace, skills) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let skills = skills.path().canonicalize().unwrap();
        let file = skills.join("notes/SKILL.md").display().to_string();
        let policy = policy(Autonomy::Medium, workspace.path());
        assert!(
            policy
                .resolve(workspace.path(), &file, Access::Read)
                .is_err()
        );
        let policy = policy.with_read_roots(vec![skills.clone()]);
        assert!(
            policy
                .resolve(workspace.path(), &file, Access::Read)
                .is_ok()
        );
        let write = policy.resolve(workspace.path(), &file, Access::Write);
        assert!(matches!(write, Err(ToolError::Denied(_))), "{write:?}");
        // A specialist is handed the roots, which do not include it.
        assert!(policy.extra_roots().is_empty());
    }

    #[test]
    fn an_autonomy_level_reads_as_the_flag_takes_it() {
        let words: Vec<String> = [Autonomy::Low, Autonomy::Medium, Autonomy::High]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(words, ["low", "medium", "high"]);
    }

    #[test]
    fn at_low_commands_run_only_when_the_sandbox_makes_them_read_only() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            policy(Autonomy::Low, dir.path())
                .permits(SideEffect::Shell)
                .is_err()
        );
        let low = sandboxed(Autonomy::Low, dir.path(), Network::Blocked);
        assert!(low.permits(SideEffect::Shell).is_ok());
        // The file tools still only read.
        assert!(low.permits(SideEffect::Write).is_err());
    }

    #[test]
    fn a_refusal_in_a_commands_output_gets_a_line_naming_the_flag_that_allows_it() {
        let dir = tempfile::tempdir().unwrap();
        let medium = sandboxed(Autonomy::Medium, dir.path(), Network::Blocked);
        let hint = medium
            .sandbox_hint("sh: 1: cannot create /etc/x: Permission denied")
            .unwrap();
        assert!(
            hint.contains("--add-dir DIR") && hint.contains("--network"),
            "{hint}"
        );
        assert_eq!(medium.sandbox_hint("error: no such file"), None);
        let low = sandboxed(Autonomy::Low, dir.path(), Network::Open);
        let hint = low.sandbox_hint("Read-only file system").unwrap();
        assert!(
            hint.contains("--auto medium") && !hint.contains("--network"),
            "{hint}"
        );
        // Without a sandbox a refusal is the system's own, and nothing is added.
        assert_eq!(
            policy(Autonomy::High, dir.path()).sandbox_hint("Permission denied"),
            None
        );
    }

    #[test]
    fn dotdot_out_of_the_workspace_is_denied() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let err = policy(Autonomy::Medium, &ws)
            .resolve(&ws, "../outside.txt", Access::Write)
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Denied(ref m) if m.contains("--auto high")),
            "{err}"
        );
    }

    #[test]
    fn symlink_pointing_outside_is_outside() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        symlink(outside.path(), ws.join("escape")).unwrap();
        let err = policy(Autonomy::Medium, &ws)
            .resolve(&ws, "escape/new.txt", Access::Write)
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)));
    }

    #[test]
    fn dangling_symlink_is_judged_by_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        symlink("/nonexistent-zero-test/dir", ws.join("dangling")).unwrap();
        let err = policy(Autonomy::Medium, &ws)
            .resolve(&ws, "dangling/file", Access::Write)
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)));
    }

    #[test]
    fn missing_path_inside_is_allowed_and_dotdot_inside_missing_dirs_is_lexical() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let p = policy(Autonomy::Medium, &ws);
        assert_eq!(
            p.resolve(&ws, "a/b/../c.txt", Access::Write).unwrap(),
            ws.join("a/c.txt")
        );
        assert!(p.resolve(&ws, "new/../../x", Access::Write).is_err());
    }

    #[test]
    fn symlink_inside_pointing_inside_resolves_to_target() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        fs::create_dir(ws.join("real")).unwrap();
        symlink("real", ws.join("alias")).unwrap();
        let p = policy(Autonomy::Low, &ws);
        assert_eq!(
            p.resolve(&ws, "alias/f", Access::Read).unwrap(),
            ws.join("real/f")
        );
    }

    /// The typed refusal of `path` (relative to `ws`) at `--auto medium`.
    fn refusal(ws: &Path, path: &str) -> PathError {
        policy(Autonomy::Medium, ws)
            .confine(ws, path, Access::Write)
            .unwrap_err()
    }

    #[test]
    fn a_path_spelled_as_a_directory_must_name_one() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        fs::write(ws.join("a.txt"), "a").unwrap();
        fs::create_dir(ws.join("sub")).unwrap();
        for spelling in ["a.txt/", "a.txt//", "a.txt/.", "./a.txt/"] {
            assert_eq!(
                refusal(&ws, spelling),
                PathError::NotADirectory {
                    shown: spelling.into(),
                    path: ws.join("a.txt"),
                    found: Found::File,
                },
                "{spelling}"
            );
        }
        let missing = refusal(&ws, "newdir/");
        assert!(matches!(
            missing,
            PathError::NotADirectory {
                found: Found::Nothing,
                ..
            }
        ));
        let message = missing.to_string();
        assert!(
            message.contains("ends in `/`") && message.contains("without the trailing `/`"),
            "{message}"
        );
        assert!(refusal(&ws, "a.txt/.").to_string().contains("ends in `/.`"));
        // A directory spelled as one is what it says.
        let p = policy(Autonomy::Medium, &ws);
        for spelling in ["sub/", "sub/.", "sub/x/..", "./", "."] {
            assert!(p.resolve(&ws, spelling, Access::Read).is_ok(), "{spelling}");
        }
        assert!(matches!(
            ToolError::from(refusal(&ws, "a.txt/")),
            ToolError::InvalidArguments(_)
        ));
    }

    #[test]
    fn a_path_through_a_file_is_refused_as_the_kernel_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        fs::write(ws.join("a.txt"), "a").unwrap();
        symlink("a.txt", ws.join("link")).unwrap();
        for path in ["a.txt/b", "a.txt/..", "a.txt/../b.txt", "link/b"] {
            assert_eq!(
                refusal(&ws, path),
                PathError::ThroughFile {
                    shown: path.into(),
                    file: ws.join("a.txt"),
                },
                "{path}"
            );
        }
    }

    #[test]
    fn nothing_outside_the_roots_is_described() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let path = format!("{}/secret/", outside.path().display());
        assert!(matches!(refusal(&ws, &path), PathError::Outside { .. }));
        let through = format!("{}/secret/x", outside.path().display());
        assert!(matches!(refusal(&ws, &through), PathError::Outside { .. }));
    }

    #[test]
    fn high_allows_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert!(
            policy(Autonomy::High, &ws)
                .resolve(&ws, "/etc/hostname", Access::Write)
                .is_ok()
        );
    }

    #[test]
    fn effects_by_level() {
        let dir = tempfile::tempdir().unwrap();
        let low = policy(Autonomy::Low, dir.path());
        assert!(low.permits(SideEffect::Read).is_ok());
        assert!(low.permits(SideEffect::None).is_ok());
        assert!(
            low.permits(SideEffect::Write)
                .unwrap_err()
                .contains("--auto medium")
        );
        assert!(low.permits(SideEffect::Shell).is_err());
        let medium = policy(Autonomy::Medium, dir.path());
        assert!(medium.permits(SideEffect::Shell).is_ok());
        assert!(medium.permits(SideEffect::Write).is_ok());
    }
}
