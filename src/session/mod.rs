//! Sessions: a run's conversation kept under the data directory, so a later run can resume
//! it (`--resume`) or start from a copy of it (`--fork`).
//!
//! A session is a directory `<data>/sessions/<id>/` (0700) holding
//!
//! - `messages.jsonl` (0600): the provider-neutral conversation, one line per message,
//!   append-only, written and fsync'd as each turn ends ([`Transcript`]);
//! - `session.json` (0600): what the session is — workspace, provider, model, permissions,
//!   runs, usage — replaced atomically ([`Meta`]);
//! - `images/` (0700): each image of the conversation once, by its SHA-256 (0600), written
//!   before the line that names it;
//! - `lease` (0600): the file the run using the session holds an exclusive `flock` on for its
//!   whole life, exactly as a run holds its own lease; the kernel drops it when the run dies,
//!   SIGKILL included, so a dead run never blocks a resume.
//!
//! Loading repairs what a killed run can leave ([`load`]): a half-written last line is
//! dropped, and a tool call that never got its result is given an "interrupted" one. Anything
//! else that does not parse is reported with its line and never rewritten.

mod images;
mod transcript;

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::runtime::lease::{self, Locked};
use crate::tools::Permissions;
use crate::usage::Usage;

pub use transcript::{Loaded, Transcript, load};

/// The version of `session.json` this build writes and reads.
pub const META_SCHEMA_VERSION: u32 = 1;

/// The most characters of a session id.
const ID_MAX: usize = 64;

/// A session's id: 1 to 64 characters of ASCII letters, digits, `.`, `_` and `-`, starting
/// with a letter or digit (zero makes `ses_<UTC yyyymmddHHMMSS>_<6 hex>`; `--session-id`
/// may choose any such id). It names a directory, so it is checked before it becomes a path:
/// no `/`, no `..`, nothing hidden.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    /// A fresh id for a session starting now.
    pub fn generate() -> Self {
        SessionId(format!(
            "ses_{}_{:06x}",
            chrono::Utc::now().format("%Y%m%d%H%M%S"),
            fastrand::u32(..1 << 24)
        ))
    }

    /// Checks that `text` is a session id (see the type's documentation).
    pub fn parse(text: &str) -> Result<Self, SessionError> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        let well_formed = !text.is_empty()
            && text.len() <= ID_MAX
            && text.as_bytes()[0].is_ascii_alphanumeric()
            && text.bytes().all(allowed);
        if well_formed {
            Ok(SessionId(text.to_string()))
        } else {
            Err(SessionError::MalformedId(text.to_string()))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionError;

    fn try_from(text: String) -> Result<Self, SessionError> {
        SessionId::parse(&text)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

/// Why a session could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Not an id zero makes or accepts.
    #[error(
        "`{0}` is not a session id (1 to 64 letters, digits, `.`, `_` or `-`, starting with a \
         letter or digit)"
    )]
    MalformedId(String),
    /// No such session in this data directory.
    #[error("there is no session `{0}` (zero sessions list shows them)")]
    Unknown(SessionId),
    /// `--session-id` names a session that exists.
    #[error("session `{0}` exists already; continue it with --resume {0}")]
    Exists(SessionId),
    /// Another run holds the session's lease.
    #[error(
        "session `{id}` is in use by run {run}; wait for it to end, or --fork {id} to start a copy"
    )]
    InUse {
        /// The session.
        id: SessionId,
        /// The run holding it, as its record says (`an unknown run` when it does not).
        run: String,
    },
    /// The session belongs to another workspace.
    #[error(
        "session `{id}` belongs to workspace {workspace}; run with -C {workspace}, or pass \
         --any-workspace to continue it here"
    )]
    OtherWorkspace {
        /// The session.
        id: SessionId,
        /// Its workspace.
        workspace: String,
    },
    /// A session file does not parse.
    #[error("{}: {message}; the file was left as it is", located(.path, *.line))]
    Corrupt {
        /// The file.
        path: String,
        /// The line at fault (1-based; 0 for the file as a whole).
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// `path:line`, or `path` alone for the file as a whole (line 0).
fn located(path: &str, line: usize) -> String {
    match line {
        0 => path.to_string(),
        line => format!("{path}:{line}"),
    }
}

impl SessionError {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SessionError + use<> {
        let path = path.display().to_string();
        move |source| SessionError::Io {
            action,
            path,
            source,
        }
    }
}

/// How a session's last run ended, as `session.json` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// A run is using it (or died using it: the lease tells).
    Running,
    /// The last run gave its final answer.
    Completed,
    /// The last run ended without one.
    Failed,
}

