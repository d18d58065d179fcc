//! Applying a plan, and undoing it. Every write is:
//! - done under the SDK's own locks (`events/.eventlog.lock`, and the
//!   agent-server's `.owner_lease.lock` when it exists; flock, never waiting)
//!   and only when no live `owner_lease.json` says a server owns the folder;
//! - preceded by a backup of the original bytes and a manifest (path, sha256
//!   before and after, owner, mode, check ids, time), both synced to disk, in
//!   a run folder created 0700 under a backup root the invoking user owns;
//! - made through directory handles opened once, without following any link
//!   (`openat`/`renameat` relative to the folder's descriptor, `O_NOFOLLOW`
//!   everywhere, `O_NONBLOCK` for anything that might be a FIFO), so a folder
//!   swapped for a link mid-repair cannot redirect a write;
//! - atomic: a temp file created 0600 with `O_CREAT|O_EXCL|O_NOFOLLOW` in the
//!   same directory, given the original's owner, group and mode (fchown then
//!   fchmod) before the rename, fsync, rename, fsync of the directory;
//! - verified: the bytes, owner, group and mode read back must be the planned
//!   ones, and the directory written must still be the one at the path.

mod apply;
mod backup;
mod decide;
mod fsio;
mod listing;
mod locks;
mod single;
mod sqlite;
mod undo;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::clock::utc;

pub use apply::apply;
pub use backup::{load_run, open_backup_root, Run, RunDir};
pub use decide::{assess, decide, is_count_marker, summarize, Assessment, Decision, Step};
pub use fsio::{write_atomic, Owner};
pub use listing::{list_runs, report_run, run_repaired, trusted_run_ids, Listing, RunReport};
pub use locks::{lock_conversation, Locks};
pub use single::rewrite_file;
pub use sqlite::{change_sqlite, held};
pub use undo::{undo, Restored};

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub use crate::runs::{default_backup_root, valid_run_id};

/// Test hooks (`CONVO_DOCTOR_RUN_ID`, `CONVO_DOCTOR_CRASH_AT`) are honoured
/// only in debug builds (what `cargo test` runs); a release build ignores
/// them, so nothing in a production environment can steer a run.
fn test_hook(name: &str) -> Option<String> {
    if cfg!(debug_assertions) {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    } else {
        None
    }
}

/// A new run id from the clock (or `CONVO_DOCTOR_RUN_ID` in a debug build,
/// for tests; an id that is not one plain path component is ignored).
pub fn new_run_id() -> String {
    if let Some(id) = test_hook("CONVO_DOCTOR_RUN_ID").filter(|id| valid_run_id(id)) {
        return id;
    }
    format!("{}-{}", utc(SystemTime::now()).1, std::process::id())
}

/// The pid of the process that made run `run_id` (its last `-` part).
fn run_pid(run_id: &str) -> Option<u32> {
    run_id.rsplit_once('-')?.1.parse().ok()
}

/// The temp file that `pid` writes `name` through, beside it: a dot-file
/// the SDK never lists (it reads only `event-*.json` and its state files).
fn temp_name(name: &str, pid: u32) -> String {
    format!(".convo-doctor-{name}.{pid}.tmp")
}

/// Whether `file` is a temp file of process `pid` ([`temp_name`]).
fn is_temp_of(file: &str, pid: u32) -> bool {
    file.starts_with(".convo-doctor-") && file.ends_with(&format!(".{pid}.tmp"))
}

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct ManifestEntry {
    /// The conversation folder (absolute, resolved at repair time: no link).
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
    /// The original's owner and group.
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    /// Device and inode of the conversation folder at repair time: `undo`
    /// writes only into that very directory.
    #[serde(default)]
    pub conversation_dev: Option<u64>,
    #[serde(default)]
    pub conversation_ino: Option<u64>,
    /// The file's name after the repair, when it was renamed (renumbering;
    /// relative to the conversation folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// The file was moved into this backup (quarantine): the backup copy is
    /// the only copy; `sha256_after` is empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    /// The repair created this file (an answer to a tool call): `undo`
    /// removes it if it still holds `sha256_after`; `sha256_before` is empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// The original's modification time (seconds, nanoseconds): `undo` puts
    /// it back with the bytes (the `head-lag` guard reads mtimes as crash
    /// evidence, which a restore stamped "now" would erase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<(i64, i64)>,
}

