//! The one door through which zero runs `git` for its own bookkeeping: making, committing and
//! removing the worktrees of `--worktree` runs and isolated specialists, and reading the change
//! `zero review` reviews. It is zero's work, not the model's command, so it runs unconfined
//! and blocking (callers on async threads use `spawn_blocking`), and it therefore trusts
//! nothing the model or a pull request can write:
//!
//! - **No program the repository names.** Every call ignores the system and global config
//!   (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), drops every inherited `GIT_*`
//!   variable, and overrides from the command line — which beats the repository's config and
//!   whatever it includes — each key that makes git start a program: `core.fsmonitor`,
//!   `core.hooksPath` (hooks, `reference-transaction` included), `core.pager`,
//!   `core.askPass`, `credential.helper`, `diff.external`, `gpg.program`, and every transport
//!   (`protocol.allow=never`: no ssh, proxy or remote helper). Filters and textconv drivers
//!   have names of the repository's choosing, so they cannot be overridden by name: work on
//!   file content (adding, checking out, diffing the working tree) goes through a [`View`],
//!   a private git directory zero writes itself, which shares only the object store and
//!   defines no driver, hook or attribute.
//! - **No metadata followed.** The directories zero works on are fixed when the worktree is
//!   made ([`WorktreeDirs`], kept in the record), never discovered again from a `.git` file
//!   or an admin directory's `HEAD`/`commondir`, which a command can rewrite.
//! - **No ref but zero's moved.** Refs move only through [`update_ref`], with the expected old
//!   value (compare-and-set), and only `refs/heads/zero/…`.
//!
//! Like every child, it never gets the provider's key variables.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::environ::names::KEY_VARIABLES;

/// The configuration every call of zero's git overrides from the command line: each key that
/// makes git start a program (see the module documentation), and the ownership check (zero's
/// git runs none of the repository's programs, so whose repository it is does not matter; a
/// CI container's root works on a checkout owned by the runner's user).
const OVERRIDES: [(&str, &str); 14] = [
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.askPass", ""),
    ("core.editor", "false"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("gpg.program", "false"),
    ("commit.gpgSign", "false"),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.untrackedCache", "false"),
    ("safe.directory", "*"),
];

/// The author and committer of every commit zero makes.
const AUTHOR: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "zero"),
    ("GIT_AUTHOR_EMAIL", "zero@localhost"),
    ("GIT_COMMITTER_NAME", "zero"),
    ("GIT_COMMITTER_EMAIL", "zero@localhost"),
];

/// Why a `git` command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` is not installed (not on `PATH`).
    #[error("git is not installed (not found on PATH)")]
    Missing,
    /// `git` could not be started for another reason.
    #[error("cannot start git: {0}")]
    Start(io::Error),
    /// `git` ran and failed.
    #[error("`git {command}` failed: {stderr}")]
    Failed {
        /// The arguments, as shown.
        command: String,
        /// What git said on stderr (trimmed).
        stderr: String,
    },
    /// What zero found in a worktree's git metadata is not what it made.
    #[error("{0}")]
    Tampered(String),
}

/// The directories of a worktree, as git made them when zero added it, kept in its record:
/// everything zero's git does later works on these, never on what the worktree's `.git` file
/// or its admin directory say by then.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorktreeDirs {
    /// The repository's common git directory (its `objects`, `refs`, `config`).
    pub common: PathBuf,
    /// The worktree's own administrative directory (`<common>/worktrees/<id>`).
    pub admin: PathBuf,
}

/// Runs `git args…` in `cwd` (git finds the repository from there, as a user's git would) and
/// returns its stdout, trimmed. For reading what the repository is; nothing that touches file
/// content (see [`View`]).
pub fn git<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Result<String, GitError> {
    run(command(cwd, args), args).map(|out| trimmed(&out))
}

/// Runs `git args…` on the repository whose common git directory is `common`, whatever a
/// `.git` file says (no working tree: refs, objects, worktree bookkeeping).
pub fn in_repository<S: AsRef<OsStr>>(common: &Path, args: &[S]) -> Result<String, GitError> {
    let mut command = command(common, args);
    command.env("GIT_DIR", common);
    run(command, args).map(|out| trimmed(&out))
}

/// Moves `reference` (which must be one of zero's, `refs/heads/zero/…`) from `old` to `new`
/// in the repository at `common`, only if it still is at `old` (`None`: only if it does not
/// exist yet); `new` of `None` deletes it. git refuses when the ref has moved meanwhile.
pub fn update_ref(
    common: &Path,
    reference: &str,
    new: Option<&str>,
    old: Option<&str>,
) -> Result<(), GitError> {
    if !reference.starts_with("refs/heads/zero/") {
        return Err(GitError::Tampered(format!(
            "zero moves only its own branches, and {reference} is not one"
        )));
    }
    let zero = zero_oid(common)?;
    let old = old.unwrap_or(&zero);
    let args: Vec<&str> = match new {
        Some(new) => vec!["update-ref", "--no-deref", reference, new, old],
        None => vec!["update-ref", "--no-deref", "-d", reference, old],
    };
    in_repository(common, &args).map(|_| ())
}

