//! The run's session: which one the flags ask for (a new one, `--resume`, `--fork`, or none
//! with `--no-session`), its conversation so far, and its record at the start and the end of
//! the run.

use std::path::Path;

use crate::exit::ExitCode;
use crate::output::{EventKind, Output, UsageTotals};
use crate::provider::Message;
use crate::runtime::{RunId, Store, TaskStatus};
use crate::session::{
    self, Held, META_SCHEMA_VERSION, Meta, SessionError, SessionId, SessionStatus, Sessions,
    Transcript,
};
use crate::tools::Permissions;
use crate::usage::Usage;

use super::failure::Failure;

/// The session the flags ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionWanted {
    /// `--no-session`: none.
    None,
    /// A new session, with the id `--session-id` chose or a new one.
    New(Option<SessionId>),
    /// `--resume`: an earlier session (an id, or `last` for the workspace's most recent),
    /// which may belong to another workspace with `--any-workspace`.
    Resume {
        /// The id, or `last`.
        which: String,
        /// `--any-workspace`.
        any_workspace: bool,
    },
    /// `--fork`: a new session (with the id `--session-id` chose or a new one) from a copy
    /// of an earlier one's conversation.
    Fork {
        /// The session copied.
        source: SessionId,
        /// The new session's id, when chosen.
        id: Option<SessionId>,
    },
}

impl SessionWanted {
    /// What `--resume`, `--fork`, `--session-id`, `--no-session` and `--any-workspace` ask
    /// for (clap refuses the combinations that make no sense).
    pub(crate) fn of(
        resume: Option<String>,
        fork: Option<SessionId>,
        session_id: Option<SessionId>,
        no_session: bool,
        any_workspace: bool,
    ) -> Self {
        match (resume, fork) {
            _ if no_session => SessionWanted::None,
            (Some(which), _) => SessionWanted::Resume {
                which,
                any_workspace,
            },
            (None, Some(source)) => SessionWanted::Fork {
                source,
                id: session_id,
            },
            (None, None) => SessionWanted::New(session_id),
        }
    }

    /// Whether the run asked for a session by name: then it fails without one.
    fn named(&self) -> bool {
        !matches!(self, SessionWanted::None | SessionWanted::New(None))
    }
}

/// A session a run is using.
pub(crate) struct RunSession {
    held: Held,
    meta: Meta,
    /// The conversation so far (repaired), which the run continues.
    history: Vec<Message>,
    /// Where the run's messages go.
    pub(crate) transcript: Transcript,
    /// The run that used the session last, when this run resumes it.
    pub(crate) resumed_from: Option<String>,
    /// That run's permissions, when they differ from this run's.
    pub(crate) permissions_before: Option<Permissions>,
    /// What loading repaired, and how the earlier run's background tasks ended, for the model
    /// (prefixed to the prompt) and for a warning.
    pub(crate) notes: Vec<String>,
}

/// What the run is, for its session record.
pub(crate) struct RunFacts<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) run_id: &'a RunId,
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) permissions: Permissions,
    pub(crate) secrets: crate::redact::Secrets,
}

fn usage_error(error: SessionError) -> Failure {
    match error {
        SessionError::Io { .. } => Failure::internal(error.to_string()),
        other => Failure::usage(other.to_string()),
    }
}

/// The run's session in the data directory `data_dir` (see [`begin`]). A run that asked for
/// a session (`--resume`, `--fork`, `--session-id`) fails without one; a run that did not is
/// told, with a warning, that it keeps none, and goes on.
pub(crate) fn for_run(
    wanted: &SessionWanted,
    data_dir: Option<&Path>,
    run: RunFacts<'_>,
    output: &Output,
) -> Result<Option<RunSession>, Failure> {
    let asked_for = wanted.named();
    let Some(data_dir) = data_dir else {
        if asked_for {
            return Err(Failure::usage(
                "sessions need a data directory: set ZERO_HOME (or HOME)".into(),
            ));
        }
        return Ok(None);
    };
    match begin(wanted, data_dir, run) {
        Err(failure) if !asked_for && failure.exit() == ExitCode::Internal => {
            output.emit(EventKind::Warning {
                message: format!("this run keeps no session: {}", failure.message),
            });
            Ok(None)
        }
        other => other,
    }
}

