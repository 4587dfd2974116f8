//! Opening a file zero reads on its caller's behalf from a directory the caller does not
//! control: the files a prompt names, `AGENTS.md`/`ZERO.md` guidance, the workspace's
//! specialist manifests and its `.mcp.json`. A checkout can hold
//! symbolic links, and `outlink/secret.txt`, where `outlink` points out of the workspace,
//! names a file outside it although its last component is a plain file. So every component is
//! resolved beneath the root, links included, and a path that leaves it is refused.
//!
//! On Linux the kernel does it: `openat2(2)` with `RESOLVE_BENEATH` resolves the whole path
//! against a descriptor of the root and fails with `EXDEV` the moment a component (`..`, an
//! absolute link, a relative link climbing out) would leave it, in one system call, so
//! nothing can be swapped between a check and the open. Elsewhere, and on kernels without
//! `openat2` (before 5.6, or a seccomp profile that refuses it), the path is canonicalized and
//! checked to stay under the canonical root before it is opened: the same answer, except that
//! a directory swapped for a link between the two steps (by something writing the workspace
//! at that instant) is not seen.

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};

use super::{OpenError, open_regular, read_opened};

/// Why [`open_beneath`] handed back no file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BeneathError {
    /// The path resolves outside the root (through `..`, an absolute path or a link).
    #[error("it resolves outside {}", root.display())]
    Outside {
        /// The root it had to stay beneath.
        root: PathBuf,
    },
    /// The file beneath the root could not be opened, or is not a regular file.
    #[error(transparent)]
    Open(#[from] OpenError),
}

/// Opens for reading the regular file `relative` names beneath `root`, every component of it
/// (symbolic links included) resolved inside `root`; see the module documentation. Like
/// [`open_regular`], anything but a regular file is refused without blocking.
pub(crate) fn open_beneath(root: &Path, relative: &Path) -> Result<(File, Metadata), BeneathError> {
    #[cfg(target_os = "linux")]
    if let Some(opened) = kernel::open_beneath(root, relative) {
        return opened;
    }
    canonical_beneath(root, relative)
}

/// Reads the whole regular file `relative` names beneath `root` (see [`open_beneath`]) if it
/// holds at most `limit` bytes, as [`super::read_regular`] reads a path.
pub(crate) fn read_beneath(
    root: &Path,
    relative: &Path,
    limit: u64,
) -> Result<(Vec<u8>, Metadata), BeneathError> {
    Ok(read_opened(open_beneath(root, relative)?, limit)?)
}

/// Checks that the directory `relative` names beneath `root` resolves inside it, every
/// component (symbolic links included) as [`open_beneath`] resolves a file's, so that a
/// caller may list it by its path. A missing directory is [`OpenError::Io`] with
/// `NotFound`. Listing by path after the check lets a directory swapped for a link in that
/// instant show its names; a caller opens each file in it through [`open_beneath`], which no
/// swap gets past.
pub(crate) fn dir_beneath(root: &Path, relative: &Path) -> Result<(), BeneathError> {
    #[cfg(target_os = "linux")]
    if let Some(checked) = kernel::dir_beneath(root, relative) {
        return checked;
    }
    canonical_path(root, relative).map(drop)
}

/// A root that many files are read beneath, its directory opened once (`O_PATH`, which opens
/// nothing) rather than for every file: discovery reads a file per skill, and the root's own
/// open and close were a sixth of the system calls of each. Reads through it resolve exactly
/// as [`open_beneath`] resolves.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    /// The root.
    path: PathBuf,
    /// Its descriptor, when the kernel resolves beneath one (`None`: by canonical paths).
    #[cfg(target_os = "linux")]
    dir: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Root {
    /// The root `path`, opened.
    pub(crate) fn new(path: PathBuf) -> Root {
        Root {
            #[cfg(target_os = "linux")]
            dir: kernel::open_root(&path).ok().map(std::sync::Arc::new),
            path,
        }
    }

    /// `path` relative to the root; one that is not under it stays absolute, which resolving
    /// beneath refuses: a mistake fails closed.
    fn relative<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.path).unwrap_or(path)
    }

    /// [`open_beneath`] of `relative` through the opened root; the file may be left
    /// non-blocking, which a regular file read whole at once never notices.
    fn open(&self, relative: &Path) -> Result<(File, Metadata), BeneathError> {
        #[cfg(target_os = "linux")]
        if let Some(opened) = self
            .dir
            .as_ref()
            .and_then(|dir| kernel::open_at(dir, &self.path, relative))
        {
            return opened;
        }
        open_beneath(&self.path, relative)
    }
}

