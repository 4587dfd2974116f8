//! The git metadata a confined command must not change: what makes the user's own git start a
//! program, or look elsewhere for its directory, once zero has ended.
//!
//! At `--auto medium` a command may write the workspace, and the repository's git directory
//! usually lies inside it (`.git`): a hook, a `core.fsmonitor` or a filter written there would
//! run, unsandboxed, in the next `git` the user or the CI job runs. Landlock grants writes by
//! directory hierarchy and cannot keep one subtree of a writable directory read-only, and a
//! mount namespace that could is not to be had in an unprivileged container; so the runtime
//! takes what matters when it is made, and puts it back after every tool call and when it
//! closes (once every process it started has ended), reporting each path it restored.
//!
//! Kept, in every git directory inside a writable root (the workspace's, a worktree's
//! administrative directory, each submodule's under `modules/`, each worktree's under
//! `worktrees/`): `config` and `config.worktree` (every program git starts by configuration:
//! `core.fsmonitor`, `core.hooksPath`, filters, `diff.external`, textconv, `core.sshCommand`,
//! credential helpers, `core.pager`, aliases, `include.path`); `hooks/` whole (a file that
//! appears there is removed); `info/attributes` (which driver runs on which path);
//! `commondir` (where a git directory finds the rest of itself); and `modules/` by name (a
//! submodule's git directory that appears is removed). And each writable root's own `.git`:
//! a directory renamed away is moved back, a `gitdir:` file or link restored, and a `.git`
//! made in a root that lies inside a repository whose `.git` is elsewhere removed (git in that
//! root would take it for the repository).
//!
//! Not kept: objects, refs, the index and `HEAD` (the model's own `git add` and `git commit`
//! write them), `info/exclude`, the working tree's `.gitattributes` (it names drivers, and
//! only configuration says what they run), a repository the run's commands make where there
//! was none, and files outside the git directory that its configuration names (a
//! `core.hooksPath` inside the working tree, an `include.path`): those are the workspace's,
//! as writable as any of its files.
//!
//! Every step works relative to a directory descriptor and follows no symbolic link, so a
//! link a command plants never makes zero write or remove anything outside the git directory.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};

/// The most bytes of file content kept in all. A file past it is kept by its identity only: a
/// change to it is reported as not restored.
const KEPT_BYTES: usize = 16 << 20;

/// How deep a kept or removed directory tree is followed; deeper is an error, never a stack
/// overflow on a tree a command made.
const MAX_DEPTH: usize = 32;

/// What one restoration found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Restoration {
    /// Every path put back as the run found it, or removed because it was not there then.
    pub restored: Vec<PathBuf>,
    /// Every path that differs and could not be put back, with why.
    pub failed: Vec<(PathBuf, String)>,
}

impl Restoration {
    /// Whether nothing differed.
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.failed.is_empty()
    }
}

/// The git metadata of a run's writable roots as the run found it (see the module
/// documentation).
pub struct GitMetadata {
    /// Each root's own `.git`.
    entries: Vec<DotGit>,
    /// Each git directory inside a root, with its kept parts.
    git_dirs: Vec<GitDir>,
}

/// A root's `.git` as found.
struct DotGit {
    root: PathBuf,
    found: Found,
}

/// What a root's `.git` was.
enum Found {
    /// None; `shadows` when the root lies inside a repository whose `.git` is elsewhere.
    Absent { shadows: bool },
    /// A `gitdir:` file, with its content.
    File(Vec<u8>),
    /// A symbolic link, with its target.
    Link(OsString),
    /// The git directory itself, held open so that it can be found again if renamed.
    Dir { held: OwnedFd, dev: u64, ino: u64 },
}

/// A git directory inside a writable root and its kept parts, by name.
struct GitDir {
    path: PathBuf,
    parts: BTreeMap<OsString, Node>,
}

/// A kept path as found.
enum Node {
    /// Not there: one that appears is removed.
    Missing,
    /// A file, with its content unless that was past [`KEPT_BYTES`].
    File {
        stamp: Stamp,
        bytes: Option<Vec<u8>>,
    },
    /// A symbolic link, with its target.
    Link { target: OsString },
    /// A directory. When `closed`, every entry was kept and one that appears is removed;
    /// otherwise only the named ones are kept (a git directory's parts).
    Dir {
        mode: u32,
        closed: bool,
        children: BTreeMap<OsString, Node>,
    },
}

