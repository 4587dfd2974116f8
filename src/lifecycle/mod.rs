//! How a run ends when something outside it says so: SIGINT, SIGTERM, SIGHUP, the death of the
//! zero process that started this one (lifeline EOF), a closed stdout, or a panic. Every one of
//! them ends the same way — cancel the agent loop, close the runtime (so nothing the run
//! started outlives it), report, exit with the right code — and this module is what turns each
//! of them into that cancellation. `exec` does the rest on its normal path out.
//!
//! - [`install`] runs first thing in `main`, before any child can exist: it installs the
//!   `ctrlc` hook (SIGINT, SIGTERM, SIGHUP) and, in a child `zero exec`, starts watching the
//!   lifeline it inherited.
//! - [`watch`] ties a run's cancellation token to those events.
//! - The first event cancels the run; any later one calls [`crate::runtime::hurry`], so the
//!   close still in progress skips its grace period and SIGKILLs at once. The exit code stays
//!   the first signal's.
//! - [`CloseOnDrop`] closes the runtime when a panic unwinds past it.
//!
//! `docs/LIFECYCLE.md` describes the guarantees and their limits.

mod close;
mod stdout;

use std::os::fd::{AsFd, AsRawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

use crate::runtime::lifeline;

pub use close::CloseOnDrop;
pub use stdout::watch_stdout;

/// The signal that asked the run to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGHUP, or the lifeline reaching EOF (the parent zero died), which is treated alike.
    Hangup,
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Stop {
    fn from_signal(signal: i32) -> Option<Self> {
        match signal {
            libc::SIGHUP => Some(Stop::Hangup),
            libc::SIGINT => Some(Stop::Interrupt),
            libc::SIGTERM => Some(Stop::Terminate),
            _ => None,
        }
    }

    /// The signal's number.
    pub fn signal(self) -> i32 {
        match self {
            Stop::Hangup => libc::SIGHUP,
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
        }
    }

    /// The signal's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Hangup => "SIGHUP",
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit status a process ended by this signal reports by convention: 128 + its number.
    pub fn exit_status(self) -> i32 {
        128 + self.signal()
    }
}

/// Why [`install`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// The `ctrlc` hook could not be installed.
    #[error("cannot install the signal handler: {0}")]
    Hook(#[from] ctrlc::Error),
    /// The signal numbers could not be recorded.
    #[error("cannot register for signals: {0}")]
    Register(#[source] std::io::Error),
    /// The thread watching the inherited lifeline could not be started.
    #[error("cannot watch the parent's lifeline: {0}")]
    Lifeline(#[source] std::io::Error),
}

/// The number of the first stop signal; 0 until one came. Written from the signal handler.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How many stop events have been handled.
static STOPS: AtomicUsize = AtomicUsize::new(0);
/// The cancellation token of the run in progress, once it has one.
static RUN: Mutex<Option<CancellationToken>> = Mutex::new(None);
/// Reports a stop that came before the run had a token (see [`report_early_stops`]).
static EARLY: Mutex<Option<EarlyStopReporter>> = Mutex::new(None);

/// Reports a stop that ends the process before the run started: it must leave stdout complete
/// (an `error` and the one `run_end`), since the process exits right after it returns.
pub type EarlyStopReporter = Box<dyn Fn(Stop) + Send>;

/// Installs the stop hooks. Call once, first thing in `main`, before any child can exist.
///
/// `ctrlc`'s handler does not say which signal fired, so a `signal-hook` action registered on
/// top of it records the number first: signal-hook chains to the handler that was installed
/// before it, so by the time `ctrlc`'s thread runs, the number is known.
pub fn install() -> Result<(), LifecycleError> {
    ctrlc::set_handler(on_stop)?;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the action is one compare-and-swap on an atomic: async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, move || record(signal))
                .map_err(LifecycleError::Register)?;
        }
    }
    if let Some(fd) = lifeline::inherited() {
        // Our own children get our own lifeline, never our parent's.
        let _ = lifeline::set_cloexec(fd.as_raw_fd());
        std::thread::Builder::new()
            .name("zero-lifeline".into())
            .spawn(move || {
                lifeline::wait_for_eof(fd.as_fd());
                record(libc::SIGHUP);
                on_stop();
            })
            .map_err(LifecycleError::Lifeline)?;
    }
    Ok(())
}

/// Notes the first stop signal. Async-signal-safe.
fn record(signal: i32) {
    let _ = FIRST_SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// Handles one stop event (on `ctrlc`'s thread or the lifeline watcher's): the first cancels
/// the run — or, before there is a run, exits at once, since nothing needs closing yet — and
/// every later one hurries the close along.
fn on_stop() {
    if STOPS.fetch_add(1, Ordering::SeqCst) > 0 {
        crate::runtime::hurry();
        return;
    }
    let run = RUN.lock().unwrap_or_else(|e| e.into_inner());
    match &*run {
        Some(cancel) => cancel.cancel(),
        None => {
            // Nothing has started yet, so nothing needs closing: report and go.
            let stop = received().unwrap_or(Stop::Terminate);
            if let Some(report) = &*EARLY.lock().unwrap_or_else(|e| e.into_inner()) {
                report(stop);
            }
            exit(stop.exit_status())
        }
    }
}

/// Sets how a stop that comes before [`watch`] is reported (e.g. while `zero exec -` is still
/// reading its prompt from stdin), so even that run ends with its `run_end`.
pub fn report_early_stops(report: EarlyStopReporter) {
    *EARLY.lock().unwrap_or_else(|e| e.into_inner()) = Some(report);
}

/// Makes the stop events cancel `cancel`, the run's token. If one came already, it is
/// cancelled at once.
pub fn watch(cancel: CancellationToken) {
    let mut run = RUN.lock().unwrap_or_else(|e| e.into_inner());
    if STOPS.load(Ordering::SeqCst) > 0 {
        cancel.cancel();
    }
    *run = Some(cancel);
}

/// The first stop signal received, if any.
pub fn received() -> Option<Stop> {
    Stop::from_signal(FIRST_SIGNAL.load(Ordering::SeqCst))
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
