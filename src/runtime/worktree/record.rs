//! The durable worktree record (`<data>/worktrees/<name>.json`) of isolated work: a
//! `zero exec --worktree` run, or a specialist launched with `isolation: worktree`. How a
//! worktree is made and ended on disk is `super::checkout`'s.
//!
//! A worktree is durable state with the same discipline as a task: one record per worktree,
//! written atomically (blocking: callers on async threads use `spawn_blocking`), naming the run
//! whose lease is the evidence that `preparing` or `active` is still true. Every change of state
//! goes through [`WorktreeRecords::transition`], a compare-and-set under a cross-process lock,
//! so the owning run and a reconciler can never write over each other's terminal state. Names
//! read from the command line or from disk are parsed (`WorktreeName::parse`, with the other
//! ids) before they become paths or branch names.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::git::{self as zero_git, WorktreeDirs};
use crate::runtime::tasks::record::now;
use crate::runtime::tasks::run::{Layout, Lease, open_own, take_new_lease};
use crate::runtime::{RunId, WorktreeName};
use crate::sync::lock;

/// The version of the worktree record's shape; bumped on any incompatible change.
pub const WORKTREE_SCHEMA_VERSION: u32 = 1;

/// Where a worktree is in its life. `Preparing` and `Active` are claims the run's lease must
/// back; every other state is final (see `docs/RUNTIME.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeState {
    /// Being made: branch, directory and lock may be half there.
    Preparing,
    /// Made and locked; the run works in it.
    Active,
    /// The run ended and its work was committed; see [`WorktreeRecord::directory`].
    Finished,
    /// It could not be made, or its run died while making it (everything made was removed).
    Failed,
    /// Its run died while working in it: kept, since it may hold work worth keeping.
    Interrupted,
}

impl WorktreeState {
    /// Whether the state is final.
    pub fn is_terminal(self) -> bool {
        !matches!(self, WorktreeState::Preparing | WorktreeState::Active)
    }
}

/// What became of a finished worktree's directory (its branch is always kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Directory {
    /// Still there, for someone to look at.
    Kept,
    /// Removed; the branch holds the work.
    Removed,
}

/// One worktree's durable record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeRecord {
    /// Always [`WORKTREE_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// The worktree's name (also its directory's and its branch's).
    pub name: WorktreeName,
    /// The run that holds it; its lease is the evidence behind `preparing` and `active`.
    pub run_id: RunId,
    /// The repository it is a worktree of (its top-level directory).
    pub repository: PathBuf,
    /// The branch its work is committed to.
    pub branch: String,
    /// The commit it started from (its branch's first commit is made on top of it); known
    /// once it is `active`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Its directory (under the data directory, never inside the user's tree).
    pub path: PathBuf,
    /// The git directories it was made with (known once it is `active`): what zero's own git
    /// works on from then on, whatever the worktree's metadata says later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<WorktreeDirs>,
    /// When it was claimed (RFC 3339, UTC).
    pub created_at: String,
    /// When it reached a final state (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Where it is in its life.
    pub state: WorktreeState,
    /// For a finished worktree: whether its directory was kept or removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<Directory>,
    /// The commit the run's changes were recorded in, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why it failed or was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A change of a worktree's state: the only way a record changes after it is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// `preparing → active`: branch, directory and lock are in place.
    Activate {
        /// The commit the worktree starts from.
        base: String,
        /// The git directories it was made with.
        git: Option<WorktreeDirs>,
    },
    /// `active → finished`: the run ended; `commit` holds its changes, if any.
    Finish {
        /// The commit made of the run's changes.
        commit: Option<String>,
        /// What became of the directory.
        directory: Directory,
    },
    /// `preparing | active → failed`: it could not be made or used.
    Fail {
        /// Why.
        reason: String,
        /// `Some(Kept)` when its directory was left for someone to look at (the work could
        /// not be committed); `None` when what was made is gone.
        directory: Option<Directory>,
    },
    /// `active → interrupted`: its run died while working in it (found by reconciliation).
    Interrupt {
        /// Why, as the evidence says.
        reason: String,
    },
}

