//! The parallel pipeline `diagnose` and `repair` both run, set up once: the
//! checks selected (`--only`, `--skip`), the `--since` / `--changed-since`
//! cutoff, the worker threads (`--jobs`), and the run itself: each
//! conversation read on the pool ahead of its turn, handed back in path
//! order, a bounded window of results held at once.

use std::path::Path;
use std::time::SystemTime;

use crate::batch::{ordered, since};
use crate::cli::{RunArgs, ScanArgs, Words};

/// Whether a check id is selected.
pub type Selected = dyn Fn(&str) -> bool + Send + Sync;

pub struct Pipeline {
    /// `--only` / `--skip`.
    pub selected: Box<Selected>,
    /// `--since` / `--changed-since`.
    pub cutoff: Option<SystemTime>,
    pool: rayon::ThreadPool,
    /// Results held at once per worker thread, waiting for their turn.
    window_per_thread: usize,
}

impl Pipeline {
    /// Bad options are an error here, before anything is read or written.
    pub fn new<W: Words>(
        scan: &ScanArgs<W>,
        run: &RunArgs<W>,
        window_per_thread: usize,
    ) -> anyhow::Result<Self> {
        let selected = Box::new(super::select(&scan.only, &scan.skip)?);
        let cutoff = since::cutoff(scan.since, scan.changed_since.as_deref())?;
        Ok(Pipeline {
            selected,
            cutoff,
            pool: pool(run.jobs)?,
            window_per_thread,
        })
    }

    /// Whether `--since` / `--changed-since` passes this folder (or file) over.
    pub fn unmodified(&self, path: &Path) -> bool {
        self.cutoff.is_some_and(|c| !since::modified_since(path, c))
    }

    /// `work(i)` for every `i` in `0..n` on the pool, `emit(i, result)` here
    /// in increasing `i` ([`ordered::run`]).
    pub fn run<T, F, E>(&self, n: usize, work: F, emit: E)
    where
        T: Send,
        F: Fn(usize) -> T + Sync,
        E: FnMut(usize, ordered::Done<T>) -> bool,
    {
        let window = self.pool.current_num_threads() * self.window_per_thread;
        ordered::run(&self.pool, n, window, work, emit);
    }
}

/// The worker threads of a scan (`--jobs`; default one per core).
fn pool(jobs: Option<u16>) -> anyhow::Result<rayon::ThreadPool> {
    use anyhow::Context;
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.map_or(0, usize::from))
        .build()
        .context("cannot start worker threads")
}
