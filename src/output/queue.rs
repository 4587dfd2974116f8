//! The bounded queue between the threads that emit events and the one thread that writes
//! them, so no blocking write ever happens on the thread that drives the run.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tokio_util::sync::CancellationToken;

use super::{EventKind, Writer};
use crate::redact::Secrets;

/// How many events may wait for the writer before an emitter waits for room. Enough to ride
/// out a slow moment of the reader; few enough that a stalled one costs little memory.
const CAPACITY: usize = 256;

/// How often a waiting emitter or drain looks again at whether the run is stopping.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// Events on their way to the writer thread.
pub(super) struct Queue {
    inner: Mutex<Inner>,
    /// Signalled whenever an event is queued, taken or written.
    changed: Condvar,
}

struct Inner {
    events: VecDeque<EventKind>,
    /// The writer thread is writing an event it took.
    writing: bool,
    /// The first write failure; events after it are not written to stdout.
    broken: Option<io::ErrorKind>,
    /// The output was dropped: the writer thread ends once the queue is empty.
    done: bool,
}

impl Queue {
    /// Starts the writer thread with `writer`. Errors and warnings are also echoed to stderr
    /// when `echo_diagnostics`; `closed` is cancelled when a write to stdout fails.
    pub(super) fn start(
        writer: Box<dyn Writer>,
        secrets: Secrets,
        echo_diagnostics: bool,
        closed: CancellationToken,
    ) -> Arc<Queue> {
        let queue = Arc::new(Queue {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                writing: false,
                broken: None,
                done: false,
            }),
            changed: Condvar::new(),
        });
        let worker = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("zero-output".into())
            .spawn(move || worker.write_all(writer, &secrets, echo_diagnostics, &closed))
            .expect("cannot start the thread that writes zero's output");
        queue
    }

    /// Queues `event`, waiting for room while the queue is full — unless the run is
    /// `stopping` or stdout is gone, when it is queued at once.
    pub(super) fn push(&self, event: EventKind, stopping: &CancellationToken) {
        let mut inner = self.lock();
        while inner.events.len() >= CAPACITY && inner.broken.is_none() && !stopping.is_cancelled() {
            inner = self.wait(inner);
        }
        inner.events.push_back(event);
        self.changed.notify_all();
    }

    /// Waits until everything queued is written: without limit, unless the run is (or becomes)
    /// `stopping`, when the writer gets `grace` and what it has not written then is dropped.
    /// Returns how many events were dropped that way.
    pub(super) fn drain(&self, stopping: &CancellationToken, grace: Duration) -> usize {
        let mut deadline = None;
        let mut inner = self.lock();
        loop {
            if inner.events.is_empty() && !inner.writing {
                return 0;
            }
            if stopping.is_cancelled() {
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + grace);
                if Instant::now() >= deadline {
                    let dropped = inner.events.len() + usize::from(inner.writing);
                    inner.events.clear();
                    // Once stdout is gone nothing was going to be written anyway.
                    return if inner.broken.is_some() { 0 } else { dropped };
                }
            }
            inner = self.wait(inner);
        }
    }

    /// Records that stdout is gone: later events are not written to it.
    pub(super) fn mark_broken(&self, kind: io::ErrorKind) {
        self.lock().broken.get_or_insert(kind);
        self.changed.notify_all();
    }

    /// The first error writing stdout, if any.
    pub(super) fn broken(&self) -> Option<io::ErrorKind> {
        self.lock().broken
    }

    /// Lets the writer thread end once it has written what is queued.
    pub(super) fn finish(&self) {
        self.lock().done = true;
        self.changed.notify_all();
    }

    /// The writer thread: takes events in order and writes them until the output is dropped.
    fn write_all(
        &self,
        mut writer: Box<dyn Writer>,
        secrets: &Secrets,
        echo_diagnostics: bool,
        closed: &CancellationToken,
    ) {
        loop {
            let (event, broken) = {
                let mut inner = self.lock();
                loop {
                    if let Some(event) = inner.events.pop_front() {
                        inner.writing = true;
                        break (event, inner.broken.is_some());
                    }
                    if inner.done {
                        return;
                    }
                    inner = self.changed.wait(inner).unwrap_or_else(|e| e.into_inner());
                }
            };
            self.changed.notify_all();
            if echo_diagnostics {
                echo(&event, secrets);
            }
            let written = if broken { Ok(()) } else { writer.write(&event) };
            let mut inner = self.lock();
            inner.writing = false;
            if let Err(error) = written {
                inner.broken.get_or_insert(error.kind());
                closed.cancel();
            }
            self.changed.notify_all();
        }
    }

    fn wait<'a>(&self, inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        self.changed
            .wait_timeout(inner, WAIT_SLICE)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Echoes an error or warning to stderr, so a person reading a CI log of a machine format
/// sees it too. Best effort: a closed stderr must not end the run.
fn echo(event: &EventKind, secrets: &Secrets) {
    let line = match event {
        EventKind::Error { message, .. } => format!("zero: error: {message}"),
        EventKind::Warning { message } => format!("zero: warning: {message}"),
        _ => return,
    };
    let _ = writeln!(io::stderr().lock(), "{}", secrets.apply(&line));
}

/// Writes one line to stderr only if that cannot block: for the last words of a run whose
/// stderr may be as stalled as its stdout. Written past std's stderr lock, which a stalled
/// writer thread may hold.
pub fn stderr_line_if_writable(line: &str) {
    // SAFETY: fd 2 stays open for the life of the process.
    let stderr = unsafe { BorrowedFd::borrow_raw(libc::STDERR_FILENO) };
    let mut fds = [PollFd::new(stderr, PollFlags::POLLOUT)];
    let writable = matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
        && fds[0]
            .revents()
            .is_some_and(|events| events.contains(PollFlags::POLLOUT));
    if writable {
        let mut line = line.to_string();
        line.push('\n');
        // One write of less than a pipe's page either fits in the room poll saw or fails.
        let _ = nix::unistd::write(stderr, line.as_bytes());
    }
}
