//! `undo --list`: one line per repair run.

use std::io::{self, Write};
use std::path::Path;

use super::sanitize;
use crate::text::shell_quote;

/// Whether a run can still be undone. Ordered: a run is as undoable as its
/// least undoable file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunState {
    /// Every file already holds its original bytes.
    Undone,
    /// Every file still holds what the repair wrote.
    Undoable,
    /// A file changed since (or is gone): undo restores nothing it would lose.
    ChangedSince,
}

impl RunState {
    /// The state's name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Undone => "undone",
            RunState::Undoable => "undoable",
            RunState::ChangedSince => "changed-since",
        }
    }
}

pub struct RunSummary {
    pub run_id: String,
    pub created: String,
    pub files: usize,
    pub conversations: usize,
    pub state: RunState,
}

pub fn list(
    w: &mut dyn Write,
    root: &Path,
    runs: &[RunSummary],
    backup_dir: Option<&Path>,
) -> io::Result<()> {
    if runs.is_empty() {
        writeln!(
            w,
            "no repair runs under {}",
            sanitize(&root.display().to_string())
        )?;
        return w.flush();
    }
    writeln!(
        w,
        "{:<28} {:<21} {:>5} {:>13}  state",
        "run id", "created", "files", "conversations"
    )?;
    let dir_arg = backup_dir_arg(backup_dir);
    for r in runs {
        let id = sanitize(&r.run_id);
        let state = match r.state {
            RunState::Undoable => format!("can be undone: convo-doctor undo {id}{dir_arg}"),
            RunState::Undone => "undone (the files hold their originals)".to_string(),
            RunState::ChangedSince => {
                "a file changed since the repair: undo refuses to overwrite it".to_string()
            }
        };
        writeln!(
            w,
            "{:<28} {:<21} {:>5} {:>13}  {state}",
            id,
            sanitize(&r.created),
            r.files,
            r.conversations
        )?;
    }
    writeln!(w, "backups: {}", sanitize(&root.display().to_string()))?;
    w.flush()
}

/// `undo --list --format json`: one document, the runs oldest first.
pub fn list_json(
    w: &mut dyn Write,
    root: &Path,
    runs: &[RunSummary],
    backup_dir: Option<&Path>,
) -> io::Result<()> {
    let dir_arg = backup_dir_arg(backup_dir);
    let runs: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "run_id": r.run_id,
                "created": r.created,
                "files": r.files,
                "conversations": r.conversations,
                "state": r.state.as_str(),
                "undo": (r.state == RunState::Undoable).then(|| format!(
                    "convo-doctor undo {}{dir_arg}",
                    shell_quote(&sanitize(&r.run_id))
                )),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "schema_version": super::json::SCHEMA_VERSION,
        "backup_dir": root.display().to_string(),
        "runs": runs,
    });
    let text = serde_json::to_string(&doc).map_err(io::Error::other)?;
    writeln!(w, "{}", super::json::json_safe(&text))?;
    w.flush()
}

/// What `undo --prune` did with one old run folder.
pub enum PruneLine {
    Removed(RunSummary),
    WouldRemove(RunSummary),
    /// Old, but can still be undone: kept without --force.
    Held(RunSummary),
    /// Old, but not one prune may remove (name, why).
    Left(String, String),
}

/// `30d`, `12h`, `1h30m`, `45s`: a duration as --older-than takes it.
fn duration(d: std::time::Duration) -> String {
    let mut s = d.as_secs();
    let mut out = String::new();
    for (unit, len) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if s >= len {
            out.push_str(&format!("{}{unit}", s / len));
            s %= len;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

pub fn prune(
    w: &mut dyn Write,
    root: &Path,
    lines: &[PruneLine],
    newer: usize,
    older_than: std::time::Duration,
    backup_dir: Option<&Path>,
) -> io::Result<()> {
    let dir_arg = backup_dir_arg(backup_dir);
    let state = |r: &RunSummary| match r.state {
        RunState::Undone => "undone",
        RunState::Undoable => "could still be undone",
        RunState::ChangedSince => "a file changed since the repair",
    };
    let (mut removed, mut would, mut held, mut left) = (0, 0, 0, 0);
    for l in lines {
        match l {
            PruneLine::Removed(r) | PruneLine::WouldRemove(r) => {
                let verb = if matches!(l, PruneLine::Removed(_)) {
                    removed += 1;
                    "removed"
                } else {
                    would += 1;
                    "would remove"
                };
                writeln!(
                    w,
                    "{verb} {} (created {}, {}, {})",
                    sanitize(&r.run_id),
                    sanitize(&r.created),
                    crate::checks::plural(r.files, "file", "files"),
                    state(r)
                )?;
            }
            PruneLine::Held(r) => {
                held += 1;
                let id = sanitize(&r.run_id);
                writeln!(
                    w,
                    "kept {id} (created {}): it can still be undone (convo-doctor undo {id}{dir_arg}); --force removes it",
                    sanitize(&r.created)
                )?;
            }
            PruneLine::Left(name, why) => {
                left += 1;
                writeln!(w, "left {}: {}", sanitize(name), sanitize(why))?;
            }
        }
    }
    let mut parts = Vec::new();
    if would > 0 {
        parts.push(format!("{would} would be removed"));
    } else {
        parts.push(format!("{removed} removed"));
    }
    if held > 0 {
        parts.push(format!("{held} kept (can still be undone)"));
    }
    if left > 0 {
        parts.push(format!("{left} left (see above)"));
    }
    parts.push(format!("{newer} newer than {}", duration(older_than)));
    writeln!(
        w,
        "{} under {}",
        parts.join(", "),
        sanitize(&root.display().to_string())
    )?;
    w.flush()
}

/// ` --backup-dir DIR` (sanitised, shell-quoted) when a backup dir was given.
fn backup_dir_arg(backup_dir: Option<&Path>) -> String {
    backup_dir
        .map(|d| {
            format!(
                " --backup-dir {}",
                shell_quote(&sanitize(&d.display().to_string()))
            )
        })
        .unwrap_or_default()
}
