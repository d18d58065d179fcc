//! Run a job per item on a thread pool and hand the results back in item
//! order, as soon as each is next in line, holding at most `window` results
//! at once (memory stays flat however many items there are).

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

/// A job's result, or the message of the panic that ended it.
pub type Done<T> = Result<T, String>;

/// Call `work(i)` for every `i` in `0..n` on `pool`, and `emit(i, result)` on
/// the calling thread in increasing `i`. At most `window` jobs are queued,
/// running or waiting to be emitted. `emit` returning `false` stops the run:
/// no new job starts, and those in flight are awaited and dropped.
/// A job that panics is reported as `Err(message)`; the others carry on.
pub fn run<T, W, E>(pool: &rayon::ThreadPool, n: usize, window: usize, work: W, mut emit: E)
where
    T: Send,
    W: Fn(usize) -> T + Sync,
    E: FnMut(usize, Done<T>) -> bool,
{
    let window = window.max(1);
    let (tx, rx) = mpsc::channel::<(usize, Done<T>)>();
    let work = &work;
    pool.in_place_scope(|scope| {
        let mut next_job = 0;
        let mut next_emit = 0;
        let mut waiting: BTreeMap<usize, Done<T>> = BTreeMap::new();
        let mut go_on = true;
        while go_on && next_emit < n {
            // Keep the window full: jobs started but not yet emitted.
            while next_job < n && next_job - next_emit < window {
                let tx = tx.clone();
                let i = next_job;
                scope.spawn(move |_| {
                    let r = catch_unwind(AssertUnwindSafe(|| work(i))).map_err(panic_message);
                    // The receiver is gone only when the run was stopped.
                    let _ = tx.send((i, r));
                });
                next_job += 1;
            }
            let Ok((i, r)) = rx.recv() else { break };
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&next_emit) {
                if !emit(next_emit, r) {
                    go_on = false;
                    break;
                }
                next_emit += 1;
            }
        }
        drop(waiting);
    });
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn pool(n: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    }

    #[test]
    fn results_come_back_in_order_with_a_bounded_window() {
        let running = AtomicUsize::new(0);
        let emitted = AtomicUsize::new(0);
        let mut got = Vec::new();
        run(
            &pool(4),
            500,
            8,
            |i| {
                // Started jobs never run more than the window ahead of emission.
                assert!(i < emitted.load(Ordering::SeqCst) + 8);
                running.fetch_add(1, Ordering::SeqCst);
                if i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                i * 2
            },
            |i, r| {
                got.push((i, r.unwrap()));
                emitted.fetch_add(1, Ordering::SeqCst);
                true
            },
        );
        assert_eq!(got, (0..500).map(|i| (i, i * 2)).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_does_not_stop_the_others() {
        let mut got = Vec::new();
        run(
            &pool(2),
            10,
            4,
            |i| {
                if i == 3 {
                    panic!("boom at {i}");
                }
                i
            },
            |_, r| {
                got.push(r);
                true
            },
        );
        assert_eq!(got.len(), 10);
        assert_eq!(got[3], Err("boom at 3".to_string()));
        assert_eq!(got[9], Ok(9));
    }

    #[test]
    fn emit_false_stops_the_run() {
        let started = AtomicUsize::new(0);
        let mut seen = 0;
        run(
            &pool(2),
            1000,
            4,
            |i| {
                started.fetch_add(1, Ordering::SeqCst);
                i
            },
            |i, _| {
                seen += 1;
                i < 5
            },
        );
        assert_eq!(seen, 6);
        assert!(started.load(Ordering::SeqCst) <= 6 + 4);
    }
}
