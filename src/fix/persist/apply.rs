//! Applying a verified plan: backups and the manifest first, then every
//! change through the conversation's directory handle, each verified.
//!
//! Long because: backups, manifest, each write and its verification are one
//! ordered protocol.

use std::os::fd::OwnedFd;
use std::time::SystemTime;

use rustix::fs::{self as rfs, AtFlags, FileType};

use super::decide::EVENT_LOCK;
use super::fsio::*;
use super::locks::*;
use super::{crash_point, fail_point, sha256, utc, ManifestEntry, Run};
use crate::fix::Plan;
use crate::store::conversation::REPAIR_JOURNAL;

/// What a file held when the plan was made: its bytes, their sha256, or (a
/// file only renamed, whose bytes the plan never kept or hashed) the size
/// and modification time the proof's read saw.
#[derive(Clone, Copy)]
pub(super) enum Planned<'a> {
    Bytes(&'a [u8]),
    Sha256(&'a str),
    Stat(u64, Option<std::time::SystemTime>),
}

/// What [`still_as_read`] found: the file's directory handle, name, owner,
/// modification time (seconds, nanoseconds) and the sha256 of its bytes.
pub(super) type AsRead = (OwnedFd, String, Owner, (i64, i64), String);

/// A file a repair is about to replace or move, checked under the lock: it
/// still holds the bytes the plan was made from, has one link, and (unless
/// root) belongs to the invoking user, so its owner can be kept. Returns its
/// directory handle, name and owner.
pub(super) fn still_as_read(
    conv: &OwnedFd,
    rel: &str,
    planned: Planned,
    verb: &str,
) -> Result<AsRead, String> {
    let (dir, name) = open_parent(conv, rel).map_err(|err| format!("{rel}: {err}"))?;
    let (now, st) = read_at(&dir, &name).map_err(|err| format!("{rel}: {err}"))?;
    let sha = sha256(&now);
    let same = match planned {
        Planned::Bytes(b) => now == b,
        Planned::Sha256(h) => sha == h,
        Planned::Stat(size, mtime) => {
            let at = std::time::UNIX_EPOCH
                + std::time::Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32);
            now.len() as u64 == size && mtime == Some(at)
        }
    };
    if !same {
        return Err(format!(
            "{rel} changed since it was read; nothing was changed"
        ));
    }
    if st.st_nlink != 1 {
        // the SDK never hard-links its files; replacing one name of a
        // linked file would split it (and it may be someone's planted
        // link to a file elsewhere)
        return Err(format!(
            "{rel} has {} hard links; refusing to {verb} one of them; nothing was changed",
            st.st_nlink
        ));
    }
    let owner = Owner::of(&st);
    if euid() != 0 && owner.uid != euid() {
        let how = if verb == "move" {
            "move it and restore it with its owner"
        } else {
            "rewrite it and keep its owner"
        };
        return Err(format!(
            "{rel} is owned by uid {}: only root can {how}; nothing was changed",
            owner.uid
        ));
    }
    Ok((
        dir,
        name,
        owner,
        (st.st_mtime, st.st_mtime_nsec as i64),
        sha,
    ))
}

/// The owner, group and mode of an existing regular file below `conv`
/// (not a link, one link only).
pub(super) fn owner_at(conv: &OwnedFd, rel: &str) -> Result<Owner, String> {
    let (dir, name) = open_parent(conv, rel).map_err(|e| e.to_string())?;
    let st = rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| errno(e).to_string())?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_nlink != 1 {
        return Err(format!("{rel} is not a regular file with one link"));
    }
    Ok(Owner::of(&st))
}

