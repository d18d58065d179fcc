//! Applying a plan, and undoing it. Every write is:
//! - done under the SDK's own lock (`events/.eventlog.lock`, flock) and only
//!   when no live `owner_lease.json` says a server owns the folder;
//! - preceded by a backup of the original bytes and a manifest (path, sha256
//!   before and after, check ids, time), both synced to disk;
//! - atomic: a temp file in the same directory with the original's
//!   permissions, fsync, rename, fsync of the directory;
//! - verified: the bytes read back must be the planned bytes.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::clock::utc;

use super::Plan;

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where backups go by default: `$XDG_STATE_HOME/convo-doctor/backups`, else
/// `~/.local/state/convo-doctor/backups`: never inside a conversation folder
/// (the agent-server zips those into trajectory downloads) or a store.
pub fn default_backup_root() -> Result<PathBuf, String> {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("convo-doctor/backups"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/state/convo-doctor/backups")),
        None => Err("neither XDG_STATE_HOME nor HOME is set: pass --backup-dir".into()),
    }
}

/// A new run id from the clock (or `CONVO_DOCTOR_RUN_ID`, for tests).
pub fn new_run_id() -> String {
    if let Ok(id) = std::env::var("CONVO_DOCTOR_RUN_ID") {
        if !id.is_empty() {
            return id;
        }
    }
    format!("{}-{}", utc(SystemTime::now()).1, std::process::id())
}

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct ManifestEntry {
    /// The conversation folder (absolute).
    pub conversation: PathBuf,
    /// The file, relative to the conversation folder.
    pub file: String,
    /// The backup copy, relative to the run folder.
    pub backup: String,
    pub sha256_before: String,
    pub sha256_after: String,
    pub checks: Vec<String>,
    pub time: String,
    pub mode: u32,
}

#[derive(Debug, Serialize, Deserialize, Default)]
pub struct Manifest {
    pub run_id: String,
    pub tool: String,
    pub created: String,
    pub files: Vec<ManifestEntry>,
}

/// A run folder under the backup root, created on first use.
pub struct Run {
    pub id: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Run {
    pub fn new(root: &Path, id: String) -> Result<Run, String> {
        let dir = root.join(&id);
        if dir.exists() {
            return Err(format!(
                "backup run `{}` already exists; refusing to overwrite it",
                dir.display()
            ));
        }
        Ok(Run {
            manifest: Manifest {
                run_id: id.clone(),
                tool: format!("convo-doctor {}", env!("CARGO_PKG_VERSION")),
                created: utc(SystemTime::now()).0,
                files: Vec::new(),
            },
            id,
            dir,
        })
    }

    fn save_manifest(&self) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&self.manifest).map_err(std::io::Error::other)?;
        write_atomic(&self.dir.join("manifest.json"), text.as_bytes(), 0o600)
    }
}

/// Write `bytes` to `path` atomically with permissions `mode`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_atomic_at(path, bytes, mode, false)
}

/// Crash-test hook: `CONVO_DOCTOR_CRASH_AT=<point>` aborts the process at
/// that point of a repair (`after-backup`, `before-rename`, `after-rename`),
/// as a kill would, so tests can prove an interrupted repair leaves either
/// the old file or the new one, and that `undo` still works.
fn crash_point(point: &str) {
    if std::env::var("CONVO_DOCTOR_CRASH_AT").is_ok_and(|p| p == point) {
        std::process::abort();
    }
}

fn write_atomic_at(path: &Path, bytes: &[u8], mode: u32, hooks: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".convo-doctor-{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        if hooks {
            crash_point("before-rename");
        }
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Hold the SDK's event-log lock for as long as this value lives.
pub struct EventLock {
    _file: Option<File>,
}

