//! The run's footprint in the data directory: where everything lives, the lease that says the
//! run is alive, and the private run directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::runtime::lease;
use crate::runtime::{RunId, RuntimeError, TaskId, TaskKind};

/// Paths inside the data directory (see `docs/RUNTIME.md` for the layout). Every path is made
/// from a parsed [`RunId`] or [`TaskId`], so its last component is always a name zero gives.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout under `root`.
    pub(crate) fn new(root: PathBuf) -> Self {
        Layout { root }
    }

    /// `tasks/`: every run's task records and output files.
    pub(crate) fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// `tasks/<id>.json`.
    pub(crate) fn record(&self, id: &TaskId) -> PathBuf {
        self.tasks_dir().join(format!("{id}.{RECORD_EXTENSION}"))
    }

    /// The task whose record `name` (an entry of `tasks/`) is, when it is one: `None` for an
    /// output file or anything else. The record's id is read from its file name, so a name
    /// that [`Layout::record`] would not make is `Some(Err(..))`.
    pub(crate) fn record_id(name: &str) -> Option<Result<TaskId, RuntimeError>> {
        name.strip_suffix(RECORD_EXTENSION)
            .and_then(|stem| stem.strip_suffix('.'))
            .map(TaskId::parse)
    }

    /// `tasks/<id>.log` or `tasks/<id>.ndjson`, by kind.
    pub(crate) fn output(&self, id: &TaskId, kind: &TaskKind) -> PathBuf {
        self.tasks_dir()
            .join(format!("{id}.{}", kind.output_extension()))
    }

    /// `runs/`: the leases, task indexes and run directories of runs not yet closed or
    /// reconciled.
    pub(crate) fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// `runs/<run_id>.lock`: the run's lease.
    pub(crate) fn lease(&self, run_id: &RunId) -> PathBuf {
        self.run_file(run_id, RunFile::Lease)
    }

    /// `runs/<run_id>.tasks`: the ids of the run's tasks, one a line, appended before each
    /// task's process starts. Reconciling a dead run reads this, never all of `tasks/`.
    pub(crate) fn task_index(&self, run_id: &RunId) -> PathBuf {
        self.run_file(run_id, RunFile::Index)
    }

    /// `runs/<run_id>/`: the run's private directory.
    pub(crate) fn run_dir(&self, run_id: &RunId) -> PathBuf {
        self.run_file(run_id, RunFile::Dir)
    }

    /// `runs/.<run_id>.lock.new`: the lease while it is being created and locked, before it is
    /// renamed into place.
    fn new_lease(&self, run_id: &RunId) -> PathBuf {
        self.run_file(run_id, RunFile::NewLease)
    }

    fn run_file(&self, run_id: &RunId, file: RunFile) -> PathBuf {
        let (prefix, suffix) = file.affixes();
        self.runs_dir().join(format!("{prefix}{run_id}{suffix}"))
    }
}

/// The extension of a task's record file.
const RECORD_EXTENSION: &str = "json";

/// The entries a run has in `runs/`. Their names are made by [`Layout`] and read back by
/// [`RunFile::parse`] from the same affixes, so the two cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunFile {
    /// `<run_id>.lock`, see [`Layout::lease`].
    Lease,
    /// `.<run_id>.lock.new`, see [`Layout::new_lease`].
    NewLease,
    /// `<run_id>.tasks`, see [`Layout::task_index`].
    Index,
    /// `<run_id>/`, see [`Layout::run_dir`].
    Dir,
}

impl RunFile {
    const ALL: [RunFile; 4] = [
        RunFile::Lease,
        RunFile::NewLease,
        RunFile::Index,
        RunFile::Dir,
    ];

    /// The text before and after the run id in the entry's name.
    fn affixes(self) -> (&'static str, &'static str) {
        match self {
            RunFile::Lease => ("", ".lock"),
            RunFile::NewLease => (".", ".lock.new"),
            RunFile::Index => ("", ".tasks"),
            RunFile::Dir => ("", ""),
        }
    }