/// Apply a verified plan. The run's manifest lists every change, and is
/// saved (synced), before the change is made: on a failure before the
/// first file of the conversation changes, the conversation is left as it
/// was (and out of the manifest); after it, `undo` restores it exactly.
pub fn apply(plan: &Plan, run: &mut Run, ordinal: usize) -> Result<Vec<String>, String> {
    // The folder that was read and proven, held since: written through
    // that descriptor, never reached by its path again. The path must still
    // lead to it (no folder on the way replaced, none swapped for a link):
    // otherwise "fixed PATH" would name a folder that was not written.
    let replaced = || {
        format!(
            "the folder was moved or replaced since it was read and proven (`{}` no longer leads to it, or through a symbolic link); nothing was changed",
            plan.dir.display()
        )
    };
    let conv = plan
        .root
        .reopen()
        .map_err(|e| format!("{}: {e}", plan.dir.display()))?;
    let cst = rfs::fstat(&conv).map_err(|e| e.to_string())?;
    if !plan.root.reached_again() {
        return Err(replaced());
    }
    // The absolute path the manifest names it by, for `undo`: the folder's
    // path now, which must lead to this very folder (device and inode)
    // from `/` without a link.
    let abs = std::fs::canonicalize(&plan.dir).map_err(|_| replaced())?;
    let named = walk_nofollow(&abs, |_, _| Ok(())).map_err(|_| replaced())?;
    match rfs::fstat(&named) {
        Ok(st) if (st.st_dev, st.st_ino) == (cst.st_dev, cst.st_ino) => {}
        _ => return Err(replaced()),
    }
    // What every manifest entry of this conversation shares; each kind of
    // change (rewrite, move, new file) fills in the rest.
    let entry = |file: &str, checks: &[&str], owner: &Owner| ManifestEntry {
        conversation: abs.clone(),
        file: file.to_string(),
        backup: String::new(),
        sha256_before: String::new(),
        sha256_after: String::new(),
        checks: checks.iter().map(|c| c.to_string()).collect(),
        time: utc(SystemTime::now()).0,
        mode: owner.mode,
        uid: Some(owner.uid),
        gid: Some(owner.gid),
        conversation_dev: Some(cst.st_dev),
        conversation_ino: Some(cst.st_ino),
        renamed_to: None,
        quarantined: false,
        created: false,
        mtime: None,
    };
    // The manifest lists every change before it is made, the first one
    // included: the SDK's lock file, which taking the locks creates when
    // the folder has none (undo removes it again, so an undone folder is
    // the original, name for name). Should anything fail before a file of
    // the conversation changes, this conversation's entries are taken out
    // again and that lock file removed ([`forget`]).
    let start = run.manifest.files.len();
    let lock_entry = ManifestEntry {
        sha256_after: sha256(b""),
        created: true,
        ..entry(
            EVENT_LOCK,
            &[],
            &Owner {
                uid: cst.st_uid,
                gid: cst.st_gid,
                mode: 0o644,
            },
        )
    };
    let lock_absent = lock_missing(&conv);
    if lock_absent {
        run.manifest.files.push(lock_entry.clone());
        if let Err(e) = run.save_manifest() {
            run.manifest.files.truncate(start);
            return Err(format!(
                "cannot write the backup manifest: {e}; nothing was changed"
            ));
        }
    }
    let locks = match lock_conversation(&conv) {
        Ok(l) => l,
        Err(why) => return Err(forget(run, start, &conv, false, ordinal, why)),
    };
    match (lock_absent, locks.created_lock) {
        // another process made it meanwhile: not this run's
        (true, false) => run.manifest.files.truncate(start),
        // it went meanwhile and this run made it: listed now, and saved
        // with the rest before the first change
        (false, true) => run.manifest.files.push(lock_entry),
        _ => {}
    }
    let created_lock = locks.created_lock;
    let (staged, moves, creates) = match prepare(plan, run, ordinal, &conv, &entry) {
        Ok(p) => p,
        Err(why) => {
            drop(locks);
            return Err(forget(run, start, &conv, created_lock, ordinal, why));
        }
    };
    // More than one change: between two of them the folder is neither the
    // original nor the repair. A journal says so until the last is verified
    // (`interrupted-repair`; `undo` removes it). Owned like the folder, 0600.
    let journaled = staged.len() + moves.len() + creates.len() > 1;
    if journaled {
        let journal = serde_json::json!({
            "run_id": run.id,
            "backup_dir": std::path::absolute(run.dir.parent().unwrap_or(&run.dir))
                .unwrap_or_else(|_| run.dir.clone()),
            "tool": run.manifest.tool,
            "started": utc(SystemTime::now()).0,
            "changes": staged.len() + moves.len() + creates.len(),
        });
        let owner = Owner {
            uid: cst.st_uid,
            gid: cst.st_gid,
            mode: 0o600,
        };
        write_at(
            &conv,
            REPAIR_JOURNAL,
            journal.to_string().as_bytes(),
            Some(owner),
            false,
        )
        .map_err(|e| {
            format!("cannot write the repair journal {REPAIR_JOURNAL}: {e}; nothing was changed")
        })?;
    }
    crash_point("after-backup");
    let mut done = Vec::new();
    // Event files first; the state files last, so base_state.json is the
    // newest file the run writes, as after the SDK's own autosave (the
    // `head-lag` guard reads mtimes, and the plan was proven on these).
    let write_edit = |(e, dir, name, owner, _): &Staged| -> Result<String, String> {
        write_at(dir, name, &e.after, Some(*owner), true)
            .map_err(|err| format!("writing {}: {err}", e.rel))?;
        crash_point("after-rename");
        let (back, st) =
            read_at(dir, name).map_err(|err| format!("re-reading {}: {err}", e.rel))?;
        if back != e.after {
            return Err(format!(
                "{} does not hold the planned bytes after writing",
                e.rel
            ));
        }
        if Owner::of(&st) != *owner {
            return Err(format!(
                "{} does not have its original owner and mode after writing",
                e.rel
            ));
        }
        let parts = components(&e.rel)?;
        still_at(dir, &abs, &parts[..parts.len() - 1])
            .map_err(|why| format!("{}: {why}", e.rel))?;
        Ok(e.rel.clone())
    };
    // the test hook that fails the run once its first change is made
    let made = |done: &Vec<String>| match done.len() {
        1 => fail_point("after-first-change"),
        _ => Ok(()),
    };
    let is_state = |rel: &str| !rel.starts_with("events/");
    for st in staged.iter().filter(|st| !is_state(&st.0.rel)) {
        done.push(write_edit(st)?);
        made(&done)?;
    }
    // Quarantines (their verified copies are in the backup), then renames
    // in ascending new index, never replacing a file.
    for (m, dir, name, to, _, _, sha) in &moves {
        let parts = components(&m.rel)?;
        match to {
            None => {
                rfs::unlinkat(dir, name.as_str(), AtFlags::empty())
                    .map_err(|err| format!("moving {} out: {err}", m.rel))?;
                crash_point("after-quarantine");
            }
            Some(to) => {
                rfs::renameat_with(
                    dir,
                    name.as_str(),
                    dir,
                    to.as_str(),
                    rfs::RenameFlags::NOREPLACE,
                )
                .map_err(|err| format!("renaming {}: {err}", m.rel))?;
                crash_point("after-rename");
                let (back, _) =
                    read_at(dir, to).map_err(|err| format!("re-reading {to}: {err}"))?;
                let want = plan
                    .edits
                    .iter()
                    .find(|e| e.rel == m.rel)
                    .map(|e| sha256(&e.after))
                    .unwrap_or_else(|| sha.clone());
                if sha256(&back) != want {
                    return Err(format!(
                        "{to} does not hold the planned bytes after the rename"
                    ));
                }
            }
        }
        rfs::fsync(dir).map_err(|err| format!("syncing events/: {err}"))?;
        still_at(dir, &abs, &parts[..parts.len() - 1])
            .map_err(|why| format!("{}: {why}", m.rel))?;
        done.push(m.rel.clone());
        made(&done)?;
    }
    for (c, dir, name, owner) in &creates {
        if rfs::statat(dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            return Err(format!("{} appeared while repairing", c.rel));
        }
        write_at(dir, name, &c.bytes, Some(*owner), true)
            .map_err(|err| format!("writing {}: {err}", c.rel))?;
        let (back, st) =
            read_at(dir, name).map_err(|err| format!("re-reading {}: {err}", c.rel))?;
        if back != c.bytes || Owner::of(&st) != *owner {
            return Err(format!(
                "{} does not hold the planned bytes and owner",
                c.rel
            ));
        }
        done.push(c.rel.clone());
        made(&done)?;
    }
    for st in staged.iter().filter(|st| is_state(&st.0.rel)) {
        done.push(write_edit(st)?);
        made(&done)?;
    }
    if !plan.root.reached_again() {
        return Err(format!(
            "the folder was moved or replaced while it was being repaired: the new bytes went to the directory that was read, which `{}` no longer leads to",
            plan.dir.display()
        ));
    }
    if journaled {
        rfs::unlinkat(&conv, REPAIR_JOURNAL, AtFlags::empty())
            .and_then(|_| rfs::fsync(&conv))
            .map_err(|err| {
                format!("every change was made and verified, but the journal {REPAIR_JOURNAL} could not be removed ({err}): remove it by hand")
            })?;
    }
    Ok(done)
}