/// `session.json`: what a session is and how its last run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// [`META_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The session.
    pub id: SessionId,
    /// The workspace root its runs worked in.
    pub workspace: PathBuf,
    /// The provider wire of the last run.
    pub provider: String,
    /// The model of the last run.
    pub model: String,
    /// When it was created (RFC 3339).
    pub created: String,
    /// When its last run started (RFC 3339).
    pub updated: String,
    /// The last run to use it.
    pub last_run: String,
    /// How that run ended.
    pub status: SessionStatus,
    /// How many runs used it.
    pub runs: u32,
    /// What every run of it spent, together.
    pub usage: Usage,
    /// The last run's permissions.
    pub permissions: Permissions,
    /// The session it was forked from, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<SessionId>,
}

/// The sessions of one data directory.
#[derive(Debug, Clone)]
pub struct Sessions {
    root: PathBuf,
}

/// A session a run holds: its lease (held until the value is dropped) and its directory.
#[derive(Debug)]
pub struct Held {
    /// The session.
    pub id: SessionId,
    dir: PathBuf,
    _lease: Flock<File>,
}

impl Sessions {
    /// The sessions under the data directory `data_dir`.
    pub fn new(data_dir: &Path) -> Self {
        Sessions {
            root: data_dir.join("sessions"),
        }
    }

    /// The directory of session `id`.
    pub fn dir(&self, id: &SessionId) -> PathBuf {
        self.root.join(id.as_str())
    }

    /// Whether session `id` exists: a real directory (a symbolic link in its place is not
    /// zero's and is never followed) with a record in it.
    pub fn exists(&self, id: &SessionId) -> bool {
        let dir = self.dir(id);
        fs::symlink_metadata(&dir).is_ok_and(|meta| meta.is_dir())
            && fs::symlink_metadata(dir.join(META_FILE)).is_ok_and(|meta| meta.is_file())
    }

