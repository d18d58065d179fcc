//! The progress bar: on stderr, only when stderr is a terminal and stdout is
//! not a pipe (never in cron, never mixed into stdout, never fighting a pager
//! or `head` that writes the report to the same terminal).
//!
//! It estimates by event files: the work of a conversation is opening,
//! reading and parsing them, so a store of a few huge conversations and many
//! small ones gets an honest ETA, which counting conversations does not. The
//! counts come from a thread that lists each `events/` folder (no `stat` per
//! file: bytes would cost one, about 13% more CPU on a store of 25,000 small
//! events where listing costs about 3%: bench/floor.py with PTY=1) while the scan runs, so the scan never
//! waits for it; it exists only while a bar is drawn.

use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

pub struct Progress {
    bar: Option<ProgressBar>,
    counts: Option<Arc<Counts>>,
    /// Conversations done (the scan hands them back in order, so this is
    /// also the index of the next one).
    done: usize,
    total: usize,
    done_events: u64,
}

/// What the counting thread found so far.
struct Counts {
    /// Event files of each conversation, in scan order; valid below `counted`.
    each: Vec<AtomicU64>,
    /// How many conversations (a prefix of the list) are counted.
    counted: AtomicUsize,
    /// Their event files.
    events: AtomicU64,
    /// The bar is gone: stop counting.
    stop: AtomicBool,
}

/// How long a scan runs before its bar is drawn: a short run (most single
/// conversations) leaves no flash of a bar on the terminal.
pub const DRAW_AFTER: Duration = Duration::from_secs(1);

/// Whether a bar may be drawn: stderr is a terminal that can move its
/// cursor (`TERM` set, and not `dumb`: Emacs' shell, some CI consoles), and
/// stdout is not a pipe or a socket, whose reader (`less`, `head`, `grep`)
/// likely writes to that same terminal, where bar and report would
/// overwrite each other and a reader that quits early would leave the bar's
/// last line behind.
fn drawable() -> bool {
    if !io::stderr().is_terminal() {
        return false;
    }
    if std::env::var("TERM").map_or(true, |t| t.is_empty() || t == "dumb") {
        return false;
    }
    match rustix::fs::fstat(io::stdout()) {
        Ok(st) => !matches!(
            rustix::fs::FileType::from_raw_mode(st.st_mode),
            rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket
        ),
        Err(_) => true,
    }
}

/// The event files of a conversation: the entries of its `events/` folder,
/// from the listing alone (no `stat` per file).
fn conversation_events(dir: &Path) -> u64 {
    fs::read_dir(dir.join("events")).map_or(0, |rd| rd.count() as u64)
}