/// Reads the regular file at `path` as [`read_beneath`] does when `root` is given (`path` is
/// the root's path joined with the rest), else as [`super::read_regular`] does, its links
/// followed: how discovery reads what a workspace holds (beneath it) and what the user's own
/// directories hold (theirs, links and all). A `path` not under the `root` it is given is
/// refused.
pub(crate) fn read_within(
    root: Option<&Root>,
    path: &Path,
    limit: u64,
) -> Result<(Vec<u8>, Metadata), BeneathError> {
    match root {
        Some(root) => Ok(read_opened(root.open(root.relative(path))?, limit)?),
        None => Ok(super::read_regular(path, limit)?),
    }
}

/// Checks the directory `path` as [`dir_beneath`] does when `root` is given (see
/// [`read_within`]); without a root there is nothing to check.
pub(crate) fn dir_within(root: Option<&Root>, path: &Path) -> Result<(), BeneathError> {
    match root {
        Some(root) => dir_beneath(&root.path, root.relative(path)),
        None => Ok(()),
    }
}

/// The portable way: canonicalize, check, open the canonical path.
fn canonical_beneath(root: &Path, relative: &Path) -> Result<(File, Metadata), BeneathError> {
    Ok(open_regular(&canonical_path(root, relative)?)?)
}

/// The canonical path `relative` names beneath `root`, if it stays there.
fn canonical_path(root: &Path, relative: &Path) -> Result<PathBuf, BeneathError> {
    let root = root.canonicalize().map_err(OpenError::Io)?;
    let path = root.join(relative).canonicalize().map_err(OpenError::Io)?;
    if relative.is_absolute() || !path.starts_with(&root) {
        return Err(BeneathError::Outside { root });
    }
    Ok(path)
}

#[cfg(target_os = "linux")]
mod kernel {
    use std::fs::{File, Metadata};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::Path;

    use nix::errno::Errno;
    use nix::fcntl::{FcntlArg, OFlag, OpenHow, ResolveFlag, fcntl, openat2};
    use nix::sys::stat::Mode;

    use super::super::{OpenError, refuse_special};
    use super::BeneathError;

    /// [`super::open_beneath`] by `openat2(2)`; `None` when the kernel has no `openat2` or a
    /// seccomp profile refuses it. First an `O_PATH` descriptor, which opens nothing (a
    /// device is not touched), to check the type; then the file itself, non-blocking, checked
    /// again: [`super::open_regular`]'s order, every resolution confined by the kernel.
    pub(super) fn open_beneath(
        root: &Path,
        relative: &Path,
    ) -> Option<Result<(File, Metadata), BeneathError>> {
        match open_root(root) {
            Ok(dir) => open_at(&dir, root, relative).map(|opened| opened.and_then(blocking)),
            Err(error) => Some(Err(error)),
        }
    }

    /// [`open_beneath`] beneath `dir`, the descriptor of `root` ([`open_root`]), the file
    /// left non-blocking: a regular file never blocks, so a caller that only reads it whole
    /// (`Root`) spares the two calls that put it back ([`blocking`]).
    pub(super) fn open_at(
        dir: &OwnedFd,
        root: &Path,
        relative: &Path,
    ) -> Option<Result<(File, Metadata), BeneathError>> {
        match resolve(dir, relative, OFlag::O_PATH) {
            Err(Errno::ENOSYS | Errno::EPERM) => return None,
            Err(errno) => return Some(Err(failure(errno, root))),
            Ok(path) => {
                if let Err(error) = regular(&path) {
                    return Some(Err(error));
                }
            }
        }
        // O_NOCTTY: a terminal swapped in is never made the controlling terminal.
        Some(
            resolve(
                dir,
                relative,
                OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
            )
            .map_err(|errno| failure(errno, root))
            .and_then(|file| regular(&file).map(|meta| (file, meta))),
        )
    }

    /// [`super::dir_beneath`] by `openat2(2)` (an `O_PATH` descriptor of the directory, which
    /// opens nothing); `None` where [`open_beneath`] is.
    pub(super) fn dir_beneath(root: &Path, relative: &Path) -> Option<Result<(), BeneathError>> {
        let dir = match open_root(root) {
            Ok(dir) => dir,
            Err(error) => return Some(Err(error)),
        };
        match resolve(&dir, relative, OFlag::O_PATH | OFlag::O_DIRECTORY) {
            Err(Errno::ENOSYS | Errno::EPERM) => None,
            Err(errno) => Some(Err(failure(errno, root))),
            Ok(_) => Some(Ok(())),
        }
    }

