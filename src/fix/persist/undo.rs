//! `undo`: put a run's files back, each only while it still holds what the
//! repair wrote.
//!
//! Long because: undo mirrors apply's protocol step by step; splitting it
//! would split that mirror.

use std::os::fd::OwnedFd;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};

use super::backup::*;
use super::decide::*;
use super::fsio::*;
use super::locks::*;
use super::{crash_point, is_temp_of, run_pid, sha256, Manifest, ManifestEntry};
use crate::store::conversation::REPAIR_JOURNAL;

/// What `undo` did with one file.
#[derive(Debug)]
pub enum Restored {
    /// Its original bytes, name or both are back.
    Restored,
    /// A file the repair created (or the SDK's lock file it made) was
    /// removed.
    Removed,
    /// It already was the original.
    AlreadyOriginal,
    /// A file the repair created was already gone.
    AlreadyGone,
    Refused(String),
}

/// Restore every file of a run whose bytes are still what the repair wrote,
/// one conversation at a time, under its locks: every file is decided again
/// (as `undo --dry-run` decides it), and when more than one of them is to be
/// put back, a journal (`.convo-doctor-repair.json`, `"operation":
/// "undo"`) is written first and removed once the last is verified, so a
/// kill in between leaves a folder `interrupted-repair` reports and `repair`
/// refuses (as a half-made repair), and running `undo` again finishes it.
pub fn undo(run: &RunDir, manifest: &Manifest) -> Vec<(ManifestEntry, Restored)> {
    let mut results: Vec<Option<Restored>> = manifest.files.iter().map(|_| None).collect();
    let mut order: Vec<&std::path::Path> = Vec::new();
    for e in &manifest.files {
        if !order.contains(&e.conversation.as_path()) {
            order.push(&e.conversation);
        }
    }
    for conv in order {
        let idx: Vec<usize> = (0..manifest.files.len())
            .filter(|&i| manifest.files[i].conversation == conv)
            .collect();
        undo_conversation(run, manifest, &idx, &mut results);
    }
    manifest
        .files
        .iter()
        .cloned()
        .zip(results)
        .map(|(e, r)| (e, r.unwrap_or(Restored::AlreadyOriginal)))
        .collect()
}

/// [`undo`] of the entries `idx` of one conversation.
fn undo_conversation(
    run: &RunDir,
    manifest: &Manifest,
    idx: &[usize],
    results: &mut [Option<Restored>],
) {
    let files = &manifest.files;
    let (locks_at, rest): (Vec<usize>, Vec<usize>) =
        idx.iter().partition(|&&i| files[i].is_created_lock());
    let refuse_all = |results: &mut [Option<Restored>], why: &str| {
        for &i in idx {
            results[i] = Some(Restored::Refused(why.to_string()));
        }
    };
    let first = &files[idx[0]];
    let conv = match open_repaired_conversation(first) {
        Ok(fd) => fd,
        Err(why) => return refuse_all(results, &why),
    };
    // what undo prints passes through the run's redactor: teach it this
    // conversation's secrets first
    for state in ["base_state.json", "meta.json"] {
        if let Ok((b, _)) = read_at(&conv, state) {
            if let Ok(v) = serde_json::from_slice(&b) {
                crate::secrets::Redactor::default().learn(&v);
            }
        }
    }
    let cst = match rfs::fstat(&conv) {
        Ok(st) => st,
        Err(err) => return refuse_all(results, &err.to_string()),
    };
    {
        let locks = match lock_conversation(&conv) {
            Ok(l) => l,
            Err(why) => return refuse_all(results, &why),
        };
        if lease_live(&conv) {
            return refuse_all(
                results,
                "a server holds the conversation (owner_lease.json is live)",
            );
        }
        // in reverse: renames (made in ascending order) are undone in
        // descending order, then files taken out come back, then edits
        let decided: Vec<(usize, Decision)> = rest
            .iter()
            .rev()
            .map(|&i| {
                let e = &files[i];
                let same = (e.conversation_dev, e.conversation_ino)
                    == (first.conversation_dev, first.conversation_ino);
                let d = match sane(e) {
                    Err(why) => Decision::Refuse(why),
                    Ok(()) if !same => {
                        Decision::Refuse("the manifest names two folders at one path".into())
                    }
                    Ok(()) => decide_at(run, e, &conv),
                };
                (i, d)
            })
            .collect();
        let acting = decided
            .iter()
            .filter(|(_, d)| matches!(d, Decision::Restore(_)))
            .count();
        if acting > 1 {
            if let Err(why) = write_undo_journal(&conv, &cst, run, manifest, acting) {
                return refuse_all(results, &why);
            }
        }
        for (i, d) in decided {
            let e = &files[i];
            results[i] = Some(match d {
                Decision::Original if e.created => Restored::AlreadyGone,
                Decision::Original => Restored::AlreadyOriginal,
                Decision::Refuse(why) => Restored::Refused(why),
                Decision::Restore(step) => {
                    let removal = matches!(step, Step::Remove);
                    match act(run, e, &conv, step) {
                        Ok(()) => {
                            crash_point("undo-after-restore");
                            if removal {
                                Restored::Removed
                            } else {
                                Restored::Restored
                            }
                        }
                        Err(why) => Restored::Refused(why),
                    }
                }
            });
        }
        // every file back as it was: no longer half-repaired (or
        // half-undone); its journal and the killed run's temp files go
        let all_back = rest
            .iter()
            .all(|&i| !matches!(results[i], Some(Restored::Refused(_))));
        if all_back {
            clear_interrupted(&conv, &manifest.run_id);
        }
        // the lock file was already gone when undo took the locks (which
        // made it again to take them): removing it now is no change of undo's
        let lock_was_gone = locks.created_lock;
        drop(locks);
        for &i in &locks_at {
            results[i] = Some(if all_back {
                match remove_created_lock(&conv) {
                    Restored::Removed if lock_was_gone => Restored::AlreadyGone,
                    r => r,
                }
            } else {
                Restored::Refused("kept: other files of the conversation were not restored".into())
            });
        }
    }
}