/// Take `events/.eventlog.lock` the way the SDK's writers do (flock,
/// exclusive), without waiting: a held lock means a live writer.
pub fn lock_events(conv: &Path) -> Result<EventLock, String> {
    let events = conv.join("events");
    if !events.is_dir() {
        return Ok(EventLock { _file: None });
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(events.join(".eventlog.lock"))
        .map_err(|e| format!("cannot open events/.eventlog.lock: {e}"))?;
    match f.try_lock() {
        Ok(()) => Ok(EventLock { _file: Some(f) }),
        Err(fs::TryLockError::WouldBlock) => Err(
            "another process holds events/.eventlog.lock (a live SDK writer); try again when it is idle".into(),
        ),
        Err(fs::TryLockError::Error(e)) => Err(format!("cannot lock events/.eventlog.lock: {e}")),
    }
}

/// Apply a verified plan. On any failure before the first rename, nothing
/// has changed; after it, the manifest already lists every file so `undo`
/// can restore them.
pub fn apply(plan: &Plan, run: &mut Run, ordinal: usize) -> Result<Vec<String>, String> {
    let _lock = lock_events(&plan.dir)?;
    // Under the lock, the lease and the files must be what was planned.
    if crate::checks::live_lease::is_live(&plan.dir) {
        return Err(
            "owner_lease.json became live: a server took the conversation; nothing was changed"
                .into(),
        );
    }
    let abs = fs::canonicalize(&plan.dir).map_err(|e| format!("{}: {e}", plan.dir.display()))?;
    let mut staged = Vec::new();
    for e in &plan.edits {
        let path = plan.dir.join(&e.rel);
        let now = fs::read(&path).map_err(|err| format!("{}: {err}", e.rel))?;
        if now != e.before {
            return Err(format!(
                "{} changed since it was read; nothing was changed",
                e.rel
            ));
        }
        let mode = fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        staged.push((e, path, mode));
    }
    // Backups and manifest first.
    fs::create_dir_all(&run.dir)
        .map_err(|e| format!("cannot create {}: {e}", run.dir.display()))?;
    for (e, _, mode) in &staged {
        let backup = format!("{ordinal:04}/{}", e.rel);
        let bpath = run.dir.join(&backup);
        if let Some(p) = bpath.parent() {
            fs::create_dir_all(p).map_err(|err| format!("cannot create {}: {err}", p.display()))?;
        }
        write_atomic(&bpath, &e.before, 0o600)
            .map_err(|err| format!("backup of {}: {err}", e.rel))?;
        run.manifest.files.push(ManifestEntry {
            conversation: abs.clone(),
            file: e.rel.clone(),
            backup,
            sha256_before: sha256(&e.before),
            sha256_after: sha256(&e.after),
            checks: e.checks.iter().map(|c| c.to_string()).collect(),
            time: utc(SystemTime::now()).0,
            mode: *mode,
        });
    }
    run.save_manifest()
        .map_err(|e| format!("cannot write the backup manifest: {e}"))?;
    crash_point("after-backup");
    let mut done = Vec::new();
    for (e, path, mode) in &staged {
        write_atomic_at(path, &e.after, *mode, true)
            .map_err(|err| format!("writing {}: {err}", e.rel))?;
        crash_point("after-rename");
        let back = fs::read(path).map_err(|err| format!("re-reading {}: {err}", e.rel))?;
        if back != e.after {
            return Err(format!(
                "{} does not hold the planned bytes after writing",
                e.rel
            ));
        }
        done.push(e.rel.clone());
    }
    Ok(done)
}

/// What `undo` did with one file.
#[derive(Debug)]
pub enum Restored {
    Restored,
    AlreadyOriginal,
    Refused(String),
}

/// Load a run's manifest.
pub fn load_run(root: &Path, run_id: &str) -> Result<(PathBuf, Manifest), String> {
    if run_id.contains('/') || run_id.starts_with('.') || run_id.is_empty() {
        return Err(format!("`{run_id}` is not a run id"));
    }
    let dir = root.join(run_id);
    let text = fs::read_to_string(dir.join("manifest.json"))
        .map_err(|e| format!("no backup run `{run_id}` under {}: {e}", root.display()))?;
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| format!("manifest of `{run_id}` is not valid: {e}"))?;
    Ok((dir, m))
}

/// Restore every file of a run whose bytes are still what the repair wrote.
pub fn undo(run_dir: &Path, manifest: &Manifest) -> Vec<(ManifestEntry, Restored)> {
    let mut out = Vec::new();
    for e in &manifest.files {
        let r = restore_one(run_dir, e);
        out.push((e.clone(), r));
    }
    out
}

fn restore_one(run_dir: &Path, e: &ManifestEntry) -> Restored {
    if e.file.split('/').any(|p| p == ".." || p.is_empty()) {
        return Restored::Refused("the manifest names a path outside the conversation".into());
    }
    let lock = match lock_events(&e.conversation) {
        Ok(l) => l,
        Err(why) => return Restored::Refused(why),
    };
    if crate::checks::live_lease::is_live(&e.conversation) {
        return Restored::Refused(
            "a server holds the conversation (owner_lease.json is live)".into(),
        );
    }
    let path = e.conversation.join(&e.file);
    let now = match fs::read(&path) {
        Ok(b) => b,
        Err(err) => return Restored::Refused(format!("cannot read it: {err}")),
    };
    let now_sha = sha256(&now);
    if now_sha == e.sha256_before {
        return Restored::AlreadyOriginal;
    }
    if now_sha != e.sha256_after {
        return Restored::Refused(
            "it changed since the repair; restoring would lose those changes".into(),
        );
    }
    let backup = match fs::read(run_dir.join(&e.backup)) {
        Ok(b) if sha256(&b) == e.sha256_before => b,
        Ok(_) => return Restored::Refused("the backup copy does not match its checksum".into()),
        Err(err) => return Restored::Refused(format!("cannot read the backup: {err}")),
    };
    if let Err(err) = write_atomic(&path, &backup, e.mode) {
        return Restored::Refused(format!("cannot write it: {err}"));
    }
    drop(lock);
    match fs::read(&path) {
        Ok(b) if sha256(&b) == e.sha256_before => Restored::Restored,
        _ => Restored::Refused("it does not hold the original bytes after restoring".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.json");
        fs::write(&p, b"old").unwrap();
        write_atomic(&p, b"new", 0o640).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_held_lock_refuses() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("events")).unwrap();
        let held = lock_events(d.path()).unwrap();
        // flock locks are per open file description: a second open conflicts
        assert!(lock_events(d.path()).is_err());
        drop(held);
        assert!(lock_events(d.path()).is_ok());
    }
}