    /// A descriptor of `root` to resolve beneath (`O_PATH`: nothing is opened).
    pub(super) fn open_root(root: &Path) -> Result<OwnedFd, BeneathError> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        match nix::fcntl::open(root, flags, Mode::empty()) {
            // SAFETY: `open` returned a new descriptor that nothing else owns.
            Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
            Err(errno) => Err(failure(errno, root)),
        }
    }

    /// `relative` opened with `flags`, resolved beneath `dir` (no magic links either).
    fn resolve(dir: &OwnedFd, relative: &Path, flags: OFlag) -> Result<File, Errno> {
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let fd = openat2(dir.as_raw_fd(), relative, how)?;
        // SAFETY: `openat2` returned a new descriptor that nothing else owns.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The metadata of `file`, if it is a regular file.
    fn regular(file: &File) -> Result<Metadata, BeneathError> {
        let meta = file.metadata().map_err(OpenError::Io)?;
        refuse_special(&meta)?;
        Ok(meta)
    }

    /// `file` (a regular file, checked) put back in blocking mode: a regular file never
    /// blocks, but whoever is handed it expects the ordinary semantics.
    fn blocking((file, meta): (File, Metadata)) -> Result<(File, Metadata), BeneathError> {
        let fd = file.as_raw_fd();
        let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL).map_err(io)?);
        fcntl(fd, FcntlArg::F_SETFL(flags.difference(OFlag::O_NONBLOCK))).map_err(io)?;
        Ok((file, meta))
    }

    /// What `errno` from a resolution beneath `root` means: `EXDEV` is the kernel saying the
    /// path leaves the root.
    fn failure(errno: Errno, root: &Path) -> BeneathError {
        match errno {
            Errno::EXDEV => BeneathError::Outside {
                root: root.to_path_buf(),
            },
            other => io(other),
        }
    }

    fn io(errno: Errno) -> BeneathError {
        BeneathError::Open(OpenError::Io(errno.into()))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::fsutil::Special;

    /// A workspace holding `notes/a.txt` and links in and out of it, beside an outside
    /// directory holding `secret.txt`; both canonical.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let base = top.path().canonicalize().unwrap();
        let (ws, outside) = (base.join("ws"), base.join("outside"));
        std::fs::create_dir_all(ws.join("notes")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("notes/a.txt"), "inside").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        symlink(&outside, ws.join("outlink")).unwrap();
        symlink("../../outside", ws.join("notes/up")).unwrap();
        symlink("notes", ws.join("inlink")).unwrap();
        symlink(outside.join("secret.txt"), ws.join("abs.txt")).unwrap();
        nix::unistd::mkfifo(&ws.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        (top, ws, outside)
    }

    type Open = fn(&Path, &Path) -> Result<(File, Metadata), BeneathError>;

    #[test]
    fn every_component_stays_beneath_the_root_whichever_way_it_is_resolved() {
        let (_top, ws, outside) = layout();
        let ways: [(&str, Open); 2] = [
            ("open_beneath", open_beneath),
            ("canonical_beneath", canonical_beneath),
        ];
        for (way, open) in ways {
            for inside in [
                "notes/a.txt",
                "inlink/a.txt",
                "notes/../notes/a.txt",
                "./notes/a.txt",
            ] {
                let (mut file, _) =
                    open(&ws, Path::new(inside)).unwrap_or_else(|e| panic!("{way}: {inside}: {e}"));
                let mut text = String::new();
                file.read_to_string(&mut text).unwrap();
                assert_eq!(text, "inside", "{way}: {inside}");
            }
            let escapes = [
                "outlink/secret.txt".to_string(),
                "notes/up/secret.txt".to_string(),
                "abs.txt".to_string(),
                "../outside/secret.txt".to_string(),
                "notes/../../outside/secret.txt".to_string(),
                outside.join("secret.txt").display().to_string(),
            ];
            for escape in escapes {
                match open(&ws, Path::new(&escape)) {
                    Err(BeneathError::Outside { .. }) => {}
                    other => panic!("{way}: {escape} was not refused as outside: {other:?}"),
                }
            }
            match open(&ws, Path::new("pipe")) {
                Err(BeneathError::Open(OpenError::NotRegular(Special::Fifo))) => {}
                other => panic!("{way}: the FIFO: {other:?}"),
            }
            match open(&ws, Path::new("missing.txt")) {
                Err(BeneathError::Open(OpenError::Io(e)))
                    if e.kind() == std::io::ErrorKind::NotFound => {}
                other => panic!("{way}: a missing file: {other:?}"),
            }
        }
    }
}
