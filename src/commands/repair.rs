//! `convo-doctor repair [--dry-run] PATH...`.

use std::io;

use super::pipeline::Pipeline;
use super::{broken_pipe_or_error, threshold, ExitStatus};
use crate::batch::{ordered, scan};
use crate::cli::{DiffFormat, RepairArgs, RepairFormat};
use crate::fix::persist::{self, Run};
use crate::fix::{self, RepairOptions};
use crate::render;
use crate::render::output::Output;
use crate::render::repair::json as rjson;
use crate::store::fsread::DirFd;

pub(super) mod backup;

/// Results held at once per worker thread, waiting for their turn.
const WINDOW_PER_THREAD: usize = 4;

/// What became of one conversation of the run, on a worker thread.
enum Planned {
    Plan(Box<fix::Plan>),
    /// Passed over by `--since` / `--changed-since`.
    Unmodified,
    /// The folder listed could not be opened again from its PATH without
    /// following a link (swapped for a link, replaced by a file, gone).
    Unopened(String),
}

pub fn repair(args: &RepairArgs, color: bool) -> anyhow::Result<ExitStatus> {
    if args.format != RepairFormat::Human && args.diff_format == DiffFormat::Patch {
        use clap::CommandFactory;
        let mut cli = crate::cli::Cli::command();
        let cmd = cli
            .find_subcommand_mut("repair")
            .expect("repair is a subcommand");
        return Err(cmd
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "the argument '--format <FORMAT>' cannot be used with '--diff-format patch': JSON output carries no diff",
            )
            .into());
    }
    if args.accept_ambiguous {
        render::warning("--accept-ambiguous is deprecated: it now means --unsafe-fixes");
    }
    let pipe = Pipeline::new(&args.scan, &args.run, WINDOW_PER_THREAD)?;
    let selected = &*pipe.selected;
    // Codex rollouts (src/codex/) and Claude Code sessions (src/claude/):
    // the JSONL core's repair, all or none of the PATHs (Codex looked for
    // first: a rollout is a `.jsonl` file too)
    if let Some(status) = super::repair_sessions::jsonl(args, selected)? {
        return Ok(status);
    }
    let unsafe_fixes = args.unsafe_fixes || args.accept_ambiguous;
    let options = || RepairOptions {
        server_version: args.rules.server_version,
        selected,
        unsafe_fixes,
    };
    let backup_root = backup::root(args)?;
    let mut w = Output::new(args.run.output_file.as_deref(), args.run.quiet)?;
    let mut run: Option<Run> = None;
    let fail = threshold(args.rules.fail_on);
    let (mut files, mut conversations, mut failed) = (0, 0, 0);
    let mut status = ExitStatus::Success;
    let mut remaining_bad = false;
    let mut refused = false;
    let mut unsafe_pending = false;
    let mut summary = rjson::Summary::new(rjson::RunInfo {
        id: None,
        backup_dir: None,
        dry_run: args.dry_run,
        unsafe_fixes,
        server_version: options().version().to_string(),
    });
    let mut json = match args.format {
        RepairFormat::Human => None,
        RepairFormat::Json => Some(rjson::Writer::new(false)),
        RepairFormat::Jsonl => Some(rjson::Writer::new(true)),
    };
    // As for `diagnose`: a PATH that cannot be read or holds no conversation
    // (a failed mount, a typo) is an error, not a quiet "nothing to repair".
    // Each PATH is opened once, before it is listed, and held: every
    // conversation found in it is opened from that descriptor, one
    // component at a time without following a link, and planned, proven
    // and written through what was opened (a folder swapped for a link
    // after the listing is refused, never followed).
    let bases: Vec<std::io::Result<DirFd>> = args.paths.iter().map(|p| DirFd::open(p)).collect();
    let scan = scan::discover(&args.paths, args.scan.allow_empty);
    persist::pause_point("after-listing");
    for n in &scan.notes {
        render::note(n);
    }
    for e in scan.errors {
        summary.scan.error(e);
        status = ExitStatus::Error;
    }
    let mut list = scan.conversations;
    if let Some(shard) = args.scan.shard {
        list.retain(|(dir, _)| shard.contains(dir));
        summary.scan.shard = Some(shard.to_string());
    }
    // --id: the folders named after those ids; one that names none, or
    // several, is an error and nothing is repaired
    if !args.scan.ids.is_empty() {
        use crate::batch::ids::{folder_hex, Wanted};
        let known = list.iter().filter_map(|(d, _)| folder_hex(d)).collect();
        let (mut wanted, errors) = Wanted::resolve(&args.scan.ids, &known);
        let refused = !errors.is_empty();
        for e in errors {
            summary.scan.error(e);
            status = ExitStatus::Error;
        }
        list.retain(|(d, _)| !refused && folder_hex(d).is_some_and(|h| wanted.take(&h)));
    }
    // --diff-format patch: the patch alone on stdout, the rest on stderr
    let patch = args.dry_run && args.diff_format == DiffFormat::Patch;
    // Conversations are read and planned on the pool, ahead of their turn;
    // each plan is applied (which verifies under the locks that nothing
    // changed since it was read) and reported in path order.
    let work = |i: usize| {
        let (dir, k) = &list[i];
        if pipe.unmodified(dir) {
            return Planned::Unmodified;
        }
        let opened = match &bases[*k] {
            Ok(base) => match dir.strip_prefix(&args.paths[*k]) {
                Ok(rel) => base.open_below(rel, dir),
                Err(_) => Err(std::io::Error::other("it is not below the PATH given")),
            },
            Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
        };
        match opened {
            Ok(conv) => Planned::Plan(Box::new(fix::plan(
                &conv,
                dir.display().to_string(),
                &options(),
            ))),
            Err(e) => Planned::Unopened(format!(
                "`{}` is not repaired: it could not be opened again as the folder that was listed ({}); nothing was changed",
                dir.display(),
                crate::store::fsread::os_words(&e)
            )),
        }
    };
    // what ends the run early: a closed pipe (a status), or an error
    let mut stop: Option<anyhow::Result<ExitStatus>> = None;
    let emit = |i: usize, done: ordered::Done<Planned>| {
        let (dir, k) = &list[i];
        let plan = match done {
            Ok(Planned::Plan(p)) => p,
            Ok(Planned::Unmodified) => {
                summary.scan.skipped_unmodified += 1;
                return true;
            }
            Ok(Planned::Unopened(why)) => {
                summary.scan.error(why);
                status = ExitStatus::Error;
                return true;
            }
            Err(panic) => {
                summary.scan.error(format!(
                    "`{}` could not be planned (internal error: {panic}); please report it",
                    dir.display()
                ));
                status = ExitStatus::Error;
                return true;
            }
        };
        // A folder not wholly read (permission, I/O) is never repaired: its
        // plan would rest on guesses.
        if let Some(first) = plan.before.access_errors.first() {
            summary.scan.error(super::scan_error(first, &plan.before));
            status = ExitStatus::Error;
            return true;
        }
        let prefix = dir
            .strip_prefix(&args.paths[*k])
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut applied = None;
        if plan.has_changes() && !args.dry_run {
            if run.is_none() {
                let root = backup_root.clone().unwrap_or_default();
                match Run::new(&root, persist::new_run_id()) {
                    Ok(r) => run = Some(r),
                    Err(e) => {
                        stop = Some(Err(anyhow::Error::msg(e)));
                        return false;
                    }
                }
            }
            applied = run
                .as_mut()
                .map(|r| persist::apply(&plan, r, conversations + 1));
        }
        if matches!(applied, Some(Err(_))) {
            failed += 1;
        }
        let ok = plan.has_changes() && !matches!(applied, Some(Err(_)));
        unsafe_pending |= plan.unsafe_pending();
        if ok {
            files += plan.changed_files();
            conversations += 1;
        }
        let remaining: &[crate::checks::Finding] = if ok {
            plan.remaining()
        } else {
            &plan.before.findings
        };
        if fail.is_some_and(|t| remaining.iter().any(|f| f.severity >= t)) {
            remaining_bad = true;
        }
        // refused, and there was something to repair
        refused |= plan.refused.is_some() && plan.before.findings.iter().any(|f| f.fixable);
        let outcome = rjson::outcome(&plan, args.dry_run, applied.as_ref());
        summary.add(&outcome);
        if args.changes_only && outcome.status == "unchanged" {
            return true;
        }
        let written = match json.as_mut() {
            Some(j) => j.conversation(&mut w, &plan, &outcome),
            None => {
                human(&mut w, &plan, &prefix, args, color, applied.as_ref(), patch).map(|why| {
                    if let Some(why) = why {
                        render::note(&why);
                        refused = true;
                    }
                })
            }
        };
        match written {
            Ok(()) => true,
            Err(e) => {
                stop = Some(broken_pipe_or_error(e));
                false
            }
        }
    };
    pipe.run(list.len(), work, emit);
    if let Some(r) = &run {
        r.discard_if_empty();
    }
    if let Some(r) = run.as_ref().filter(|r| !r.manifest.files.is_empty()) {
        summary.run.id = Some(r.id.clone());
        summary.run.backup_dir = Some(r.dir.display().to_string());
    }
    if let Some(s) = stop {
        // JSON output stays one valid document
        if let Some(j) = json.as_mut() {
            let _ = j.finish(&mut w, &summary);
        }
        let status = w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
        return s.map(|_| status);
    }
    if summary.scan.skipped_unmodified > 0 {
        render::note(&format!(
            "{} not modified since the cutoff (--since/--changed-since) and not looked at",
            crate::checks::plural(
                summary.scan.skipped_unmodified,
                "conversation",
                "conversations"
            )
        ));
    }
    let finished = match json.as_mut() {
        Some(j) => j.finish(&mut w, &summary),
        None if patch => render::repair::finish(&mut io::stderr().lock(), &summary),
        None => render::repair::finish(&mut w, &summary),
    };
    if let Err(e) = finished {
        let s = broken_pipe_or_error(e);
        let status = w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
        return s.map(|_| status);
    }
    let status = if status == ExitStatus::Error {
        status
    } else if args.dry_run {
        // a refused repair is work pending too, only blocked
        if files > 0 || refused || unsafe_pending {
            ExitStatus::Findings
        } else {
            ExitStatus::Success
        }
    } else if remaining_bad || failed > 0 || refused || unsafe_pending {
        // a refused repair (live lease, held lock, failed proof) leaves work
        // undone even when only info findings remain: docs/repair.md says 1
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    };
    Ok(w.finish(status))
}

/// One conversation in human output: with `--diff-format patch`, the patch
/// on `w` and the rest on stderr. Returns why no patch could be made, if so.
fn human(
    w: &mut Output,
    plan: &fix::Plan,
    prefix: &str,
    args: &RepairArgs,
    color: bool,
    applied: Option<&Result<Vec<String>, String>>,
    patch: bool,
) -> io::Result<Option<String>> {
    let mut why = None;
    if patch {
        why = render::repair::patch(w, plan, args.show_content)?;
    }
    let mut stderr = io::stderr().lock();
    let out: &mut dyn io::Write = if patch { &mut stderr } else { w };
    render::repair::plan(
        out,
        plan,
        prefix,
        args.dry_run,
        applied,
        color,
        args.show_content,
        !patch,
    )?;
    Ok(why)
}
