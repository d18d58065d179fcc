//! What `undo` would do with one manifest entry, decided on the folder as it
//! is now. `undo` decides (again, under the conversation's locks) and then
//! acts on the decision; `undo --list`, `undo --prune` and `undo RUN
//! --dry-run` decide and stop there, so all four agree on every entry: a
//! file renamed by the repair is looked for under its new name, a file taken
//! out is undone by bringing it back, a file the repair created by removing
//! it, and the SDK's lock file a repair created last of all.

use std::os::fd::OwnedFd;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};

use super::backup::*;
use super::fsio::*;
use super::{sha256, ManifestEntry};

/// The SDK's lock file, which a repair creates when a folder has none.
pub(super) const EVENT_LOCK: &str = "events/.eventlog.lock";

/// How `undo` puts one file back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Write the backup copy's bytes over the file (its name is unchanged).
    Rewrite,
    /// Rename the file back from the name the repair gave it; then, when the
    /// repair changed its bytes too, write the backup copy's bytes over it.
    RenameBack { rewrite: bool },
    /// Write the file the repair took out of the conversation back from the
    /// backup (its only copy) under its name, which is free.
    BringBack,
    /// Remove the file the repair created.
    Remove,
    /// Remove the SDK's lock file the repair created (once every other file
    /// of the conversation is back).
    RemoveLock,
}

/// What `undo` would do with one manifest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The file already is the original, name and bytes: nothing to do.
    Original,
    /// `undo` would put the original back.
    Restore(Step),
    /// `undo` refuses (it would lose a change made since, or the run is not
    /// one it trusts), and why.
    Refuse(String),
}

impl Decision {
    pub fn is_refused(&self) -> bool {
        matches!(self, Decision::Refuse(_))
    }
}

impl ManifestEntry {
    /// The SDK's lock file, created by the run (not a file of the
    /// conversation: `repair` does not count it among the files it changed).
    pub fn is_created_lock(&self) -> bool {
        self.created && self.file == EVENT_LOCK
    }

    /// Whether the backup holds the only copy of this file while it is not
    /// back in the conversation (a file the repair took out).
    pub fn only_copy_in_backup(&self) -> bool {
        self.quarantined
    }
}

/// A file a repair may have written: `base_state.json`, `meta.json`, or an
/// event file named by the SDK's rule directly in `events/` (or with its
/// index spelled short, a name `bad-event-filename` renames from).
pub(super) fn repairable_file(rel: &str) -> bool {
    match rel.split_once('/') {
        // a Claude Code session (`src/claude/`, rewritten by `rewrite_file`)
        None => {
            rel == "meta.json"
                || rel == "base_state.json"
                || crate::claude::is_session_name(rel)
                // the Codex state database and its side files (`sqlite.rs`)
                || crate::codex::state::is_db_file(rel)
        }
        Some(("events", name)) => {
            !name.contains('/')
                && (crate::store::event::parse_event_name(name, true).is_some()
                    || crate::store::event::parse_short_index_name(name).is_some()
                    || is_count_marker(name)
                    || name == ".eventlog.lock")
        }
        _ => false,
    }
}

pub use crate::store::event::is_count_marker;

/// The entry names only what a repair writes: a refusal otherwise.
pub(super) fn sane(e: &ManifestEntry) -> Result<(), String> {
    if components(&e.file).is_err() || !repairable_file(&e.file) {
        return Err("the manifest names a file a repair never writes".into());
    }
    if let Some(to) = &e.renamed_to {
        let same_dir = e.file.rsplit_once('/').map(|p| p.0) == to.rsplit_once('/').map(|p| p.0);
        if components(to).is_err() || !repairable_file(to) || !same_dir || e.quarantined {
            return Err("the manifest names a rename a repair never makes".into());
        }
    }
    Ok(())
}