/// A file to rewrite: the edit, its directory, name, owner and mtime.
type Staged<'a> = (&'a crate::fix::Edit, OwnedFd, String, Owner, (i64, i64));
/// A file to rename or take out: the move, its directory, name, new name,
/// owner, mtime and sha256.
type Moving<'a> = (
    &'a crate::fix::Move,
    OwnedFd,
    String,
    Option<String>,
    Owner,
    (i64, i64),
    String,
);
/// A new file: what, its directory, name and owner.
type Creating<'a> = (&'a crate::fix::Create, OwnedFd, String, Owner);
/// What [`prepare`] checked and listed.
type Prepared<'a> = (Vec<Staged<'a>>, Vec<Moving<'a>>, Vec<Creating<'a>>);

/// Under the locks, before any file of the conversation changes: the lease
/// is not live and every file is what was planned; what changes is backed
/// up and every change listed in the manifest, saved (synced) last.
fn prepare<'a>(
    plan: &'a Plan,
    run: &mut Run,
    ordinal: usize,
    conv: &OwnedFd,
    entry: &dyn Fn(&str, &[&str], &Owner) -> ManifestEntry,
) -> Result<Prepared<'a>, String> {
    if lease_live(conv) {
        return Err(
            "owner_lease.json became live: a server took the conversation; nothing was changed"
                .into(),
        );
    }
    let mut staged = Vec::new();
    for e in &plan.edits {
        let (dir, name, owner, mtime, _) =
            still_as_read(conv, &e.rel, Planned::Bytes(&e.before), "replace")?;
        staged.push((e, dir, name, owner, mtime));
    }
    // Moves: each file must still hold the bytes planned, have one link,
    // and its new name must be free.
    let mut moves = Vec::new();
    let moved_away: std::collections::HashSet<&str> =
        plan.moves.iter().map(|o| o.rel.as_str()).collect();
    for m in &plan.moves {
        let planned = match (&m.bytes, &m.seen) {
            (Some(b), _) => Planned::Bytes(b),
            (None, Some((size, mtime))) => Planned::Stat(*size, *mtime),
            (None, None) => Planned::Sha256(&m.sha256),
        };
        let (dir, name, owner, mtime, sha) = still_as_read(conv, &m.rel, planned, "move")?;
        let to_name = match &m.to {
            Some(to) => {
                let (tdir, tname) = open_parent(conv, to).map_err(|err| format!("{to}: {err}"))?;
                let (a, b) = (rfs::fstat(&tdir), rfs::fstat(&dir));
                let same = matches!((a, b), (Ok(a), Ok(b)) if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino));
                if !same {
                    return Err(format!("{to} is not in the folder of {}", m.rel));
                }
                // free, or freed first: files taken out go before renames,
                // and a rename after the one that moves its new name away
                let freed = moved_away.contains(to.as_str());
                if !freed && rfs::statat(&dir, tname.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
                    return Err(format!("{to} already exists; nothing was changed"));
                }
                Some(tname)
            }
            None => None,
        };
        moves.push((m, dir, name, to_name, owner, mtime, sha));
    }
    for (e, _, _, owner, mtime) in &staged {
        let backup = format!("{ordinal:04}/{}", e.rel);
        run.backup(&backup, &e.before)
            .map_err(|err| format!("backup of {}: {err}", e.rel))?;
        run.manifest.files.push(ManifestEntry {
            backup,
            sha256_before: sha256(&e.before),
            sha256_after: sha256(&e.after),
            renamed_to: plan
                .moves
                .iter()
                .find(|m| m.rel == e.rel)
                .and_then(|m| m.to.clone()),
            mtime: Some(*mtime),
            ..entry(&e.rel, &e.checks, owner)
        });
    }
    for (m, _, _, _, owner, mtime, sha) in &moves {
        // a file both edited and renamed has one entry (above)
        if staged.iter().any(|(e, ..)| e.rel == m.rel) {
            continue;
        }
        // a file taken out is backed up (the copy is its only copy); one
        // only renamed needs no copy: undo renames it back, checked by hash
        let backup = format!("{ordinal:04}/{}", m.rel);
        let backup = match &m.bytes {
            Some(bytes) => {
                run.backup(&backup, bytes)
                    .map_err(|err| format!("backup of {}: {err}", m.rel))?;
                backup
            }
            None => String::new(),
        };
        run.manifest.files.push(ManifestEntry {
            backup,
            sha256_before: sha.clone(),
            sha256_after: if m.to.is_some() {
                sha.clone()
            } else {
                String::new()
            },
            renamed_to: m.to.clone(),
            quarantined: m.to.is_none(),
            mtime: Some(*mtime),
            ..entry(&m.rel, &m.checks, owner)
        });
    }
    // New files: the name must be free; owner, group and mode are those of
    // the file whose slot it takes.
    let mut creates = Vec::new();
    for c in &plan.creates {
        let (dir, name) = open_parent(conv, &c.rel).map_err(|err| format!("{}: {err}", c.rel))?;
        if rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            return Err(format!("{} already exists; nothing was changed", c.rel));
        }
        // the file whose slot it takes, under the name this run's plan gave
        // it: moved or renamed by the run, created before it in the run, or
        // as it is on disk
        let moved = moves
            .iter()
            .find(|(m, ..)| m.rel == c.like || m.to.as_deref() == Some(c.like.as_str()))
            .map(|(.., o, _, _)| *o)
            .or_else(|| {
                creates
                    .iter()
                    .find(|(made, ..): &&(&crate::fix::Create, _, _, _)| made.rel == c.like)
                    .map(|(.., o)| *o)
            });
        let owner = match moved {
            Some(o) => o,
            None => staged
                .iter()
                .find(|(e, ..)| e.rel == c.like)
                .map(|(.., o, _)| *o)
                .map_or_else(|| owner_at(conv, &c.like), Ok)
                .map_err(|why| {
                    format!("{}: no file to take the owner and mode from ({why})", c.rel)
                })?,
        };
        run.manifest.files.push(ManifestEntry {
            sha256_after: sha256(&c.bytes),
            created: true,
            ..entry(&c.rel, &c.checks, &owner)
        });
        creates.push((c, dir, name, owner));
    }
    // every quarantined file's backup copy must read back as its bytes
    // before the original leaves the conversation
    for (m, ..) in moves.iter().filter(|(m, ..)| m.to.is_none()) {
        let rel = format!("{ordinal:04}/{}", m.rel);
        match run.read_back(&rel) {
            Ok(b) if Some(&b) == m.bytes.as_ref() => {}
            _ => {
                return Err(format!(
                    "the backup copy of {} does not read back; nothing was changed",
                    m.rel
                ))
            }
        }
    }
    fail_point("before-manifest")?;
    run.save_manifest()
        .map_err(|e| format!("cannot write the backup manifest: {e}"))?;
    Ok((staged, moves, creates))
}

