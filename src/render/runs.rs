//! `undo --list`: one line per repair run.

use std::io::{self, Write};
use std::path::Path;

use super::sanitize;
use crate::fix::persist::{Decision, Listing, ManifestEntry, Step};
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
    /// `undo` would not trust the run (the backup folder, the run folder or
    /// its manifest is not the invoking user's alone): not looked into.
    Untrusted,
}

impl RunState {
    /// The state's name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Undone => "undone",
            RunState::Undoable => "undoable",
            RunState::ChangedSince => "changed-since",
            RunState::Untrusted => "untrusted",
        }
    }
}

pub struct RunSummary {
    /// A run id (`persist::valid_run_id`): printed in commands as it is.
    pub run_id: String,
    pub created: String,
    /// Files of conversations the run changed, counted as `repair` counts
    /// them (the SDK lock file it created aside).
    pub files: usize,
    pub conversations: usize,
    pub state: RunState,
    /// Files taken out of a conversation and not back: the run's backup
    /// holds their only copy.
    pub only_copy: usize,
    /// Why `undo` would not trust the run ([`RunState::Untrusted`]).
    pub why: Option<String>,
}

pub fn list(
    w: &mut dyn Write,
    root: &Path,
    runs: &[RunSummary],
    listing: &Listing,
    backup_dir: Option<&Path>,
) -> io::Result<()> {
    if let Some(why) = &listing.untrusted {
        writeln!(
            w,
            "not trusted: {} (undo refuses every run here)",
            sanitize(why)
        )?;
    }
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
            RunState::Untrusted => format!(
                "not trusted, not looked into: {}",
                sanitize(r.why.as_deref().unwrap_or_default())
            ),
        };
        let state = if r.only_copy > 0 {
            format!(
                "{state} (its backup holds the only copy of {} taken out)",
                crate::checks::plural(r.only_copy, "file", "files")
            )
        } else {
            state
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
    not_listed(w, listing)?;
    writeln!(w, "backups: {}", sanitize(&root.display().to_string()))?;
    w.flush()
}

/// The folders `undo --list` passed over, counted (their names are not
/// printed: only run ids are).
fn not_listed(w: &mut dyn Write, listing: &Listing) -> io::Result<()> {
    if listing.not_runs > 0 {
        writeln!(
            w,
            "not listed: {} not named like a run id",
            crate::checks::plural(listing.not_runs, "folder", "folders")
        )?;
    }
    for (id, why) in &listing.unreadable {
        writeln!(w, "not listed: {}: {}", sanitize(id), sanitize(why))?;
    }
    Ok(())
}

/// `undo --list --format json`: one document, the runs oldest first.
pub fn list_json(
    w: &mut dyn Write,
    root: &Path,
    runs: &[RunSummary],
    listing: &Listing,
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
                "only_copy": r.only_copy,
                "why": r.why,
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
        "trusted": listing.untrusted.is_none(),
        "runs": runs,
        "not_run_ids": listing.not_runs,
        "unreadable": listing.unreadable.iter().map(|(id, why)| serde_json::json!({"run_id": id, "why": why})).collect::<Vec<_>>(),
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
        RunState::Untrusted => "not trusted",
    };
    let (mut removed, mut would, mut held, mut only, mut left) = (0, 0, 0, 0, 0);
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
                let id = sanitize(&r.run_id);
                let why = if r.state == RunState::Undoable {
                    held += 1;
                    format!("it can still be undone (convo-doctor undo {id}{dir_arg})")
                } else {
                    only += 1;
                    format!(
                        "its backup holds the only copy of {} taken out of a conversation",
                        crate::checks::plural(r.only_copy, "file", "files")
                    )
                };
                writeln!(
                    w,
                    "kept {id} (created {}): {why}; --force removes it",
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
    if only > 0 {
        parts.push(format!(
            "{only} kept (the only copy of files taken out of a conversation)"
        ));
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

/// `undo RUN --dry-run`: one line per file, as `undo` would print it, with
/// what it would do; nothing was written.
pub fn undo_dry_run(w: &mut dyn Write, decided: &[(ManifestEntry, Decision)]) -> io::Result<()> {
    let mut s = String::new();
    let (mut restore, mut refuse) = (0, 0);
    for (e, d) in decided {
        let path = format!("{}/{}", e.conversation.display(), e.file);
        let line = match d {
            Decision::Original if e.created => {
                format!("unchanged     {path} (already gone: the repair created it)")
            }
            Decision::Original => format!("unchanged     {path} (already the original)"),
            Decision::Restore(step) => {
                restore += 1;
                let how = match step {
                    Step::Rewrite => "put its original bytes back".to_string(),
                    Step::RenameBack { rewrite: false } => format!(
                        "rename it back from {}",
                        e.renamed_to.as_deref().unwrap_or_default()
                    ),
                    Step::RenameBack { rewrite: true } => format!(
                        "rename it back from {} and put its original bytes back",
                        e.renamed_to.as_deref().unwrap_or_default()
                    ),
                    Step::BringBack => "bring it back from the backup (its only copy)".into(),
                    Step::Remove => "remove it (the repair created it)".into(),
                    Step::RemoveLock => {
                        "remove it (the SDK's lock file, which the repair created)".into()
                    }
                };
                format!("would restore {path}: {how}")
            }
            Decision::Refuse(why) => {
                refuse += 1;
                format!("would refuse  {path}: {why}")
            }
        };
        s.push_str(&sanitize(&crate::secrets::redact_all(&line)));
        s.push('\n');
    }
    s.push_str(&format!(
        "dry run: would restore {restore}, refuse {refuse}, of {}; nothing was changed\n",
        crate::checks::plural(decided.len(), "file", "files")
    ));
    w.write_all(s.as_bytes())?;
    w.flush()
}

/// The run ids a completion script offers (`__complete-runs`): one a line,
/// nothing else (each is of the run-id alphabet, so the shell takes it as
/// it is).
pub fn ids(w: &mut dyn Write, ids: &[String]) -> io::Result<()> {
    for id in ids {
        writeln!(w, "{id}")?;
    }
    w.flush()
}
