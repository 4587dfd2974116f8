//! How a run ends when something outside it says so: SIGINT, SIGTERM, SIGHUP, the death of the
//! zero process that started this one (lifeline EOF), its deadline (`--timeout`), a closed
//! stdout, or a panic. Every one of them ends the same way — cancel the agent loop, close the runtime (so nothing the run
//! started outlives it), report, exit with the right code — and this module is what turns each
//! of them into that cancellation. `exec` does the rest on its normal path out.
//!
//! - [`install`] runs first thing in `main`, before any child can exist: it turns SIGINT,
//!   SIGTERM and SIGHUP into numbers on a self-pipe read by one thread and, in a child
//!   `zero exec`, starts watching the lifeline it inherited.
//! - `watch` ties a run's cancellation token to those events.
//! - `arm_deadline` makes the run's deadline one of them: a thread of its own waits for it, so
//!   it stops the run even while the run's thread is blocked (on a stdout nobody reads, on a
//!   prompt that never ends), exactly as a signal does.
//! - The first event cancels the run; any later one calls `crate::runtime::hurry`, so the
//!   close still in progress skips its grace period and SIGKILLs at once. The exit code stays
//!   the first signal's.
//! - [`CloseOnDrop`] closes the runtime when a panic unwinds past it.
//!
//! `docs/LIFECYCLE.md` describes the guarantees and their limits.

mod close;
mod stdout;

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use crate::runtime::lifeline;

pub use close::CloseOnDrop;
pub(crate) use stdout::watch_stdout;

/// What asked the run to stop: a signal, or its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGHUP, or the lifeline reaching EOF (the parent zero died), which is treated alike.
    Hangup,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// The run's deadline passed (`--timeout`, or the launching run's).
    Deadline,
}

/// The exit status of a run its deadline stopped: `exit::ExitCode::Incomplete`, which this
/// module may not name (it sits below `exit` in the module map); `exec` checks the two agree.
const DEADLINE_EXIT_STATUS: i32 = 4;

impl Stop {
    fn from_signal(signal: i32) -> Option<Self> {
        match signal {
            libc::SIGHUP => Some(Stop::Hangup),
            libc::SIGINT => Some(Stop::Interrupt),
            libc::SIGTERM => Some(Stop::Terminate),
            _ => None,
        }
    }

    /// The name of what stopped the run, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stop::Hangup => "SIGHUP",
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::Deadline => "its deadline",
        }
    }

    /// The exit status of a run this stopped: for a signal, 128 + its number, as a process
    /// the signal ended reports by convention.
    pub(crate) fn exit_status(self) -> i32 {
        match self {
            Stop::Hangup => 128 + libc::SIGHUP,
            Stop::Interrupt => 128 + libc::SIGINT,
            Stop::Terminate => 128 + libc::SIGTERM,
            Stop::Deadline => DEADLINE_EXIT_STATUS,
        }
    }
}

