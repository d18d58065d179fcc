//! `undo`: put a run's files back, each only while it still holds what the
//! repair wrote.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};

use super::backup::*;
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

/// The SDK's lock file, which a repair creates when a folder has none.
pub(super) const EVENT_LOCK: &str = "events/.eventlog.lock";

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

/// A file a repair may have written: `base_state.json`, `meta.json`, or an
/// event file named by the SDK's rule directly in `events/`.
pub(super) fn repairable_file(rel: &str) -> bool {
    match rel.split_once('/') {
        None => rel == "meta.json" || rel == "base_state.json",
        Some(("events", name)) => {
            !name.contains('/')
                && (crate::store::event::parse_event_name(name, true).is_some()
                    || is_count_marker(name)
                    || name == ".eventlog.lock")
        }
        _ => false,
    }
}

pub use crate::store::event::is_count_marker;

/// The conversation folder a manifest entry names, opened: it must still be
/// at the path recorded (no link, not moved) and be the same folder (device
/// and inode) as at repair time.
pub(super) fn open_repaired_conversation(e: &ManifestEntry) -> Result<OwnedFd, String> {
    if !e.conversation.is_absolute()
        || std::fs::canonicalize(&e.conversation).ok().as_deref() != Some(e.conversation.as_path())
    {
        return Err(
            "the conversation folder is no longer at the path recorded (a link or a moved folder on the way)".into(),
        );
    }
    let conv = open_dir_path(&e.conversation)
        .map_err(|err| format!("cannot open the conversation folder: {err}"))?;
    if let (Some(dev), Some(ino)) = (e.conversation_dev, e.conversation_ino) {
        match rfs::fstat(&conv) {
            Ok(st) if (st.st_dev, st.st_ino) == (dev, ino) => {}
            _ => {
                return Err(
                    "the folder at that path is not the one that was repaired (it was replaced)"
                        .into(),
                )
            }
        }
    }
    Ok(conv)
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
    if components(&e.file).is_err() || !repairable_file(&e.file) {
        return refuse("the manifest names a file a repair never writes".into());
    }
    if let Some(to) = &e.renamed_to {
        let same_dir = e.file.rsplit_once('/').map(|p| p.0) == to.rsplit_once('/').map(|p| p.0);
        if components(to).is_err() || !repairable_file(to) || !same_dir || e.quarantined {
            return refuse("the manifest names a rename a repair never makes".into());
        }
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
    let (dir, name) = match open_parent(&conv, &e.file) {
        Ok(x) => x,
        Err(err) => return refuse(format!("cannot open its folder: {err}")),
    };
    if e.quarantined {
        return restore_quarantined(run, e, &dir, &name);
    }
    if e.created {
        return match read_at(&dir, &name) {
            Err(_) if rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_err() => {
                Restored::AlreadyOriginal
            }
            Ok((b, st)) if sha256(&b) == e.sha256_after && st.st_nlink == 1 => {
                match rfs::unlinkat(&dir, name.as_str(), AtFlags::empty())
                    .and_then(|_| rfs::fsync(&dir))
                {
                    Ok(()) => Restored::Restored,
                    Err(err) => refuse(format!("cannot remove the file the repair created: {err}")),
                }
            }
            _ => refuse("the file the repair created changed since; it is left".into()),
        };
    }
    if let Some(to) = &e.renamed_to {
        let to_name = to.rsplit('/').next().unwrap_or(to).to_string();
        let at_new = read_at(&dir, &to_name);
        let at_old = read_at(&dir, &name);
        match (at_new, at_old) {
            (Err(_), Ok((b, _))) if sha256(&b) == e.sha256_before => {
                return Restored::AlreadyOriginal
            }
            // not renamed yet (a repair cut short): restore its bytes below
            (Err(_), Ok(_)) => {}
            (Ok(_), Ok(_)) => {
                return refuse(format!(
                    "both {} and its new name {to} exist; restoring would replace one",
                    e.file
                ))
            }
            (Ok((b, st)), Err(_)) => {
                if st.st_nlink != 1 {
                    return refuse(format!("{to} has {} hard links", st.st_nlink));
                }
                if sha256(&b) != e.sha256_after {
                    return refuse(format!(
                        "{to} changed since the repair; restoring would lose those changes"
                    ));
                }
                if let Err(err) = rfs::renameat_with(
                    &dir,
                    to_name.as_str(),
                    &dir,
                    name.as_str(),
                    rfs::RenameFlags::NOREPLACE,
                ) {
                    return refuse(format!("cannot rename {to} back: {err}"));
                }
                if let Err(err) = rfs::fsync(&dir) {
                    return refuse(format!("cannot sync the folder: {err}"));
                }
            }
            (Err(err), _) => return refuse(format!("cannot read {to}: {err}")),
        }
    }
    let (now, st) = match read_at(&dir, &name) {
        Ok(x) => x,
        Err(err) => return refuse(format!("cannot read it: {err}")),
    };
    let now_sha = sha256(&now);
    if now_sha == e.sha256_before {
        return if e.renamed_to.is_some() {
            Restored::Restored
        } else {
            Restored::AlreadyOriginal
        };
    }
    if st.st_nlink != 1 {
        return refuse(format!(
            "it has {} hard links; refusing to replace one of them",
            st.st_nlink
        ));
    }
    if now_sha != e.sha256_after {
        return refuse("it changed since the repair; restoring would lose those changes".into());
    }
    let backup = match read_backup(run, &e.backup) {
        Ok(b) if sha256(&b) == e.sha256_before => {
            // what undo prints passes through the run's redactor: teach it
            // the secrets of the file being restored
            if let Ok(v) = serde_json::from_slice(&b) {
                crate::secrets::Redactor::default().learn(&v);
            }
            b
        }
        Ok(_) => return refuse("the backup copy does not match its checksum".into()),
        Err(err) => return refuse(format!("cannot read the backup: {err}")),
    };
    let owner = Owner {
        uid: e.uid.unwrap_or(st.st_uid),
        gid: e.gid.unwrap_or(st.st_gid),
        mode: e.mode & 0o7777,
    };
    if let Err(err) = write_at(&dir, &name, &backup, Some(owner), false) {
        return refuse(format!("cannot write it: {err}"));
    }
    match read_at(&dir, &name) {
        Ok((b, st)) if sha256(&b) == e.sha256_before && Owner::of(&st) == owner => {}
        _ => return refuse("it does not hold the original bytes and owner after restoring".into()),
    }
    restore_mtime(&dir, &name, e);
    let parts: Vec<&str> = e.file.split('/').collect();
    match still_at(&dir, &e.conversation, &parts[..parts.len() - 1]) {
        Ok(()) => Restored::Restored,
        Err(why) => refuse(why),
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

/// Put a quarantined file back from the backup, under its original name,
/// owner, group and mode, never replacing a file.
pub(super) fn restore_quarantined(
    run: &RunDir,
    e: &ManifestEntry,
    dir: &OwnedFd,
    name: &str,
) -> Restored {
    let refuse = |why: String| Restored::Refused(why);
    match read_at(dir, name) {
        Ok((b, _)) if sha256(&b) == e.sha256_before => return Restored::AlreadyOriginal,
        Ok(_) => {
            return refuse("a different file now has its name; restoring would replace it".into())
        }
        Err(_) if rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok() => {
            return refuse("something that is not a regular file now has its name".into())
        }
        Err(_) => {}
    }
    let backup = match read_backup(run, &e.backup) {
        Ok(b) if sha256(&b) == e.sha256_before => b,
        Ok(_) => return refuse("the backup copy does not match its checksum".into()),
        Err(err) => return refuse(format!("cannot read the backup: {err}")),
    };
    let owner = Owner {
        uid: e.uid.unwrap_or(euid()),
        gid: e.gid.unwrap_or(rustix::process::getegid().as_raw()),
        mode: e.mode & 0o7777,
    };
    if let Err(err) = write_at(dir, name, &backup, Some(owner), false) {
        return refuse(format!("cannot write it: {err}"));
    }
    match read_at(dir, name) {
        Ok((b, st)) if sha256(&b) == e.sha256_before && Owner::of(&st) == owner => {
            restore_mtime(dir, name, e);
            Restored::Restored
        }
        _ => refuse("it does not hold the original bytes and owner after restoring".into()),
    }
}
