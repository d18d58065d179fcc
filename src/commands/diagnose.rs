//! `convo-doctor diagnose PATH...`: discover, filter (shard, mtime), analyse
//! in parallel, render in path order as each result becomes next in line.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

mod sources;

/// Also here, where the Claude Code and Codex repairs call it.
pub use super::broken_pipe_or_error;
use super::pipeline::Pipeline;
use super::{scan_error, threshold, ExitStatus};
use crate::batch::{ordered, scan};
use crate::checks::Severity;
use crate::cli::{DiagnoseArgs, FailOn};
use crate::render::{self, output::Output, progress::Progress, severity, Summary};
use crate::report::{ConversationReport, Options};
use sources::{
    claude_paths, codex_paths, default_paths, open_sources, own_sessions, sdk_store, wanted,
};

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
    // bad options: nothing is written (a report file is left as it was)
    let pipe = Pipeline::new(&args.scan, &args.run, WINDOW_PER_THREAD)?;
    let color = color && args.format == render::Format::Human;
    let mut out = Output::new(args.run.output_file.as_deref(), args.run.quiet)?;
    let mut renderer = render::renderer(args.format, color);
    let mut summary = Summary::default();
    // An error that ends the run is still a report: every format, `-o`
    // included, says the run failed (exit 2), so a consumer never keeps
    // the previous run's figures.
    let status = match run_scan(args, &pipe, &mut out, &mut *renderer, &mut summary) {
        Ok(Ran::Scanned(status)) => status,
        Ok(Ran::Abandoned(status)) => return status,
        Err(e) => {
            summary.fail(format!("{e:#}"));
            ExitStatus::Error
        }
    };
    summary.elapsed = Some(started.elapsed());
    if let Err(e) = renderer.finish(&mut out, &summary) {
        return broken_pipe_or_error(e);
    }
    Ok(out.finish(status))
}

/// How a scan ended, when no error ended it.
enum Ran {
    /// The exit status, the summary to write.
    Scanned(ExitStatus),
    /// The report could not be written (a closed pipe, or the error that
    /// ends the command): nothing more to say.
    Abandoned(anyhow::Result<ExitStatus>),
}

