//! `zero tasks`: the operator's view of background tasks and specialists across runs — list,
//! show, output, stop, gc — and the reconciliation every zero process does when it starts.
//!
//! Everything here reads and changes the data directory through `Store`, which derives a
//! task's truth from its run's lease rather than trusting a stored `running`. Results go to
//! stdout (a table or `key: value` lines by default, JSON with `--json`); diagnostics go to
//! stderr as `zero: warning: ...` / `zero: error: ...`. Exit codes: 0, 1 for I/O failures, 2 for
//! usage errors and unknown task ids.

mod render;
pub mod sessions;
pub mod worktrees;

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use crate::cli::{TaskStatusArg, TasksArgs, TasksCommand, TasksListArgs, TasksOutputArgs};
use crate::exit::ExitCode;
use crate::output::NeutralWriter;
use crate::redact::{RedactingWriter, Secrets};
use crate::runtime::{RuntimeError, Store, TaskRecord, TaskStatus, output};

/// How often `output --follow` looks for new output and re-reads the record: often enough to
/// feel live, rarely enough to cost nothing.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Reconciles dead runs in `store`, if it exists, and prints what went wrong as warnings.
fn reconcile(store: &Store, secrets: &Secrets) {
    print_warnings(store.reconciled(), secrets);
}

/// What an operator command over the data directory (`zero sessions`, `zero worktrees`) failed
/// with: its own error `E`, or what surrounds it.
#[derive(Debug, thiserror::Error)]
enum Failure<E: std::error::Error + 'static> {
    #[error(transparent)]
    Own(E),
    #[error("no data directory: set ZERO_HOME (or HOME)")]
    NoDataDir,
    #[error("{0}")]
    Environment(String),
    #[error("cannot write to stdout: {0}")]
    Stdout(#[from] io::Error),
}

/// Runs an operator command on the data directory the environment names: `work` gets the
/// store; a failure is printed (secrets masked) and is exit 2 when `usage` says the user can
/// fix it (and for a bad environment), exit 1 otherwise.
fn operate<E: std::error::Error + 'static>(
    secrets: &Secrets,
    work: impl FnOnce(&Store) -> Result<(), Failure<E>>,
    usage: impl Fn(&E) -> bool,
) -> ExitCode {
    let result = Store::from_env()
        .map_err(|e| Failure::Environment(e.to_string()))
        .and_then(|store| store.ok_or(Failure::NoDataDir))
        .and_then(|store| work(&store));
    match result {
        Ok(()) => ExitCode::Success,
        Err(error) => {
            eprintln!("zero: error: {}", secrets.apply(&error.to_string()));
            match error {
                Failure::Own(own) if usage(&own) => ExitCode::Usage,
                Failure::Environment(_) => ExitCode::Usage,
                _ => ExitCode::Internal,
            }
        }
    }
}

/// Runs one `zero tasks` subcommand and returns the exit code. `secrets` are masked in
/// everything it prints: records and logs hold what commands wrote.
pub fn run(args: TasksArgs, secrets: &Secrets) -> ExitCode {
    let result = Store::from_env()
        .and_then(|store| store.ok_or(RuntimeError::NoDataDir))
        .and_then(|store| {
            // Dead runs first, so what is shown is settled where it can be.
            reconcile(&store, secrets);
            let result = dispatch(&store, args.command, secrets);
            print_warnings(store.take_warnings(), secrets);
            result
        });
    match result {
        Ok(()) => ExitCode::Success,
        Err(error) => {
            eprintln!("zero: error: {}", secrets.apply(&error.to_string()));
            exit_code(&error)
        }
    }
}

fn dispatch(store: &Store, command: TasksCommand, secrets: &Secrets) -> Result<(), RuntimeError> {
    let mut out = RedactingWriter::new(io::stdout().lock(), secrets);
    let written = match command {
        TasksCommand::List(args) => {
            let records = listed(store, &args)?;
            match args.json {
                true => render::json(&records, &mut out),
                false => as_text(&mut out, |out| render::table(&records, out)),
            }
        }
        TasksCommand::Show(args) => {
            let record = store.task(&args.id)?;
            match args.json {
                true => render::json(&record, &mut out),
                false => as_text(&mut out, |out| render::show(&record, out)),
            }
        }
        TasksCommand::Output(args) => {
            output(store, &args, secrets, &mut out)?;
            Ok(())
        }
        TasksCommand::Stop(args) => {
            let stopped = store.stop(&args.id)?;
            match args.json {
                true => render::json(&stopped.record, &mut out),
                false => as_text(&mut out, |out| render::stopped(&stopped, out)),
            }
        }
        TasksCommand::Gc(args) => {
            let report = store.gc(args.older_than, args.dry_run)?;
            match args.json {
                true => render::json(&render::GcJson::new(&report, args.dry_run), &mut out),
                false => as_text(&mut out, |out| render::gc(&report, args.dry_run, out)),
            }
        }
    };
    written.and_then(|()| out.finish()).or_else(stdout_closed)
}

