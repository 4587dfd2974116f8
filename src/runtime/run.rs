//! The run's footprint in the data directory: where everything lives, the lease that says the
//! run is alive, and the private run directory.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::{RuntimeError, TaskId, TaskKind};

/// Paths inside the data directory (see `docs/RUNTIME.md` for the layout).
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout under `root`.
    pub fn new(root: PathBuf) -> Self {
        Layout { root }
    }

    /// `tasks/`: every run's task records and output files.
    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// `tasks/<id>.json`.
    pub fn record(&self, id: &TaskId) -> PathBuf {
        self.tasks_dir().join(format!("{id}.json"))
    }

    /// `tasks/<id>.log` or `tasks/<id>.ndjson`, by kind.
    pub fn output(&self, id: &TaskId, kind: &TaskKind) -> PathBuf {
        self.tasks_dir()
            .join(format!("{id}.{}", kind.output_extension()))
    }

    /// `runs/`: the leases, task indexes and run directories of runs not yet closed or
    /// reconciled.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// `runs/<run_id>.lock`: the run's lease.
    pub fn lease(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.lock"))
    }

    /// `runs/<run_id>.tasks`: the ids of the run's tasks, one a line, appended before each
    /// task's process starts. Reconciling a dead run reads this, never all of `tasks/`.
    pub fn task_index(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.tasks"))
    }

    /// `runs/<run_id>/`: the run's private directory.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }

    /// `runs/.<run_id>.lock.new`: the lease while it is being created and locked, before it is
    /// renamed into place.
    fn new_lease(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!(".{run_id}.lock.new"))
    }
}

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
    pub boot_id: Option<String>,
}

impl Run {
    /// Creates the data directories (0700), takes the run's lease and creates its private
    /// directory. Blocking: call it off the async workers.
    pub fn open(layout: &Layout, run_id: &str) -> Result<Run, RuntimeError> {
        let runs = layout.runs_dir();
        for dir in [&runs, &layout.tasks_dir()] {
            private_dir(true)
                .create(dir)
                .map_err(RuntimeError::io("create", dir.as_path()))?;
        }
        // The lease is created and locked under a temporary name and only then renamed into
        // place, so `runs/<run_id>.lock` is held from the moment it exists: a reconciler can
        // never find a live run's lease unheld and mistake the run for a dead one.
        // std opens every file close-on-exec, so no child ever inherits the lease: only this
        // process holding it can keep the run looking alive.
        let new_lease = layout.new_lease(run_id);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&new_lease)
            .map_err(RuntimeError::io("create", new_lease.as_path()))?;
        let lease = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
            RuntimeError::io("lock", new_lease.as_path())(io::Error::from(errno))
        })?;
        let lease_path = layout.lease(run_id);
        fs::rename(&new_lease, &lease_path)
            .map_err(RuntimeError::io("create", lease_path.as_path()))?;
        let dir = layout.run_dir(run_id);
        private_dir(false)
            .create(&dir)
            .map_err(RuntimeError::io("create", dir.as_path()))?;
        Ok(Run {
            lease,
            lease_path,
            index_path: layout.task_index(run_id),
            dir,
            boot_id: super::identity::boot_id(),
        })
    }

    /// The private run directory (0700) for prompt files and other scratch.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run's task index (see [`Layout::task_index`]).
    pub fn index_path(&self) -> &Path {
        &self.index_path
    }

    /// Removes the run directory, the task index and the lease file, then releases the lease.
    /// The file goes before the lock so nobody can find the lease unheld while the run still
    /// has files. Every step is tried; the errors are returned in the order they happened.
    /// Blocking.
    pub fn close(self) -> Vec<RuntimeError> {
        let errors = remove_footprint(&self.dir, &self.index_path, &self.lease_path);
        drop(self.lease);
        errors
    }
}

/// Removes a run's directory, task index and lease file, in that order (the lease last: while
/// it exists, the run is not yet closed or reconciled). Missing pieces are fine. Blocking.
pub(crate) fn remove_footprint(dir: &Path, index: &Path, lease: &Path) -> Vec<RuntimeError> {
    let mut errors = Vec::new();
    if let Err(error) = fs::remove_dir_all(dir) {
        if error.kind() != io::ErrorKind::NotFound {
            errors.push(RuntimeError::io("remove", dir)(error));
        }
    }
    for file in [index, lease] {
        if let Err(error) = fs::remove_file(file) {
            if error.kind() != io::ErrorKind::NotFound {
                errors.push(RuntimeError::io("remove", file)(error));
            }
        }
    }
    errors
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
    pub fn try_take(path: &Path) -> io::Result<Lease> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Lease::Absent),
            Err(error) => return Err(error),
        };
        let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Ok(Lease::Held),
            Err((_, errno)) => return Err(io::Error::from(errno)),
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
    pub fn is_held(path: &Path) -> bool {
        !matches!(Lease::try_take(path), Ok(Lease::Taken(_) | Lease::Absent))
    }
}

fn private_dir(recursive: bool) -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.recursive(recursive).mode(0o700);
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_from_the_moment_it_exists_until_it_is_gone() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let lease = layout.lease("run_a");
        let run = Run::open(&layout, "run_a").unwrap();
        assert!(matches!(Lease::try_take(&lease), Ok(Lease::Held)));
        assert!(Lease::is_held(&lease));
        assert!(!layout.new_lease("run_a").exists());
        assert!(run.close().is_empty());
        assert!(matches!(Lease::try_take(&lease), Ok(Lease::Absent)));
        assert!(!Lease::is_held(&lease));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn no_child_inherits_the_lease() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path().to_path_buf());
        let run = Run::open(&layout, "run_c").unwrap();
        let fds = std::process::Command::new("sh")
            .args(["-c", "ls -l /proc/$$/fd"])
            .output()
            .unwrap();
        let fds = String::from_utf8_lossy(&fds.stdout).into_owned();
        assert!(!fds.contains("run_c.lock"), "{fds}");
        assert!(run.close().is_empty());
    }
}
