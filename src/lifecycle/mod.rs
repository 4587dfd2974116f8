//! How a run ends when something outside it says so: SIGINT, SIGTERM, SIGHUP, the death of the
//! zero process that started this one (lifeline EOF), a closed stdout, or a panic. Every one of
//! them ends the same way — cancel the agent loop, close the runtime (so nothing the run
//! started outlives it), report, exit with the right code — and this module is what turns each
//! of them into that cancellation. `exec` does the rest on its normal path out.
//!
//! - [`install`] runs first thing in `main`, before any child can exist: it turns SIGINT,
//!   SIGTERM and SIGHUP into numbers on a self-pipe read by one thread and, in a child
//!   `zero exec`, starts watching the lifeline it inherited.
//! - `watch` ties a run's cancellation token to those events.
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
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

use crate::runtime::lifeline;

pub use close::CloseOnDrop;
pub(crate) use stdout::watch_stdout;

/// The signal that asked the run to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
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
    pub(crate) fn signal(self) -> i32 {
        match self {
            Stop::Hangup => libc::SIGHUP,
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
        }
    }

    /// The signal's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stop::Hangup => "SIGHUP",
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit status a process ended by this signal reports by convention: 128 + its number.
    pub(crate) fn exit_status(self) -> i32 {
        128 + self.signal()
    }
}

/// Why [`install`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// The signals could not be routed to the stop thread.
    #[error("cannot install the signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The thread watching the inherited lifeline could not be started.
    #[error("cannot watch the parent's lifeline: {0}")]
    Lifeline(#[source] std::io::Error),
}

/// The signals that stop a run.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The number of the first stop signal; 0 until one came. Set before that stop is handled.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
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
                    Ok(count) => numbers[..count].iter().for_each(|&n| stop(i32::from(n))),
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
                stop(libc::SIGHUP);
            })
            .map_err(LifecycleError::Lifeline)?;
    }
    Ok(())
}

/// Handles one stop event, `signal` (on the signal thread, or the lifeline watcher's, which
/// counts as SIGHUP). The first signal is recorded before anything acts on it. The first stop
/// cancels the run — or, before there is a run, reports and exits at once, since nothing
/// needs closing yet — and every later one hurries the close along.
fn stop(signal: i32) {
    let _ = FIRST_SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    if STOPS.fetch_add(1, Ordering::SeqCst) > 0 {
        crate::runtime::hurry();
        return;
    }
    let run = crate::sync::lock(&RUN);
    match &*run {
        Some(cancel) => cancel.cancel(),
        None => {
            // Nothing has started yet, so nothing needs closing: report and go.
            let stop = received().expect("the first signal is recorded before it is handled");
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

/// The first stop signal received, if any.
pub(crate) fn received() -> Option<Stop> {
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