/// Why [`install`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// The signals could not be routed to the stop thread.
    #[error("cannot install the signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The thread waiting for the run's deadline could not be started.
    #[error("cannot watch the run's deadline: {0}")]
    Deadline(#[source] std::io::Error),
    /// The thread watching the inherited lifeline could not be started.
    #[error("cannot watch the parent's lifeline: {0}")]
    Lifeline(#[source] std::io::Error),
}

/// The signals that stop a run.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first stop; unset until one came. Set before that stop is handled.
static FIRST: OnceLock<Stop> = OnceLock::new();
/// How many stop events have been handled.
static STOPS: AtomicUsize = AtomicUsize::new(0);
/// The cancellation token of the run in progress, once it has one.
static RUN: Mutex<Option<CancellationToken>> = Mutex::new(None);
/// Reports a stop that came before the run had a token (see [`report_early_stops`]).
static EARLY: Mutex<Option<EarlyStopReporter>> = Mutex::new(None);

/// Reports a stop that ends the process before the run started: it must leave stdout complete
/// (an `error` and the one `run_end`), since the process exits right after it returns.
pub(crate) type EarlyStopReporter = Box<dyn Fn(Stop) + Send>;

/// Installs the stop hooks. Call once, first thing in `main`, before any child can exist.
///
/// Each stop signal's handler writes the signal's own number to a self-pipe; one thread
/// ("zero-signals") reads the numbers in the order they came and handles each as a stop. The
/// number travels with the wake-up, so whoever handles a stop knows which signal it was: there
/// is no second source to race against. (Written here rather than with `signal_hook::iterator`,
/// which merges repeats of a signal and yields pending ones by number, not by arrival: the
/// first signal sets the exit code, and every repeat must hurry the close.)
pub fn install() -> Result<(), LifecycleError> {
    let (mut reader, writer) = UnixStream::pair().map_err(LifecycleError::Signals)?;
    writer
        .set_nonblocking(true)
        .map_err(LifecycleError::Signals)?;
    // The writing end lives as long as the process: the handlers write to it at any time.
    let writer = writer.into_raw_fd();
    for signal in STOP_SIGNALS {
        let number = signal as u8;
        // SAFETY: the action is one write(2) on a non-blocking socket, which is
        // async-signal-safe; signal-hook restores errno around it. A full socket (some
        // thousand stops unread) drops the byte, and the stops already queued suffice.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                libc::write(writer, (&raw const number).cast(), 1);
            })
            .map_err(LifecycleError::Signals)?;
        }
    }
    std::thread::Builder::new()
        .name("zero-signals".into())
        .spawn(move || {
            let mut numbers = [0u8; 16];
            loop {
                match reader.read(&mut numbers) {
                    Ok(0) => return,
                    Ok(count) => numbers[..count]
                        .iter()
                        .filter_map(|&n| Stop::from_signal(i32::from(n)))
                        .for_each(stop),
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
        })
        .map_err(LifecycleError::Signals)?;
    if let Some(fd) = lifeline::inherited() {
        // Our own children get our own lifeline, never our parent's.
        let _ = lifeline::set_cloexec(fd.as_raw_fd());
        std::thread::Builder::new()
            .name("zero-lifeline".into())
            .spawn(move || {
                lifeline::wait_for_eof(fd.as_fd());
                stop(Stop::Hangup);
            })
            .map_err(LifecycleError::Lifeline)?;
    }
    Ok(())
}

/// Handles one stop event (on the signal thread, the lifeline watcher's, which counts as
/// SIGHUP, or the deadline's). The first stop is recorded before anything acts on it. The
/// first stop cancels the run — or, before there is a run, reports and exits at once, since
/// nothing needs closing yet — and every later one hurries the close along.
fn stop(cause: Stop) {
    let _ = FIRST.set(cause);
    if STOPS.fetch_add(1, Ordering::SeqCst) > 0 {
        crate::runtime::hurry();
        return;
    }
    let run = crate::sync::lock(&RUN);
    match &*run {
        Some(cancel) => cancel.cancel(),
        None => {
            // Nothing has started yet, so nothing needs closing: report and go.
            let stop = received().expect("the first stop is recorded before it is handled");
            if let Some(report) = &*crate::sync::lock(&EARLY) {
                report(stop);
            }
            exit(stop.exit_status())
        }
    }
}

/// Sets how a stop that comes before [`watch`] is reported (e.g. while `zero exec -` is still
/// reading its prompt from stdin), so even that run ends with its `run_end`.
pub(crate) fn report_early_stops(report: EarlyStopReporter) {
    *crate::sync::lock(&EARLY) = Some(report);
}

/// Makes the stop events cancel `cancel`, the run's token. If one came already, it is
/// cancelled at once.
pub(crate) fn watch(cancel: CancellationToken) {
    let mut run = crate::sync::lock(&RUN);
    if STOPS.load(Ordering::SeqCst) > 0 {
        cancel.cancel();
    }
    *run = Some(cancel);
}

/// The first stop received, if any.
pub(crate) fn received() -> Option<Stop> {
    FIRST.get().copied()
}

/// Makes `deadline` stop the run as a signal would ([`Stop::Deadline`]), on a thread of its
/// own: the thread that drives the run may be the one held up (a write to a stdout nobody
/// reads waits for room), and a timer on it would wait with it. Armed once per process, for
/// the rest of its life: a deadline that passes while the run closes or drains its output
/// ends those as a signal would.
pub(crate) fn arm_deadline(deadline: SystemTime) -> Result<(), LifecycleError> {
    std::thread::Builder::new()
        .name("zero-deadline".into())
        .spawn(move || {
            // The clock may be set back during the sleep: sleep again until it says so too.
            while let Ok(left) = deadline.duration_since(SystemTime::now()) {
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left);
            }
            stop(Stop::Deadline);
        })
        .map(drop)
        .map_err(LifecycleError::Deadline)
}

/// Ends the process with `code` at once. Called after `run_end`: no runtime thread, blocking
/// task or lingering connection may keep the process alive once the run has reported its end.
///
/// stdout is not flushed here: a run's output is written (and flushed) by its own writer
/// thread, which may be stuck on a reader that stopped reading — taking stdout's lock here
/// would wait for it forever. `process::exit` flushes what others left only if that lock is
/// free.
pub fn exit(code: i32) -> ! {
    std::process::exit(code)
}