/// The conversation folder a manifest entry names, opened: reached from `/`
/// one component at a time without following a link, and the same folder
/// (device and inode) as at repair time.
pub(super) fn open_repaired_conversation(e: &ManifestEntry) -> Result<OwnedFd, String> {
    if !e.conversation.is_absolute() {
        return Err("the manifest names a conversation folder by a relative path".into());
    }
    let conv = open_dir_nofollow(&e.conversation).map_err(|err| {
        format!("the conversation folder is no longer at the path recorded ({err})")
    })?;
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

/// Why a file of a SQLite database the repair changed
/// ([`super::change_sqlite`]) may not be put back now: a process has the
/// database open; or, for the database itself, one of its side files is
/// there again (the repair's own close removed them: a client opened the
/// database since, and its log would be applied to the old bytes).
fn database_in_use(conv: &OwnedFd, e: &ManifestEntry) -> Option<String> {
    if !crate::codex::state::is_db_file(&e.file) {
        return None;
    }
    let base = crate::appserver::db::SIDE_FILES
        .iter()
        .find_map(|s| e.file.strip_suffix(s))
        .unwrap_or(&e.file);
    if let Some(who) = super::sqlite::held(conv, base) {
        return Some(format!("{who}; undo it once every client has exited"));
    }
    if e.file == base && !e.created && !e.quarantined {
        let back = crate::appserver::db::SIDE_FILES.iter().find(|s| {
            rfs::statat(
                conv,
                format!("{base}{s}").as_str(),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .is_ok()
        });
        if let Some(s) = back {
            if e.sha256_after != e.sha256_before {
                return Some(format!(
                    "`{base}{s}` is there again: a client opened the database since the repair; putting the old database back under its log would mix two states"
                ));
            }
        }
    }
    None
}

/// What `undo` would do with `e`, looking at the folder now (read-only).
pub fn decide(run: &RunDir, e: &ManifestEntry) -> Decision {
    if let Err(why) = sane(e) {
        return Decision::Refuse(why);
    }
    match open_repaired_conversation(e) {
        Ok(conv) => decide_at(run, e, &conv),
        Err(why) => Decision::Refuse(why),
    }
}

/// [`decide`] in the conversation folder `conv`, already opened (and, for
/// `undo`, locked).
pub(super) fn decide_at(run: &RunDir, e: &ManifestEntry, conv: &OwnedFd) -> Decision {
    use Decision::{Original, Refuse, Restore};
    if e.is_created_lock() {
        return decide_lock(conv);
    }
    if let Some(why) = database_in_use(conv, e) {
        return Refuse(why);
    }
    let (dir, name) = match open_parent(conv, &e.file) {
        Ok(x) => x,
        Err(err) => return Refuse(format!("cannot open its folder: {err}")),
    };
    let exists = |n: &str| rfs::statat(&dir, n, AtFlags::SYMLINK_NOFOLLOW).is_ok();
    let backup_ok = || match read_backup(run, &e.backup) {
        Ok(b) if sha256(&b) == e.sha256_before => Ok(()),
        Ok(_) => Err("the backup copy does not match its checksum".to_string()),
        Err(err) => Err(format!("cannot read the backup: {err}")),
    };
    if e.quarantined {
        return match read_at(&dir, &name) {
            Ok((b, _)) if sha256(&b) == e.sha256_before => Original,
            Ok(_) => Refuse("a different file now has its name; restoring would replace it".into()),
            Err(_) if exists(&name) => {
                Refuse("something that is not a regular file now has its name".into())
            }
            Err(_) => match backup_ok() {
                Ok(()) => Restore(Step::BringBack),
                Err(why) => Refuse(why),
            },
        };
    }
    if e.created {
        return match read_at(&dir, &name) {
            Err(_) if !exists(&name) => Original,
            Ok((b, st)) if sha256(&b) == e.sha256_after && st.st_nlink == 1 => {
                Restore(Step::Remove)
            }
            _ => Refuse("the file the repair created changed since; it is left".into()),
        };
    }
    // what the file under its original name must hold before a rewrite
    let rewrite_from = |b: &[u8], st: &rustix::fs::Stat| -> Decision {
        let sha = sha256(b);
        if sha == e.sha256_before {
            Original
        } else if st.st_nlink != 1 {
            Refuse(format!(
                "it has {} hard links; refusing to replace one of them",
                st.st_nlink
            ))
        } else if sha != e.sha256_after {
            Refuse("it changed since the repair; restoring would lose those changes".into())
        } else {
            match backup_ok() {
                Ok(()) => Restore(Step::Rewrite),
                Err(why) => Refuse(why),
            }
        }
    };
    if let Some(to) = &e.renamed_to {
        let to_name = to.rsplit('/').next().unwrap_or(to);
        match (read_at(&dir, to_name), read_at(&dir, &name)) {
            // not renamed (yet: a repair cut short), or renamed back: the
            // file under its original name decides
            (Err(_), Ok((b, st))) if !exists(to_name) => return rewrite_from(&b, &st),
            (Ok(_), Ok(_)) => {
                return Refuse(format!(
                    "both {} and its new name {to} exist; restoring would replace one",
                    e.file
                ))
            }
            (Ok((b, st)), Err(_)) if !exists(&name) => {
                if st.st_nlink != 1 {
                    return Refuse(format!("{to} has {} hard links", st.st_nlink));
                }
                if sha256(&b) != e.sha256_after {
                    return Refuse(format!(
                        "{to} changed since the repair; restoring would lose those changes"
                    ));
                }
                let rewrite = e.sha256_after != e.sha256_before;
                if rewrite {
                    if let Err(why) = backup_ok() {
                        return Refuse(why);
                    }
                }
                return Restore(Step::RenameBack { rewrite });
            }
            (Err(err), _) if exists(to_name) => return Refuse(format!("cannot read {to}: {err}")),
            (_, Err(err)) if exists(&name) => {
                return Refuse(format!("cannot read {}: {err}", e.file))
            }
            _ => return Refuse(format!("neither {} nor {to} is there", e.file)),
        }
    }
    match read_at(&dir, &name) {
        Ok((b, st)) => rewrite_from(&b, &st),
        Err(err) => Refuse(format!("cannot read it: {err}")),
    }
}

/// The SDK's lock file the run created: gone (the original state), or the
/// empty, single-link regular file the repair made (undo removes it).
fn decide_lock(conv: &OwnedFd) -> Decision {
    let Ok(events) = open_dir_at(conv, "events") else {
        return Decision::Original;
    };
    let fd = match rfs::openat(
        &events,
        ".eventlog.lock",
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Decision::Original,
        Err(e) => return Decision::Refuse(format!("cannot open it: {e}")),
    };
    match rfs::fstat(&fd) {
        Ok(st)
            if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                && st.st_size == 0
                && st.st_nlink == 1 =>
        {
            Decision::Restore(Step::RemoveLock)
        }
        _ => Decision::Refuse("it is no longer the empty lock file the repair made".into()),
    }
}

/// Every entry of a run with what `undo` would do with it. The lock file a
/// run created is decided with its conversation: once every other file of
/// it is the original, whether the lock is there no longer matters (the
/// SDK makes it on its next append).
pub fn assess(run: &RunDir, files: &[ManifestEntry]) -> Vec<(ManifestEntry, Decision)> {
    let mut out: Vec<(ManifestEntry, Decision)> =
        files.iter().map(|e| (e.clone(), decide(run, e))).collect();
    let settled: Vec<bool> = out
        .iter()
        .map(|(e, _)| {
            out.iter()
                .filter(|(x, _)| x.conversation == e.conversation && !x.is_created_lock())
                .all(|(_, d)| *d == Decision::Original)
        })
        .collect();
    for ((e, d), settled) in out.iter_mut().zip(settled) {
        if e.is_created_lock() && settled {
            *d = Decision::Original;
        }
    }
    out
}

/// What a run is, from its entries' decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assessment {
    /// Files of conversations the run changed (the lock it created aside).
    pub files: usize,
    /// Conversations it changed.
    pub conversations: usize,
    /// Entries `undo` would restore.
    pub restorable: usize,
    /// Entries `undo` would refuse.
    pub refused: usize,
    /// Files taken out of a conversation and not back: the backup holds
    /// their only copy.
    pub only_copy: usize,
}

pub fn summarize(decided: &[(ManifestEntry, Decision)]) -> Assessment {
    let files: Vec<&(ManifestEntry, Decision)> = decided
        .iter()
        .filter(|(e, _)| !e.is_created_lock())
        .collect();
    let mut convs: Vec<&std::path::Path> = decided
        .iter()
        .map(|(e, _)| e.conversation.as_path())
        .collect();
    convs.sort_unstable();
    convs.dedup();
    Assessment {
        files: files.len(),
        conversations: convs.len(),
        restorable: files
            .iter()
            .filter(|(_, d)| matches!(d, Decision::Restore(_)))
            .count(),
        refused: files.iter().filter(|(_, d)| d.is_refused()).count(),
        only_copy: files
            .iter()
            .filter(|(e, d)| e.only_copy_in_backup() && *d != Decision::Original)
            .count(),
    }
}