    /// The run and the kind of entry `name` (an entry of `runs/`) is; `None` for a name zero
    /// never gives, which must then be left alone. (A run id has no dots, so at most one kind
    /// matches.)
    pub(crate) fn parse(name: &str) -> Option<(RunId, RunFile)> {
        RunFile::ALL.into_iter().find_map(|file| {
            let (prefix, suffix) = file.affixes();
            let run_id = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
            Some((RunId::parse(run_id).ok()?, file))
        })
    }

    /// What zero makes under this name.
    pub(crate) fn kind(self) -> EntryKind {
        match self {
            RunFile::Dir => EntryKind::Dir,
            RunFile::Lease | RunFile::NewLease | RunFile::Index => EntryKind::File,
        }
    }
}

/// What zero keeps under one of its names in the data directory. Anything else found there —
/// a symbolic link above all — is not zero's: it is never followed, changed or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

impl EntryKind {
    /// Checks that an entry at `path` whose type (not following a link) is `found` is what
    /// zero keeps there.
    pub(crate) fn check(self, path: &Path, found: fs::FileType) -> Result<(), RuntimeError> {
        let matches = match self {
            EntryKind::File => found.is_file(),
            EntryKind::Dir => found.is_dir(),
        };
        if matches {
            return Ok(());
        }
        let found = if found.is_symlink() {
            "a symbolic link"
        } else if found.is_dir() {
            "a directory"
        } else if found.is_file() {
            "a regular file"
        } else {
            "a special file"
        };
        Err(RuntimeError::Foreign {
            path: path.to_path_buf(),
            expected: self.describe(),
            found,
        })
    }

    /// Whether `path` holds what zero keeps there: `Ok(false)` when nothing is there, an error
    /// naming it when something else is. Does not follow a symbolic link.
    pub(crate) fn present(self, path: &Path) -> Result<bool, RuntimeError> {
        match fs::symlink_metadata(path) {
            Ok(meta) => self.check(path, meta.file_type()).map(|()| true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(RuntimeError::io("read", path)(error)),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "a regular file",
            EntryKind::Dir => "a directory",
        }
    }
}

/// The run directory's entry that commands use as their temporary directory.
const TEMP_DIR: &str = "tmp";

/// A run that has started at least one task: it holds its lease and owns its run directory
/// until [`Run::close`]. Dropping it without closing still releases the lease (the kernel
/// drops the `flock` when the file is closed or the process dies).
#[derive(Debug)]
pub(crate) struct Run {
    /// The exclusive `flock` on `runs/<run_id>.lock`: while it is held, the run is alive.
    lease: Flock<File>,
    lease_path: PathBuf,
    index_path: PathBuf,
    dir: PathBuf,
    /// The kernel boot id, recorded with every task's start time.
    pub(crate) boot_id: Option<String>,
}

impl Run {
    /// Creates the data directories (0700), takes the run's lease and creates its private
    /// directory. Blocking: call it off the async workers.
    pub(crate) fn open(layout: &Layout, run_id: &RunId) -> Result<Run, RuntimeError> {
        let runs = layout.runs_dir();
        for dir in [&runs, &layout.tasks_dir()] {
            crate::fsutil::private_dir(true)
                .create(dir)
                .map_err(RuntimeError::io("create", dir.as_path()))?;
        }
        let lease_path = layout.lease(run_id);
        let lease = take_new_lease(&layout.new_lease(run_id), &lease_path)?;
        let dir = layout.run_dir(run_id);
        let temp_dir = dir.join(TEMP_DIR);
        for dir in [&dir, &temp_dir] {
            crate::fsutil::private_dir(false)
                .create(dir)
                .map_err(RuntimeError::io("create", dir.as_path()))?;
        }
        Ok(Run {
            lease,
            lease_path,
            index_path: layout.task_index(run_id),
            dir,
            boot_id: crate::runtime::identity::boot_id(),
        })
    }

    /// The private run directory (0700) for prompt files and other scratch.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run's temporary directory, inside the run directory: a confined command's
    /// `TMPDIR`, and writable to it.
    pub(crate) fn temp_dir(&self) -> PathBuf {
        self.dir.join(TEMP_DIR)
    }