impl Transition {
    /// The state the transition leads to.
    fn target(&self) -> WorktreeState {
        match self {
            Transition::Activate { .. } => WorktreeState::Active,
            Transition::Finish { .. } => WorktreeState::Finished,
            Transition::Fail { .. } => WorktreeState::Failed,
            Transition::Interrupt { .. } => WorktreeState::Interrupted,
        }
    }

    /// Whether the transition may start from `from`.
    fn allowed_from(&self, from: WorktreeState) -> bool {
        match self {
            Transition::Activate { .. } => from == WorktreeState::Preparing,
            Transition::Fail { .. } => !from.is_terminal(),
            Transition::Finish { .. } | Transition::Interrupt { .. } => {
                from == WorktreeState::Active
            }
        }
    }

    /// Applies the transition to `record` (already checked to be allowed).
    fn apply(self, record: &mut WorktreeRecord) {
        record.state = self.target();
        if record.state.is_terminal() {
            record.ended_at = Some(now());
        }
        match self {
            Transition::Activate { base, git } => {
                record.base = Some(base);
                record.git = git;
            }
            Transition::Finish { commit, directory } => {
                record.commit = commit;
                record.directory = Some(directory);
            }
            Transition::Fail { reason, directory } => {
                record.reason = Some(reason);
                record.directory = directory;
            }
            Transition::Interrupt { reason } => record.reason = Some(reason),
        }
    }
}