/// The journal an undo of more than one file keeps in the folder until its
/// last file is verified (what `repair` keeps while it changes more than
/// one): owned like the folder, 0600.
fn write_undo_journal(
    conv: &OwnedFd,
    cst: &rustix::fs::Stat,
    run: &RunDir,
    manifest: &Manifest,
    changes: usize,
) -> Result<(), String> {
    let root = run.path.parent().unwrap_or(&run.path);
    let journal = serde_json::json!({
        "run_id": manifest.run_id,
        "backup_dir": std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()),
        "operation": "undo",
        "tool": format!("convo-doctor {}", env!("CARGO_PKG_VERSION")),
        "started": super::utc(std::time::SystemTime::now()).0,
        "changes": changes,
    });
    let owner = Owner {
        uid: cst.st_uid,
        gid: cst.st_gid,
        mode: 0o600,
    };
    write_at(
        conv,
        REPAIR_JOURNAL,
        journal.to_string().as_bytes(),
        Some(owner),
        false,
    )
    .map_err(|e| {
        format!("cannot write the undo journal {REPAIR_JOURNAL}: {e}; nothing was changed")
    })
}

/// Remove the SDK lock file a repair created, if it is still an empty
/// regular file with one link that nobody holds (taken while it is removed).
pub(super) fn remove_created_lock(conv: &OwnedFd) -> Restored {
    let events = match open_dir_at(conv, "events") {
        Ok(fd) => fd,
        Err(_) => return Restored::AlreadyGone,
    };
    let name = ".eventlog.lock";
    let fd = match rfs::openat(&events, name, LOCK_OPEN, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Restored::AlreadyGone,
        Err(e) => return Restored::Refused(format!("cannot open it: {e}")),
    };
    let fd = match take_lock(fd, EVENT_LOCK) {
        Ok(fd) => fd,
        Err(why) => return Restored::Refused(why),
    };
    match rfs::fstat(&fd) {
        Ok(st)
            if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && st.st_size == 0
                && st.st_nlink == 1 => {}
        _ => {
            return Restored::Refused("it is no longer the empty lock file the repair made".into())
        }
    }
    match rfs::unlinkat(&events, name, AtFlags::empty()).and_then(|_| rfs::fsync(&events)) {
        Ok(()) => Restored::Removed,
        Err(err) => Restored::Refused(format!("cannot remove it: {err}")),
    }
}

/// After `undo` restored every file of a conversation: remove the journal
/// the run left there if it was interrupted (only a regular, single-link
/// file naming this run), and the temp files its killed process left
/// (`.convo-doctor-*.PID.tmp`, PID from the run id), in the folder and in
/// `events/`. What cannot be removed is left; nothing else is touched.
pub(super) fn clear_interrupted(conv: &OwnedFd, run_id: &str) {
    if let Ok((bytes, st)) = read_at(conv, REPAIR_JOURNAL) {
        let ours = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|j| {
                j.get("run_id")
                    .and_then(|r| r.as_str())
                    .map(|r| r == run_id)
            })
            .unwrap_or(false);
        if ours && st.st_nlink == 1 {
            let _ = rfs::unlinkat(conv, REPAIR_JOURNAL, AtFlags::empty());
            let _ = rfs::fsync(conv);
        }
    }
    let Some(pid) = run_pid(run_id) else {
        return;
    };
    let dirs = [
        rfs::openat(conv, ".", DIR_FLAGS, Mode::empty()).ok(),
        open_dir_at(conv, "events").ok(),
    ];
    for dir in dirs.into_iter().flatten() {
        let Ok(mut rd) = rfs::Dir::read_from(&dir) else {
            continue;
        };
        let mut names = Vec::new();
        while let Some(Ok(ent)) = rd.next() {
            let name = ent.file_name().to_string_lossy().into_owned();
            if is_temp_of(&name, pid) {
                names.push(name);
            }
        }
        for name in names {
            let regular =
                rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                    FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && st.st_nlink == 1
                });
            if regular {
                let _ = rfs::unlinkat(&dir, name.as_str(), AtFlags::empty());
            }
        }
        let _ = rfs::fsync(&dir);
    }
}

