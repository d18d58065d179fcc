//! `convo-doctor undo --list`: the repair runs kept under a backup directory,
//! what each changed, and whether it can still be undone. Read-only.
//! `undo --prune --older-than DURATION`: remove the old ones.
//! `undo RUN --dry-run`: what `undo RUN` would do with each file.
//!
//! All three decide each file exactly as `undo` does
//! (`persist::decide`): a renamed file is looked for under its new name, a
//! file taken out by bringing it back, a created one by removing it.

use std::fs;

use anyhow::Context;

use super::ExitStatus;
use crate::cli::UndoArgs;
use crate::fix::persist::{self, Assessment, RunReport};
use crate::render::runs::{self, PruneLine, RunState, RunSummary};

/// A run's state, from what `undo` would do with each of its files.
fn state_of(a: &Assessment) -> RunState {
    if a.refused > 0 {
        RunState::ChangedSince
    } else if a.restorable > 0 {
        RunState::Undoable
    } else {
        RunState::Undone
    }
}

fn summary_of(r: &RunReport) -> RunSummary {
    let (state, only_copy, why) = match &r.assessed {
        Ok(a) => (state_of(a), a.only_copy, None),
        Err(why) => (RunState::Untrusted, 0, Some(why.clone())),
    };
    RunSummary {
        run_id: r.run_id.clone(),
        created: r.created.clone(),
        files: r.files,
        conversations: r.conversations,
        state,
        only_copy,
        why,
    }
}

fn backup_root(args: &UndoArgs) -> anyhow::Result<std::path::PathBuf> {
    match &args.backup.dir {
        Some(d) => Ok(d.clone()),
        None => persist::default_backup_root().map_err(anyhow::Error::msg),
    }
}

pub fn list(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    let root = backup_root(args)?;
    // no repair has written here yet: an empty list
    let listing = persist::list_runs(&root)
        .map_err(anyhow::Error::msg)?
        .unwrap_or_default();
    let mut runs: Vec<RunSummary> = listing.runs.iter().map(summary_of).collect();
    runs.sort_by(|a, b| a.created.cmp(&b.created).then(a.run_id.cmp(&b.run_id)));
    let hint_dir = args.backup.dir.as_deref();
    let w = &mut std::io::stdout().lock();
    let listed = match args.format {
        crate::cli::ListFormat::Human => runs::list(w, &root, &runs, &listing, hint_dir),
        crate::cli::ListFormat::Json => runs::list_json(w, &root, &runs, &listing, hint_dir),
    };
    if let Err(e) = listed {
        return super::broken_pipe_or_error(e);
    }
    Ok(ExitStatus::Success)
}

/// `undo RUN --dry-run`: what `undo RUN` would do with each file, decided
/// as `undo` decides; nothing is written. Exit 1 when it would refuse a file.
pub fn dry_run(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    let root = backup_root(args)?;
    let (dir, manifest) = persist::load_run(&root, &args.run_id).map_err(anyhow::Error::msg)?;
    let decided = persist::assess(&dir, &manifest.files);
    let refused = decided.iter().any(|(_, d)| d.is_refused());
    if let Err(e) = runs::undo_dry_run(&mut std::io::stdout().lock(), &decided) {
        return super::broken_pipe_or_error(e);
    }
    Ok(if refused {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    })
}

/// `undo --prune --older-than DURATION [--force] [--dry-run]`: remove the
/// old run folders under the backup root. A folder is touched only when it
/// is a directory (not a link) that is yours with mode 0700 and whose
/// manifest `undo` would trust (`persist::load_run`); a run that can still
/// be undone is kept unless `--force`. Exit 1 when an old folder had to be
/// left (untrusted, no manifest, removal failed).
pub fn prune(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    use std::os::unix::fs::MetadataExt;
    let older = args
        .older_than
        .context("--prune needs --older-than DURATION")?;
    let root = backup_root(args)?;
    let mut lines = Vec::new();
    let mut newer = 0usize;
    if fs::symlink_metadata(&root).is_ok() {
        // the root itself must be one `undo` trusts
        persist::open_backup_root(&root, false).map_err(anyhow::Error::msg)?;
        let mut names: Vec<String> = fs::read_dir(&root)
            .with_context(|| format!("cannot list `{}`", root.display()))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| persist::valid_run_id(n))
            .collect();
        names.sort();
        let now = std::time::SystemTime::now();
        let euid = rustix::process::geteuid().as_raw();
        for name in names {
            let path = root.join(&name);
            let Ok(st) = fs::symlink_metadata(&path) else {
                continue; // gone meanwhile
            };
            let kept = |why: String| PruneLine::Left(name.clone(), why);
            // age: from the last write of the run (its folder or manifest;
            // for a link, the link itself, which is never followed)
            let mut last = st.modified().unwrap_or(now);
            if st.is_dir() {
                if let Ok(m) = fs::symlink_metadata(path.join("manifest.json")) {
                    last = last.max(m.modified().unwrap_or(now));
                }
            }
            if now.duration_since(last).unwrap_or_default() < older {
                newer += 1;
                continue;
            }
            if st.file_type().is_symlink() {
                lines.push(kept("a symbolic link, not followed".into()));
                continue;
            }
            if !st.is_dir() {
                continue; // not a run folder
            }
            if st.uid() != euid || st.mode() & 0o077 != 0 {
                lines.push(kept(format!(
                    "owned by uid {} with mode {:o}; only your own 0700 run folders are removed",
                    st.uid(),
                    st.mode() & 0o7777
                )));
                continue;
            }
            let summary = match persist::report_run(&root, &name) {
                Ok(r) => summary_of(&r),
                Err(e) => {
                    lines.push(kept(format!("{e} (remove it by hand if it is not needed)")));
                    continue;
                }
            };
            // a run undo could still use, or the only copy of files taken
            // out of a conversation, stays unless --force
            let needed = summary.state == RunState::Undoable || summary.only_copy > 0;
            if needed && !args.force {
                lines.push(PruneLine::Held(summary));
                continue;
            }
            if args.dry_run {
                lines.push(PruneLine::WouldRemove(summary));
                continue;
            }
            // the very folder checked, still not a link, right before removal
            // (remove_dir_all never follows a link inside it)
            match fs::symlink_metadata(&path) {
                Ok(again)
                    if again.is_dir() && again.dev() == st.dev() && again.ino() == st.ino() =>
                {
                    match fs::remove_dir_all(&path) {
                        Ok(()) => lines.push(PruneLine::Removed(summary)),
                        Err(e) => lines.push(kept(format!("cannot remove it: {e}"))),
                    }
                }
                _ => lines.push(kept("it was replaced while being checked".into())),
            }
        }
    }
    let left = lines.iter().any(|l| matches!(l, PruneLine::Left(..)));
    if let Err(e) = runs::prune(
        &mut std::io::stdout().lock(),
        &root,
        &lines,
        newer,
        older,
        args.backup.dir.as_deref(),
    ) {
        return super::broken_pipe_or_error(e);
    }
    Ok(if left {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    })
}
