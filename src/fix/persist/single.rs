//! Rewriting one file that is not an OpenHands conversation's (a Claude Code
//! session, `src/claude/`) with the same guarantees as a plan's rewrite:
//! the folder reached from `/` without a link, the file checked to hold the
//! bytes that were read and proven (one link, owned by the invoking user
//! unless root), a backup and a manifest entry synced before the write, an
//! atomic write keeping owner, group and mode, read back and verified; so
//! `undo RUN-ID` restores it exactly.

use std::path::Path;
use std::time::SystemTime;

use rustix::fs as rfs;

use super::apply::{still_as_read, Planned};
use super::fsio::*;
use super::{crash_point, utc, ManifestEntry, Run};

/// Replace `path`'s bytes `before` with `after`. `checks` are the ids the
/// rewrite clears; `ordinal` numbers the file's backup folder in the run.
/// On an error nothing was changed (and the manifest does not list it),
/// except for an error reading back the file written, which says so.
pub fn rewrite_file(
    run: &mut Run,
    path: &Path,
    before: &[u8],
    after: &[u8],
    checks: &[&str],
    ordinal: usize,
) -> Result<(), String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| components(n).is_ok())
        .ok_or_else(|| format!("`{}` has no plain file name", path.display()))?
        .to_string();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    let abs = std::fs::canonicalize(parent).map_err(|e| format!("`{}`: {e}", parent.display()))?;
    // the folder, reached from `/` without following a link
    let dir = open_dir_nofollow(&abs)?;
    let dst = rfs::fstat(&dir).map_err(|e| e.to_string())?;
    let (fdir, fname, owner, mtime, _) =
        still_as_read(&dir, &name, Planned::Bytes(before), "rewrite")?;
    let backup = format!("{ordinal:04}/{name}");
    run.backup(&backup, before)
        .map_err(|e| format!("backup of {name}: {e}; nothing was changed"))?;
    let start = run.manifest.files.len();
    run.manifest.files.push(ManifestEntry {
        conversation: abs.clone(),
        file: name.clone(),
        backup,
        sha256_before: super::sha256(before),
        sha256_after: super::sha256(after),
        checks: checks.iter().map(|c| c.to_string()).collect(),
        time: utc(SystemTime::now()).0,
        mode: owner.mode,
        uid: Some(owner.uid),
        gid: Some(owner.gid),
        conversation_dev: Some(dst.st_dev),
        conversation_ino: Some(dst.st_ino),
        renamed_to: None,
        quarantined: false,
        created: false,
        mtime: Some(mtime),
    });
    if let Err(e) = run.save_manifest() {
        run.manifest.files.truncate(start);
        return Err(format!(
            "cannot write the backup manifest: {e}; nothing was changed"
        ));
    }
    crash_point("after-backup");
    // checked again right before the write: a client that appended since
    // the read (a live session) leaves the file alone
    if let Err(why) = still_as_read(&dir, &name, Planned::Bytes(before), "rewrite") {
        run.manifest.files.truncate(start);
        let _ = run.save_manifest();
        return Err(why);
    }
    write_at(&fdir, &fname, after, Some(owner), true)
        .map_err(|e| format!("writing {name}: {e}"))?;
    crash_point("after-rename");
    let (back, st) = read_at(&fdir, &fname).map_err(|e| format!("re-reading {name}: {e}"))?;
    if back != after {
        return Err(format!(
            "{name} does not hold the planned bytes after writing"
        ));
    }
    if Owner::of(&st) != owner {
        return Err(format!(
            "{name} does not have its original owner and mode after writing"
        ));
    }
    still_at(&dir, &abs, &[])?;
    Ok(())
}