impl Progress {
    /// A bar over the conversations `list`, drawn only if `enabled` and the
    /// terminal allows it (see `drawable`).
    pub fn new(list: &Arc<[PathBuf]>, enabled: bool) -> Progress {
        let total = list.len();
        let mut progress = Progress {
            bar: None,
            counts: None,
            done: 0,
            total,
            done_events: 0,
        };
        if !(enabled && drawable()) || total == 0 {
            return progress;
        }
        let counts = Arc::new(Counts {
            each: (0..total).map(|_| AtomicU64::new(0)).collect(),
            counted: AtomicUsize::new(0),
            events: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let list = Arc::clone(list);
        let s = Arc::clone(&counts);
        let spawned = std::thread::Builder::new()
            .name("progress-counter".into())
            .spawn(move || {
                for (i, dir) in list.iter().enumerate() {
                    if s.stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let b = conversation_events(dir);
                    s.each[i].store(b, Ordering::Relaxed);
                    s.events.fetch_add(b, Ordering::Relaxed);
                    s.counted.store(i + 1, Ordering::Release);
                }
            });
        if spawned.is_err() {
            return progress;
        }
        let bar = ProgressBar::with_draw_target(
            None,
            ProgressDrawTarget::term_like_with_hz(
                Box::new(Stderr {
                    from: std::time::Instant::now() + DRAW_AFTER,
                    pending: std::sync::Mutex::new(String::new()),
                }),
                8,
            ),
        );
        // before anything is drawn
        clear_on_interrupt(&bar);
        bar.set_style(
            ProgressStyle::with_template("{wide_bar} {amount}  {msg}  ETA {by_events}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("amount", amount)
                .with_key("by_events", eta_by_events),
        );
        bar.set_message(format!("0/{total} conversations"));
        bar.enable_steady_tick(Duration::from_millis(250));
        progress.bar = Some(bar);
        progress.counts = Some(counts);
        progress.update();
        progress
    }

    /// One conversation done, `events` event files on disk as the scan
    /// counted them (0 for one passed over). The listing's count is used when
    /// there is one, so done and total are counted alike.
    pub fn done(&mut self, events: usize) {
        let i = self.done;
        self.done += 1;
        if let Some(counts) = &self.counts {
            let counted = counts.counted.load(Ordering::Acquire);
            self.done_events += match counts.each.get(i) {
                Some(n) if i < counted => n.load(Ordering::Relaxed),
                // the lister is behind (rare: it only lists): the scan's count
                _ => events as u64,
            };
        }
        self.update();
    }

    /// Events done and the store's events: all of them once listed, until
    /// then the listed part scaled up to the whole list.
    fn update(&self) {
        let (Some(bar), Some(counts)) = (&self.bar, &self.counts) else {
            return;
        };
        let counted = counts.counted.load(Ordering::Acquire);
        let events = counts.events.load(Ordering::Relaxed);
        if counted > 0 {
            let estimate = (events as u128 * self.total as u128 / counted as u128) as u64;
            bar.set_length(estimate.max(self.done_events));
        }
        bar.set_position(self.done_events);
        bar.set_message(format!("{}/{} conversations", self.done, self.total));
    }

    /// Run `f` (which writes to the terminal) with the bar cleared.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Clear the bar (nothing of it stays on the terminal) and stop counting.
    pub fn finish(&self) {
        if let Some(counts) = &self.counts {
            counts.stop.store(true, Ordering::Relaxed);
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The terminal on stderr, as indicatif draws on it, two columns narrower
/// than it is: indicatif pads the bar's line to the full width and leaves the
/// cursor at its end, where the terminal's `^C` echo would wrap onto a new
/// line and the clearing would then miss the bar's. With two columns spare
/// the echo stays on the bar's line and is cleared with it. Nothing is
/// written before `from` ([`DRAW_AFTER`] into the run): the bar is one line,
/// so a draw or a clear that never reached the terminal leaves nothing to
/// undo.
/// The bar's terminal. A draw is collected and written in one `write` at
/// its `flush`: a Ctrl-C makes the terminal discard the output not yet
/// shown, and a draw sent in pieces could lose its leading "clear the line"
/// yet print the rest after the echoed `^C`, on a second line that the
/// final clear never reaches.
#[derive(Debug)]
struct Stderr {
    from: std::time::Instant,
    pending: std::sync::Mutex<String>,
}

impl Stderr {
    fn put_now(&self, s: &str) -> io::Result<()> {
        if std::time::Instant::now() < self.from {
            return Ok(());
        }
        if let Ok(mut p) = self.pending.lock() {
            p.push_str(s);
        }
        Ok(())
    }

    fn size() -> (u16, u16) {
        terminal_size::terminal_size_of(io::stderr())
            .map(|(w, h)| (w.0, h.0))
            .filter(|&(w, h)| w > 0 && h > 0)
            .unwrap_or((80, 24))
    }
}

impl TermLike for Stderr {
    /// Three columns short of the terminal: the bar is padded to this width,
    /// and the `^C` a terminal echoes after it must not reach the last
    /// column, or the next output would wrap to a line no clear reaches.
    fn width(&self) -> u16 {
        Self::size().0.saturating_sub(3).max(20)
    }

    fn height(&self) -> u16 {
        Self::size().1
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put_now(&format!("\x1b[{n}A"))
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put_now(&format!("\x1b[{n}B"))
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put_now(&format!("\x1b[{n}C"))
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put_now(&format!("\x1b[{n}D"))
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.put_now(&format!("{s}\n"))
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        self.put_now(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.put_now("\r\x1b[2K")
    }

    fn flush(&self) -> io::Result<()> {
        let draw = match self.pending.lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(_) => return Ok(()),
        };
        if draw.is_empty() {
            return Ok(());
        }
        let mut err = io::stderr().lock();
        err.write_all(draw.as_bytes())?;
        err.flush()
    }
}

/// Ctrl-C (or a `kill`) while the bar is drawn: clear it, then die of the
/// signal as if it were not caught (the shell still sees 130 for Ctrl-C), so
/// no stale bar line stays on the terminal. A dying process runs no `Drop`,
/// hence a thread that waits for the signal; it lives as long as the
/// process, because once caught a signal would otherwise no longer end it.
fn clear_on_interrupt(bar: &ProgressBar) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let bar = bar.clone();
    let _ = std::thread::Builder::new()
        .name("progress-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                bar.finish_and_clear();
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                std::process::exit(128 + sig);
            }
        });
}

/// `1200/24624 events`: events done of the store's (`counting…` until the
/// first conversation is listed).
fn amount(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = match state.len() {
        None => w.write_str("counting…"),
        Some(len) => write!(w, "{}/{} events", state.pos(), len),
    };
}

/// The time left at the rate so far: elapsed × events left ÷ events done
/// (`-` until a conversation is done). Plain arithmetic on the totals, so
/// one slow first conversation cannot make it jump to hours.
fn eta_by_events(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let eta = state
        .len()
        .and_then(|len| eta(state.elapsed(), state.pos(), len));
    let _ = w.write_str(&eta.map_or_else(|| "-".to_string(), clock));
}

/// Seconds left when `done` of `total` events took `elapsed`: `None` until
/// something is done.
fn eta(elapsed: Duration, done: u64, total: u64) -> Option<f64> {
    (done > 0 && done <= total).then(|| elapsed.as_secs_f64() * (total - done) as f64 / done as f64)
}

/// `42s`, `3m05s`, `2h07m`.
fn clock(secs: f64) -> String {
    let s = secs.round().min(u32::MAX as f64) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_is_the_rate_so_far_over_the_events_left() {
        let s = Duration::from_secs;
        assert_eq!(eta(s(3), 0, 1000), None);
        // 30 s in, a tenth of the events done: 270 s left
        assert_eq!(eta(s(30), 1_000, 10_000), Some(270.0));
        // one big conversation of 9,000 events and 100 of 10 each: the first
        // done after 27 s leaves a tenth of the events, 3 s, where counting
        // conversations would say 100 × 27 s
        assert_eq!(eta(s(27), 9_000, 10_000), Some(3.0));
        assert_eq!(eta(s(5), 10, 10), Some(0.0));
    }

    #[test]
    fn clock_reads_like_a_clock() {
        assert_eq!(clock(0.2), "0s");
        assert_eq!(clock(59.4), "59s");
        assert_eq!(clock(65.0), "1m05s");
        assert_eq!(clock(7620.0), "2h07m");
    }
}
