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
use crate::sync;

/// How many events may wait for the writer before an emitter waits for room (the writer may
/// hold as many again, taken but not yet written). Enough to ride out a slow moment of the
/// reader; few enough that a stalled one costs little memory.
const CAPACITY: usize = 256;

/// How often a waiting emitter or drain looks again at whether the run is stopping.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// Events on their way to the writer thread.
///
/// The writer takes every event queued at once and writes them in order, and a thread is woken
/// only when it waits: a burst of streamed deltas costs one wake-up of the writer, not one per
/// delta (waking a thread costs more than writing a line on a small VM).
pub(super) struct Queue {
    inner: Mutex<Inner>,
    /// Where the writer waits for events.
    work: Condvar,
    /// Where emitters wait for room and a drain waits for the end of the writing.
    progress: Condvar,
}

struct Inner {
    events: VecDeque<EventKind>,
    /// How many taken events the writer thread has not written yet.
    writing: usize,
    /// The writer thread is waiting on `work`.
    writer_idle: bool,
    /// How many threads wait on `progress`.
    waiting: usize,
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
                writing: 0,
                writer_idle: false,
                waiting: 0,
                broken: None,
                done: false,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
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
            inner = self.wait_for_progress(inner);
        }
        inner.events.push_back(event);
        self.wake_writer(&inner);
    }

    /// Waits until everything queued is written: without limit, unless the run is (or becomes)
    /// `stopping`, when the writer gets `grace` and what it has not written then is dropped.
    /// Returns how many events were dropped that way.
    pub(super) fn drain(&self, stopping: &CancellationToken, grace: Duration) -> usize {
        let mut deadline = None;
        let mut inner = self.lock();
        loop {
            if inner.events.is_empty() && inner.writing == 0 {
                return 0;
            }
            if stopping.is_cancelled() {
                let deadline = *deadline.get_or_insert_with(|| Instant::now() + grace);
                if Instant::now() >= deadline {
                    let dropped = inner.events.len() + inner.writing;
                    inner.events.clear();
                    // Once stdout is gone nothing was going to be written anyway.
                    return if inner.broken.is_some() { 0 } else { dropped };
                }
            }
            inner = self.wait_for_progress(inner);
        }
    }

    /// Records that stdout is gone: later events are not written to it.
    pub(super) fn mark_broken(&self, kind: io::ErrorKind) {
        let mut inner = self.lock();
        inner.broken.get_or_insert(kind);
        self.report_progress(&inner);
    }

    /// The first error writing stdout, if any.
    pub(super) fn broken(&self) -> Option<io::ErrorKind> {
        self.lock().broken
    }

    /// Lets the writer thread end once it has written what is queued.
    pub(super) fn finish(&self) {
        let mut inner = self.lock();
        inner.done = true;
        self.wake_writer(&inner);
    }

    /// The writer thread: takes what is queued and writes it in order until the output is
    /// dropped.
    fn write_all(
        &self,
        mut writer: Box<dyn Writer>,
        secrets: &Secrets,
        echo_diagnostics: bool,
        closed: &CancellationToken,
    ) {
        let mut batch = VecDeque::new();
        loop {
            let mut broken = {
                let mut inner = self.lock();
                while inner.events.is_empty() {
                    if inner.done {
                        return;
                    }
                    inner.writer_idle = true;
                    inner = sync::wait(&self.work, inner, None);
                    inner.writer_idle = false;
                }
                std::mem::swap(&mut inner.events, &mut batch);
                inner.writing = batch.len();
                // The queue has room again.
                self.report_progress(&inner);
                inner.broken.is_some()
            };
            while let Some(event) = batch.pop_front() {
                if echo_diagnostics {
                    echo(&event, secrets);
                }
                if !broken && let Err(error) = writer.write(&event) {
                    broken = true;
                    self.lock().broken.get_or_insert(error.kind());
                    closed.cancel();
                }
                let mut inner = self.lock();
                inner.writing -= 1;
                if inner.writing == 0 {
                    self.report_progress(&inner);
                }
                broken |= inner.broken.is_some();
            }
        }
    }

    /// Wakes the writer thread if it waits for events.
    fn wake_writer(&self, inner: &Inner) {
        if inner.writer_idle {
            self.work.notify_one();
        }
    }

    /// Wakes every thread waiting for room or for the writing to end, if any waits.
    fn report_progress(&self, inner: &Inner) {
        if inner.waiting > 0 {
            self.progress.notify_all();
        }
    }

    /// Waits on `progress`, for at most [`WAIT_SLICE`] (the caller looks again at whether the
    /// run is stopping).
    fn wait_for_progress<'a>(&self, mut inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        inner.waiting += 1;
        let mut inner = sync::wait(&self.progress, inner, Some(WAIT_SLICE));
        inner.waiting -= 1;
        inner
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        sync::lock(&self.inner)
    }
}

