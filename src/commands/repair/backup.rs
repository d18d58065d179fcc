//! Where a repair run's backups go (`--backup-dir`, else the default
//! root; none for a dry run that names none), and where they may not.

use std::path::{Path, PathBuf};

use crate::cli::RepairArgs;
use crate::fix::persist;

/// The backup root asked for: `--backup-dir`, else the default root, else
/// none (a dry run that names none). The JSONL session repairs use it too.
pub(in crate::commands) fn chosen(args: &RepairArgs) -> anyhow::Result<Option<PathBuf>> {
    Ok(match (&args.backup.dir, args.dry_run) {
        (Some(d), _) => Some(d.clone()),
        (None, true) => None,
        (None, false) => Some(persist::default_backup_root().map_err(anyhow::Error::msg)?),
    })
}

/// The backup root of this run, refused inside a store.
pub(super) fn root(args: &RepairArgs) -> anyhow::Result<Option<PathBuf>> {
    let root = chosen(args)?;
    // A backup holds copies of meta.json: inside a store (or the folder a
    // conversation sits in) a server would list the copy, or let it shadow
    // the original.
    if let Some(root) = &root {
        if let Some(store) = backup_inside_store(root, &args.paths) {
            anyhow::bail!(
                "the backup directory `{}` is inside `{}`, where a server would list the backed-up conversations; choose a --backup-dir outside every conversations directory",
                root.display(),
                store.display()
            );
        }
    }
    Ok(root)
}

/// The store (or the folder holding a conversation PATH) that `backup`
/// would sit inside, if any. Paths are compared after resolving the part of
/// each that exists, so `..` and links cannot hide the overlap.
fn backup_inside_store(backup: &Path, paths: &[PathBuf]) -> Option<PathBuf> {
    fn resolved(p: &Path) -> Option<PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        let mut existing = abs.as_path();
        let mut rest = Vec::new();
        while std::fs::symlink_metadata(existing).is_err() {
            rest.push(existing.file_name()?.to_owned());
            existing = existing.parent()?;
        }
        let mut out = existing.canonicalize().ok()?;
        out.extend(rest.iter().rev());
        Some(out)
    }
    let backup = resolved(backup)?;
    paths.iter().find_map(|p| {
        let p = resolved(p)?;
        let store = if crate::store::conversation::is_conversation_dir(&p) {
            p.parent()?.to_path_buf()
        } else {
            p
        };
        backup.starts_with(&store).then_some(store)
    })
}
