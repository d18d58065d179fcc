//! `undo`: put a run's files back, each only while it still holds what the
//! repair wrote.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};

use super::backup::*;
use super::decide::*;
use super::fsio::*;
use super::locks::*;
use super::{is_temp_of, run_pid, sha256, Manifest, ManifestEntry};
use crate::store::conversation::REPAIR_JOURNAL;

/// What `undo` did with one file.
#[derive(Debug)]
pub enum Restored {
    Restored,
    AlreadyOriginal,
    Refused(String),
}

/// Restore every file of a run whose bytes are still what the repair wrote.
pub fn undo(run: &RunDir, manifest: &Manifest) -> Vec<(ManifestEntry, Restored)> {
    // in reverse: renames (made in ascending order) are undone in
    // descending order, then quarantined files come back, then edits; a
    // lock file the run created goes last (every restore takes that lock)
    let is_lock = |e: &ManifestEntry| e.file == EVENT_LOCK && e.created;
    let mut out: Vec<_> = manifest
        .files
        .iter()
        .rev()
        .map(|e| {
            let r = if is_lock(e) {
                Restored::AlreadyOriginal // decided below
            } else {
                restore_one(run, e)
            };
            (e.clone(), r)
        })
        .collect();
    out.reverse();
    // A conversation all of whose files are back as they were is no longer
    // half-repaired: its journal (if the run was interrupted) goes too.
    let mut seen = std::collections::BTreeSet::new();
    for (e, _) in &out {
        if seen.insert(e.conversation.clone())
            && out
                .iter()
                .filter(|(x, _)| x.conversation == e.conversation)
                .all(|(_, r)| !matches!(r, Restored::Refused(_)))
        {
            clear_interrupted(e, &manifest.run_id);
        }
    }
    let done: Vec<(PathBuf, bool)> = out
        .iter()
        .map(|(e, r)| {
            (
                e.conversation.clone(),
                is_lock(e) || !matches!(r, Restored::Refused(_)),
            )
        })
        .collect();
    for (e, r) in out.iter_mut().filter(|(e, _)| is_lock(e)) {
        let all_back = done
            .iter()
            .filter(|(c, _)| *c == e.conversation)
            .all(|(_, ok)| *ok);
        *r = if all_back {
            remove_created_lock(e)
        } else {
            Restored::Refused("kept: other files of the conversation were not restored".into())
        };
    }
    out
}

/// Remove the SDK lock file a repair created, if it is still an empty
/// regular file with one link that nobody holds (taken while it is removed).
pub(super) fn remove_created_lock(e: &ManifestEntry) -> Restored {
    let conv = match open_repaired_conversation(e) {
        Ok(fd) => fd,
        Err(why) => return Restored::Refused(why),
    };
    let events = match open_dir_at(&conv, "events") {
        Ok(fd) => fd,
        Err(_) => return Restored::AlreadyOriginal,
    };
    let name = ".eventlog.lock";
    let fd = match rfs::openat(&events, name, LOCK_OPEN, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Restored::AlreadyOriginal,
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
        Ok(()) => Restored::Restored,
        Err(err) => Restored::Refused(format!("cannot remove it: {err}")),
    }
}

/// After `undo` restored every file of a conversation: remove the journal
/// the run left there if it was interrupted (only a regular, single-link
/// file naming this run), and the temp files its killed process left
/// (`.convo-doctor-*.PID.tmp`, PID from the run id), in the folder and in
/// `events/`. What cannot be removed is left; nothing else is touched.
pub(super) fn clear_interrupted(e: &ManifestEntry, run_id: &str) {
    let Ok(conv) = open_repaired_conversation(e) else {
        return;
    };
    let Ok(_locks) = lock_conversation(&conv) else {
        return;
    };
    if let Ok((bytes, st)) = read_at(&conv, REPAIR_JOURNAL) {
        let ours = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|j| {
                j.get("run_id")
                    .and_then(|r| r.as_str())
                    .map(|r| r == run_id)
            })
            .unwrap_or(false);
        if ours && st.st_nlink == 1 {
            let _ = rfs::unlinkat(&conv, REPAIR_JOURNAL, AtFlags::empty());
            let _ = rfs::fsync(&conv);
        }
    }
    let Some(pid) = run_pid(run_id) else {
        return;
    };
    let dirs = [
        rfs::openat(&conv, ".", DIR_FLAGS, Mode::empty()).ok(),
        open_dir_at(&conv, "events").ok(),
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

pub(super) fn restore_one(run: &RunDir, e: &ManifestEntry) -> Restored {
    let refuse = |why: String| Restored::Refused(why);
    if let Err(why) = sane(e) {
        return refuse(why);
    }
    let conv = match open_repaired_conversation(e) {
        Ok(fd) => fd,
        Err(why) => return refuse(why),
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
    let _locks = match lock_conversation(&conv) {
        Ok(l) => l,
        Err(why) => return refuse(why),
    };
    if crate::checks::live_lease::is_live(&e.conversation) {
        return refuse("a server holds the conversation (owner_lease.json is live)".into());
    }
    // decided again under the locks, then done
    match decide_at(run, e, &conv) {
        Decision::Original => Restored::AlreadyOriginal,
        Decision::Refuse(why) => refuse(why),
        Decision::Restore(step) => match act(run, e, &conv, step) {
            Ok(()) => Restored::Restored,
            Err(why) => refuse(why),
        },
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
