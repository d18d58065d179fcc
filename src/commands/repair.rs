//! `convo-doctor repair [--dry-run] PATH...` and `convo-doctor undo RUN-ID`.

use std::io;
use std::path::{Path, PathBuf};

use super::diagnose::{broken_pipe_or_error, threshold};
use super::{select, ExitStatus};
use crate::cli::{DiffFormat, RepairArgs, RepairFormat, UndoArgs};
use crate::fix::persist::{self, Restored, Run};
use crate::fix::{self, RepairOptions};
use crate::render;
use crate::render::repair::json as rjson;
use crate::store::discover::find;

pub fn repair(args: &RepairArgs, color: bool) -> ExitStatus {
    if args.format != RepairFormat::Human && args.diff_format == DiffFormat::Patch {
        use clap::CommandFactory;
        let mut cli = crate::cli::Cli::command();
        let cmd = cli
            .find_subcommand_mut("repair")
            .expect("repair is a subcommand");
        let _ = cmd
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "the argument '--format <FORMAT>' cannot be used with '--diff-format patch': JSON output carries no diff",
            )
            .print();
        return ExitStatus::Error;
    }
    if args.accept_ambiguous {
        render::note("warning: --accept-ambiguous is deprecated: it now means --unsafe-fixes");
    }
    let selected = match select(&args.only, &[]) {
        Ok(s) => s,
        Err(e) => {
            render::fail(&e);
            return ExitStatus::Error;
        }
    };
    let opts = RepairOptions {
        server_version: args.server_version,
        selected: &selected,
        unsafe_fixes: args.unsafe_fixes || args.accept_ambiguous,
    };
    let backup_root = match (&args.backup_dir, args.dry_run) {
        (Some(d), _) => Some(d.clone()),
        (None, true) => None,
        (None, false) => match persist::default_backup_root() {
            Ok(d) => Some(d),
            Err(e) => {
                render::error(&e);
                return ExitStatus::Error;
            }
        },
    };
    // A backup holds copies of meta.json: inside a store (or the folder a
    // conversation sits in) a server would list the copy, or let it shadow
    // the original.
    if let Some(root) = &backup_root {
        if let Some(store) = backup_inside_store(root, &args.paths) {
            render::error(&format!(
                "the backup directory `{}` is inside `{}`, where a server would list the backed-up conversations; choose a --backup-dir outside every conversations directory",
                root.display(),
                store.display()
            ));
            return ExitStatus::Error;
        }
    }
    let mut run: Option<Run> = None;
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let fail = threshold(args.fail_on);
    let (mut files, mut conversations, mut failed) = (0, 0, 0);
    let mut status = ExitStatus::Success;
    let mut remaining_bad = false;
    let mut refused = false;
    let mut unsafe_pending = false;
    let mut summary = rjson::Summary::new(rjson::RunInfo {
        id: None,
        backup_dir: None,
        dry_run: args.dry_run,
        unsafe_fixes: opts.unsafe_fixes,
        server_version: opts.version().to_string(),
    });
    let mut json = match args.format {
        RepairFormat::Human => None,
        RepairFormat::Json => Some(rjson::Writer::new(false)),
        RepairFormat::Jsonl => Some(rjson::Writer::new(true)),
    };
    for path in &args.paths {
        let found = match find(path) {
            Ok(f) => f,
            Err(e) => {
                render::fail(&e);
                status = ExitStatus::Error;
                continue;
            }
        };
        // As for `diagnose`: a PATH with no conversation (a failed mount, a
        // typo) is an error, not a quiet "nothing to repair".
        if let Some(instead) = &found.instead {
            render::error(&format!(
                "no conversation in `{}`: found {instead}",
                path.display()
            ));
            status = ExitStatus::Error;
        }
        for dir in &found.conversations {
            let prefix = dir
                .strip_prefix(path)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let plan = fix::plan(dir, dir.display().to_string(), &opts);
            let mut applied = None;
            if plan.has_changes() && !args.dry_run {
                if run.is_none() {
                    let root = backup_root.clone().unwrap_or_default();
                    match Run::new(&root, persist::new_run_id()) {
                        Ok(r) => run = Some(r),
                        Err(e) => {
                            render::error(&e);
                            // JSON output stays one valid document
                            if let Some(j) = json.as_mut() {
                                let _ = j.finish(&mut w, &summary);
                            }
                            return ExitStatus::Error;
                        }
                    }
                }
                let r = run
                    .as_mut()
                    .map(|r| persist::apply(&plan, r, conversations + 1));
                applied = r;
            }
            if matches!(applied, Some(Err(_))) {
                failed += 1;
            }
            let ok = plan.has_changes() && !matches!(applied, Some(Err(_)));
            unsafe_pending |= plan.unsafe_pending();
            if ok {
                files += plan.edits.len() + plan.moves.len() + plan.creates.len();
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
            if let Some(j) = json.as_mut() {
                if let Err(e) = j.conversation(&mut w, &plan, &outcome) {
                    return broken_pipe_or_error(e);
                }
                continue;
            }
            // --diff-format patch: the patch alone on stdout, the rest on stderr
            let patch = args.dry_run && args.diff_format == DiffFormat::Patch;
            if patch {
                match render::repair::patch(&mut w, &plan, args.show_content) {
                    Ok(None) => {}
                    Ok(Some(why)) => {
                        render::note(&why);
                        refused = true;
                    }
                    Err(e) => return broken_pipe_or_error(e),
                }
            }
            let mut stderr = io::stderr().lock();
            let human: &mut dyn io::Write = if patch { &mut stderr } else { &mut w };
            if let Err(e) = render::repair::plan(
                human,
                &plan,
                &prefix,
                args.dry_run,
                applied.as_ref(),
                color,
                args.show_content,
                !patch,
            ) {
                return broken_pipe_or_error(e);
            }
        }
    }
    if let Some(r) = &run {
        r.discard_if_empty();
    }
    if let Some(r) = run.as_ref().filter(|r| !r.manifest.files.is_empty()) {
        summary.run.id = Some(r.id.clone());
        summary.run.backup_dir = Some(r.dir.display().to_string());
    }
    let finished = match json.as_mut() {
        Some(j) => j.finish(&mut w, &summary),
        None => {
            let mut stderr = io::stderr().lock();
            let human: &mut dyn io::Write = if args.dry_run && args.diff_format == DiffFormat::Patch
            {
                &mut stderr
            } else {
                &mut w
            };
            render::repair::finish(human, &summary)
        }
    };
    if let Err(e) = finished {
        return broken_pipe_or_error(e);
    }
    if status == ExitStatus::Error {
        return status;
    }
    if args.dry_run {
        // a refused repair is work pending too, only blocked
        return if files > 0 || refused || unsafe_pending {
            ExitStatus::Findings
        } else {
            ExitStatus::Success
        };
    }
    // a refused repair (live lease, held lock, failed proof) leaves work
    // undone even when only info findings remain: docs/repair.md says 1
    if remaining_bad || failed > 0 || refused || unsafe_pending {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    }
}