/// What a file's metadata says of its identity and last change: any write to it changes its
/// change time, which no command can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    // The field types differ between platforms; on Linux some casts are to the same type.
    #[allow(clippy::unnecessary_cast)]
    fn of(stat: &FileStat) -> Self {
        Stamp {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            mode: stat.st_mode as u32,
            size: stat.st_size as i64,
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }
}

impl GitMetadata {
    /// Takes what the git directories inside `roots` (canonical) and each root's `.git` hold
    /// now.
    pub fn take(roots: &[PathBuf]) -> Self {
        let mut budget = KEPT_BYTES;
        let mut entries = Vec::new();
        let mut git_dirs: Vec<GitDir> = Vec::new();
        for root in roots {
            let (found, dirs) = find(root);
            entries.push(DotGit {
                root: root.clone(),
                found,
            });
            for path in dirs {
                let inside = roots.iter().any(|root| path.starts_with(root));
                if inside && !git_dirs.iter().any(|dir| dir.path == path) {
                    let parts = match open_path(&path) {
                        Ok(fd) => take_git_dir(&fd, &mut budget, 0),
                        Err(_) => continue,
                    };
                    git_dirs.push(GitDir { path, parts });
                }
            }
        }
        GitMetadata { entries, git_dirs }
    }

    /// Puts back whatever differs from what [`GitMetadata::take`] found, and says what.
    pub fn restore(&mut self) -> Restoration {
        let mut out = Restoration::default();
        for entry in &self.entries {
            entry.restore(&mut out);
        }
        for dir in &mut self.git_dirs {
            match open_path(&dir.path) {
                Ok(fd) => restore_parts(&fd, &dir.path, &mut dir.parts, false, &mut out, 0),
                Err(error) => out.failed.push((
                    dir.path.clone(),
                    format!("the git directory cannot be opened: {error}"),
                )),
            }
        }
        out
    }
}

/// What `root/.git` is, and the git directories it leads to (its own and its common one).
fn find(root: &Path) -> (Found, Vec<PathBuf>) {
    let entry = root.join(".git");
    let Ok(metadata) = std::fs::symlink_metadata(&entry) else {
        let shadows = root
            .ancestors()
            .skip(1)
            .any(|above| above.join(".git").symlink_metadata().is_ok());
        return (Found::Absent { shadows }, Vec::new());
    };
    let kind = metadata.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(&entry)
            .unwrap_or_default()
            .into_os_string();
        return (Found::Link(target), git_dirs_of(&entry));
    }
    if kind.is_dir() {
        return match open_path(&entry) {
            Ok(held) => {
                let (dev, ino) = identity(&held);
                (Found::Dir { held, dev, ino }, git_dirs_of(&entry))
            }
            Err(_) => (Found::Absent { shadows: false }, Vec::new()),
        };
    }
    let bytes = read_bounded(&entry, 4096).unwrap_or_default();
    let dirs = String::from_utf8_lossy(&bytes)
        .trim()
        .strip_prefix("gitdir:")
        .map(|dir| git_dirs_of(&root.join(dir.trim())))
        .unwrap_or_default();
    (Found::File(bytes), dirs)
}

/// `dir` (canonical) and the common directory its `commondir` names, if any.
fn git_dirs_of(dir: &Path) -> Vec<PathBuf> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    let common = read_bounded(&dir.join("commondir"), 4096)
        .ok()
        .and_then(|bytes| {
            let named = String::from_utf8_lossy(&bytes).trim().to_string();
            dir.join(named).canonicalize().ok()
        });
    std::iter::once(dir).chain(common).collect()
}