/// The commit `reference` names in the repository at `common`, if it exists.
pub fn resolve(common: &Path, reference: &str) -> Option<String> {
    in_repository(
        common,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{reference}^{{commit}}"),
        ],
    )
    .ok()
}

/// The all-zero object name of the repository's hash (what `update-ref` takes for "no ref").
fn zero_oid(common: &Path) -> Result<String, GitError> {
    let format = in_repository(common, &["rev-parse", "--show-object-format"])?;
    Ok("0".repeat(if format == "sha256" { 64 } else { 40 }))
}

/// Runs `git args…` in `cwd` like [`git`] and returns at most `limit` bytes of its stdout,
/// and whether there was more: git is stopped at the bound, so a huge output is never held
/// in memory.
pub fn git_bounded<S: AsRef<OsStr>>(
    cwd: &Path,
    args: &[S],
    limit: usize,
) -> Result<Bounded, GitError> {
    read_bounded(command(cwd, args), args, limit)
}

/// At most `limit` bytes of what git printed, and whether it printed more.
#[derive(Debug)]
pub struct Bounded {
    /// What git printed, up to the bound.
    pub bytes: Vec<u8>,
    /// Whether it printed more (and was stopped).
    pub cut: bool,
}

/// Runs `command` and reads at most `limit` bytes of its stdout (one more to tell whether
/// there was more); past the bound git is killed and reaped.
fn read_bounded<S: AsRef<OsStr>>(
    mut command: Command,
    args: &[S],
    limit: usize,
) -> Result<Bounded, GitError> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().map_err(start_error)?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut bytes = Vec::new();
    let read = (&mut stdout).take(limit as u64 + 1).read_to_end(&mut bytes);
    if bytes.len() > limit {
        let _ = child.kill();
        let _ = child.wait();
        bytes.truncate(limit);
        return Ok(Bounded { bytes, cut: true });
    }
    drop(stdout);
    // Its stderr is small (what it said on failing); stdout has ended.
    let output = child.wait_with_output().map_err(GitError::Start)?;
    read.map_err(GitError::Start)?;
    if output.status.success() {
        Ok(Bounded { bytes, cut: false })
    } else {
        Err(failed(args, &output.stderr))
    }
}

/// A private git directory for work on file content: zero writes its `config` (the object
/// format, nothing else: no driver, hook or attribute), `HEAD` and `info/exclude` (a copy of
/// the repository's, so what it ignores stays ignored), and shares only the repository's
/// object store. A filter or textconv driver a `.gitattributes` names has no definition here,
/// so git applies none; the repository's config, hooks and `info/attributes` are never read.
/// Removed when dropped.
#[derive(Debug)]
pub struct View {
    dir: tempfile::TempDir,
    objects: PathBuf,
}

impl View {
    /// A view of the repository whose common git directory is `common`, made in `scratch` (a
    /// directory zero owns and commands cannot write).
    pub fn new(common: &Path, scratch: &Path) -> Result<View, GitError> {
        let format = in_repository(common, &["rev-parse", "--show-object-format"])?;
        let dir = tempfile::Builder::new()
            .prefix(".git-view-")
            .tempdir_in(scratch)
            .map_err(GitError::Start)?;
        let config = if format == "sha1" {
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n".to_string()
        } else {
            format!(
                "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\
                 [extensions]\n\tobjectformat = {format}\n"
            )
        };
        let write = |name: &str, text: &[u8]| fs::write(dir.path().join(name), text);
        fs::create_dir_all(dir.path().join("refs"))
            .and_then(|()| fs::create_dir_all(dir.path().join("info")))
            .and_then(|()| write("config", config.as_bytes()))
            .and_then(|()| write("HEAD", b"ref: refs/heads/zero-view\n"))
            .map_err(GitError::Start)?;
        // What the repository ignores stays ignored; a file there is data, not a program.
        if let Ok((exclude, _)) =
            crate::fsutil::read_beneath(common, Path::new("info/exclude"), 1 << 20)
        {
            let _ = write("info/exclude", &exclude);
        }
        Ok(View {
            objects: common.join("objects"),
            dir,
        })
    }

