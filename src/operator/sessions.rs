//! `zero sessions`: list, show, remove and garbage-collect the sessions of the data directory,
//! in the style of `zero tasks` (a table or text by default, JSON with `--json`; diagnostics on
//! stderr). A session's `running` is trusted only while its lease is held: one whose run died
//! is shown `interrupted`.

use std::io::{self, Write};
use std::time::Duration;

use serde::Serialize;

use super::render;
use crate::cli::{SessionsArgs, SessionsCommand};
use crate::exit::ExitCode;
use crate::provider::Message;
use crate::redact::{RedactingWriter, Secrets};
use crate::session::{self, Meta, SessionError, SessionStatus, Sessions};

/// What `zero sessions` failed with.
type Failure = super::Failure<SessionError>;

impl From<SessionError> for Failure {
    fn from(error: SessionError) -> Self {
        Failure::Own(error)
    }
}

/// Runs one `zero sessions` subcommand and returns the exit code. `secrets` are masked in
/// everything it prints.
pub fn run(args: SessionsArgs, secrets: &Secrets) -> ExitCode {
    super::operate(
        secrets,
        |store| dispatch(&Sessions::new(store.root()), args.command, secrets),
        |error| {
            matches!(
                error,
                SessionError::MalformedId(_)
                    | SessionError::Unknown(_)
                    | SessionError::InUse { .. }
            )
        },
    )
}

/// A session as listed: its record, with `running` corrected by its lease.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    meta: Meta,
    /// `running` only while a run holds the session; `interrupted` when its run died.
    state: &'static str,
}

fn dispatch(
    sessions: &Sessions,
    command: SessionsCommand,
    secrets: &Secrets,
) -> Result<(), Failure> {
    let mut out = RedactingWriter::new(io::stdout().lock(), secrets);
    match command {
        SessionsCommand::List { json } => {
            let (found, problems) = sessions.list()?;
            for problem in problems {
                eprintln!("zero: warning: {}", secrets.apply(&problem));
            }
            let listed: Vec<Listed> = found
                .into_iter()
                .map(|meta| Listed {
                    state: state(sessions, &meta),
                    meta,
                })
                .collect();
            match json {
                true => render::json(&listed, &mut out)?,
                false => super::as_text(&mut out, |out| table(&listed, out))?,
            }
        }
        SessionsCommand::Show { id, json } => {
            let meta = sessions.meta(&id).map_err(|e| match e {
                SessionError::Io { .. } if !sessions.exists(&id) => {
                    SessionError::Unknown(id.clone())
                }
                other => other,
            })?;
            let loaded = session::load(&sessions.dir(&id), false)?;
            let state = state(sessions, &meta);
            match json {
                true => render::json(
                    &serde_json::json!({
                        "session": Listed { meta, state },
                        "messages": loaded.messages,
                    }),
                    &mut out,
                )?,
                false => super::as_text(&mut out, |out| {
                    show(&Listed { meta, state }, &loaded.messages, out)
                })?,
            }
        }
        SessionsCommand::Rm { id } => {
            sessions.remove(&id)?;
            writeln!(out, "removed session {id}")?;
        }
        SessionsCommand::Gc {
            older_than,
            dry_run,
            json,
        } => {
            let removed = gc(sessions, older_than, dry_run)?;
            if json {
                render::json(
                    &serde_json::json!({"dryRun": dry_run, "sessions": removed}),
                    &mut out,
                )?;
            } else {
                let verb = if dry_run { "would remove" } else { "removed" };
                for id in &removed {
                    writeln!(out, "{verb} session {id}")?;
                }
                writeln!(out, "{verb} {} session(s)", removed.len())?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The state shown for `meta`'s session: its status, unless it says `running` and no run
/// holds it any more.
fn state(sessions: &Sessions, meta: &Meta) -> &'static str {
    match meta.status {
        SessionStatus::Running if sessions.in_use(&meta.id) => "running",
        SessionStatus::Running => "interrupted",
        SessionStatus::Completed => "completed",
        SessionStatus::Failed => "failed",
    }
}

/// Removes (or with `dry_run` names) the sessions not used for `older_than`, except those a
/// run holds; returns their ids.
fn gc(sessions: &Sessions, older_than: Duration, dry_run: bool) -> Result<Vec<String>, Failure> {
    let cutoff = chrono::Utc::now()
        - chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::MAX);
    let (found, _) = sessions.list()?;
    let mut removed = Vec::new();
    for meta in found {
        let old = chrono::DateTime::parse_from_rfc3339(&meta.updated)
            .is_ok_and(|updated| updated < cutoff);
        if !old || sessions.in_use(&meta.id) {
            continue;
        }
        if !dry_run {
            match sessions.remove(&meta.id) {
                Ok(()) => {}
                // Taken by a run since it was listed: it is not old any more.
                Err(SessionError::InUse { .. }) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        removed.push(meta.id.to_string());
    }
    Ok(removed)
}

/// The `list` table.
fn table(listed: &[Listed], out: &mut impl Write) -> io::Result<()> {
    if listed.is_empty() {
        return writeln!(out, "no sessions");
    }
    let rows: Vec<[String; 6]> = listed
        .iter()
        .map(|s| {
            [
                s.meta.id.to_string(),
                s.state.to_string(),
                render::timestamp(&s.meta.updated).unwrap_or_else(|| s.meta.updated.clone()),
                s.meta.runs.to_string(),
                s.meta.usage.total().to_string(),
                s.meta.workspace.display().to_string(),
            ]
        })
        .collect();
    render::aligned(
        ["ID", "STATE", "LAST USED", "RUNS", "TOKENS", "WORKSPACE"],
        &rows,
        out,
    )
}

/// `show`: the record as `key: value` lines, then the conversation.
fn show(listed: &Listed, messages: &[Message], out: &mut impl Write) -> io::Result<()> {
    let meta = &listed.meta;
    let lines = [
        ("id", meta.id.to_string()),
        ("state", listed.state.to_string()),
        ("workspace", meta.workspace.display().to_string()),
        ("model", format!("{} ({})", meta.model, meta.provider)),
        (
            "created",
            render::timestamp(&meta.created).unwrap_or_default(),
        ),
        (
            "last used",
            render::timestamp(&meta.updated).unwrap_or_default(),
        ),
        ("last run", meta.last_run.clone()),
        ("runs", meta.runs.to_string()),
        ("tokens", meta.usage.total().to_string()),
        (
            "forked from",
            meta.forked_from
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ),
    ];
    for (key, value) in lines.iter().filter(|(_, value)| !value.is_empty()) {
        writeln!(out, "{:<12} {value}", format!("{key}:"))?;
    }
    for message in messages {
        writeln!(out)?;
        match message {
            Message::User { content, .. } => writeln!(out, "user:\n{}", content.trim_end())?,
            Message::Assistant {
                text, tool_calls, ..
            } => {
                writeln!(out, "assistant:")?;
                if !text.is_empty() {
                    writeln!(out, "{}", text.trim_end())?;
                }
                for call in tool_calls {
                    writeln!(out, "▸ {} {}", call.name, call.arguments)?;
                }
            }
            Message::ToolResult {
                name,
                output,
                is_error,
                ..
            } => {
                let status = if *is_error { "error" } else { "ok" };
                writeln!(out, "{name} ({status}):\n{}", output.trim_end())?;
            }
        }
        // Images are kept apart (the session's images/), named here.
        for image in message.images() {
            writeln!(out, "[image {}: {}]", image.file_name(), image.describe())?;
        }
    }
    Ok(())
}
