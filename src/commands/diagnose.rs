//! `convo-doctor diagnose PATH...`: discover, filter (shard, mtime), analyse
//! in parallel, render in path order as each result becomes next in line.

use std::io;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use anyhow::Context;

use super::{select, ExitStatus};
use crate::batch::{ordered, since};
use crate::checks::Severity;
use crate::cli::{DiagnoseArgs, FailOn};
use crate::render::{self, progress::Progress, severity, Summary};
use crate::report::{analyze, ConversationReport, Options};
use crate::store::discover::find;

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

fn cutoff(args: &DiagnoseArgs) -> anyhow::Result<Option<SystemTime>> {
    if let Some(d) = args.since {
        return Ok(Some(since::cutoff_since(d)));
    }
    match &args.changed_since {
        Some(file) => since::cutoff_of_file(file),
        None => Ok(None),
    }
}

/// Whether `--hide-clean` leaves a conversation out: nothing at or above
/// `--fail-on` (with `never`, nothing above info).
pub fn hidden_as_clean(r: &ConversationReport, fail_on: FailOn) -> bool {
    let bar = threshold(fail_on).unwrap_or(Severity::Warning);
    severity(r).is_none_or(|s| s < bar)
}

pub fn diagnose(args: &DiagnoseArgs, color: bool) -> anyhow::Result<ExitStatus> {
    let started = Instant::now();
    let selected = select(&args.only, &args.skip)?;
    let cutoff = cutoff(args)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.map_or(0, usize::from))
        .build()
        .context("cannot start worker threads")?;
    let opts = Options {
        version: args.server_version.unwrap_or(crate::version::NEWEST),
        version_given: args.server_version.is_some(),
        selected: &selected,
        event_list: args.events,
    };
    let color = color && args.format == render::Format::Human;
    // --tree draws in the human format; the Markdown report always has trees
    let tree = (args.tree && args.format == render::Format::Human)
        || args.format == render::Format::Markdown;
    if args.tree && !tree {
        render::warning("--tree draws in the human format only (and `--format markdown` always has trees); ignored");
    }
    let mut renderer = render::renderer(args.format, color);
    let mut summary = Summary::default();
    let mut status = ExitStatus::Success;

    let mut list: Vec<PathBuf> = Vec::new();
    for path in &args.paths {
        match find(path) {
            Ok(found) => {
                summary.notes.extend(found.notes);
                if let Some(instead) = found.instead {
                    let msg = format!("no conversation in `{}`: found {instead}", path.display());
                    if args.allow_empty {
                        summary.notes.push(msg);
                    } else {
                        render::error(&format!(
                            "{msg} (pass --allow-empty if an empty PATH is expected)"
                        ));
                        status = ExitStatus::Error;
                        summary.errors += 1;
                    }
                }
                list.extend(found.conversations);
            }
            Err(e) => {
                render::fail(&e);
                status = ExitStatus::Error;
                summary.errors += 1;
            }
        }
    }
    if let Some(shard) = args.shard {
        list.retain(|dir| shard.contains(dir));
        summary.shard = Some(shard.to_string());
    }

    let fail = threshold(args.fail_on);
    // shared with the progress bar's counting thread, not copied
    let list: std::sync::Arc<[PathBuf]> = list.into();
    let mut progress = Progress::new(&list, !args.quiet);
    let stdout = io::stdout();
    let mut w = stdout.lock();
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
                summary.notes.push(format!(
                    "`{}` could not be analysed (internal error: {panic}); please report it",
                    list[i].display()
                ));
                status = ExitStatus::Error;
                summary.errors += 1;
                progress.done(0);
                return true;
            }
        };
        progress.done(report.events.on_disk);
        let worst = severity(&report);
        if status == ExitStatus::Success && fail.is_some_and(|t| worst.is_some_and(|w| w >= t)) {
            status = ExitStatus::Findings;
        }
        summary.add(&report);
        if args.hide_clean && hidden_as_clean(&report, args.fail_on) {
            return true;
        }
        match progress.suspend(|| renderer.conversation(&mut w, &report)) {
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
    if let Err(e) = renderer.finish(&mut w, &summary) {
        return Ok(broken_pipe_or_error(e));
    }
    Ok(status)
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
