//! `convo-doctor undo RUN-ID`: put back every file a repair run changed
//! (`--list`, `--prune` and `--dry-run` are in `undo_list`).

use std::io;

use super::broken_pipe_or_error;
use super::ExitStatus;
use crate::cli::UndoArgs;
use crate::fix::persist::{self, Restored};
use crate::render;

pub fn undo(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    if args.list {
        return super::undo_list::list(args);
    }
    if args.prune {
        return super::undo_list::prune(args);
    }
    if args.dry_run {
        return super::undo_list::dry_run(args);
    }
    let root = match &args.backup.dir {
        Some(d) => d.clone(),
        None => persist::default_backup_root().map_err(anyhow::Error::msg)?,
    };
    let (dir, manifest) = persist::load_run(&root, &args.run_id).map_err(anyhow::Error::msg)?;
    let results = persist::undo(&dir, &manifest);
    let refused = results
        .iter()
        .any(|(_, r)| matches!(r, Restored::Refused(_)));
    if let Err(e) = render::repair::undo(&mut io::stdout().lock(), &results) {
        return broken_pipe_or_error(e);
    }
    Ok(if refused {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    })
}
