//! The doors to files: atomic replacement, through which zero writes files (tool edits,
//! task records, `--output-last-message`); [`open_regular`], through which the file tools
//! open a path the model named; and [`open_beneath`] (with [`read_beneath`], and
//! [`read_within`] and [`dir_within`] for discovery), through which zero reads what a
//! workspace holds on its caller's behalf, every component of the path resolved inside it.
//!
//! A reader (the user's editor, a build running alongside, a crash-restarted zero) sees either
//! the old file or the new one, never a half-written mix. The new contents go to a temporary
//! file in the same directory (so the final rename cannot cross filesystems), are flushed to
//! disk, and are renamed over the target; the directory is then flushed so the rename itself
//! survives a crash.
//!
//! Opening is the other half: a path can name a FIFO, a socket or a device, and opening or
//! reading one of those can block forever (a FIFO with no writer) or never end (`/dev/zero`).
//! [`open_regular`] opens without blocking, checks what it opened and hands back only regular
//! files, so a tool call on anything else ends at once with an error that names the type.
//!
//! These functions block; async callers run them on a blocking thread.

use std::fmt;
use std::fs::{self, File, FileType, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, OFlag, fcntl};

mod beneath;

pub(crate) use beneath::{BeneathError, Root, dir_within, open_beneath, read_beneath, read_within};

/// Mode asked for a brand-new file; the umask then narrows it, exactly as `open(2)` would for a
/// file created in place (usually 0644). Without it the temp file's 0600 would leak through.
const NEW_FILE_MODE: u32 = 0o666;

/// Replaces `path` with `contents` atomically. An existing file keeps its permission bits; a new
/// file gets the usual 0666-minus-umask.
///
/// `path` should already be resolved: a symlink at `path` is replaced by a regular file, not
/// followed. Parent directories must exist (see [`create_parent_dirs`]).
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let existing = match fs::metadata(path) {
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    replace(path, contents, existing)
}

/// Like [`write_atomic`], but the file ends up with exactly `permissions` whether or not it
/// existed; used to restore a deleted file or to carry a file's mode along when it is moved.
pub(crate) fn write_atomic_with_permissions(
    path: &Path,
    contents: &[u8],
    permissions: Permissions,
) -> io::Result<()> {
    replace(path, contents, Some(permissions))
}

/// Writes `contents` to a new file at `path` that only its owner may read (0600), refusing a
/// path that exists: what zero hands over through its private run directory (a specialist's
/// prompt, key and hooks, a hook's input) is never written into a file someone else made.
pub(crate) fn write_private_new(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(contents)
}

/// A builder of directories only their owner may enter (0700), for everything zero keeps in
/// its data directory; `recursive` creates missing ancestors too (with the same mode).
pub(crate) fn private_dir(recursive: bool) -> fs::DirBuilder {
    let mut builder = fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(builder.recursive(recursive), 0o700);
    builder
}

/// Creates the missing ancestors of `path` and returns the ones it created, outermost first, so
/// a caller that must undo its work can remove them again (innermost first). If one cannot be
/// created, those it did create are removed before the error is returned.
pub(crate) fn create_parent_dirs(path: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut dir = parent_dir(path);
    while !dir.exists() {
        missing.push(dir.to_path_buf());
        match dir.parent() {
            Some(parent) => dir = parent,
            None => break,
        }
    }
    missing.reverse();
    for (made, dir) in missing.iter().enumerate() {
        if let Err(error) = fs::create_dir(dir) {
            for dir in missing[..made].iter().rev() {
                let _ = fs::remove_dir(dir);
            }
            return Err(error);
        }
    }
    Ok(missing)
}

/// Writes a temp file beside `path`, gives it `permissions` (bypassing the umask, so 0755 stays
/// 0755), flushes it, renames it over `path` and flushes the directory. On any error before the
/// rename the temp file is removed and `path` is untouched.
fn replace(path: &Path, contents: &[u8], permissions: Option<Permissions>) -> io::Result<()> {
    let dir = parent_dir(path);
    let mut temp = tempfile::Builder::new()
        .prefix(".zero-write-")
        .permissions(Permissions::from_mode(NEW_FILE_MODE))
        .tempfile_in(dir)?;
    temp.write_all(contents)?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// The directory `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// A directory.
    Directory,
    /// A FIFO (named pipe): opening it for reading waits for a writer, reading waits for data.
    Fifo,
    /// A Unix domain socket: it cannot be opened at all.
    Socket,
    /// A character device (`/dev/zero`, `/dev/urandom`, a terminal): reads may never end.
    CharDevice,
    /// A block device (a disk or a partition).
    BlockDevice,
    /// Anything else the platform has (never a symlink: those are followed).
    Other,
}