    /// The run's task index (see [`Layout::task_index`]).
    pub(crate) fn index_path(&self) -> &Path {
        &self.index_path
    }

    /// Removes the run directory, the task index and the lease file, then releases the lease.
    /// The file goes before the lock so nobody can find the lease unheld while the run still
    /// has files. Every step is tried; the errors are returned in the order they happened.
    /// Blocking.
    pub(crate) fn close(self) -> Vec<RuntimeError> {
        let errors = remove_footprint(&self.dir, &self.index_path, &self.lease_path);
        drop(self.lease);
        errors
    }
}

/// Creates the lease file `path` already held: created and locked under the temporary name
/// `new`, its owner written in it (see [`lease`]), and only then renamed into place, so the
/// file is held from the moment it exists and a reconciler can never find a live run's lease
/// unheld and mistake the run for a dead one. std opens every file close-on-exec, so no child
/// keeps the lease past its `exec`; one this process is starting holds a copy until then,
/// which [`Lease::try_take`] waits out once the owner is gone (see [`lease`]). Blocking.
pub(crate) fn take_new_lease(new: &Path, path: &Path) -> Result<Flock<File>, RuntimeError> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(new)
        .map_err(RuntimeError::io("create", new))?;
    let lease = Flock::lock(file, FlockArg::LockExclusiveNonblock)
        .map_err(|(_, errno)| RuntimeError::io("lock", new)(io::Error::from(errno)))?;
    // No fsync: the owner matters only while this boot lasts.
    (&*lease)
        .write_all(lease::owner_line().as_bytes())
        .map_err(RuntimeError::io("write", new))?;
    fs::rename(new, path).map_err(RuntimeError::io("create", path))?;
    Ok(lease)
}

/// Opens the file zero keeps at `path` for reading, never through a symbolic link (that fails
/// with `ELOOP`): a link in the data directory is not zero's, and neither is what it points to.
pub(crate) fn open_own(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Removes a run's directory, task index and lease file, in that order (the lease last: while
/// it exists, the run is not yet closed or reconciled). Every step is tried; the errors are
/// returned in the order they happened. Blocking.
pub(crate) fn remove_footprint(dir: &Path, index: &Path, lease: &Path) -> Vec<RuntimeError> {
    [
        (dir, EntryKind::Dir),
        (index, EntryKind::File),
        (lease, EntryKind::File),
    ]
    .into_iter()
    .filter_map(|(path, kind)| remove_own(path, kind).err())
    .collect()
}

/// Removes what zero keeps at `path`: a directory with everything in it, or a file. Nothing
/// there is fine; anything else there (a symbolic link put in its place) is left alone and
/// reported — this never follows a link. The one way zero deletes from the data directory.
/// Blocking.
pub(crate) fn remove_own(path: &Path, kind: EntryKind) -> Result<(), RuntimeError> {
    if !kind.present(path)? {
        return Ok(());
    }
    // Replaced by a link since the check? `remove_dir_all` removes such a link itself and
    // never what it points to.
    let removed = match kind {
        EntryKind::Dir => fs::remove_dir_all(path),
        EntryKind::File => fs::remove_file(path),
    };
    match removed {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(RuntimeError::io("remove", path)(error))
        }
        _ => Ok(()),
    }
}

/// Appends `id` to a run's task index, creating it (0600) on the first task. Done before the
/// task's process starts, so a dead run's index names every task that may have a process.
/// Blocking.
pub(crate) fn append_to_index(index: &Path, id: &TaskId) -> Result<(), RuntimeError> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(index)
        .map_err(RuntimeError::io("create", index))?;
    file.write_all(format!("{id}\n").as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(RuntimeError::io("write", index))
}

/// What a lease file says about its run, to a process that is not the run.
#[derive(Debug)]
pub(crate) enum Lease {
    /// Another process holds it: the run is alive.
    Held,
    /// Nobody held it, and now the caller does (until the value is dropped): the run is dead,
    /// and the caller alone may reconcile it.
    Taken(Flock<File>),
    /// There is no lease (any more): the run closed or was reconciled.
    Absent,
}