fn run_scan(
    args: &DiagnoseArgs,
    pipe: &Pipeline,
    out: &mut Output,
    renderer: &mut dyn render::Renderer,
    summary: &mut Summary,
) -> anyhow::Result<Ran> {
    let selected: &(dyn Fn(&str) -> bool + Sync) = &*pipe.selected;
    let events = args.events && shows_events(args.format);
    if args.events && !events {
        render::warning("--events lists events in the human, json and jsonl formats only; ignored");
    }
    let opts = Options {
        version: args.rules.server_version.unwrap_or(crate::version::NEWEST),
        version_given: args.rules.server_version.is_some(),
        selected,
        event_list: events,
    };
    // --tree draws in the human format; the Markdown report always has trees
    let tree = (args.tree && args.format == render::Format::Human)
        || args.format == render::Format::Markdown;
    if args.tree && !tree {
        render::warning("--tree draws in the human format only (and `--format markdown` always has trees); ignored");
    }

    // No PATH: look where OpenHands products keep conversations.
    let defaults = args
        .paths
        .is_empty()
        .then(crate::store::discover::Env::here);
    let (paths, sdk_roots) = match &defaults {
        Some(env) => default_paths(env, summary),
        None => (args.paths.clone(), Vec::new()),
    };
    // Claude Code sessions (a `.jsonl` file, a project folder,
    // `~/.claude/projects`): the Claude Code adapter's, each a report
    // Codex rollouts (a rollout, a sessions tree, `CODEX_HOME`): the Codex
    // adapter's, looked for first (a rollout is a `.jsonl` file too)
    let (mut codex, paths) = codex_paths(paths, summary);
    let (mut claude, paths) = claude_paths(paths, summary);
    // No PATH: the invoking user's own Claude Code and Codex sessions too,
    // under the same discovery rules
    if let Some(env) = &defaults {
        let (c, x) = own_sessions(env, summary);
        claude.extend(c);
        codex.extend(x);
    }
    let sources = open_sources(args, defaults.as_ref(), summary)?;
    let no_sessions = claude.is_empty() && codex.is_empty();
    if args.paths.is_empty()
        && paths.is_empty()
        && no_sessions
        && sources.is_none()
        && !args.scan.allow_empty
    {
        summary.fail("no conversation found where OpenHands keeps them, nor a Claude Code or Codex session of this user (see the notes), and no PATH given (pass --allow-empty if that is expected)".to_string());
    }
    let scan = if paths.is_empty() && !(claude.is_empty() && codex.is_empty()) {
        scan::Scan::default()
    } else {
        scan::discover(&paths, args.scan.allow_empty)
    };
    summary.notes.extend(scan.notes);
    for e in scan.errors {
        summary.error(e);
    }
    let mut list: Vec<PathBuf> = scan.conversations.into_iter().map(|(d, _)| d).collect();
    // a side holding nothing is no side to compare with: the run fails
    if let Some(e) = sources.as_ref().and_then(|s| s.empty_side(list.len())) {
        anyhow::bail!("{e}");
    }
    if let Some(shard) = args.scan.shard {
        list.retain(|dir| shard.contains(dir));
        summary.shard = Some(shard.to_string());
    }
    // --id: only the conversations named (a folder not named by an id is
    // analysed, and kept when the id it carries is named)
    let mut wanted = wanted(args, &list, sources.as_ref(), summary);
    let every_id = wanted.is_none();
    if let Some(w) = &wanted {
        list.retain(|d| crate::batch::ids::folder_hex(d).is_none_or(|h| w.contains(&h)));
    }
    // The app server's conversations no folder carries, in the same shards.
    let records: Vec<String> = match &sources {
        Some(src) => {
            let folder_ids = list
                .iter()
                .filter_map(|d| crate::batch::ids::folder_hex(d))
                .collect();
            let mut ids = src.record_ids(&folder_ids);
            if let Some(shard) = args.scan.shard {
                ids.retain(|id| shard.contains(std::path::Path::new(id)));
            }
            if let Some(w) = &wanted {
                ids.retain(|id| w.contains(id));
            }
            ids
        }
        None => Vec::new(),
    };
    let mut status = if summary.errors > 0 {
        ExitStatus::Error
    } else {
        ExitStatus::Success
    };

    let fail = threshold(args.rules.fail_on);
    // shared with the progress bar's counting thread, not copied
    let list: std::sync::Arc<[PathBuf]> = list.into();
    let mut progress = Progress::new(&list, !args.run.quiet);
    let mut write_error: Option<io::Error> = None;
    let work = |i: usize| {
        let dir = &list[i];
        if pipe.unmodified(dir) {
            return Scanned::Unmodified;
        }
        let display = dir.display().to_string();
        let a = crate::analysis::Analysis::load(dir, opts.version, &Default::default());
        let mut r = {
            let mut ctx = a.ctx(opts.version_given);
            // the backups `interrupted-repair` may name in an `undo` command
            ctx.runs = Some(crate::fix::persist::run_repaired);
            let mut r = crate::report::analyze_ctx(&ctx, display, &opts);
            if tree {
                r.tree = Some(crate::analysis::tree::build(&ctx));
            }
            r
        };
        // the folder as read is kept only for the app server's side: the
        // repair plan below reads the folder again, and two whole reads of
        // a big one at once would double the peak memory
        let read = match &sources {
            Some(src) => Some((src, a)),
            None => {
                drop(a);
                None
            }
        };
        mark_fixable(dir, &mut r, &opts);
        if let Some((src, a)) = read {
            src.attach(&a.conv, &mut r, selected);
        }
        Scanned::Report(Box::new(r))
    };
    let mut emit = |i: usize, done: ordered::Done<Scanned>| {
        if write_error.is_some() {
            return false;
        }
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
                    match list.get(i) {
                        Some(dir) => dir.display().to_string(),
                        None => records[i - list.len()].clone(),
                    }
                ));
                status = ExitStatus::Error;
                progress.done(0);
                return true;
            }
        };
        progress.done(report.events.on_disk);
        if let Some(w) = &mut wanted {
            // a folder by its name, else by the id it carries
            let id = list.get(i).and_then(|d| crate::batch::ids::folder_hex(d));
            if !w.take(id.as_deref().unwrap_or(&report.id)) {
                return true;
            }
        }
        // Files this user may not read: the folder may be fine for its
        // owner, so its findings would be guesses. A scan error, not a report.
        if let Some(first) = report.access_errors.first() {
            summary.error(scan_error(first, &report));
            status = ExitStatus::Error;
            return true;
        }
        let report = sdk_store(report, &sdk_roots, &list, i);
        let worst = severity(&report);
        if status == ExitStatus::Success && fail.is_some_and(|t| worst.is_some_and(|w| w >= t)) {
            status = ExitStatus::Findings;
        }
        summary.add(&report);
        if args.hide_clean && hidden_as_clean(&report, args.rules.fail_on) {
            return true;
        }
        match progress.suspend(|| renderer.conversation(out, &report)) {
            Ok(()) => true,
            Err(e) => {
                write_error = Some(e);
                false
            }
        }
    };
    pipe.run(list.len(), work, &mut emit);
    // then the Claude Code sessions and the Codex rollouts, in the order
    // given
    for (f, is_codex) in claude
        .iter()
        .map(|f| (f, false))
        .chain(codex.iter().map(|f| (f, true)))
        .filter(|(f, _)| args.scan.shard.is_none_or(|s| s.contains(f)))
    {
        let scanned = if pipe.unmodified(f) {
            Scanned::Unmodified
        } else {
            let ask = crate::sessions::Ask {
                selected,
                event_list: events,
            };
            let r = if is_codex {
                crate::codex::analyze(f, f.display().to_string(), &ask)
            } else {
                crate::claude::analyze(f, f.display().to_string(), &ask)
            };
            Scanned::Report(Box::new(r))
        };
        if !emit(usize::MAX, Ok(scanned)) {
            break;
        }
    }
    if let Some(src) = &sources {
        // then the app server's conversations that no folder carries, in id
        // order (numbered after the folders)
        let version = opts.version.to_string();
        let record = |i: usize| {
            let id = &records[i - list.len()];
            Scanned::Report(Box::new(src.record_report(id, &version, selected)))
        };
        let n = list.len();
        pipe.run(
            records.len(),
            |i| record(i + n),
            |i, done| emit(i + n, done),
        );
        if args.scan.shard.is_none_or(|s| s.index == 0) && every_id {
            for r in src.bad_id_reports(&version, selected) {
                if !emit(usize::MAX, Ok(Scanned::Report(Box::new(r)))) {
                    break;
                }
            }
        }
    }
    progress.finish();
    // object keys the listings passed over (one scan error each; the rest
    // was scanned)
    let odd = sources
        .iter()
        .flat_map(|s| s.store.iter())
        .flat_map(|s| s.odd_keys());
    for e in odd {
        summary.error(e);
        status = ExitStatus::Error;
    }
    for e in wanted.iter().flat_map(|w| w.unmatched()) {
        summary.fail(e);
        status = ExitStatus::Error;
    }
    if let Some(e) = write_error {
        return Ok(Ran::Abandoned(broken_pipe_or_error(e)));
    }
    Ok(Ran::Scanned(status))
}

/// Each finding's `fixable` and `fixable_unsafe` as `repair`'s planner
/// decides them for this folder (what `repair`, and what only `repair
/// --unsafe-fixes`, would clear), not as each check guesses: the summary's
/// advice then names the command that does it. A folder with no finding a
/// repair addresses is not planned; one that cannot be opened again keeps
/// no finding fixable.
fn mark_fixable(dir: &std::path::Path, r: &mut ConversationReport, opts: &Options) {
    if !crate::fix::selected_repairable(&r.findings, opts.selected) {
        for f in &mut r.findings {
            f.fixable = false;
        }
        return;
    }
    let fixable = match crate::store::fsread::DirFd::open(dir) {
        Ok(fd) => crate::fix::fixable(
            &fd,
            &r.path,
            opts.version_given.then_some(opts.version),
            opts.selected,
        ),
        Err(_) => Default::default(),
    };
    fixable.mark(&mut r.findings);
}

/// Whether a format shows `--events`' listing.
fn shows_events(f: render::Format) -> bool {
    matches!(
        f,
        render::Format::Human | render::Format::Json | render::Format::Jsonl
    )
}