/// Writes a text rendering with every line made inert for a terminal or a CI runner (task
/// descriptions, commands, session messages and worktree paths hold what the model or the
/// workspace wrote); JSON renderings stay exact.
pub(crate) fn as_text<W: Write>(
    out: &mut W,
    render: impl FnOnce(&mut NeutralWriter<&mut W>) -> io::Result<()>,
) -> io::Result<()> {
    let mut neutral = NeutralWriter::new(out);
    render(&mut neutral)?;
    neutral.finish()
}

/// The tasks `list` shows, newest first, filtered by `--run` and `--status`.
fn listed(store: &Store, args: &TasksListArgs) -> Result<Vec<TaskRecord>, RuntimeError> {
    let wanted = args.status.map(status_of);
    Ok(store
        .tasks()?
        .into_iter()
        .filter(|record| args.run.as_ref().is_none_or(|run| *run == record.run_id))
        .filter(|record| wanted.is_none_or(|status| status == record.status))
        .collect())
}

/// Prints the task's output from the start (or the last `--tail` bytes), then with `--follow`
/// keeps printing what is appended until the task is over. The record is read before each
/// copy, so everything written before the task ended is printed before `--follow` stops.
fn output(
    store: &Store,
    args: &TasksOutputArgs,
    secrets: &Secrets,
    out: &mut impl Write,
) -> Result<(), RuntimeError> {
    let record = store.task(&args.id)?;
    let (path, mut file) = store.open_output(&record)?;
    let length = file
        .metadata()
        .map_err(RuntimeError::io("read", path.as_path()))?
        .len();
    let mut offset = args.tail.map_or(0, |tail| length.saturating_sub(tail));
    // A tail that would begin inside a secret begins with it, so `out` masks it whole.
    offset = output::start_outside_secrets(&mut file, offset, secrets)
        .map_err(RuntimeError::io("read", path.as_path()))?;
    let mut over = !args.follow;
    loop {
        offset = match copy_from(&mut file, offset, out) {
            Ok(offset) => offset,
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(error) => return Err(RuntimeError::io("copy", path.as_path())(error)),
        };
        if over {
            return Ok(());
        }
        std::thread::sleep(FOLLOW_POLL);
        over = store.task(&args.id)?.status.is_terminal();
    }
}

/// Copies `file` from `offset` to its current end into `out`; returns the new offset.
fn copy_from(file: &mut File, offset: u64, out: &mut impl Write) -> io::Result<u64> {
    file.seek(SeekFrom::Start(offset))?;
    let copied = io::copy(&mut file.take(u64::MAX), out)?;
    out.flush()?;
    Ok(offset + copied)
}

/// A reader that went away (`zero tasks list | head`) is not an error; anything else writing
/// to stdout is.
fn stdout_closed(error: io::Error) -> Result<(), RuntimeError> {
    if error.kind() == io::ErrorKind::BrokenPipe {
        return Ok(());
    }
    Err(RuntimeError::io("write", "stdout")(error))
}

fn status_of(arg: TaskStatusArg) -> TaskStatus {
    match arg {
        TaskStatusArg::Running => TaskStatus::Running,
        TaskStatusArg::Completed => TaskStatus::Completed,
        TaskStatusArg::Failed => TaskStatus::Failed,
        TaskStatusArg::Killed => TaskStatus::Killed,
        TaskStatusArg::Interrupted => TaskStatus::Interrupted,
    }
}

/// Usage mistakes (an unknown id, a bad setting) exit 2; failures of the system (I/O, a process
/// that would not die) exit 1. A malformed id never gets this far: the command line is refused.
fn exit_code(error: &RuntimeError) -> ExitCode {
    match error {
        RuntimeError::MalformedId(_)
        | RuntimeError::MalformedRunId(_)
        | RuntimeError::UnknownTask(_)
        | RuntimeError::InvalidSetting { .. }
        | RuntimeError::NoDataDir => ExitCode::Usage,
        _ => ExitCode::Internal,
    }
}

/// Prints `warnings` on stderr, `secrets` masked.
fn print_warnings(warnings: Vec<String>, secrets: &Secrets) {
    for warning in warnings {
        eprintln!("zero: warning: {}", secrets.apply(&warning));
    }
}
