//! The progress bar: on stderr, and only when stderr is a terminal (never in
//! cron, never mixed into stdout).

use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    events: u64,
    started: Instant,
}

impl Progress {
    /// A bar over `total` conversations, drawn only if `enabled` and stderr
    /// is a terminal.
    pub fn new(total: usize, enabled: bool) -> Progress {
        let bar = (enabled && io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(8),
            );
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} conversations  {msg}  ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            events: 0,
            started: Instant::now(),
        }
    }

    /// One conversation done, holding `events` event files.
    pub fn done(&mut self, events: usize) {
        self.events += events as u64;
        if let Some(bar) = &self.bar {
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!("{:.0} events/s", self.events as f64 / secs));
            bar.inc(1);
        }
    }

    /// Run `f` (which writes to the terminal) with the bar cleared.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
