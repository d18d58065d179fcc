//! `convo-doctor undo --list`: the repair runs kept under a backup directory,
//! what each changed, and whether it can still be undone. Read-only.
//! `undo --prune --older-than DURATION`: remove the old ones.
//!
//! Manifests are read as plain JSON (only `run_id`, `created` and each file's
//! `conversation`, `file`, `sha256_before`, `sha256_after`), so the listing
//! does not depend on the rest of the manifest's layout.

use std::fs;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use super::ExitStatus;
use crate::cli::UndoArgs;
use crate::fix::persist;
use crate::render::runs::{self, PruneLine, RunState, RunSummary};

/// What one file of a run holds now.
fn file_state(f: &Value) -> RunState {
    let get = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default();
    let path = Path::new(get("conversation")).join(get("file"));
    // Never a plain read: a manifest is input too, and a FIFO or a device
    // named in it must not hang the listing.
    match crate::store::fsread::read_regular(&path) {
        Ok((bytes, _)) => {
            let now = persist::sha256(&bytes);
            if now == get("sha256_after") {
                RunState::Undoable
            } else if now == get("sha256_before") {
                RunState::Undone
            } else {
                RunState::ChangedSince
            }
        }
        Err(_) => RunState::ChangedSince,
    }
}

fn summarize(dir: &Path) -> Option<RunSummary> {
    let text = fs::read_to_string(dir.join("manifest.json")).ok()?;
    let m: Value = serde_json::from_str(&text).ok()?;
    let files = m
        .get("files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut conversations: Vec<&str> = files
        .iter()
        .filter_map(|f| f.get("conversation").and_then(Value::as_str))
        .collect();
    conversations.sort_unstable();
    conversations.dedup();
    let states: Vec<RunState> = files.iter().map(file_state).collect();
    // the run's state is its least undoable file's
    let state = states.iter().copied().max().unwrap_or(RunState::Undone);
    Some(RunSummary {
        run_id: dir.file_name()?.to_string_lossy().into_owned(),
        created: m
            .get("created")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        files: files.len(),
        conversations: conversations.len(),
        state,
    })
}

pub fn list(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    let root = match &args.backup_dir {
        Some(d) => d.clone(),
        None => persist::default_backup_root().map_err(anyhow::Error::msg)?,
    };
    let mut runs: Vec<RunSummary> = Vec::new();
    match fs::read_dir(&root) {
        Ok(rd) => {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    runs.extend(summarize(&e.path()));
                }
            }
        }
        // no repair has written here yet: an empty list
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot list `{}`", root.display()));
        }
    }
    runs.sort_by(|a, b| a.created.cmp(&b.created).then(a.run_id.cmp(&b.run_id)));
    let hint_dir = args.backup_dir.as_deref();
    let w = &mut std::io::stdout().lock();
    let listed = match args.format {
        crate::cli::ListFormat::Human => runs::list(w, &root, &runs, hint_dir),
        crate::cli::ListFormat::Json => runs::list_json(w, &root, &runs, hint_dir),
    };
    if let Err(e) = listed {
        return Ok(super::diagnose::broken_pipe_or_error(e));
    }
    Ok(ExitStatus::Success)
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
    let root = match &args.backup_dir {
        Some(d) => d.clone(),
        None => persist::default_backup_root().map_err(anyhow::Error::msg)?,
    };
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
            if let Err(e) = persist::load_run(&root, &name) {
                lines.push(kept(format!("{e} (remove it by hand if it is not needed)")));
                continue;
            }
            let Some(summary) = summarize(&path) else {
                lines.push(kept("its manifest cannot be read".into()));
                continue;
            };
            if summary.state == RunState::Undoable && !args.force {
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
        args.backup_dir.as_deref(),
    ) {
        return Ok(super::diagnose::broken_pipe_or_error(e));
    }
    Ok(if left {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    })
}