#[derive(Debug, Serialize, Deserialize, Default)]
pub struct Manifest {
    pub run_id: String,
    pub tool: String,
    pub created: String,
    pub files: Vec<ManifestEntry>,
}

/// Crash-test hook: `CONVO_DOCTOR_CRASH_AT=<point>` (debug builds only)
/// aborts the process at that point of a repair (`after-backup`,
/// `before-rename`, `after-rename`), as a kill would, so tests can prove an
/// interrupted repair leaves either the old file or the new one, and that
/// `undo` still works.
///
/// `CONVO_DOCTOR_PAUSE_AT=<point>` with `CONVO_DOCTOR_PAUSE_FILE=<f>` (debug
/// builds only) instead writes `<f>.ready` at that point (also
/// `after-create`, right after a temp file is created) and waits (up to a
/// minute) until `<f>` exists, so a test can act between two steps.
pub(crate) fn pause_point(point: &str) {
    crash_point(point)
}

fn crash_point(point: &str) {
    if test_hook("CONVO_DOCTOR_CRASH_AT").is_some_and(|p| p == point) {
        std::process::abort();
    }
    if test_hook("CONVO_DOCTOR_PAUSE_AT").is_some_and(|p| p == point) {
        if let Some(f) = test_hook("CONVO_DOCTOR_PAUSE_FILE") {
            let _ = std::fs::write(format!("{f}.ready"), point);
            for _ in 0..6000 {
                if Path::new(&f).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// `CONVO_DOCTOR_FAIL_AT=<point>` (debug builds only) makes applying a plan
/// fail at that point (`before-manifest`: every check made, before the
/// manifest lists the changes; `after-first-change`: right after the first
/// change is made and verified), as an I/O error there would, so tests can
/// prove a failed run leaves the folder as it was or a run `undo` restores.
pub(super) fn fail_point(point: &str) -> Result<(), String> {
    match test_hook("CONVO_DOCTOR_FAIL_AT") {
        Some(p) if p == point => Err(format!("a failure injected for a test ({point})")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::decide::repairable_file;
    use super::fsio::*;
    use super::locks::*;
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.json");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        let dir = open_dir_path(d.path()).unwrap();
        let (_, st) = read_at(&dir, "f.json").unwrap();
        write_at(&dir, "f.json", b"new", Some(Owner::of(&st)), false).unwrap();
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
        let conv = open_dir_path(d.path()).unwrap();
        let held = lock_conversation(&conv).unwrap();
        // flock locks are per open file description: a second open conflicts
        assert!(lock_conversation(&conv).is_err());
        drop(held);
        assert!(lock_conversation(&conv).is_ok());
    }

    /// Issue 12, defect 3: with `events` a link, the lock is never created
    /// (or taken) in the link's target; a link at the lock is refused.
    #[test]
    fn links_where_the_locks_belong_are_refused_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let conv = d.path().join("c");
        let target = d.path().join("target");
        fs::create_dir_all(&conv).unwrap();
        fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, conv.join("events")).unwrap();
        let fd = open_dir_path(&conv).unwrap();
        assert!(lock_conversation(&fd).is_err());
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
        fs::remove_file(conv.join("events")).unwrap();
        fs::create_dir(conv.join("events")).unwrap();
        std::os::unix::fs::symlink(target.join("made"), conv.join("events/.eventlog.lock"))
            .unwrap();
        assert!(lock_conversation(&fd)
            .unwrap_err()
            .contains("symbolic link"));
        std::os::unix::fs::symlink(target.join("made2"), conv.join(".owner_lease.lock")).unwrap();
        assert!(lock_conversation(&fd)
            .unwrap_err()
            .contains("symbolic link"));
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn run_ids_are_one_plain_component() {
        for bad in ["", "..", "../x", "a/b", ".hidden", "a\nb"] {
            assert!(!valid_run_id(bad), "{bad:?}");
        }
        assert!(valid_run_id("20261130T112233Z-42"));
    }

    #[test]
    fn only_files_a_repair_writes_can_be_restored() {
        assert!(repairable_file("meta.json"));
        assert!(repairable_file("base_state.json"));
        assert!(repairable_file(
            "events/event-00001-0f8b0186-d86c-5dbb-8239-dd60a36a9ec5.json"
        ));
        for bad in [
            "../../etc/passwd",
            "events/../meta.json",
            "owner_lease.json",
            "x/meta.json",
            "events/x.json",
        ] {
            assert!(!repairable_file(bad) || components(bad).is_err(), "{bad}");
        }
    }
}
