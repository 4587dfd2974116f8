//! The run's footprint in the data directory: where everything lives, the lease that says the
//! run is alive, and the private run directory.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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

    fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
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
        let lease_path = runs.join(format!("{run_id}.lock"));
        // std opens every file close-on-exec, so no child ever inherits the lease: only this
        // process holding it can keep the run looking alive.
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lease_path)
            .map_err(RuntimeError::io("create", lease_path.as_path()))?;
        let lease = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
            RuntimeError::io("lock", lease_path.as_path())(io::Error::from(errno))
        })?;
        let dir = runs.join(run_id);
        private_dir(false)
            .create(&dir)
            .map_err(RuntimeError::io("create", dir.as_path()))?;
        Ok(Run {
            lease,
            lease_path,
            dir,
            boot_id: super::identity::boot_id(),
        })
    }

    /// The private run directory (0700) for prompt files and other scratch.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes the run directory and the lease file, then releases the lease. The file goes
    /// before the lock so nobody can find the lease unheld while the run still has files.
    /// Every step is tried; the errors are returned in the order they happened. Blocking.
    pub fn close(self) -> Vec<RuntimeError> {
        let mut errors = Vec::new();
        if let Err(error) = fs::remove_dir_all(&self.dir) {
            if error.kind() != io::ErrorKind::NotFound {
                errors.push(RuntimeError::io("remove", self.dir.as_path())(error));
            }
        }
        if let Err(error) = fs::remove_file(&self.lease_path) {
            if error.kind() != io::ErrorKind::NotFound {
                errors.push(RuntimeError::io("remove", self.lease_path.as_path())(error));
            }
        }
        drop(self.lease);
        errors
    }
}

fn private_dir(recursive: bool) -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.recursive(recursive).mode(0o700);
    builder
}