/// The kept parts of the git directory open as `dir`.
fn take_git_dir(dir: &OwnedFd, budget: &mut usize, depth: usize) -> BTreeMap<OsString, Node> {
    let mut parts = BTreeMap::new();
    for name in ["config", "config.worktree", "commondir", "hooks"] {
        parts.insert(name.into(), take(dir, OsStr::new(name), budget, depth));
    }
    let info = match open_dir_at(dir, OsStr::new("info")) {
        Ok(info) => take(&info, OsStr::new("attributes"), budget, depth),
        Err(_) => Node::Missing,
    };
    parts.insert(
        "info".into(),
        Node::Dir {
            mode: 0o755,
            closed: false,
            children: BTreeMap::from([("attributes".into(), info)]),
        },
    );
    parts.insert(
        "modules".into(),
        take_modules(dir, OsStr::new("modules"), budget, depth),
    );
    parts.insert(
        "worktrees".into(),
        Node::Dir {
            mode: 0o755,
            closed: false,
            children: git_dirs_in(dir, OsStr::new("worktrees"), budget, depth),
        },
    );
    parts
}

/// The git directories in `parent/name` (a repository's `worktrees/`), each with its parts.
fn git_dirs_in(
    parent: &OwnedFd,
    name: &OsStr,
    budget: &mut usize,
    depth: usize,
) -> BTreeMap<OsString, Node> {
    let Ok(fd) = open_dir_at(parent, name) else {
        return BTreeMap::new();
    };
    let mut found = BTreeMap::new();
    for entry in entries(&fd).unwrap_or_default() {
        if let Ok(child) = open_dir_at(&fd, &entry) {
            let children = take_git_dir(&child, budget, depth + 1);
            found.insert(
                entry,
                Node::Dir {
                    mode: 0o755,
                    closed: false,
                    children,
                },
            );
        }
    }
    found
}

/// `parent/name` as a `modules/` directory: every entry kept by name, a submodule's git
/// directory (it holds `HEAD` or `config`) with its parts, any other directory (a submodule
/// whose name has a `/`) in the same way.
fn take_modules(parent: &OwnedFd, name: &OsStr, budget: &mut usize, depth: usize) -> Node {
    let Ok(Some(stat)) = stat_at(parent, name) else {
        return Node::Missing;
    };
    if !is(&stat, SFlag::S_IFDIR) || depth >= MAX_DEPTH {
        return take(parent, name, budget, depth);
    }
    let Ok(fd) = open_dir_at(parent, name) else {
        return Node::Missing;
    };
    let mut children = BTreeMap::new();
    for entry in entries(&fd).unwrap_or_default() {
        let node = match open_dir_at(&fd, &entry) {
            Ok(child) if is_git_dir(&child) => Node::Dir {
                mode: 0o755,
                closed: false,
                children: take_git_dir(&child, budget, depth + 1),
            },
            Ok(_) => take_modules(&fd, &entry, budget, depth + 1),
            Err(_) => take(&fd, &entry, budget, depth + 1),
        };
        children.insert(entry, node);
    }
    Node::Dir {
        mode: Stamp::of(&stat).mode & 0o7777,
        closed: true,
        children,
    }
}

/// Whether the directory open as `dir` is a git directory.
fn is_git_dir(dir: &OwnedFd) -> bool {
    ["HEAD", "config"]
        .iter()
        .any(|part| matches!(stat_at(dir, OsStr::new(part)), Ok(Some(_))))
}

/// `parent/name` as it is now, a directory with every entry in it.
fn take(parent: &OwnedFd, name: &OsStr, budget: &mut usize, depth: usize) -> Node {
    let stat = match stat_at(parent, name) {
        Ok(Some(stat)) => stat,
        Ok(None) | Err(_) => return Node::Missing,
    };
    if is(&stat, SFlag::S_IFLNK) {
        return Node::Link {
            target: readlinkat(Some(parent.as_raw_fd()), name).unwrap_or_default(),
        };
    }
    if is(&stat, SFlag::S_IFDIR)
        && depth < MAX_DEPTH
        && let Ok(fd) = open_dir_at(parent, name)
    {
        let children = entries(&fd)
            .unwrap_or_default()
            .into_iter()
            .map(|entry| {
                let node = take(&fd, &entry, budget, depth + 1);
                (entry, node)
            })
            .collect();
        return Node::Dir {
            mode: Stamp::of(&stat).mode & 0o7777,
            closed: true,
            children,
        };
    }
    let size = usize::try_from(stat.st_size).unwrap_or(usize::MAX);
    let bytes = (is(&stat, SFlag::S_IFREG) && size <= *budget)
        .then(|| read_at(parent, name).ok())
        .flatten();
    if let Some(bytes) = &bytes {
        *budget -= bytes.len().min(*budget);
    }
    Node::File {
        stamp: Stamp::of(&stat),
        bytes,
    }
}