/// Opens the session the flags ask for and records this run in it; `None` with
/// `--no-session`.
fn begin(
    wanted: &SessionWanted,
    data_dir: &Path,
    run: RunFacts<'_>,
) -> Result<Option<RunSession>, Failure> {
    let sessions = Sessions::new(data_dir);
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let Some(Opened {
        held,
        earlier,
        loaded,
        forked_from,
    }) = open(wanted, &sessions, &run)?
    else {
        return Ok(None);
    };
    let mut notes = loaded.repairs.clone();
    if let Some(earlier) = &earlier
        && forked_from.is_none()
    {
        notes.extend(earlier_tasks(data_dir, &earlier.last_run));
    }
    // The session this run continues (a fork starts a new one from a copy).
    let continued = earlier.as_ref().filter(|_| forked_from.is_none());
    let meta = Meta {
        schema_version: META_SCHEMA_VERSION,
        id: held.id.clone(),
        workspace: run.workspace.to_path_buf(),
        provider: run.provider.into(),
        model: run.model.into(),
        created: continued.map_or_else(|| now.clone(), |earlier| earlier.created.clone()),
        updated: now,
        last_run: run.run_id.to_string(),
        status: SessionStatus::Running,
        runs: continued.map_or(1, |earlier| earlier.runs + 1),
        usage: continued.map_or_else(Usage::default, |earlier| earlier.usage),
        permissions: run.permissions.clone(),
        forked_from: forked_from
            .clone()
            .or_else(|| earlier.as_ref().and_then(|m| m.forked_from.clone())),
    };
    let transcript = Transcript::open(
        &held,
        run.run_id.as_str(),
        loaded.on_disk,
        run.secrets,
        &meta,
    )
    .map_err(usage_error)?;
    let permissions_before = earlier
        .as_ref()
        .filter(|earlier| earlier.permissions != run.permissions)
        .map(|earlier| earlier.permissions.clone());
    Ok(Some(RunSession {
        held,
        meta,
        history: loaded.messages,
        transcript,
        resumed_from: continued.map(|earlier| earlier.last_run.clone()),
        permissions_before,
        notes,
    }))
}

/// A session opened for the run, before its record says so.
struct Opened {
    /// The session, held.
    held: Held,
    /// The record of the session resumed or forked.
    earlier: Option<Meta>,
    /// The conversation the run continues.
    loaded: session::Loaded,
    /// The session this one is a copy of, when it is a fork.
    forked_from: Option<SessionId>,
}

/// Opens (or creates) the session `wanted` names; `None` with `--no-session`.
fn open(
    wanted: &SessionWanted,
    sessions: &Sessions,
    run: &RunFacts<'_>,
) -> Result<Option<Opened>, Failure> {
    let opened = match wanted {
        SessionWanted::None => return Ok(None),
        SessionWanted::Resume {
            which,
            any_workspace,
        } => resume(sessions, which, *any_workspace, run)?,
        SessionWanted::Fork { source, id } => fork(sessions, source, id.clone(), run)?,
        SessionWanted::New(id) => Opened {
            held: create(sessions, id.clone(), run)?,
            earlier: None,
            loaded: session::Loaded::default(),
            forked_from: None,
        },
    };
    Ok(Some(opened))
}

/// `--resume`: the session `which` names (`last`: the workspace's most recent), held, its
/// conversation repaired; one of another workspace only with `--any-workspace`.
fn resume(
    sessions: &Sessions,
    which: &str,
    any_workspace: bool,
    run: &RunFacts<'_>,
) -> Result<Opened, Failure> {
    let id = match which {
        "last" => sessions
            .last_of(run.workspace)
            .map_err(usage_error)?
            .ok_or_else(|| {
                Failure::usage(format!(
                    "--resume last: workspace {} has no session yet",
                    run.workspace.display()
                ))
            })?,
        id => SessionId::parse(id).map_err(usage_error)?,
    };
    let held = sessions
        .open(&id, run.run_id.as_str())
        .map_err(usage_error)?;
    let meta = sessions.meta(&id).map_err(usage_error)?;
    if meta.workspace != run.workspace && !any_workspace {
        return Err(usage_error(SessionError::OtherWorkspace {
            id,
            workspace: meta.workspace.display().to_string(),
        }));
    }
    let loaded = session::load(held.dir(), true).map_err(usage_error)?;
    Ok(Opened {
        held,
        earlier: Some(meta),
        loaded,
        forked_from: None,
    })
}