/// Why a worktree record could not be made, read or changed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// A record of that name exists already.
    #[error("a worktree named {0} already exists")]
    Exists(WorktreeName),
    /// There is no record of that name.
    #[error("there is no worktree {0}")]
    Unknown(WorktreeName),
    /// A live run uses the worktree.
    #[error("worktree {name} is in use by run {run_id}")]
    InUse {
        /// The worktree.
        name: WorktreeName,
        /// The run using it.
        run_id: RunId,
    },
    /// The transition is not allowed from the record's current state.
    #[error("worktree {name} is {from:?}, so it cannot become {to:?}")]
    Illegal {
        /// The worktree.
        name: WorktreeName,
        /// Its current state.
        from: WorktreeState,
        /// The state asked for.
        to: WorktreeState,
    },
    /// The record is not one this zero can read (damaged, or another version's).
    #[error("worktree record {} cannot be used: {reason}", path.display())]
    Unusable {
        /// The record file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing the data directory failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl WorktreeError {
    /// A mapper from an I/O error on `path` while doing `action`.
    fn io<'a>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> WorktreeError + 'a {
        move |source| WorktreeError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The worktree records of a data directory (`<data>/worktrees/`). Blocking throughout.
#[derive(Debug, Clone)]
pub struct WorktreeRecords {
    dir: PathBuf,
    layout: Layout,
}

impl WorktreeRecords {
    /// The records kept under the data directory `data_dir`. Creates nothing.
    pub fn new(data_dir: &Path) -> Self {
        WorktreeRecords {
            dir: data_dir.join("worktrees"),
            layout: Layout::new(data_dir.to_path_buf()),
        }
    }

    /// Whether the record's state is true as the evidence says: a final state is trusted
    /// from disk, while `preparing` and `active` are claims that hold only while a live
    /// process holds the lease of the run the record names. A lease that cannot be checked
    /// counts as held: the cost of that mistake is keeping a worktree, never removing one in
    /// use.
    pub fn is_backed(&self, record: &WorktreeRecord) -> bool {
        record.state.is_terminal()
            || Lease::is_held(&self.layout.lease(&record.run_id))
            || Lease::is_held(&self.lease_path(&record.run_id))
    }

    /// Takes the worktree lease of `run_id` (`<data>/worktrees/<run_id>.lock`, held from the
    /// moment it exists): the run's own evidence behind its worktree's claim, held from before
    /// the record is `preparing` until after the run's end is recorded, which the run's
    /// runtime lease (opened later, released earlier) does not cover. No worktree is named
    /// `*.lock`, so the file is never a worktree's directory.
    ///
    /// A run holds one lease for all its worktrees (its own, and its isolated specialists'):
    /// while a hold lives, holding again in the same process gives the same lease, since a
    /// second `flock` of the file would conflict with the first.
    pub fn hold(&self, run_id: &RunId) -> Result<Arc<WorktreeLease>, WorktreeError> {
        /// The leases this process holds, by file.
        static HELD: Mutex<Vec<Weak<WorktreeLease>>> = Mutex::new(Vec::new());
        let path = self.lease_path(run_id);
        let mut held = lock(&HELD);
        held.retain(|lease| lease.strong_count() > 0);
        if let Some(lease) = held
            .iter()
            .filter_map(Weak::upgrade)
            .find(|lease| lease.path == path)
        {
            return Ok(lease);
        }
        fs::create_dir_all(&self.dir).map_err(WorktreeError::io("create", &self.dir))?;
        let new = self.dir.join(format!(".{run_id}.lock.new"));
        let taken = take_new_lease(&new, &path)
            .map_err(|error| WorktreeError::io("take", &path)(io::Error::other(error)))?;
        let lease = Arc::new(WorktreeLease { path, _lock: taken });
        held.push(Arc::downgrade(&lease));
        Ok(lease)
    }

    /// The worktree lease file of `run_id`.
    fn lease_path(&self, run_id: &RunId) -> PathBuf {
        self.dir.join(format!("{run_id}.lock"))
    }

    /// The directory a worktree of this name lives in.
    pub fn worktree_dir(&self, name: &WorktreeName) -> PathBuf {
        self.dir.join(name.as_str())
    }

    /// The record file of a worktree of this name.
    /// The directory zero's git makes its private views in (see
    /// `View` (in the git door)): the records' own, which commands cannot write, made when
    /// missing. A view's name starts with a dot, which the records' scan passes over.
    pub fn scratch_dir(&self) -> Result<PathBuf, WorktreeError> {
        fs::create_dir_all(&self.dir).map_err(WorktreeError::io("create", &self.dir))?;
        Ok(self.dir.clone())
    }

    fn record_path(&self, name: &WorktreeName) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// Claims `name` for `run_id`: writes its first record, `preparing`. Fails, writing
    /// nothing, when a record of that name exists.
    pub fn create(
        &self,
        name: WorktreeName,
        run_id: RunId,
        repository: PathBuf,
    ) -> Result<WorktreeRecord, WorktreeError> {
        fs::create_dir_all(&self.dir).map_err(WorktreeError::io("create", &self.dir))?;
        let _lock = self.lock()?;
        let path = self.record_path(&name);
        if fs::symlink_metadata(&path).is_ok() {
            return Err(WorktreeError::Exists(name));
        }
        let record = WorktreeRecord {
            schema_version: WORKTREE_SCHEMA_VERSION,
            branch: name.branch(),
            base: None,
            path: self.worktree_dir(&name),
            git: None,
            name,
            run_id,
            repository,
            created_at: now(),
            ended_at: None,
            state: WorktreeState::Preparing,
            directory: None,
            commit: None,
            reason: None,
        };
        write(&path, &record)?;
        Ok(record)
    }

    /// Forgets the claim `name` of `run_id` that never became a worktree: its `preparing`
    /// record is removed (a failure to make it leaves nothing behind). Any other record is
    /// left alone.
    pub fn discard(&self, name: &WorktreeName, run_id: &RunId) -> Result<(), WorktreeError> {
        let _lock = self.lock()?;
        let record = self.read(name)?;
        if record.state != WorktreeState::Preparing || &record.run_id != run_id {
            return Err(WorktreeError::Illegal {
                name: name.clone(),
                from: record.state,
                to: WorktreeState::Failed,
            });
        }
        let path = self.record_path(name);
        fs::remove_file(&path).map_err(WorktreeError::io("remove", &path))
    }

    /// Moves the worktree's record through `transition`: a compare-and-set under the records'
    /// cross-process lock, persisted before it returns. A transition from a state it does not
    /// start from is refused and changes nothing, so a terminal state is never overwritten.
    pub fn transition(
        &self,
        name: &WorktreeName,
        transition: Transition,
    ) -> Result<WorktreeRecord, WorktreeError> {
        let _lock = self.lock()?;
        let mut record = self.read(name)?;
        if !transition.allowed_from(record.state) {
            return Err(WorktreeError::Illegal {
                name: name.clone(),
                from: record.state,
                to: transition.target(),
            });
        }
        transition.apply(&mut record);
        write(&self.record_path(name), &record)?;
        Ok(record)
    }

    /// The worktree's record as stored (its `preparing` or `active` is a claim: check the
    /// run's lease).
    pub fn read(&self, name: &WorktreeName) -> Result<WorktreeRecord, WorktreeError> {
        let path = self.record_path(name);
        let mut bytes = Vec::new();
        match open_own(&path).and_then(|mut file| file.read_to_end(&mut bytes)) {
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(WorktreeError::Unknown(name.clone()));
            }
            Err(error) => return Err(WorktreeError::io("read", &path)(error)),
        }
        let unusable = |reason: String| WorktreeError::Unusable {
            path: path.clone(),
            reason,
        };
        let record: WorktreeRecord =
            serde_json::from_slice(&bytes).map_err(|error| unusable(error.to_string()))?;
        if record.schema_version > WORKTREE_SCHEMA_VERSION {
            return Err(unusable(format!(
                "schema version {} is newer than this zero's {WORKTREE_SCHEMA_VERSION}",
                record.schema_version
            )));
        }
        if &record.name != name {
            return Err(unusable(format!("it is the record of {}", record.name)));
        }
        Ok(record)
    }

    /// Reconciles the records whose run died (see `docs/RUNTIME.md`): a `preparing` one that
    /// no lease backs loses what was made (directory, lock, branch) and becomes `failed`; an
    /// `active` one is kept (it may hold work) and becomes `interrupted`. Worktree leases that
    /// nobody holds any more are removed. Returns what went wrong, as warnings: nothing stops
    /// the pass. Every name read from disk is parsed before it becomes a path. Blocking; it
    /// reads every record, and runs `git` only for a dead run's `preparing` one.
    pub fn reconcile(&self) -> Vec<String> {
        let Scan {
            names,
            leases,
            mut warnings,
        } = self.scan();
        for name in names {
            if let Err(error) = self.reconcile_one(&name, &mut warnings) {
                warnings.push(error.to_string());
            }
        }
        for run_id in leases {
            // A run that died before it claimed a record, or one reconciled above.
            if let Ok(Lease::Taken(lock)) = Lease::try_take(&self.lease_path(&run_id)) {
                let _ = fs::remove_file(self.lease_path(&run_id));
                drop(lock);
            }
        }
        warnings
    }

    /// Reconciles the record `name` if its claim is a dead run's.
    fn reconcile_one(
        &self,
        name: &WorktreeName,
        warnings: &mut Vec<String>,
    ) -> Result<(), WorktreeError> {
        let record = self.read(name)?;
        if record.state.is_terminal() {
            return Ok(());
        }
        let lease_path = self.lease_path(&record.run_id);
        let lease = Lease::try_take(&lease_path).map_err(WorktreeError::io("lock", &lease_path))?;
        if matches!(lease, Lease::Held) || Lease::is_held(&self.layout.lease(&record.run_id)) {
            return Ok(());
        }
        self.check_own(&record)?;
        let run = &record.run_id;
        let transition = if record.state == WorktreeState::Preparing {
            record.remove_directory();
            record.delete_branch();
            Transition::Fail {
                reason: format!("its run {run} died while making it"),
                directory: None,
            }
        } else {
            if fs::symlink_metadata(&record.path).is_err() {
                warnings.push(format!(
                    "worktree {name}: its directory {} is gone",
                    record.path.display()
                ));
            }
            Transition::Interrupt {
                reason: format!("its run {run} died while working in it"),
            }
        };
        self.transition(name, transition)?;
        Ok(())
    }

    /// Every readable record, by name, and what could not be read (as warnings).
    pub fn list(&self) -> (Vec<WorktreeRecord>, Vec<String>) {
        let Scan {
            names,
            mut warnings,
            ..
        } = self.scan();
        let mut records = Vec::new();
        for name in names {
            match self.read(&name) {
                Ok(record) => records.push(record),
                Err(error) => warnings.push(error.to_string()),
            }
        }
        records.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        (records, warnings)
    }

    /// Removes the worktree `name`: its directory (if it is there) and lock, its branch when
    /// `branch` says so, then its record. Refused while a live run backs its claim (the
    /// worktree is in use), and for a record whose path or branch is not its name's.
    pub fn remove(
        &self,
        name: &WorktreeName,
        branch: bool,
    ) -> Result<WorktreeRecord, WorktreeError> {
        self.read(name)?;
        let _lock = self.lock()?;
        let record = self.read(name)?;
        if !record.state.is_terminal() && self.is_backed(&record) {
            return Err(WorktreeError::InUse {
                name: name.clone(),
                run_id: record.run_id,
            });
        }
        self.check_own(&record)?;
        record.remove_directory();
        if branch {
            record.delete_branch();
        }
        let path = self.record_path(name);
        fs::remove_file(&path).map_err(WorktreeError::io("remove", &path))?;
        Ok(record)
    }

    /// Checks that the record's path and branch are the ones its name gives, before anything
    /// it names is touched: a record is read from disk, and only the parsed name is trusted.
    fn check_own(&self, record: &WorktreeRecord) -> Result<(), WorktreeError> {
        if record.path == self.worktree_dir(&record.name) && record.branch == record.name.branch() {
            return Ok(());
        }
        Err(WorktreeError::Unusable {
            path: self.record_path(&record.name),
            reason: "its path or branch is not its name's: left alone".into(),
        })
    }

    /// One listing of the records' directory: the names of the records (parsed from their
    /// file names), the run ids of the worktree leases, and what is neither (as warnings).
    fn scan(&self) -> Scan {
        let mut scan = Scan::default();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return scan,
            Err(error) => {
                let error = WorktreeError::io("list", &self.dir)(error);
                scan.warnings.push(error.to_string());
                return scan;
            }
        };
        let mut directories = Vec::new();
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let text = file_name.to_string_lossy();
            if let Some(stem) = text.strip_suffix(".json") {
                match WorktreeName::parse(stem) {
                    Ok(name) => scan.names.push(name),
                    Err(_) => scan.warnings.push(format!(
                        "{} is not a worktree record: left alone",
                        entry.path().display()
                    )),
                }
            } else if let Some(Ok(run_id)) = text.strip_suffix(".lock").map(RunId::parse) {
                scan.leases.push(run_id);
            } else if !text.starts_with('.') {
                directories.push(entry.path());
            }
        }
        // A worktree's directory without its record: reported, never removed (it may hold
        // work, and nothing says whose it is).
        for path in directories {
            let named = path
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| WorktreeName::parse(name).ok());
            if !named.is_some_and(|name| scan.names.contains(&name)) {
                scan.warnings.push(format!(
                    "{} has no worktree record: left alone",
                    path.display()
                ));
            }
        }
        scan
    }

    /// The exclusive cross-process lock every change of a record is made under: an `flock`
    /// on the worktrees directory itself, which (unlike a record, renamed over on each write)
    /// is never replaced. Changes are rare, so one lock for all of them costs nothing.
    fn lock(&self) -> Result<Flock<File>, WorktreeError> {
        let dir = File::open(&self.dir).map_err(WorktreeError::io("open", &self.dir))?;
        Flock::lock(dir, FlockArg::LockExclusive)
            .map_err(|(_, errno)| WorktreeError::io("lock", &self.dir)(io::Error::from(errno)))
    }
}

