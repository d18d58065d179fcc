//! `convo-doctor __complete-runs [--backup-dir DIR]`, hidden: what the
//! completion scripts of `super::completions` offer after `undo`.

use super::{broken_pipe_or_error, ExitStatus};
use crate::fix::persist;
use crate::render;

/// `convo-doctor __complete-runs [--backup-dir DIR]`, hidden, which the
/// bash, zsh and fish scripts run at TAB after `undo`: the ids of the runs
/// under the backup root (`DIR`, else `persist::default_backup_root`) that
/// `undo --list` calls trusted (`persist::trusted_run_ids`), one a line;
/// nothing read from disk reaches a shell otherwise. Exit 2, with the
/// reason on stderr (which the scripts discard), for a root `undo` would
/// not trust.
pub fn run_ids(backup_dir: Option<&std::path::Path>) -> anyhow::Result<ExitStatus> {
    let ids = match backup_dir {
        Some(d) => persist::trusted_run_ids(d),
        None => persist::default_backup_root().and_then(|d| persist::trusted_run_ids(&d)),
    };
    let ids = ids.map_err(anyhow::Error::msg)?;
    match render::runs::ids(&mut std::io::stdout().lock(), &ids) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => broken_pipe_or_error(e),
    }
}