/// `--fork`: a new session (`id`, or a new id) with a copy of `source`'s conversation.
fn fork(
    sessions: &Sessions,
    source: &SessionId,
    id: Option<SessionId>,
    run: &RunFacts<'_>,
) -> Result<Opened, Failure> {
    let meta = sessions.meta(source).map_err(|e| match e {
        SessionError::Io { .. } if !sessions.exists(source) => {
            usage_error(SessionError::Unknown(source.clone()))
        }
        other => usage_error(other),
    })?;
    // Read as it is, without repairs to the file: a run may be using it.
    let mut loaded = session::load(&sessions.dir(source), false).map_err(usage_error)?;
    loaded.on_disk = 0;
    Ok(Opened {
        held: create(sessions, id, run)?,
        earlier: Some(meta),
        loaded,
        forked_from: Some(source.clone()),
    })
}

/// A new session, `id` or a new id, held by the run.
fn create(sessions: &Sessions, id: Option<SessionId>, run: &RunFacts<'_>) -> Result<Held, Failure> {
    let id = id.unwrap_or_else(SessionId::generate);
    sessions
        .create(&id, run.run_id.as_str())
        .map_err(usage_error)
}

/// How the earlier run's background tasks ended: they died with it, and are not resumed.
fn earlier_tasks(data_dir: &Path, run: &str) -> Vec<String> {
    let store = Store::new(data_dir, std::time::Duration::ZERO);
    let Ok(tasks) = store.tasks() else {
        return Vec::new();
    };
    let ended: Vec<String> = tasks
        .iter()
        .filter(|task| task.run_id.as_str() == run)
        .map(|task| {
            let status = match task.status {
                TaskStatus::Running => "interrupted",
                other => other.as_str(),
            };
            format!("{} ({}): {status}", task.id, task.kind.label())
        })
        .collect();
    if ended.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the earlier run's background tasks ended with it and are not running now: {}",
        ended.join("; ")
    )]
}

impl RunSession {
    /// What the run starts from: the conversation so far, and `prompt` with the notes about
    /// the session (repairs, the earlier run's tasks) in front, for the model.
    pub(crate) fn start(&mut self, prompt: String) -> (Vec<Message>, String) {
        let history = std::mem::take(&mut self.history);
        if self.notes.is_empty() {
            return (history, prompt);
        }
        (
            history,
            format!("[zero: {}]\n\n{prompt}", self.notes.join(". ")),
        )
    }

    /// The session's id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.held.id
    }

    /// Waits for the conversation to be on disk and records how the run ended and what it
    /// spent; returns the session's running total. Blocking.
    pub(crate) fn end(mut self, answered: bool, spent: Usage) -> (UsageTotals, Vec<String>) {
        let mut problems = Vec::new();
        if let Err(error) = self.transcript.finish() {
            problems.push(format!("the session's conversation is incomplete: {error}"));
        }
        self.meta.status = if answered {
            SessionStatus::Completed
        } else {
            SessionStatus::Failed
        };
        self.meta.usage.add(spent);
        if let Err(error) = self.held.write_meta(&self.meta) {
            problems.push(format!("the session's record was not updated: {error}"));
        }
        (crate::agent::totals(&self.meta.usage), problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> SessionId {
        SessionId::parse(text).unwrap()
    }

    #[test]
    fn the_flags_name_one_session_or_none() {
        let wanted = |resume: Option<&str>, fork, session_id, no_session| {
            SessionWanted::of(
                resume.map(str::to_string),
                fork,
                session_id,
                no_session,
                false,
            )
        };
        assert_eq!(wanted(None, None, None, true), SessionWanted::None);
        assert_eq!(wanted(None, None, None, false), SessionWanted::New(None));
        assert_eq!(
            wanted(None, None, Some(id("s1")), false),
            SessionWanted::New(Some(id("s1")))
        );
        assert_eq!(
            wanted(Some("last"), None, None, false),
            SessionWanted::Resume {
                which: "last".into(),
                any_workspace: false
            }
        );
        assert_eq!(
            wanted(None, Some(id("a")), Some(id("b")), false),
            SessionWanted::Fork {
                source: id("a"),
                id: Some(id("b"))
            }
        );
    }

    #[test]
    fn only_a_session_asked_for_by_name_is_required() {
        assert!(!SessionWanted::None.named());
        assert!(!SessionWanted::New(None).named());
        assert!(SessionWanted::New(Some(id("s1"))).named());
        assert!(
            SessionWanted::Resume {
                which: "last".into(),
                any_workspace: false
            }
            .named()
        );
    }
}