impl WorktreeRecord {
    /// Removes the worktree's directory and its admin directory, and lets the repository
    /// forget it (its branch stays). Best effort: whatever is already gone is no error.
    pub fn remove_directory(&self) {
        zero_git::remove_worktree(&self.path, self.git.as_ref(), &self.repository);
    }

    /// Deletes the worktree's branch (and the commits only it holds), wherever it points now.
    /// Best effort.
    pub fn delete_branch(&self) {
        if let Some(common) = self.common_dir()
            && let Some(tip) = zero_git::resolve(&common, &self.reference())
        {
            self.delete_branch_at(&tip);
        }
    }

    /// Deletes the worktree's branch only if it still points at `tip`: what zero made and
    /// nothing that came after. Best effort.
    pub fn delete_branch_at(&self, tip: &str) {
        if let Some(common) = self.common_dir() {
            let _ = zero_git::update_ref(&common, &self.reference(), None, Some(tip));
        }
    }

    /// The full name of its branch's ref (`refs/heads/zero/NAME`).
    pub fn reference(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// The repository's common git directory: as recorded, else (a record from before it was
    /// kept, or one still `preparing`) as the repository says.
    fn common_dir(&self) -> Option<PathBuf> {
        match &self.git {
            Some(dirs) => Some(dirs.common.clone()),
            None => zero_git::git(
                &self.repository,
                &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            )
            .ok()
            .map(PathBuf::from),
        }
    }
}

/// What one listing of the records' directory found (see [`WorktreeRecords::scan`]).
#[derive(Default)]
struct Scan {
    names: Vec<WorktreeName>,
    leases: Vec<RunId>,
    warnings: Vec<String>,
}

/// A run's hold on its worktree claim (see [`WorktreeRecords::hold`]): while it lives, the
/// record's `preparing` or `active` is backed. Dropping it removes the file, then releases
/// the lock, so nobody finds it unheld while it still exists.
#[derive(Debug)]
pub struct WorktreeLease {
    path: PathBuf,
    _lock: Flock<File>,
}

impl Drop for WorktreeLease {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Writes `record` to `path` atomically (through the one atomic-write door).
fn write(path: &Path, record: &WorktreeRecord) -> Result<(), WorktreeError> {
    let mut json = serde_json::to_vec_pretty(record)
        .map_err(|error| WorktreeError::io("encode", path)(error.into()))?;
    json.push(b'\n');
    crate::fsutil::write_atomic(path, &json).map_err(WorktreeError::io("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_id() -> RunId {
        RunId::parse("run_20260102030405_0a1b2c").unwrap()
    }

    #[test]
    fn a_record_moves_only_along_its_state_machine() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        let name = WorktreeName::parse("ci").unwrap();
        let created = records
            .create(name.clone(), run_id(), "/repo".into())
            .unwrap();
        assert_eq!(created.state, WorktreeState::Preparing);
        assert_eq!(created.path, data.path().join("worktrees/ci"));
        assert!(matches!(
            records.create(name.clone(), run_id(), "/repo".into()),
            Err(WorktreeError::Exists(_))
        ));
        let interrupt = || Transition::Interrupt {
            reason: "gone".into(),
        };
        assert!(matches!(
            records.transition(&name, interrupt()),
            Err(WorktreeError::Illegal { .. })
        ));
        records
            .transition(
                &name,
                Transition::Activate {
                    base: "b0".into(),
                    git: None,
                },
            )
            .unwrap();
        let finished = records
            .transition(
                &name,
                Transition::Finish {
                    commit: Some("abc".into()),
                    directory: Directory::Removed,
                },
            )
            .unwrap();
        assert_eq!(finished.state, WorktreeState::Finished);
        assert!(finished.ended_at.is_some());
        for late in [
            interrupt(),
            Transition::Activate {
                base: "b1".into(),
                git: None,
            },
        ] {
            assert!(matches!(
                records.transition(&name, late),
                Err(WorktreeError::Illegal { .. })
            ));
        }
        assert_eq!(records.read(&name).unwrap(), finished);
    }

    #[test]
    fn a_claim_is_backed_only_while_its_runs_lease_is_held() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        let run_id = RunId::generate();
        let name = WorktreeName::parse("ci").unwrap();
        let record = records
            .create(name.clone(), run_id.clone(), "/repo".into())
            .unwrap();
        assert!(!records.is_backed(&record), "no lease: nobody holds it");
        let run = crate::runtime::tasks::run::Run::open(&records.layout, &run_id).unwrap();
        assert!(records.is_backed(&record));
        assert!(run.close().is_empty());
        assert!(!records.is_backed(&record));
        let failed = records
            .transition(
                &name,
                Transition::Fail {
                    reason: "gone".into(),
                    directory: None,
                },
            )
            .unwrap();
        assert!(records.is_backed(&failed), "a final state is trusted");
    }