impl DotGit {
    /// Puts the root's `.git` back as found.
    fn restore(&self, out: &mut Restoration) {
        let path = self.root.join(".git");
        let name = OsStr::new(".git");
        let result = open_path(&self.root)
            .map_err(|e| e.to_string())
            .and_then(|root| {
                let now = stat_at(&root, name).map_err(|e| e.to_string())?;
                match &self.found {
                    Found::Absent { shadows: false } => Ok(false),
                    Found::Absent { shadows: true } => match now {
                        Some(_) => remove_at(&root, name, 0).map(|()| true),
                        None => Ok(false),
                    },
                    Found::File(bytes) => {
                        let same = now.is_some_and(|stat| is(&stat, SFlag::S_IFREG))
                            && read_at(&root, name).is_ok_and(|now| now == *bytes);
                        if same {
                            return Ok(false);
                        }
                        replace_with_file(&root, name, now, bytes, 0o644).map(|_| true)
                    }
                    Found::Link(target) => restore_link(&root, name, now, target),
                    Found::Dir { held, dev, ino } => {
                        let (dev, ino) = (*dev, *ino);
                        let same = now.is_some_and(|stat| {
                            is(&stat, SFlag::S_IFDIR)
                                && Stamp::of(&stat).dev == dev
                                && Stamp::of(&stat).ino == ino
                        });
                        if same {
                            return Ok(false);
                        }
                        move_back(held, &root, name, now.is_some()).map(|()| true)
                    }
                }
            });
        match result {
            Ok(true) => out.restored.push(path),
            Ok(false) => {}
            Err(error) => out.failed.push((path, error)),
        }
    }
}

/// Moves the git directory open as `held` back to `root/name`, what is there now removed
/// first.
fn move_back(held: &OwnedFd, root: &OwnedFd, name: &OsStr, occupied: bool) -> Result<(), String> {
    let now = where_now(held)?;
    if occupied {
        remove_at(root, name, 0)?;
    }
    renameat(None, &now, Some(root.as_raw_fd()), name).map_err(|e| {
        format!(
            "it was moved to {} and cannot be moved back: {e}",
            now.display()
        )
    })
}

/// Where the directory open as `held` is now.
#[cfg(target_os = "linux")]
fn where_now(held: &OwnedFd) -> Result<PathBuf, String> {
    let now = std::fs::read_link(format!("/proc/self/fd/{}", held.as_raw_fd()))
        .map_err(|e| format!("it was moved and cannot be found: {e}"))?;
    if now.as_os_str().as_bytes().ends_with(b" (deleted)") {
        return Err("it was removed, and zero cannot make it again".into());
    }
    Ok(now)
}

/// Where the directory open as `held` is now: not known without `/proc`.
#[cfg(not(target_os = "linux"))]
fn where_now(_held: &OwnedFd) -> Result<PathBuf, String> {
    Err("it was moved or removed, and zero cannot find it on this system".into())
}

/// Puts back the kept `parts` of the directory open as `dir` (at `path`); when `closed`, an
/// entry that was not there is removed.
fn restore_parts(
    dir: &OwnedFd,
    path: &Path,
    parts: &mut BTreeMap<OsString, Node>,
    closed: bool,
    out: &mut Restoration,
    depth: usize,
) {
    for (name, node) in parts.iter_mut() {
        restore_node(dir, &path.join(name), name, node, out, depth);
    }
    if !closed {
        return;
    }
    let present = match entries(dir) {
        Ok(present) => present,
        Err(error) => {
            out.failed.push((path.to_path_buf(), error));
            return;
        }
    };
    for name in present.into_iter().filter(|name| !parts.contains_key(name)) {
        let child = path.join(&name);
        match remove_at(dir, &name, depth) {
            Ok(()) => out.restored.push(child),
            Err(error) => out.failed.push((child, error)),
        }
    }
}

