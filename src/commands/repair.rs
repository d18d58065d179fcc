//! `convo-doctor repair [--dry-run] PATH...` and `convo-doctor undo RUN-ID`.

use std::io;

use super::diagnose::{broken_pipe_or_error, threshold};
use super::{select, ExitStatus};
use crate::cli::{RepairArgs, UndoArgs};
use crate::fix::persist::{self, Restored, Run};
use crate::fix::{self, RepairOptions};
use crate::render;
use crate::store::discover::find;

pub fn repair(args: &RepairArgs, color: bool) -> ExitStatus {
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
    let mut run: Option<Run> = None;
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let fail = threshold(args.fail_on);
    let (mut files, mut conversations, mut failed, mut left_total) = (0, 0, 0, 0);
    let mut status = ExitStatus::Success;
    let mut remaining_bad = false;
    let mut refused = false;
    let mut unsafe_pending = false;
    let mut unsafe_listed = 0;
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
            unsafe_listed += plan.left.iter().filter(|l| l.needs_unsafe).count();
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
            left_total += plan.left.len();
            // refused, and there was something to repair
            refused |= plan.refused.is_some() && plan.before.findings.iter().any(|f| f.fixable);
            if let Err(e) = render::repair::plan(
                &mut w,
                &plan,
                &prefix,
                args.dry_run,
                applied.as_ref(),
                color,
                args.show_content,
            ) {
                return broken_pipe_or_error(e);
            }
        }
    }
    if let Some(r) = &run {
        r.discard_if_empty();
    }
    let run_info = run
        .as_ref()
        .filter(|r| !r.manifest.files.is_empty())
        .map(|r| (r.id.clone(), r.dir.display().to_string()));
    if let Err(e) = render::repair::finish(
        &mut w,
        args.dry_run,
        render::repair::Totals {
            files,
            conversations,
            failed,
            left: left_total,
            unsafe_listed,
        },
        run_info.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
    ) {
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