    /// Creates session `id` and takes its lease for run `run`. Fails with
    /// [`SessionError::Exists`] when it exists already.
    pub fn create(&self, id: &SessionId, run: &str) -> Result<Held, SessionError> {
        crate::fsutil::private_dir(true)
            .create(&self.root)
            .map_err(SessionError::io("create", &self.root))?;
        let dir = self.dir(id);
        match crate::fsutil::private_dir(false).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SessionError::Exists(id.clone()));
            }
            Err(e) => return Err(SessionError::io("create", &dir)(e)),
        }
        self.take(id, dir, run)
    }

    /// Takes the lease of the existing session `id` for run `run`, or says which run holds it.
    pub fn open(&self, id: &SessionId, run: &str) -> Result<Held, SessionError> {
        if !self.exists(id) {
            return Err(SessionError::Unknown(id.clone()));
        }
        self.take(id, self.dir(id), run)
    }

    /// Locks the lease of the session in `dir` and writes `holder` into it (empty for a taker
    /// that is not a run). The lease, not `session.json`, names the holder: the record is
    /// written off the run's thread, so a second run refused at once would read the run before.
    fn take(&self, id: &SessionId, dir: PathBuf, holder: &str) -> Result<Held, SessionError> {
        let path = dir.join(LEASE_FILE);
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(SessionError::io("open", &path))?;
        let locked = lease::lock_unless_held(file, FlockArg::LockExclusiveNonblock)
            .map_err(SessionError::io("lock", &path))?;
        match locked {
            Locked::Taken(lease) => {
                // The name is for messages and the owner for the next taker (see
                // `runtime::lease`); the lock is what holds the session, so no fsync.
                let contents = format!("{holder}\n{}", lease::owner_line());
                lease
                    .set_len(0)
                    .and_then(|()| lease.write_all_at(contents.as_bytes(), 0))
                    .map_err(SessionError::io("write", &path))?;
                Ok(Held {
                    id: id.clone(),
                    dir,
                    _lease: lease,
                })
            }
            Locked::Held(file) => Err(SessionError::InUse {
                id: id.clone(),
                run: lease_holder(&file)
                    .or_else(|| self.meta(id).ok().map(|meta| meta.last_run))
                    .unwrap_or_else(|| "an unknown run".into()),
            }),
        }
    }

    /// The metadata of session `id`.
    pub fn meta(&self, id: &SessionId) -> Result<Meta, SessionError> {
        read_meta(&self.dir(id).join(META_FILE))
    }

    /// Every session's metadata, most recently used first, and the problems met on the way
    /// (a directory whose name is not an id, a record that does not parse): reported, never
    /// removed.
    pub fn list(&self) -> Result<(Vec<Meta>, Vec<String>), SessionError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
            Err(e) => return Err(SessionError::io("read", &self.root)(e)),
        };
        let mut found = Vec::new();
        let mut problems = Vec::new();
        for entry in entries {
            let entry = entry.map_err(SessionError::io("read", &self.root))?;
            let name = entry.file_name();
            let real_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            let id = match name.to_str().map(SessionId::parse) {
                Some(Ok(id)) if real_dir => id,
                Some(Ok(_)) => {
                    problems.push(format!(
                        "{}: not a directory zero made (a link or a file); left alone",
                        entry.path().display()
                    ));
                    continue;
                }
                _ => {
                    problems.push(format!(
                        "{}: not a session (its name is not a session id); left alone",
                        entry.path().display()
                    ));
                    continue;
                }
            };
            match self.meta(&id) {
                Ok(meta) if meta.id == id => found.push(meta),
                Ok(meta) => problems.push(format!(
                    "{}: names session `{}`; left alone",
                    entry.path().display(),
                    meta.id
                )),
                Err(error) => problems.push(error.to_string()),
            }
        }
        found.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.id.cmp(&a.id)));
        Ok((found, problems))
    }

    /// The most recently used session of `workspace`, if any.
    pub fn last_of(&self, workspace: &Path) -> Result<Option<SessionId>, SessionError> {
        let (sessions, _) = self.list()?;
        Ok(sessions
            .into_iter()
            .find(|meta| meta.workspace == workspace)
            .map(|meta| meta.id))
    }

    /// Whether a live run holds session `id` (a lease that cannot be checked counts as held:
    /// the cost of that mistake is showing `running`, never deleting).
    pub fn in_use(&self, id: &SessionId) -> bool {
        let lease = File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir(id).join(LEASE_FILE));
        match lease {
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(_) => true,
            Ok(file) => !matches!(
                lease::lock_unless_held(file, FlockArg::LockSharedNonblock),
                Ok(Locked::Taken(_))
            ),
        }
    }

    /// Removes session `id`, unless a run holds it.
    pub fn remove(&self, id: &SessionId) -> Result<(), SessionError> {
        if !self.exists(id) {
            return Err(SessionError::Unknown(id.clone()));
        }
        let held = self.take(id, self.dir(id), "")?;
        fs::remove_dir_all(&held.dir).map_err(SessionError::io("remove", &held.dir))
    }
}

impl Held {
    /// The session's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Replaces `session.json` with `meta`, atomically.
    pub fn write_meta(&self, meta: &Meta) -> Result<(), SessionError> {
        let path = self.meta_path();
        let json = serde_json::to_vec_pretty(meta).expect("session metadata serialises");
        write_meta_file(&path, &json).map_err(SessionError::io("write", &path))
    }

    /// Where `session.json` is.
    fn meta_path(&self) -> PathBuf {
        self.dir.join(META_FILE)
    }
}

/// The run a lease names, when it names one: at most [`HOLDER_LIMIT`] bytes of letters,
/// digits and `_` (the file is in the data directory, and its text goes into a message).
fn lease_holder(lease: &File) -> Option<String> {
    let mut name = [0; HOLDER_LIMIT + 1];
    let read = lease.read_at(&mut name, 0).ok()?;
    // The first line; the owner's follows it.
    let name = name[..read].split(|&b| b == b'\n').next()?;
    let name = std::str::from_utf8(name).ok()?;
    let plausible = (1..=HOLDER_LIMIT).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plausible.then(|| name.to_string())
}

/// The longest run name a lease is trusted to hold.
const HOLDER_LIMIT: usize = 64;

