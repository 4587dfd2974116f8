//! Appending to a cassette as the run goes. Each line is serialised, redacted with the run's
//! secrets (the same redaction as every other output; the provider's key is among them) and
//! written with one `write(2)` of the whole line, newline included, to a file opened
//! `O_APPEND`, under an exclusive `flock` that the run and its specialists, each appending to
//! the one file, take in turn. A run killed at any point leaves whole lines and at most one
//! cut last line, which a reader reports as cut. Nothing is fsynced: the lines survive the
//! process (SIGKILL included), not a power loss.
//!
//! `--record FILE` refuses a path that is a symbolic link (it is not followed: a link
//! committed to a repository could point anywhere) or anything but a regular file, and a
//! missing directory; an existing regular file is replaced, atomically, by an empty one when
//! the run starts, so a reader never sees the old recording and the new one mixed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::line::Line;
use crate::redact::Secrets;

/// The mode a new cassette is made with; the umask narrows it (usually to 0644): a cassette
/// is redacted, and made to be committed.
const NEW_FILE_MODE: u32 = 0o666;

/// Why `--record` refuses `path`, if it does (see the module documentation).
pub(crate) fn check_target(path: &Path) -> Result<(), String> {
    let shown = path.display();
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(format!(
                "--record {shown}: it is a symbolic link, which zero does not follow; name the \
                 file itself"
            ));
        }
        Ok(meta) if !meta.file_type().is_file() => {
            let what = match meta.file_type() {
                kind if kind.is_dir() => "a directory",
                kind if kind.is_fifo() => "a FIFO",
                kind if kind.is_socket() => "a socket",
                _ => "a device",
            };
            return Err(format!(
                "--record {shown}: it is {what}, not a regular file"
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("--record {shown}: {e}")),
    }
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    match fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        _ => Err(format!(
            "--record {shown}: the directory {} does not exist",
            parent.display()
        )),
    }
}

/// A cassette open for appending.
pub(crate) struct Writer {
    file: File,
    path: PathBuf,
    secrets: Secrets,
}

impl Writer {
    /// The cassette at `path` made anew (see the module documentation; [`check_target`]
    /// first), its lines redacted with `secrets`: an empty file made beside it, never one
    /// that was there, and renamed over it. Nothing is fsynced (see the module
    /// documentation): the rename is atomic for every reader, which is what is promised.
    pub(crate) fn create(path: &Path, secrets: Secrets) -> io::Result<Writer> {
        check_target(path).map_err(io::Error::other)?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let fresh = path.with_file_name(format!(".{name}.{}.new", std::process::id()));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(NEW_FILE_MODE)
            .open(&fresh)?;
        if let Err(error) = fs::rename(&fresh, path) {
            let _ = fs::remove_file(&fresh);
            return Err(error);
        }
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            secrets,
        })
    }

    /// The cassette at `path`, which the launching run made, open for a specialist's lines:
    /// a regular file, never through a symbolic link, never created here.
    pub(crate) fn append_to(path: &Path, secrets: Secrets) -> io::Result<Writer> {
        let file = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            secrets,
        })
    }

    /// The cassette's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `line`, whole, under the file's lock.
    pub(crate) fn write(&self, line: &Line) -> io::Result<()> {
        let mut text = self
            .secrets
            .apply(&serde_json::to_string(line).map_err(io::Error::other)?);
        text.push('\n');
        // The lock is the open file's, shared with the clone; dropping it unlocks.
        let mut locked = Flock::lock(self.file.try_clone()?, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io::Error::from(errno))?;
        locked.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::cassette::line::Server;

    fn server(task: &str) -> Line {
        Line::Server(Server {
            task: task.into(),
            window: None,
            llama_cpp: false,
            vision: None,
        })
    }

    #[test]
    fn a_record_path_that_is_a_link_a_fifo_or_in_no_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link.cassette");
        symlink(&target, &link).unwrap();
        assert!(check_target(&link).unwrap_err().contains("symbolic link"));
        assert!(Writer::create(&link, Secrets::default()).is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(check_target(&fifo).unwrap_err().contains("FIFO"));
        assert!(check_target(dir.path()).unwrap_err().contains("directory"));
        let nowhere = dir.path().join("no/such/dir/c.jsonl");
        assert!(
            check_target(&nowhere)
                .unwrap_err()
                .contains("does not exist")
        );
    }

    #[test]
    fn an_existing_cassette_is_replaced_and_specialists_append_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.cassette");
        fs::write(&path, "old recording\n").unwrap();
        let writer = Writer::create(&path, Secrets::default()).unwrap();
        writer.write(&server("main")).unwrap();
        let child = Writer::append_to(&path, Secrets::default()).unwrap();
        child.write(&server("1")).unwrap();
        writer.write(&server("main")).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("old"), "{text}");
        let tasks: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Line>(l).unwrap().task().to_string())
            .collect();
        assert_eq!(tasks, ["main", "1", "main"]);
        assert!(Writer::append_to(&dir.path().join("absent"), Secrets::default()).is_err());
    }
}
