//! `convo-doctor undo --list`: the repair runs kept under a backup directory,
//! what each changed, and whether it can still be undone. Read-only.
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
use crate::render::runs::{self, RunState, RunSummary};

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
    if let Err(e) = runs::list(&mut std::io::stdout().lock(), &root, &runs, hint_dir) {
        return Ok(super::diagnose::broken_pipe_or_error(e));
    }
    Ok(ExitStatus::Success)
}