impl Special {
    /// What `file_type` is, or `None` for a regular file.
    fn of(file_type: FileType) -> Option<Special> {
        if file_type.is_file() {
            None
        } else if file_type.is_dir() {
            Some(Special::Directory)
        } else if file_type.is_fifo() {
            Some(Special::Fifo)
        } else if file_type.is_socket() {
            Some(Special::Socket)
        } else if file_type.is_char_device() {
            Some(Special::CharDevice)
        } else if file_type.is_block_device() {
            Some(Special::BlockDevice)
        } else {
            Some(Special::Other)
        }
    }
}

/// Reads as a noun phrase with its article ("a FIFO (named pipe)"), for messages.
impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Special::Directory => "a directory",
            Special::Fifo => "a FIFO (named pipe)",
            Special::Socket => "a socket",
            Special::CharDevice => "a character device",
            Special::BlockDevice => "a block device",
            Special::Other => "a special file",
        })
    }
}

/// Why [`open_regular`] or [`read_regular`] handed back no file.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path could not be inspected or opened (missing, no permission, ...).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The path exists but is not a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(Special),
    /// The file holds more than the caller's limit (in bytes).
    #[error("it is larger than {0} bytes")]
    TooLarge(u64),
}

/// Opens the regular file at `path` for reading, symlinks followed, and returns it with its
/// metadata. Anything else is refused without ever blocking: a FIFO with no writer, a socket,
/// a device or a directory gives [`OpenError::NotRegular`] at once.
///
/// The path is checked before it is opened, because opening a device can do something by
/// itself (a serial line raises its modem lines, a watchdog arms) and a socket cannot be opened
/// at all. The open itself is non-blocking, and the opened file is checked again, so a path
/// swapped for a FIFO in between is still refused and the file returned is the one checked.
pub(crate) fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    refuse_special(&fs::metadata(path)?)?;
    // O_NOCTTY: a terminal swapped in is never made the controlling terminal.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    refuse_special(&meta)?;
    // A regular file never blocks, but whoever reads it expects ordinary blocking semantics.
    let fd = file.as_raw_fd();
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL).map_err(io::Error::from)?);
    fcntl(fd, FcntlArg::F_SETFL(flags.difference(OFlag::O_NONBLOCK))).map_err(io::Error::from)?;
    Ok((file, meta))
}

/// Opens for reading a path a directory walk has just listed as a regular file (its type read
/// from the directory, links not followed), where a search opens thousands and one more
/// system call each is measurable (the grep benchmark's 50,000 files). The listing made the
/// check [`open_regular`] makes before it opens; what may have been swapped in since cannot
/// hold the search up: a symbolic link is not followed (the open fails), a FIFO opened
/// without blocking reads as empty (or fails) rather than waiting for a writer, and a socket
/// cannot be opened. (Only a device node made in that instant, which takes root, would be
/// read.)
pub(crate) fn open_listed_regular(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
}

/// Reads the whole regular file at `path` (see [`open_regular`]) if it holds at most `limit`
/// bytes. The limit is enforced on what is read, not only on the size the file reports, so a
/// file that grows while it is read cannot make this read without bound.
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<(Vec<u8>, Metadata), OpenError> {
    read_opened(open_regular(path)?, limit)
}

/// Reads the whole of a file [`open_regular`] or [`open_beneath`] opened, if it holds at most
/// `limit` bytes (counted as it is read, as [`read_regular`] counts).
fn read_opened(
    (file, meta): (File, Metadata),
    limit: u64,
) -> Result<(Vec<u8>, Metadata), OpenError> {
    if meta.len() > limit {
        return Err(OpenError::TooLarge(limit));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(OpenError::TooLarge(limit));
    }
    Ok((bytes, meta))
}