/// Make one [`Step`] that [`decide_at`] chose under the locks: every write
/// goes through the conversation's descriptor, never replaces a file it did
/// not decide on, and is read back.
fn act(run: &RunDir, e: &ManifestEntry, conv: &OwnedFd, step: Step) -> Result<(), String> {
    let (dir, name) =
        open_parent(conv, &e.file).map_err(|err| format!("cannot open its folder: {err}"))?;
    let backup = || -> Result<Vec<u8>, String> {
        match read_backup(run, &e.backup) {
            Ok(b) if sha256(&b) == e.sha256_before => {
                // what undo prints passes through the run's redactor: teach
                // it the secrets of the file being restored
                if let Ok(v) = serde_json::from_slice(&b) {
                    crate::secrets::Redactor::default().learn(&v);
                }
                Ok(b)
            }
            Ok(_) => Err("the backup copy does not match its checksum".into()),
            Err(err) => Err(format!("cannot read the backup: {err}")),
        }
    };
    let rewrite = |dir: &OwnedFd| -> Result<(), String> {
        let bytes = backup()?;
        let (_, st) = read_at(dir, &name).map_err(|err| format!("cannot read it: {err}"))?;
        let owner = Owner {
            uid: e.uid.unwrap_or(st.st_uid),
            gid: e.gid.unwrap_or(st.st_gid),
            mode: e.mode & 0o7777,
        };
        put_back(dir, &name, &bytes, owner, e)
    };
    match step {
        Step::Rewrite => rewrite(&dir)?,
        Step::RenameBack { rewrite: also } => {
            let to = e.renamed_to.as_deref().unwrap_or_default();
            let to_name = to.rsplit('/').next().unwrap_or(to);
            rfs::renameat_with(
                &dir,
                to_name,
                &dir,
                name.as_str(),
                rfs::RenameFlags::NOREPLACE,
            )
            .map_err(|err| format!("cannot rename {to} back: {err}"))?;
            rfs::fsync(&dir).map_err(|err| format!("cannot sync the folder: {err}"))?;
            if also {
                rewrite(&dir)?;
            }
        }
        Step::BringBack => {
            let bytes = backup()?;
            let owner = Owner {
                uid: e.uid.unwrap_or(euid()),
                gid: e.gid.unwrap_or(rustix::process::getegid().as_raw()),
                mode: e.mode & 0o7777,
            };
            put_back(&dir, &name, &bytes, owner, e)?;
        }
        Step::Remove => {
            rfs::unlinkat(&dir, name.as_str(), AtFlags::empty())
                .and_then(|_| rfs::fsync(&dir))
                .map_err(|err| format!("cannot remove the file the repair created: {err}"))?;
        }
        // the lock is removed by `undo` itself, after every other file
        Step::RemoveLock => return Ok(()),
    }
    let parts: Vec<&str> = e.file.split('/').collect();
    still_at(&dir, &e.conversation, &parts[..parts.len() - 1])
}

/// Write `bytes` as `name` with `owner` (atomically, through `dir`), read
/// it back, and give it the original's modification time.
fn put_back(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    owner: Owner,
    e: &ManifestEntry,
) -> Result<(), String> {
    write_at(dir, name, bytes, Some(owner), false)
        .map_err(|err| format!("cannot write it: {err}"))?;
    match read_at(dir, name) {
        Ok((b, st)) if sha256(&b) == e.sha256_before && Owner::of(&st) == owner => {
            restore_mtime(dir, name, e);
            Ok(())
        }
        _ => Err("it does not hold the original bytes and owner after restoring".into()),
    }
}

/// Give a restored file its original modification time (manifests written
/// before it was recorded have none; the access time is left as it is).
pub(super) fn restore_mtime(dir: &OwnedFd, name: &str, e: &ManifestEntry) {
    if let Some((sec, nsec)) = e.mtime {
        let times = rfs::Timestamps {
            last_access: rfs::Timespec {
                tv_sec: 0,
                tv_nsec: rfs::UTIME_OMIT,
            },
            last_modification: rfs::Timespec {
                tv_sec: sec,
                tv_nsec: nsec as _,
            },
        };
        let _ = rfs::utimensat(dir, name, &times, AtFlags::SYMLINK_NOFOLLOW);
    }
}