/// Echoes an error, a warning or a wait on the model (`retry`, `waiting`) to stderr, so a
/// person reading a CI log of a machine format sees it too, [`super::neutralise`]d (a runner
/// reads that log). Best effort: a closed stderr must not end the run.
fn echo(event: &EventKind, secrets: &Secrets) {
    let line = match event {
        EventKind::Error { message, .. } => format!("zero: error: {message}"),
        EventKind::Warning { message } => format!("zero: warning: {message}"),
        other => match other.waiting_line() {
            Some(line) => line,
            None => return,
        },
    };
    let line = secrets.apply(&line);
    let _ = writeln!(io::stderr().lock(), "{}", super::neutralise(&line));
}

/// Writes one line to stderr only if that cannot block: for the last words of a run whose
/// stderr may be as stalled as its stdout. Written past std's stderr lock, which a stalled
/// writer thread may hold; [`super::neutralise`]d, as every diagnostic zero writes is.
pub(crate) fn stderr_line_if_writable(line: &str) {
    // SAFETY: fd 2 stays open for the life of the process.
    let stderr = unsafe { BorrowedFd::borrow_raw(libc::STDERR_FILENO) };
    let mut fds = [PollFd::new(stderr, PollFlags::POLLOUT)];
    let writable = matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
        && fds[0]
            .revents()
            .is_some_and(|events| events.contains(PollFlags::POLLOUT));
    if writable {
        let mut line = super::neutralise(line).into_owned();
        line.push('\n');
        // One write of less than a pipe's page either fits in the room poll saw or fails.
        let _ = nix::unistd::write(stderr, line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Permits to write, one an event; a writer without one blocks as on a stalled reader.
    type Gate = Arc<(Mutex<usize>, Condvar)>;

    /// A writer that reports each text delta it writes, once `gate` lets it.
    struct Recording {
        written: mpsc::Sender<String>,
        gate: Gate,
    }

    impl Writer for Recording {
        fn write(&mut self, event: &EventKind) -> io::Result<()> {
            let (permits, opened) = &*self.gate;
            let mut permits = permits.lock().unwrap();
            while *permits == 0 {
                permits = opened.wait(permits).unwrap();
            }
            *permits -= 1;
            if let EventKind::Text { delta } = event {
                let _ = self.written.send(delta.clone());
            }
            Ok(())
        }
    }

    /// A queue whose writer has `permits`, the receiver of what it wrote, and its gate.
    fn queue(permits: usize) -> (Arc<Queue>, mpsc::Receiver<String>, Gate) {
        let (sender, written) = mpsc::channel();
        let gate = Arc::new((Mutex::new(permits), Condvar::new()));
        let writer = Recording {
            written: sender,
            gate: Arc::clone(&gate),
        };
        let queue = Queue::start(
            Box::new(writer),
            Secrets::default(),
            false,
            CancellationToken::new(),
        );
        (queue, written, gate)
    }

    fn text(n: usize) -> EventKind {
        EventKind::Text {
            delta: n.to_string(),
        }
    }

    #[test]
    fn every_event_is_written_once_in_order() {
        let (queue, written, _gate) = queue(usize::MAX);
        let running = CancellationToken::new();
        for n in 0..3 * CAPACITY {
            queue.push(text(n), &running);
        }
        assert_eq!(queue.drain(&running, Duration::ZERO), 0);
        let got: Vec<String> = written.try_iter().collect();
        let expected: Vec<String> = (0..3 * CAPACITY).map(|n| n.to_string()).collect();
        assert_eq!(got, expected);
        queue.finish();
    }

    #[test]
    fn a_stalled_writer_holds_emitters_back_until_the_run_stops_then_drops_the_rest() {
        let (queue, written, gate) = queue(0);
        let stopping = CancellationToken::new();
        let total = 3 * CAPACITY;
        // The writer takes a batch and stalls on its first event; the queue then fills up.
        let emitter = {
            let queue = Arc::clone(&queue);
            let stopping = stopping.clone();
            std::thread::spawn(move || (0..total).for_each(|n| queue.push(text(n), &stopping)))
        };
        std::thread::sleep(WAIT_SLICE * 3);
        assert!(
            !emitter.is_finished(),
            "an emitter waits for room while the run goes on"
        );
        assert!(queue.lock().events.len() <= CAPACITY);
        stopping.cancel();
        emitter.join().unwrap();
        // Nothing was written, so everything counts as dropped once the grace is over.
        assert_eq!(queue.drain(&stopping, Duration::from_millis(50)), total);
        let (permits, opened) = &*gate;
        *permits.lock().unwrap() = usize::MAX;
        opened.notify_all();
        assert_eq!(written.recv_timeout(Duration::from_secs(5)).unwrap(), "0");
        queue.finish();
    }
}