/// Puts `parent/name` (at `path`) back as `node` says it was.
fn restore_node(
    parent: &OwnedFd,
    path: &Path,
    name: &OsStr,
    node: &mut Node,
    out: &mut Restoration,
    depth: usize,
) {
    let now = match stat_at(parent, name) {
        Ok(now) => now,
        Err(error) => {
            out.failed.push((path.to_path_buf(), error.to_string()));
            return;
        }
    };
    let result = match node {
        Node::Missing => match now {
            Some(_) => remove_at(parent, name, depth).map(|()| true),
            None => Ok(false),
        },
        Node::File { stamp, bytes } => restore_file(parent, name, now, stamp, bytes.as_deref()),
        Node::Link { target } => restore_link(parent, name, now, target),
        Node::Dir {
            mode,
            closed,
            children,
        } => {
            restore_dir(
                parent,
                path,
                name,
                now,
                (*mode, *closed),
                children,
                out,
                depth,
            );
            return;
        }
    };
    match result {
        Ok(true) => out.restored.push(path.to_path_buf()),
        Ok(false) => {}
        Err(error) => out.failed.push((path.to_path_buf(), error)),
    }
}

/// A kept file put back when its content or mode changed. `Ok(true)` when it was.
fn restore_file(
    parent: &OwnedFd,
    name: &OsStr,
    now: Option<FileStat>,
    stamp: &mut Stamp,
    bytes: Option<&[u8]>,
) -> Result<bool, String> {
    let regular = now.filter(|stat| is(stat, SFlag::S_IFREG));
    if regular.is_some_and(|stat| Stamp::of(&stat) == *stamp) {
        return Ok(false);
    }
    let Some(bytes) = bytes else {
        return Err("it changed, and it was too large for zero to keep".into());
    };
    if let Some(stat) = regular {
        let same_mode = Stamp::of(&stat).mode == stamp.mode;
        if same_mode && read_at(parent, name).is_ok_and(|now| now == bytes) {
            // Written with what it held: nothing to put back.
            *stamp = Stamp::of(&stat);
            return Ok(false);
        }
    }
    *stamp = replace_with_file(parent, name, now, bytes, stamp.mode & 0o7777)?;
    Ok(true)
}

/// A kept link put back when it changed. `Ok(true)` when it was.
fn restore_link(
    parent: &OwnedFd,
    name: &OsStr,
    now: Option<FileStat>,
    target: &OsStr,
) -> Result<bool, String> {
    if now.is_some_and(|stat| is(&stat, SFlag::S_IFLNK))
        && readlinkat(Some(parent.as_raw_fd()), name).is_ok_and(|found| found == target)
    {
        return Ok(false);
    }
    if now.is_some() {
        remove_at(parent, name, 0)?;
    }
    symlinkat(target, Some(parent.as_raw_fd()), name).map_err(|e| e.to_string())?;
    Ok(true)
}

/// A kept directory made again when something else took its place, then its entries put
/// back.
#[allow(clippy::too_many_arguments)]
fn restore_dir(
    parent: &OwnedFd,
    path: &Path,
    name: &OsStr,
    now: Option<FileStat>,
    (mode, closed): (u32, bool),
    children: &mut BTreeMap<OsString, Node>,
    out: &mut Restoration,
    depth: usize,
) {
    if depth >= MAX_DEPTH {
        out.failed
            .push((path.to_path_buf(), "it is nested too deep".into()));
        return;
    }
    if !now.is_some_and(|stat| is(&stat, SFlag::S_IFDIR)) {
        let kept = closed
            || children
                .values()
                .any(|child| !matches!(child, Node::Missing));
        if !kept {
            return;
        }
        let made = match now {
            Some(_) => remove_at(parent, name, depth),
            None => Ok(()),
        }
        .and_then(|()| {
            mkdirat(
                Some(parent.as_raw_fd()),
                name,
                Mode::from_bits_truncate(mode as _),
            )
            .map_err(|e| e.to_string())
        });
        if let Err(error) = made {
            out.failed.push((path.to_path_buf(), error));
            return;
        }
        out.restored.push(path.to_path_buf());
    }
    match open_dir_at(parent, name) {
        Ok(dir) => restore_parts(&dir, path, children, closed, out, depth + 1),
        Err(error) => out.failed.push((path.to_path_buf(), error)),
    }
}

