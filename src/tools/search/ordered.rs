//! Work spread over threads, results taken in order: what lets `grep` search files on every
//! core (opening and reading them is most of its time) while its output stays that of a
//! sequential, sorted walk and it still stops as soon as it has found enough.
//!
//! Written here rather than taken from a crate: rayon's ordered parallel iterators cannot stop
//! early from the consumer's side without finishing the walk, and ripgrep's parallel walker
//! gives up the order.

use std::any::Any;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

/// Most threads working at once.
const MAX_THREADS: usize = 4;

/// Items handed to a thread at once: one hand-over (a channel send, perhaps a wake-up) costs
/// about what searching a small file does, so items travel in batches.
const BATCH: usize = 32;

/// Most batches handed out ahead of the first one not yet taken: enough to keep every thread
/// busy behind one slow item, and a bound on what waits in memory meanwhile.
const WINDOW: usize = 2 * MAX_THREADS;

/// Runs `work` on every item of `items` on up to [`MAX_THREADS`] threads (one per core), each
/// with a state of its own made by `init`, and gives the results to `take` in the order of
/// `items`. Once `take` returns false, no further item is handed out and no further result is
/// taken. `items` is drawn on the calling thread, so a walk behind it stays sequential. A panic
/// in `work` stops everything and resumes on the calling thread.
pub(super) fn for_each_in_order<T, S, R>(
    items: impl Iterator<Item = T>,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, T) -> R + Sync,
    mut take: impl FnMut(R) -> bool,
) where
    T: Send,
    R: Send,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(MAX_THREADS);
    let stopped = AtomicBool::new(false);
    let (hand_out, queue) = mpsc::sync_channel::<(usize, Vec<T>)>(WINDOW);
    let queue = Mutex::new(queue);
    let (report, results) = mpsc::channel::<(usize, Batch<R>)>();
    let mut merge = InOrder::default();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let report = report.clone();
            let (queue, init, work, stopped) = (&queue, &init, &work, &stopped);
            scope.spawn(move || {
                let mut state = init();
                loop {
                    // The lock is held while waiting: the other threads wait on it instead.
                    let next = queue
                        .lock()
                        .map_err(drop)
                        .and_then(|q| q.recv().map_err(drop));
                    let Ok((index, batch)) = next else { return };
                    let done = panic::catch_unwind(AssertUnwindSafe(|| {
                        let mut done = Vec::with_capacity(batch.len());
                        for item in batch {
                            if stopped.load(Ordering::Relaxed) {
                                return None;
                            }
                            done.push(work(&mut state, item));
                        }
                        Some(done)
                    }));
                    let done = match done {
                        Ok(Some(done)) => Ok(done),
                        Ok(None) => return,
                        // Everything stops, and the panic goes on from the calling thread; a
                        // batch that never came would leave it waiting for ever.
                        Err(panic) => {
                            stopped.store(true, Ordering::Relaxed);
                            Err(panic)
                        }
                    };
                    if report.send((index, done)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(report);
        let mut handed_out = 0;
        let mut items = items.peekable();
        while items.peek().is_some() {
            while handed_out - merge.next >= WINDOW && !merge.stopped {
                match results.recv() {
                    Ok(result) => merge.add(result, &mut take),
                    Err(_) => break,
                }
            }
            let batch: Vec<T> = items.by_ref().take(BATCH).collect();
            if merge.stopped || hand_out.send((handed_out, batch)).is_err() {
                break;
            }
            handed_out += 1;
            while let Ok(result) = results.try_recv() {
                merge.add(result, &mut take);
            }
        }
        if merge.stopped {
            stopped.store(true, Ordering::Relaxed);
        }
        // No more items: the threads end once the queue is empty.
        drop(hand_out);
        while merge.next < handed_out && !merge.stopped {
            match results.recv() {
                Ok(result) => merge.add(result, &mut take),
                Err(_) => break,
            }
        }
        stopped.store(true, Ordering::Relaxed);
    });
    if let Some(panic) = merge.panic {
        panic::resume_unwind(panic);
    }
}

/// A batch's results, or the panic that cut its work short.
type Batch<R> = Result<Vec<R>, Box<dyn Any + Send>>;

/// Batches of results that arrived out of order, held until those before them are taken.
struct InOrder<R> {
    /// The index of the next batch to take.
    next: usize,
    waiting: BTreeMap<usize, Vec<R>>,
    /// `take` asked for no more, or the work panicked.
    stopped: bool,
    /// The first panic of the work.
    panic: Option<Box<dyn Any + Send>>,
}

impl<R> Default for InOrder<R> {
    fn default() -> Self {
        InOrder {
            next: 0,
            waiting: BTreeMap::new(),
            stopped: false,
            panic: None,
        }
    }
}

impl<R> InOrder<R> {
    fn add(&mut self, (index, batch): (usize, Batch<R>), take: &mut impl FnMut(R) -> bool) {
        let batch = match batch {
            Ok(batch) => batch,
            Err(panic) => {
                self.stopped = true;
                self.panic.get_or_insert(panic);
                return;
            }
        };
        self.waiting.insert(index, batch);
        while let Some(batch) = self.waiting.remove(&self.next) {
            self.next += 1;
            for result in batch {
                if !self.stopped && !take(result) {
                    self.stopped = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[test]
    fn results_come_in_item_order_whatever_order_they_finish_in() {
        let mut taken = Vec::new();
        for_each_in_order(
            0..1000u64,
            || (),
            |(), n| {
                // Early items finish last.
                if n < 8 {
                    std::thread::sleep(Duration::from_millis(8 - n));
                }
                n * 2
            },
            |doubled| {
                taken.push(doubled);
                true
            },
        );
        assert_eq!(taken, (0..1000).map(|n| n * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_stop_ends_the_taking_and_soon_the_handing_out() {
        let worked = AtomicUsize::new(0);
        let mut taken = Vec::new();
        for_each_in_order(
            0..100_000usize,
            || (),
            |(), n| {
                worked.fetch_add(1, Ordering::Relaxed);
                n
            },
            |n| {
                taken.push(n);
                n < 9
            },
        );
        assert_eq!(taken, (0..10).collect::<Vec<_>>());
        assert!(
            worked.load(Ordering::Relaxed) < 100_000,
            "the items after the stop were not all worked on"
        );
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller_instead_of_hanging() {
        let outcome = panic::catch_unwind(|| {
            for_each_in_order(
                0..10_000usize,
                || (),
                |(), n| {
                    assert!(n != 40, "item 40 is bad");
                    n
                },
                |_| true,
            );
        });
        let panic = outcome.expect_err("the panic came through");
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
        assert_eq!(message, Some("item 40 is bad"));
    }

    #[test]
    fn no_items_take_nothing() {
        let mut taken = 0;
        for_each_in_order(
            std::iter::empty::<u8>(),
            || (),
            |(), n| n,
            |_| {
                taken += 1;
                true
            },
        );
        assert_eq!(taken, 0);
    }
}