/// `json` as the session record at `path`: atomically, 0600.
fn write_meta_file(path: &Path, json: &[u8]) -> io::Result<()> {
    crate::fsutil::write_atomic_with_permissions(
        path,
        json,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
}

/// The session record's file name.
const META_FILE: &str = "session.json";
/// The lease's file name.
const LEASE_FILE: &str = "lease";
/// The conversation's file name.
pub(crate) const MESSAGES_FILE: &str = "messages.jsonl";

/// The longest `session.json` read.
const META_LIMIT: u64 = 1024 * 1024;

fn read_meta(path: &Path) -> Result<Meta, SessionError> {
    let (bytes, _) = crate::fsutil::read_regular(path, META_LIMIT).map_err(|e| match e {
        crate::fsutil::OpenError::Io(e) if e.kind() == io::ErrorKind::NotFound => {
            SessionError::io("read", path)(e)
        }
        other => SessionError::Corrupt {
            path: path.display().to_string(),
            line: 0,
            message: other.to_string(),
        },
    })?;
    let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| SessionError::Corrupt {
        path: path.display().to_string(),
        line: e.line(),
        message: e.to_string(),
    })?;
    if meta.schema_version != META_SCHEMA_VERSION {
        return Err(SessionError::Corrupt {
            path: path.display().to_string(),
            line: 0,
            message: format!(
                "schemaVersion {} is not the {META_SCHEMA_VERSION} this zero reads",
                meta.schema_version
            ),
        });
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_the_sessions_directory_are_refused() {
        for bad in [
            "",
            "..",
            ".",
            "../x",
            "a/b",
            ".hidden",
            "-x",
            "a b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?}");
        }
        for good in ["ci-123", "pr_7.review", "A", &"a".repeat(64)] {
            assert!(SessionId::parse(good).is_ok(), "{good:?}");
        }
        let fresh = SessionId::generate();
        assert_eq!(SessionId::parse(fresh.as_str()).unwrap(), fresh);
    }

    #[test]
    fn a_link_in_place_of_a_session_is_never_followed() {
        let data = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join(META_FILE), "{}").unwrap();
        let sessions = Sessions::new(data.path());
        std::fs::create_dir_all(data.path().join("sessions")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), data.path().join("sessions/linked")).unwrap();
        let id = SessionId::parse("linked").unwrap();
        assert!(!sessions.exists(&id));
        assert!(matches!(
            sessions.open(&id, "run_1"),
            Err(SessionError::Unknown(_))
        ));
        assert!(matches!(
            sessions.remove(&id),
            Err(SessionError::Unknown(_))
        ));
        let (found, problems) = sessions.list().unwrap();
        assert!(found.is_empty());
        assert!(problems[0].contains("left alone"), "{problems:?}");
        assert!(elsewhere.path().join(META_FILE).exists());
        assert!(!elsewhere.path().join(LEASE_FILE).exists());
    }

    #[test]
    fn a_held_session_is_refused_to_a_second_taker_with_the_holders_name() {
        let data = tempfile::tempdir().unwrap();
        let sessions = Sessions::new(data.path());
        let id = SessionId::parse("s1").unwrap();
        let held = sessions.create(&id, "run_holder").unwrap();
        std::fs::write(held_meta(&sessions, &id), "{}").unwrap();
        assert!(matches!(
            sessions.create(&id, "run_2"),
            Err(SessionError::Exists(_))
        ));
        // The record is not written yet (a run writes it off its thread): the lease tells.
        let refused_run = |sessions: &Sessions| match sessions.open(&id, "run_2") {
            Err(SessionError::InUse { run, .. }) => run,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused_run(&sessions), "run_holder");
        drop(held);
        let held = sessions.open(&id, "run_next").unwrap();
        assert_eq!(refused_run(&sessions), "run_next", "the name is replaced");
        drop(held);
    }

    #[test]
    fn a_lease_that_names_no_run_is_not_quoted() {
        let data = tempfile::tempdir().unwrap();
        let sessions = Sessions::new(data.path());
        let id = SessionId::parse("s1").unwrap();
        let lease = data.path().join("sessions/s1").join(LEASE_FILE);
        let _held = sessions.create(&id, "").unwrap();
        std::fs::write(held_meta(&sessions, &id), "{}").unwrap();
        for written in [
            "",
            "\n1 2 boot",
            "\u{1b}[31mforged\n1 2 boot",
            &"r".repeat(HOLDER_LIMIT + 1),
        ] {
            std::fs::write(&lease, written).unwrap();
            match sessions.open(&id, "run_2") {
                Err(SessionError::InUse { run, .. }) => assert_eq!(run, "an unknown run"),
                other => panic!("{other:?}"),
            }
        }
    }

    fn held_meta(sessions: &Sessions, id: &SessionId) -> PathBuf {
        sessions.dir(id).join(META_FILE)
    }
}
