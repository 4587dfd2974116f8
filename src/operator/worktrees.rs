//! `zero worktrees`: list, show, remove and garbage-collect the worktrees `zero exec
//! --worktree` made, in the style of `zero tasks` (a table or `key: value` lines by default,
//! JSON with `--json`; diagnostics on stderr). Dead runs are reconciled first, so what is shown
//! is settled: `preparing` or `active` only while the run is alive.

use std::io::{self, Write};

use super::render;
use crate::cli::{WorktreesArgs, WorktreesCommand};
use crate::exit::ExitCode;
use crate::redact::{RedactingWriter, Secrets};
use crate::runtime::{WorktreeError, WorktreeRecord, WorktreeRecords, WorktreeState};

/// What `zero worktrees` failed with.
type Failure = super::Failure<WorktreeError>;

impl From<WorktreeError> for Failure {
    fn from(error: WorktreeError) -> Self {
        Failure::Own(error)
    }
}

/// Runs one `zero worktrees` subcommand and returns the exit code. `secrets` are masked in
/// everything it prints.
pub fn run(args: WorktreesArgs, secrets: &Secrets) -> ExitCode {
    super::operate(
        secrets,
        |store| {
            super::reconcile(store, secrets);
            dispatch(&WorktreeRecords::new(store.root()), args.command, secrets)
        },
        |error| {
            matches!(
                error,
                WorktreeError::Unknown(_) | WorktreeError::InUse { .. }
            )
        },
    )
}

fn dispatch(
    records: &WorktreeRecords,
    command: WorktreesCommand,
    secrets: &Secrets,
) -> Result<(), Failure> {
    let mut out = RedactingWriter::new(io::stdout().lock(), secrets);
    match command {
        WorktreesCommand::List { json } => {
            let listed = listed(records, secrets);
            match json {
                true => render::json(&listed, &mut out)?,
                false => super::as_text(&mut out, |out| table(&listed, out))?,
            }
        }
        WorktreesCommand::Show { name, json } => {
            let record = records.read(&name)?;
            match json {
                true => render::json(&record, &mut out)?,
                false => super::as_text(&mut out, |out| show(&record, out))?,
            }
        }
        WorktreesCommand::Rm { name } => {
            records.remove(&name, true)?;
            writeln!(out, "removed worktree {name} and its branch")?;
        }
        WorktreesCommand::Gc {
            older_than,
            include_interrupted,
            dry_run,
        } => {
            let cutoff = chrono::Utc::now()
                - chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::MAX);
            for record in listed(records, secrets) {
                if !collectable(&record, cutoff, include_interrupted) {
                    continue;
                }
                if !dry_run {
                    records.remove(&record.name, false)?;
                }
                let verb = if dry_run { "would remove" } else { "removed" };
                writeln!(
                    out,
                    "{verb} worktree {} (branch {} kept)",
                    record.name, record.branch
                )?;
            }
        }
    }
    Ok(())
}

/// Every record, its problems printed as warnings.
fn listed(records: &WorktreeRecords, secrets: &Secrets) -> Vec<WorktreeRecord> {
    let (listed, problems) = records.list();
    for problem in problems {
        eprintln!("zero: warning: {}", secrets.apply(&problem));
    }
    listed
}

/// Whether `gc` removes the record: finished and failed ones (interrupted ones only when
/// asked) that ended before `cutoff`.
fn collectable(
    record: &WorktreeRecord,
    cutoff: chrono::DateTime<chrono::Utc>,
    include_interrupted: bool,
) -> bool {
    let kind = match record.state {
        WorktreeState::Finished | WorktreeState::Failed => true,
        WorktreeState::Interrupted => include_interrupted,
        WorktreeState::Preparing | WorktreeState::Active => false,
    };
    kind && record
        .ended_at
        .as_deref()
        .and_then(|ended| chrono::DateTime::parse_from_rfc3339(ended).ok())
        .is_some_and(|ended| ended < cutoff)
}

/// The `list` table: one worktree a line.
fn table(records: &[WorktreeRecord], out: &mut impl Write) -> io::Result<()> {
    if records.is_empty() {
        return writeln!(out, "no worktrees");
    }
    let rows: Vec<[String; 5]> = records
        .iter()
        .map(|r| {
            [
                r.name.to_string(),
                state(r).to_string(),
                r.run_id.to_string(),
                render::timestamp(&r.created_at).unwrap_or_else(|| r.created_at.clone()),
                r.branch.clone(),
            ]
        })
        .collect();
    render::aligned(["NAME", "STATE", "RUN", "CREATED", "BRANCH"], &rows, out)
}

/// `show`: the record as `key: value` lines.
fn show(record: &WorktreeRecord, out: &mut impl Write) -> io::Result<()> {
    let optional = |value: &Option<String>| value.clone().unwrap_or_default();
    let lines = [
        ("name", record.name.to_string()),
        ("state", state(record).to_string()),
        ("run", record.run_id.to_string()),
        ("repository", record.repository.display().to_string()),
        ("branch", record.branch.clone()),
        ("path", record.path.display().to_string()),
        (
            "created",
            render::timestamp(&record.created_at).unwrap_or_default(),
        ),
        (
            "ended",
            record
                .ended_at
                .as_deref()
                .and_then(render::timestamp)
                .unwrap_or_default(),
        ),
        ("base", optional(&record.base)),
        ("commit", optional(&record.commit)),
        ("reason", optional(&record.reason)),
    ];
    for (key, value) in lines.iter().filter(|(_, value)| !value.is_empty()) {
        writeln!(out, "{:<11} {value}", format!("{key}:"))?;
    }
    Ok(())
}

/// The state's name, as the record spells it.
fn state(record: &WorktreeRecord) -> String {
    serde_json::to_value(record.state)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{RunId, WorktreeName};

    #[test]
    fn gc_takes_ended_records_past_the_cutoff_and_interrupted_ones_only_when_asked() {
        let record = |state, ended: Option<&str>| WorktreeRecord {
            schema_version: 1,
            name: WorktreeName::parse("ci").unwrap(),
            run_id: RunId::generate(),
            repository: "/repo".into(),
            branch: "zero/ci".into(),
            base: None,
            path: "/data/worktrees/ci".into(),
            git: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            ended_at: ended.map(str::to_string),
            state,
            directory: None,
            commit: None,
            reason: None,
        };
        let cutoff = chrono::Utc::now() - chrono::Duration::days(1);
        let old = Some("2020-01-01T00:00:00Z");
        let new = chrono::Utc::now().to_rfc3339();
        assert!(collectable(
            &record(WorktreeState::Finished, old),
            cutoff,
            false
        ));
        assert!(collectable(
            &record(WorktreeState::Failed, old),
            cutoff,
            false
        ));
        assert!(!collectable(
            &record(WorktreeState::Finished, Some(&new)),
            cutoff,
            false
        ));
        assert!(!collectable(
            &record(WorktreeState::Interrupted, old),
            cutoff,
            false
        ));
        assert!(collectable(
            &record(WorktreeState::Interrupted, old),
            cutoff,
            true
        ));
        assert!(!collectable(
            &record(WorktreeState::Active, old),
            cutoff,
            true
        ));
    }
}