    #[test]
    fn a_claim_is_backed_while_its_runs_worktree_lease_is_held() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        let run_id = RunId::generate();
        let lease = records.hold(&run_id).unwrap();
        let record = records
            .create(
                WorktreeName::parse("ci").unwrap(),
                run_id.clone(),
                "/repo".into(),
            )
            .unwrap();
        assert!(records.is_backed(&record));
        let path = records.lease_path(&run_id);
        assert!(path.exists());
        drop(lease);
        assert!(!path.exists(), "the file goes with the hold");
        assert!(!records.is_backed(&record));
    }

    #[test]
    fn records_use_the_documented_field_names() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        let name = WorktreeName::parse("ci").unwrap();
        records
            .create(name.clone(), run_id(), "/repo".into())
            .unwrap();
        let failed = records
            .transition(
                &name,
                Transition::Fail {
                    reason: "no repo".into(),
                    directory: None,
                },
            )
            .unwrap();
        let mut value = serde_json::to_value(&failed).unwrap();
        for time in ["createdAt", "endedAt"] {
            assert!(value[time].is_string(), "{time}");
            value[time] = json!("t");
        }
        let path = data.path().join("worktrees/ci");
        assert_eq!(
            value,
            json!({
                "schemaVersion": 1, "name": "ci", "runId": "run_20260102030405_0a1b2c",
                "repository": "/repo", "branch": "zero/ci", "path": path,
                "createdAt": "t", "endedAt": "t", "state": "failed", "reason": "no repo"
            })
        );
    }

    #[test]
    fn a_missing_or_foreign_record_is_reported_not_followed() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        let (a, b) = (
            WorktreeName::parse("a").unwrap(),
            WorktreeName::parse("b").unwrap(),
        );
        assert!(matches!(records.read(&a), Err(WorktreeError::Unknown(_))));
        records.create(a.clone(), run_id(), "/repo".into()).unwrap();
        fs::copy(records.record_path(&a), records.record_path(&b)).unwrap();
        assert!(matches!(
            records.read(&b),
            Err(WorktreeError::Unusable { .. })
        ));
    }

    #[test]
    fn a_directory_without_a_record_is_reported_and_left_alone() {
        let data = tempfile::tempdir().unwrap();
        let records = WorktreeRecords::new(data.path());
        records
            .create(WorktreeName::parse("ci").unwrap(), run_id(), "/repo".into())
            .unwrap();
        for dir in ["ci", "orphan", "not a name", ".hidden"] {
            fs::create_dir_all(data.path().join("worktrees").join(dir)).unwrap();
        }
        let (listed, warnings) = records.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .all(|w| w.contains("has no worktree record"))
        );
        assert!(warnings.iter().any(|w| w.contains("orphan")));
        assert!(data.path().join("worktrees/orphan").exists());
    }
}