    /// A temporary index file's path inside the view (removed with it).
    pub fn index(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `git args…` on the work tree `work_tree` with the index `index`, through the view.
    pub fn git<S: AsRef<OsStr>>(
        &self,
        work_tree: &Path,
        index: &Path,
        args: &[S],
    ) -> Result<String, GitError> {
        let mut command = self.command(work_tree, args);
        command
            .env("GIT_WORK_TREE", work_tree)
            .env("GIT_INDEX_FILE", index);
        run(command, args).map(|out| trimmed(&out))
    }

    /// [`git_bounded`] through the view, on the work tree `work_tree` with the index `index`.
    pub fn bounded<S: AsRef<OsStr>>(
        &self,
        work_tree: &Path,
        index: &Path,
        args: &[S],
        limit: usize,
    ) -> Result<Bounded, GitError> {
        let mut command = self.command(work_tree, args);
        command
            .env("GIT_WORK_TREE", work_tree)
            .env("GIT_INDEX_FILE", index);
        read_bounded(command, args, limit)
    }

    /// The command for `git args…` in `cwd` through the view (no work tree or index set).
    fn command<S: AsRef<OsStr>>(&self, cwd: &Path, args: &[S]) -> Command {
        let mut command = command(cwd, args);
        command
            .env("GIT_DIR", self.dir.path())
            .env("GIT_OBJECT_DIRECTORY", &self.objects)
            .envs(AUTHOR);
        command
    }
}

/// The tree of what is in `work_tree` now (tracked and untracked, minus ignored files, as
/// `git add --all` takes it), as a tree object, read through `view` with a fresh index that
/// starts from `start` (a commit): nothing of the repository's own index is touched.
pub fn tree_of(view: &View, work_tree: &Path, start: &str) -> Result<String, GitError> {
    let index = view.index("tree.index");
    let _ = fs::remove_file(&index);
    let tree = (|| {
        view.git(work_tree, &index, &["read-tree", start])?;
        view.git(work_tree, &index, &["add", "--all", "--", "."])?;
        view.git(work_tree, &index, &["write-tree"])
    })();
    let _ = fs::remove_file(&index);
    tree
}

/// A commit of `tree` on top of `parent` with `message`, as zero, signed by nothing.
pub fn commit_tree(
    view: &View,
    cwd: &Path,
    tree: &str,
    parent: &str,
    message: &str,
) -> Result<String, GitError> {
    let args = [
        "commit-tree",
        "--no-gpg-sign",
        tree,
        "-p",
        parent,
        "-m",
        message,
    ];
    run(view.command(cwd, &args), &args).map(|out| trimmed(&out))
}

/// Checks out `commit` into the new worktree at `work_tree` and fills its own index
/// (`<admin>/index`), through a view: no smudge filter, no `post-checkout` hook.
pub fn populate(
    view: &View,
    dirs: &WorktreeDirs,
    work_tree: &Path,
    commit: &str,
) -> Result<(), GitError> {
    let index = dirs.admin.join("index");
    view.git(work_tree, &index, &["read-tree", commit])?;
    view.git(work_tree, &index, &["checkout-index", "--all", "--force"])?;
    Ok(())
}

/// Removes a worktree zero made: its directory and its admin directory (both as recorded),
/// then lets git forget it. Best effort: whatever is already gone is no error.
pub fn remove_worktree(path: &Path, dirs: Option<&WorktreeDirs>, repository: &Path) {
    let _ = fs::remove_dir_all(path);
    match dirs {
        Some(dirs) => {
            let _ = fs::remove_dir_all(&dirs.admin);
            let _ = in_repository(&dirs.common, &["worktree", "prune"]);
        }
        // A worktree still being made, or a record from before the directories were kept:
        // git's own bookkeeping finds it (with every program-starting key overridden).
        None => {
            let path = path.as_os_str().to_string_lossy();
            let _ = git(repository, &["worktree", "unlock", &path]);
            let _ = git(repository, &["worktree", "remove", "--force", &path]);
            let _ = git(repository, &["worktree", "prune"]);
        }
    }
}

/// The base command: `git` with its environment made clean (see the module documentation).
fn command<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Command {
    let mut command = Command::new("git");
    command.current_dir(cwd).stdin(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&name);
        }
    }
    for name in KEY_VARIABLES {
        command.env_remove(name);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_CONFIG_COUNT", OVERRIDES.len().to_string());
    for (at, (key, value)) in OVERRIDES.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{at}"), key)
            .env(format!("GIT_CONFIG_VALUE_{at}"), value);
    }
    command.args(args);
    command
}

/// Runs `command` to its end: its stdout, or the error that says why not.
fn run<S: AsRef<OsStr>>(mut command: Command, args: &[S]) -> Result<Vec<u8>, GitError> {
    let output = command.output().map_err(start_error)?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failed(args, &output.stderr))
    }
}

fn start_error(error: io::Error) -> GitError {
    match error.kind() {
        io::ErrorKind::NotFound => GitError::Missing,
        _ => GitError::Start(error),
    }
}

fn failed<S: AsRef<OsStr>>(args: &[S], stderr: &[u8]) -> GitError {
    GitError::Failed {
        command: shown(args),
        stderr: String::from_utf8_lossy(stderr).trim().to_string(),
    }
}

fn shown<S: AsRef<OsStr>>(args: &[S]) -> String {
    args.iter()
        .map(|arg| arg.as_ref().to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

fn trimmed(out: &[u8]) -> String {
    String::from_utf8_lossy(out).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_a_failing_command_with_what_git_said() {
        let dir = tempfile::tempdir().unwrap();
        match git(dir.path(), &["rev-parse", "--show-toplevel"]) {
            Err(GitError::Failed { command, stderr }) => {
                assert_eq!(command, "rev-parse --show-toplevel");
                assert!(stderr.contains("not a git repository"), "{stderr}");
            }
            Err(GitError::Missing) => {}
            other => panic!("{other:?}"),
        }
    }
}