impl Lease {
    /// Tries to take the lease at `path` without waiting. Blocking (file system only).
    ///
    /// The lock is checked to be on the file still at `path` after it was taken: a run that
    /// closed, or a reconciler that finished, removes the file before releasing the lock, and
    /// whoever locked the removed file must not redo that work.
    pub(crate) fn try_take(path: &Path) -> io::Result<Lease> {
        // Nothing outside the data directory is ever locked, let alone taken for a dead run's.
        let file = match open_own(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Lease::Absent),
            Err(error) => return Err(error),
        };
        let lock = match lease::lock_unless_held(file, FlockArg::LockExclusiveNonblock)? {
            lease::Locked::Taken(lock) => lock,
            lease::Locked::Held(_) => return Ok(Lease::Held),
        };
        let locked = lock.metadata()?;
        match fs::metadata(path) {
            Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                Ok(Lease::Taken(lock))
            }
            Ok(_) => Ok(Lease::Absent),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Lease::Absent),
            Err(error) => Err(error),
        }
    }

    /// Whether the run behind the lease at `path` is alive. A lease that cannot be checked
    /// counts as alive: the cost of that mistake is showing `running`, never killing.
    pub(crate) fn is_held(path: &Path) -> bool {
        !matches!(Lease::try_take(path), Ok(Lease::Taken(_) | Lease::Absent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_from_the_moment_it_exists_until_it_is_gone() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let run_id = RunId::generate();
        let lease = layout.lease(&run_id);
        let run = Run::open(&layout, &run_id).unwrap();
        assert!(matches!(Lease::try_take(&lease), Ok(Lease::Held)));
        assert!(Lease::is_held(&lease));
        assert!(!layout.new_lease(&run_id).exists());
        assert!(run.close().is_empty());
        assert!(matches!(Lease::try_take(&lease), Ok(Lease::Absent)));
        assert!(!Lease::is_held(&lease));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn no_child_inherits_the_lease() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let run_id = RunId::generate();
        let run = Run::open(&layout, &run_id).unwrap();
        let fds = std::process::Command::new("sh")
            .args(["-c", "ls -l /proc/$$/fd"])
            .output()
            .unwrap();
        let fds = String::from_utf8_lossy(&fds.stdout).into_owned();
        assert!(!fds.contains(&format!("{run_id}.lock")), "{fds}");
        assert!(run.close().is_empty());
    }

    #[test]
    fn the_names_of_a_runs_files_are_read_back_as_they_are_made() {
        let layout = Layout::new(PathBuf::from("/data"));
        let run_id = RunId::generate();
        for file in RunFile::ALL {
            let path = layout.run_file(&run_id, file);
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(RunFile::parse(name), Some((run_id.clone(), file)), "{name}");
        }
        for stray in [
            "...lock",
            "..lock",
            ".lock",
            "..",
            ".",
            "run_x.lock",
            ".run_x.lock.new",
        ] {
            assert_eq!(RunFile::parse(stray), None, "{stray}");
        }
        let id = TaskId::generate();
        let record = layout.record(&id);
        let name = record.file_name().unwrap().to_str().unwrap();
        assert_eq!(Layout::record_id(name).unwrap().unwrap(), id);
        assert!(Layout::record_id("..json").unwrap().is_err());
        assert!(Layout::record_id(&format!("{id}.log")).is_none());
    }

    #[test]
    fn removing_a_runs_footprint_never_follows_a_symbolic_link() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let run_id = RunId::generate();
        let run = Run::open(&layout, &run_id).unwrap();
        let precious = tempfile::tempdir().unwrap();
        fs::write(precious.path().join("thesis"), "years of work").unwrap();
        fs::remove_dir_all(run.dir()).unwrap();
        std::os::unix::fs::symlink(precious.path(), run.dir()).unwrap();
        let errors = run.close();
        assert!(
            matches!(&errors[..], [RuntimeError::Foreign { path, .. }] if *path == layout.run_dir(&run_id)),
            "{errors:?}"
        );
        assert!(precious.path().join("thesis").exists());
        assert!(fs::symlink_metadata(layout.run_dir(&run_id)).is_ok());
        assert!(!layout.lease(&run_id).exists());
    }
}