/// Replaces `parent/name` with a file holding `bytes` with `mode`, through a temporary file
/// renamed over it (a directory there is removed first), and returns the new file's stamp.
fn replace_with_file(
    parent: &OwnedFd,
    name: &OsStr,
    now: Option<FileStat>,
    bytes: &[u8],
    mode: u32,
) -> Result<Stamp, String> {
    if now.is_some_and(|stat| is(&stat, SFlag::S_IFDIR)) {
        remove_at(parent, name, 0)?;
    }
    let mut temporary = OsString::from(format!(".zero-restore.{}.", std::process::id()));
    temporary.push(name);
    let _ = unlinkat(
        Some(parent.as_raw_fd()),
        temporary.as_os_str(),
        UnlinkatFlags::NoRemoveDir,
    );
    let written = (|| -> Result<(), String> {
        let fd = openat(
            Some(parent.as_raw_fd()),
            temporary.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| e.to_string())?;
        // SAFETY: `openat` returned a descriptor that nothing else owns.
        let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(bytes).map_err(|e| e.to_string())?;
        fchmod(file.as_raw_fd(), Mode::from_bits_truncate(mode as _)).map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        renameat(
            Some(parent.as_raw_fd()),
            temporary.as_os_str(),
            Some(parent.as_raw_fd()),
            name,
        )
        .map_err(|e| e.to_string())
    })();
    if let Err(error) = written {
        let _ = unlinkat(
            Some(parent.as_raw_fd()),
            temporary.as_os_str(),
            UnlinkatFlags::NoRemoveDir,
        );
        return Err(error);
    }
    match stat_at(parent, name) {
        Ok(Some(stat)) => Ok(Stamp::of(&stat)),
        Ok(None) => Err("it vanished as it was put back".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// Removes `parent/name`, a directory with everything in it, following no link.
fn remove_at(parent: &OwnedFd, name: &OsStr, depth: usize) -> Result<(), String> {
    let Some(stat) = stat_at(parent, name).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    if is(&stat, SFlag::S_IFDIR) {
        if depth >= MAX_DEPTH {
            return Err("it is nested too deep to remove".into());
        }
        let dir = open_dir_at(parent, name)?;
        for entry in entries(&dir)? {
            remove_at(&dir, &entry, depth + 1)?;
        }
        return unlinkat(Some(parent.as_raw_fd()), name, UnlinkatFlags::RemoveDir)
            .map_err(|e| e.to_string());
    }
    unlinkat(Some(parent.as_raw_fd()), name, UnlinkatFlags::NoRemoveDir).map_err(|e| e.to_string())
}

/// `parent/name`'s metadata, the link itself for a link; `None` when there is nothing.
fn stat_at(parent: &OwnedFd, name: &OsStr) -> Result<Option<FileStat>, Errno> {
    match fstatat(Some(parent.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::ENOENT) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Whether `stat` is of the file type `kind`.
fn is(stat: &FileStat, kind: SFlag) -> bool {
    SFlag::from_bits_truncate(stat.st_mode as _) & SFlag::S_IFMT == kind
}

/// Opens the directory `parent/name`, a link refused.
fn open_dir_at(parent: &OwnedFd, name: &OsStr) -> Result<OwnedFd, String> {
    let fd = openat(
        Some(parent.as_raw_fd()),
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| e.to_string())?;
    // SAFETY: `openat` returned a descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the directory at the absolute `path` one component at a time, no link followed.
fn open_path(path: &Path) -> Result<OwnedFd, String> {
    let root = File::open("/").map_err(|e| e.to_string())?;
    let mut fd = OwnedFd::from(root);
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => fd = open_dir_at(&fd, name)?,
            _ => return Err(format!("{} is not a canonical path", path.display())),
        }
    }
    Ok(fd)
}

/// The names in the directory open as `dir`.
fn entries(dir: &OwnedFd) -> Result<Vec<OsString>, String> {
    // Close-on-exec: a guardian started on another thread meanwhile must not inherit it.
    let copy = nix::fcntl::fcntl(dir.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(0))
        .map_err(|e| e.to_string())?;
    let mut listing = nix::dir::Dir::from_fd(copy).map_err(|e| e.to_string())?;
    // A duplicate shares the directory's position; an iterator rewinds it when dropped, so
    // one is run to the end first and the listing starts at the top whatever came before.
    listing.iter().for_each(drop);
    let names = listing
        .iter()
        .filter_map(Result::ok)
        .map(|entry| OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string())
        .filter(|name| name != "." && name != "..")
        .collect();
    Ok(names)
}

/// The content of the file `parent/name`, a link refused.
fn read_at(parent: &OwnedFd, name: &OsStr) -> Result<Vec<u8>, String> {
    let fd = openat(
        Some(parent.as_raw_fd()),
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| e.to_string())?;
    // SAFETY: `openat` returned a descriptor that nothing else owns.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// At most `limit` bytes of the file at `path` (a `.git` file, a `commondir`).
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)?.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The device and inode of the open `fd`.
fn identity(fd: &OwnedFd) -> (u64, u64) {
    match nix::sys::stat::fstat(fd.as_raw_fd()) {
        Ok(stat) => {
            let stamp = Stamp::of(&stat);
            (stamp.dev, stamp.ino)
        }
        Err(_) => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace holding a git directory with a config, a hook and `info/`.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let git = root.join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("info")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        (dir, root)
    }

    #[test]
    fn what_a_command_changed_is_put_back_and_what_it_added_removed() {
        let (_dir, root) = workspace();
        let git = root.join(".git");
        let mut kept = GitMetadata::take(std::slice::from_ref(&root));
        assert!(kept.restore().is_empty());
        std::fs::write(git.join("config"), "[core]\n\tfsmonitor = /x\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(git.join("info/attributes"), "* diff=x\n").unwrap();
        std::fs::write(git.join("index"), "the model's own commit\n").unwrap();
        let restoration = kept.restore();
        let mut restored = restoration.restored.clone();
        restored.sort();
        assert_eq!(
            restored,
            vec![
                git.join("config"),
                git.join("hooks/pre-commit"),
                git.join("info/attributes"),
            ]
        );
        assert!(restoration.failed.is_empty());
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(git.join("index").exists());
        assert!(kept.restore().is_empty());
    }

    #[test]
    fn a_rewrite_with_the_same_content_is_no_change() {
        let (_dir, root) = workspace();
        let config = root.join(".git/config");
        let mut kept = GitMetadata::take(std::slice::from_ref(&root));
        std::fs::write(&config, std::fs::read(&config).unwrap()).unwrap();
        assert!(kept.restore().is_empty());
    }

    #[test]
    fn a_hooks_directory_swapped_for_a_link_is_made_again_and_the_link_not_followed() {
        let (_dir, root) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "keep\n").unwrap();
        let hooks = root.join(".git/hooks");
        let mut kept = GitMetadata::take(std::slice::from_ref(&root));
        std::fs::remove_dir_all(&hooks).unwrap();
        std::os::unix::fs::symlink(outside.path(), &hooks).unwrap();
        let restoration = kept.restore();
        assert!(restoration.failed.is_empty(), "{restoration:?}");
        assert!(hooks.symlink_metadata().unwrap().is_dir());
        assert!(hooks.join("pre-commit.sample").is_file());
        assert!(outside.path().join("victim").exists());
        assert!(!outside.path().join("pre-commit.sample").exists());
    }

    #[test]
    fn a_git_dir_renamed_away_is_moved_back() {
        let (_dir, root) = workspace();
        let mut kept = GitMetadata::take(std::slice::from_ref(&root));
        std::fs::rename(root.join(".git"), root.join("moved")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = /x\n").unwrap();
        let restoration = kept.restore();
        assert!(restoration.restored.contains(&root.join(".git")));
        assert!(!root.join("moved").exists());
        assert!(root.join(".git/HEAD").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
    }

    #[test]
    fn a_git_dir_made_in_a_root_is_removed_only_where_it_would_shadow_a_repository() {
        let (_dir, repo) = workspace();
        let inside = repo.join("sub");
        std::fs::create_dir(&inside).unwrap();
        let alone = tempfile::tempdir().unwrap();
        let alone = alone.path().canonicalize().unwrap();
        let roots = [inside.clone(), alone.clone()];
        let mut kept = GitMetadata::take(&roots);
        std::fs::create_dir(inside.join(".git")).unwrap();
        std::fs::create_dir(alone.join(".git")).unwrap();
        let restoration = kept.restore();
        assert_eq!(restoration.restored, vec![inside.join(".git")]);
        assert!(!inside.join(".git").exists());
        assert!(alone.join(".git").exists());
    }
}
