//! `convo-doctor diagnose PATH...`: discover, filter (shard, mtime), analyse
//! in parallel, render in path order as each result becomes next in line.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

use super::{select, ExitStatus};
use crate::batch::{ordered, scan, since};
use crate::checks::Severity;
use crate::cli::{DiagnoseArgs, FailOn};
use crate::render::{self, output::Output, progress::Progress, severity, Summary};
use crate::report::{analyze, ConversationReport, Options};

pub fn threshold(f: FailOn) -> Option<Severity> {
    match f {
        FailOn::Info => Some(Severity::Info),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Error => Some(Severity::Error),
        FailOn::Never => None,
    }
}

/// What became of one conversation of the scan.
enum Scanned {
    Report(Box<ConversationReport>),
    /// Passed over by `--since` / `--changed-since`.
    Unmodified,
}

/// Results held at once per worker thread, waiting for their turn to be
/// printed: bounds memory whatever the size of the store.
const WINDOW_PER_THREAD: usize = 8;

/// Whether `--hide-clean` leaves a conversation out: nothing at or above
/// `--fail-on` (with `never`, nothing above info).
pub fn hidden_as_clean(r: &ConversationReport, fail_on: FailOn) -> bool {
    let bar = threshold(fail_on).unwrap_or(Severity::Warning);
    severity(r).is_none_or(|s| s < bar)
}

pub fn diagnose(args: &DiagnoseArgs, color: bool) -> anyhow::Result<ExitStatus> {
    let started = Instant::now();
    let selected = select(&args.only, &args.skip)?;
    let cutoff = since::cutoff(args.since, args.changed_since.as_deref())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.map_or(0, usize::from))
        .build()
        .context("cannot start worker threads")?;
    let events = args.events && shows_events(args.format);
    if args.events && !events {
        render::warning("--events lists events in the human, json and jsonl formats only; ignored");
    }
    let opts = Options {
        version: args.server_version.unwrap_or(crate::version::NEWEST),
        version_given: args.server_version.is_some(),
        selected: &selected,
        event_list: events,
    };
    let color = color && args.format == render::Format::Human;
    // --tree draws in the human format; the Markdown report always has trees
    let tree = (args.tree && args.format == render::Format::Human)
        || args.format == render::Format::Markdown;
    if args.tree && !tree {
        render::warning("--tree draws in the human format only (and `--format markdown` always has trees); ignored");
    }
    let mut out = Output::new(args.output_file.as_deref(), args.quiet)?;
    let mut renderer = render::renderer(args.format, color);
    let mut summary = Summary::default();

    let scan = scan::discover(&args.paths, args.allow_empty);
    summary.notes.extend(scan.notes);
    for e in scan.errors {
        summary.error(e);
    }
    let mut list: Vec<PathBuf> = scan.conversations.into_iter().map(|(d, _)| d).collect();
    let mut status = if summary.errors > 0 {
        ExitStatus::Error
    } else {
        ExitStatus::Success
    };
    if let Some(shard) = args.shard {
        list.retain(|dir| shard.contains(dir));
        summary.shard = Some(shard.to_string());
    }

    let fail = threshold(args.fail_on);
    // shared with the progress bar's counting thread, not copied
    let list: std::sync::Arc<[PathBuf]> = list.into();
    let mut progress = Progress::new(&list, !args.quiet);
    let mut write_error: Option<io::Error> = None;
    let work = |i: usize| {
        let dir = &list[i];
        if cutoff.is_some_and(|c| !since::modified_since(dir, c)) {
            return Scanned::Unmodified;
        }
        let display = dir.display().to_string();
        Scanned::Report(Box::new(if tree {
            crate::report::analyze_tree(dir, display, &opts)
        } else {
            analyze(dir, display, &opts)
        }))
    };
    let emit = |i: usize, done: ordered::Done<Scanned>| {
        let report = match done {
            Ok(Scanned::Report(r)) => r,
            Ok(Scanned::Unmodified) => {
                summary.skipped_unmodified += 1;
                progress.done(0);
                return true;
            }
            Err(panic) => {
                // A bug must not cost the rest of the scan: say so, go on,
                // and exit 2 at the end.
                summary.error(format!(
                    "`{}` could not be analysed (internal error: {panic}); please report it",
                    list[i].display()
                ));
                status = ExitStatus::Error;
                progress.done(0);
                return true;
            }
        };
        progress.done(report.events.on_disk);
        // Files this user may not read: the folder may be fine for its
        // owner, so its findings would be guesses. A scan error, not a report.
        if let Some(first) = report.access_errors.first() {
            summary.error(scan_error(first, &report));
            status = ExitStatus::Error;
            return true;
        }
        let worst = severity(&report);
        if status == ExitStatus::Success && fail.is_some_and(|t| worst.is_some_and(|w| w >= t)) {
            status = ExitStatus::Findings;
        }
        summary.add(&report);
        if args.hide_clean && hidden_as_clean(&report, args.fail_on) {
            return true;
        }
        match progress.suspend(|| renderer.conversation(&mut out, &report)) {
            Ok(()) => true,
            Err(e) => {
                write_error = Some(e);
                false
            }
        }
    };
    ordered::run(
        &pool,
        list.len(),
        pool.current_num_threads() * WINDOW_PER_THREAD,
        work,
        emit,
    );
    progress.finish();
    if let Some(e) = write_error {
        return Ok(broken_pipe_or_error(e));
    }
    summary.elapsed = Some(started.elapsed());
    if let Err(e) = renderer.finish(&mut out, &summary) {
        return Ok(broken_pipe_or_error(e));
    }
    Ok(out.finish(status))
}

/// Whether a format shows `--events`' listing.
fn shows_events(f: render::Format) -> bool {
    matches!(
        f,
        render::Format::Human | render::Format::Json | render::Format::Jsonl
    )
}

/// A conversation's first access error, with how many more it had.
pub fn scan_error(first: &str, r: &ConversationReport) -> String {
    match r.access_errors.len() - 1 {
        0 => first.to_string(),
        n => format!(
            "{first} (and {} in `{}`)",
            crate::checks::plural(n, "more file", "more files"),
            r.path
        ),
    }
}

/// A closed pipe (`| head`) ends the run quietly; other write errors are errors.
pub fn broken_pipe_or_error(e: io::Error) -> ExitStatus {
    if e.kind() == io::ErrorKind::BrokenPipe {
        ExitStatus::Success
    } else {
        render::error(&format!("cannot write the report: {e}"));
        ExitStatus::Error
    }
}