/// The metadata of the regular file at `path` (symlinks followed), `None` when nothing is
/// there, or [`OpenError::NotRegular`]: what a tool checks before it replaces a file whole.
/// [`write_atomic`] renames over the path and never opens it, so nothing here can block; the
/// check keeps a FIFO, a socket or a device from being silently replaced by a regular file.
pub(crate) fn regular_or_absent(path: &Path) -> Result<Option<Metadata>, OpenError> {
    match fs::metadata(path) {
        Ok(meta) => refuse_special(&meta).map(|()| Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Fails with [`OpenError::NotRegular`] unless `meta` describes a regular file.
fn refuse_special(meta: &Metadata) -> Result<(), OpenError> {
    match Special::of(meta.file_type()) {
        None => Ok(()),
        Some(kind) => Err(OpenError::NotRegular(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn replaces_contents_and_keeps_an_executable_mode() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "old").unwrap();
        fs::set_permissions(&script, Permissions::from_mode(0o755)).unwrap();

        write_atomic(&script, b"#!/bin/sh\necho new\n").unwrap();

        assert_eq!(
            fs::read_to_string(&script).unwrap(),
            "#!/bin/sh\necho new\n"
        );
        assert_eq!(mode(&script), 0o755);
    }

    #[test]
    fn new_file_gets_the_mode_a_plain_create_would_give_and_no_temp_file_remains() {
        let dir = tempfile::tempdir().unwrap();
        let reference = dir.path().join("reference");
        fs::write(&reference, "r").unwrap();
        let file = dir.path().join("new.txt");

        write_atomic(&file, b"hello").unwrap();

        assert_eq!(fs::read(&file).unwrap(), b"hello");
        // Not the temp file's private 0600: the same mode `fs::write` gets under this umask.
        assert_eq!(mode(&file), mode(&reference));
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, vec!["new.txt", "reference"]);
    }

    #[test]
    fn explicit_permissions_win_over_the_existing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        write_atomic_with_permissions(&file, b"y", Permissions::from_mode(0o700)).unwrap();
        assert_eq!(mode(&file), 0o700);
    }

    #[test]
    fn failed_write_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), "k").unwrap();

        // Renaming a file over a non-empty directory fails after the temp file was written.
        assert!(write_atomic(&target, b"data").is_err());

        assert!(target.join("keep").exists());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["sub"]);
    }

    /// A directory holding a FIFO named `pipe` that nothing ever opens for writing.
    fn dir_with_fifo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        dir
    }

    fn refused_as(result: Result<impl fmt::Debug, OpenError>) -> Special {
        match result {
            Err(OpenError::NotRegular(kind)) => kind,
            other => panic!("not refused as special: {other:?}"),
        }
    }

    #[test]
    fn open_regular_hands_back_a_regular_file_in_blocking_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "text").unwrap();
        let (mut file, meta) = open_regular(&path).unwrap();
        assert_eq!(meta.len(), 4);
        let flags = OFlag::from_bits_retain(fcntl(file.as_raw_fd(), FcntlArg::F_GETFL).unwrap());
        assert!(!flags.contains(OFlag::O_NONBLOCK), "{flags:?}");
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "text");
    }

    #[test]
    fn open_regular_refuses_a_fifo_without_waiting_for_a_writer() {
        let dir = dir_with_fifo();
        assert_eq!(
            refused_as(open_regular(&dir.path().join("pipe"))),
            Special::Fifo
        );
        // Through a symlink the target's type counts.
        std::os::unix::fs::symlink("pipe", dir.path().join("link")).unwrap();
        assert_eq!(
            refused_as(open_regular(&dir.path().join("link"))),
            Special::Fifo
        );
        // Swapped in after a walk listed a file: a FIFO opens at once and reads as empty, a
        // symbolic link is not followed.
        let mut swapped = String::new();
        open_listed_regular(&dir.path().join("pipe"))
            .unwrap()
            .read_to_string(&mut swapped)
            .unwrap();
        assert_eq!(swapped, "");
        assert!(open_listed_regular(&dir.path().join("link")).is_err());
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert!(open_listed_regular(&dir.path().join("file")).is_ok());
    }

    #[test]
    fn open_regular_names_every_other_kind() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(refused_as(open_regular(&socket)), Special::Socket);
        assert_eq!(refused_as(open_regular(dir.path())), Special::Directory);
        for device in ["/dev/null", "/dev/zero", "/dev/urandom"] {
            assert_eq!(
                refused_as(open_regular(Path::new(device))),
                Special::CharDevice
            );
        }
        assert!(matches!(
            open_regular(&dir.path().join("missing")),
            Err(OpenError::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
        assert_eq!(Special::Fifo.to_string(), "a FIFO (named pipe)");
    }

    #[test]
    fn read_regular_reads_up_to_the_limit_and_refuses_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_regular(&path, 10).unwrap().0, b"0123456789");
        assert!(matches!(
            read_regular(&path, 9),
            Err(OpenError::TooLarge(9))
        ));
        assert_eq!(
            refused_as(read_regular(Path::new("/dev/zero"), 10)),
            Special::CharDevice
        );
    }

    /// A procfs file reports a size of 0 whatever it holds, so only the bound on the read
    /// itself can catch it.
    #[cfg(target_os = "linux")]
    #[test]
    fn read_regular_bounds_the_read_not_the_reported_size() {
        let status = Path::new("/proc/self/status");
        assert_eq!(fs::metadata(status).unwrap().len(), 0);
        assert!(matches!(
            read_regular(status, 16),
            Err(OpenError::TooLarge(16))
        ));
    }

    #[test]
    fn regular_or_absent_tells_missing_from_regular_from_special() {
        let dir = dir_with_fifo();
        let file = dir.path().join("f");
        assert!(regular_or_absent(&file).unwrap().is_none());
        fs::write(&file, "x").unwrap();
        assert!(regular_or_absent(&file).unwrap().is_some());
        assert_eq!(
            refused_as(regular_or_absent(&dir.path().join("pipe"))),
            Special::Fifo
        );
    }

    #[test]
    fn create_parent_dirs_reports_what_it_created() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        let created = create_parent_dirs(&dir.path().join("a/b/c/file.txt")).unwrap();
        assert_eq!(
            created,
            vec![dir.path().join("a/b"), dir.path().join("a/b/c")]
        );
        assert!(dir.path().join("a/b/c").is_dir());
        assert!(
            create_parent_dirs(&dir.path().join("a/b/c/other"))
                .unwrap()
                .is_empty()
        );
    }
}