pub fn undo(args: &UndoArgs) -> ExitStatus {
    if args.prune {
        return super::undo_list::prune(args).unwrap_or_else(|e| {
            render::fail(&e);
            ExitStatus::Error
        });
    }
    let root = match &args.backup_dir {
        Some(d) => d.clone(),
        None => match persist::default_backup_root() {
            Ok(d) => d,
            Err(e) => {
                render::error(&e);
                return ExitStatus::Error;
            }
        },
    };
    let (dir, manifest) = match persist::load_run(&root, &args.run_id) {
        Ok(x) => x,
        Err(e) => {
            render::error(&e);
            return ExitStatus::Error;
        }
    };
    let results = persist::undo(&dir, &manifest);
    let refused = results
        .iter()
        .any(|(_, r)| matches!(r, Restored::Refused(_)));
    if let Err(e) = render::repair::undo(&mut io::stdout().lock(), &results) {
        return broken_pipe_or_error(e);
    }
    if refused {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    }
}

/// The store (or the folder holding a conversation PATH) that `backup`
/// would sit inside, if any. Paths are compared after resolving the part of
/// each that exists, so `..` and links cannot hide the overlap.
fn backup_inside_store(backup: &Path, paths: &[PathBuf]) -> Option<PathBuf> {
    fn resolved(p: &Path) -> Option<PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        let mut existing = abs.as_path();
        let mut rest = Vec::new();
        while std::fs::symlink_metadata(existing).is_err() {
            rest.push(existing.file_name()?.to_owned());
            existing = existing.parent()?;
        }
        let mut out = existing.canonicalize().ok()?;
        out.extend(rest.iter().rev());
        Some(out)
    }
    let backup = resolved(backup)?;
    paths.iter().find_map(|p| {
        let p = resolved(p)?;
        let store = if crate::store::conversation::is_conversation_dir(&p) {
            p.parent()?.to_path_buf()
        } else {
            p
        };
        backup.starts_with(&store).then_some(store)
    })
}