/// Whether the conversation has `events/` but no SDK lock file in it.
fn lock_missing(conv: &OwnedFd) -> bool {
    open_dir_at(conv, "events").is_ok_and(|events| {
        matches!(
            rfs::statat(&events, ".eventlog.lock", AtFlags::SYMLINK_NOFOLLOW),
            Err(e) if e == rustix::io::Errno::NOENT
        )
    })
}

/// After a failure before any file of the conversation changed: remove the
/// SDK lock file the run created (listed until it is gone, for `undo`),
/// take this conversation's entries out of the manifest again and its
/// backup copies out of the run, and save the manifest as it then is.
/// Returns `why`, with what is left, if anything.
fn forget(
    run: &mut Run,
    start: usize,
    conv: &OwnedFd,
    created_lock: bool,
    ordinal: usize,
    mut why: String,
) -> String {
    let mut keep = start;
    if created_lock {
        match super::undo::remove_created_lock(conv) {
            super::Restored::Removed | super::Restored::AlreadyGone => {}
            _ => {
                keep = start + 1;
                why = format!(
                    "{why} (the SDK lock file the run created is left: `undo {}` removes it)",
                    run.id
                );
            }
        }
    }
    run.manifest.files.truncate(keep);
    let _ = std::fs::remove_dir_all(run.dir.join(format!("{ordinal:04}")));
    if let Err(e) = run.save_manifest() {
        why = format!("{why}; the backup manifest could not be written again: {e}");
    }
    why
}
