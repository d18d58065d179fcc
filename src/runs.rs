//! Repair runs as the rest of the program names them: what a run id may
//! be, where runs are kept by default, and whether a kept run repaired a
//! given folder. The rules live here, below `checks/`, so the
//! `interrupted-repair` check follows the same ones as `repair` and `undo`
//! without importing the engine (`fix/`); the lookup that reads a backup
//! folder is the engine's, passed to the checks by the command that runs
//! them (`checks::Ctx::runs`).

use std::path::{Path, PathBuf};

/// Whether `id` may name a run folder: one plain path component.
pub fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
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

/// Whether the backup root `root` holds run `run_id`, a run `undo` would
/// trust, that changed the conversation folder with that (device, inode).
pub type Lookup = fn(root: &Path, run_id: &str, conversation: (u64, u64)) -> bool;
