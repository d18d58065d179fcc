//! The runs kept under a backup root, as `undo --list` and `undo --prune`
//! see them: each run's entries decided exactly as `undo` decides them
//! ([`assess`]), when `undo` would trust the run; otherwise only counted,
//! and read the way conversation files are read (no link followed, no FIFO
//! waited on, nothing past the read limit), so a backup root another user
//! owns can neither hang the listing nor grow its memory without bound.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType};

use super::backup::*;
use super::decide::{assess, summarize, Assessment};
use super::fsio::*;
use super::{valid_run_id, Manifest};

/// One run folder.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The folder's name: a run id (`[A-Za-z0-9._:-]`, not starting with
    /// `.`), so it can be printed in a command as it is.
    pub run_id: String,
    pub created: String,
    /// Files of conversations the run changed (the SDK lock file it created
    /// aside, as `repair` counts them).
    pub files: usize,
    pub conversations: usize,
    /// What `undo` would do with the run, or why `undo` would not trust it.
    pub assessed: Result<Assessment, String>,
}

/// What a backup root holds.
#[derive(Debug, Default)]
pub struct Listing {
    /// Why `undo` would not trust the root itself (`None`: it would).
    pub untrusted: Option<String>,
    /// Run folders whose manifest could be read, by name.
    pub runs: Vec<RunReport>,
    /// Folders whose names are not run ids (never named in a command).
    pub not_runs: usize,
    /// Run folders whose manifest could not be read (name, why).
    pub unreadable: Vec<(String, String)>,
}

fn counts(m: &Manifest) -> (usize, usize) {
    let files = m.files.iter().filter(|e| !e.is_created_lock()).count();
    let mut convs: Vec<&Path> = m.files.iter().map(|e| e.conversation.as_path()).collect();
    convs.sort_unstable();
    convs.dedup();
    (files, convs.len())
}

/// A run `undo` would trust, assessed the way `undo` decides.
pub fn report_run(root: &Path, run_id: &str) -> Result<RunReport, String> {
    let (dir, m) = load_run(root, run_id)?;
    let decided = assess(&dir, &m.files);
    let (files, conversations) = counts(&m);
    Ok(RunReport {
        run_id: run_id.to_string(),
        created: m.created.clone(),
        files,
        conversations,
        assessed: Ok(summarize(&decided)),
    })
}

/// A run's manifest read without trusting it: below `root` (already
/// opened), the run folder opened without following a link, the manifest
/// read as a regular file only, without blocking, within the read limit.
fn peek(root: &OwnedFd, run_id: &str, why: String) -> Result<RunReport, String> {
    let dir = open_dir_at(root, run_id).map_err(|e| e.to_string())?;
    let (bytes, _) = read_at(&dir, "manifest.json").map_err(|e| format!("manifest.json: {e}"))?;
    let m: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| format!("manifest.json is not valid: {e}"))?;
    let (files, conversations) = counts(&m);
    Ok(RunReport {
        run_id: run_id.to_string(),
        created: m.created,
        files,
        conversations,
        assessed: Err(why),
    })
}

/// The backup root opened for listing, why `undo` would not trust it
/// (`None`: it would), and the names of the folders in it (not links),
/// sorted; `None` when `root` does not exist (no repair has written there
/// yet).
type Folders = (OwnedFd, Option<String>, Vec<String>);

/// [`Folders`] of `root`; with `trusted_only`, a root `undo` would not
/// trust is an error, not listed.
fn folders(root: &Path, trusted_only: bool) -> Result<Option<Folders>, String> {
    match rfs::lstat(root) {
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(None),
        Err(e) => return Err(format!("cannot list `{}`: {}", root.display(), errno(e))),
        Ok(_) => {}
    }
    let (fd, untrusted) = match open_backup_root(root, false) {
        Ok(fd) => (fd, None),
        Err(why) if trusted_only => return Err(why),
        Err(why) => {
            let fd = open_dir_path(root)
                .map_err(|e| format!("cannot list `{}`: {e}", root.display()))?;
            (fd, Some(why))
        }
    };
    let mut names = Vec::new();
    let rd = rfs::Dir::read_from(&fd)
        .map_err(|e| format!("cannot list `{}`: {}", root.display(), errno(e)))?;
    for ent in rd {
        let ent = ent.map_err(|e| format!("cannot list `{}`: {}", root.display(), errno(e)))?;
        let name = ent.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        let is_dir = rfs::statat(&fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory);
        if is_dir {
            names.push(name);
        }
    }
    names.sort();
    Ok(Some((fd, untrusted, names)))
}

/// Every run under `root`, sorted by name; `None` when `root` does not
/// exist (no repair has written there yet).
pub fn list_runs(root: &Path) -> Result<Option<Listing>, String> {
    let Some((fd, untrusted, names)) = folders(root, false)? else {
        return Ok(None);
    };
    let mut out = Listing {
        untrusted: untrusted.clone(),
        ..Listing::default()
    };
    for name in names {
        if !valid_run_id(&name) {
            out.not_runs += 1;
            continue;
        }
        let report = match &untrusted {
            None => report_run(root, &name).or_else(|why| peek(&fd, &name, why)),
            Some(why) => peek(&fd, &name, why.clone()),
        };
        match report {
            Ok(r) => out.runs.push(r),
            Err(why) => out.unreadable.push((name, why)),
        }
    }
    Ok(Some(out))
}

/// The ids of the runs under `root` that `undo --list` calls trusted (the
/// root and the run as `undo` would trust them: [`load_run`]), sorted, and
/// nothing else: every id is of the run-id alphabet ([`valid_run_id`]), so
/// a shell may offer it as it is. Nothing is assessed (a completion asks at
/// each TAB). Empty when `root` does not exist; an error when `undo` would
/// not trust `root`.
pub fn trusted_run_ids(root: &Path) -> Result<Vec<String>, String> {
    let Some((_, _, names)) = folders(root, true)? else {
        return Ok(Vec::new());
    };
    Ok(names
        .into_iter()
        .filter(|name| valid_run_id(name) && load_run(root, name).is_ok())
        .collect())
}

/// Whether `root` is a backup folder `undo` would trust, holding run
/// `run_id` (a run `undo` would trust) that changed the conversation folder
/// with this device and inode: what a command printed from a journal in
/// that folder may name.
pub fn run_repaired(root: &Path, run_id: &str, conversation: (u64, u64)) -> bool {
    let Ok((_, m)) = load_run(root, run_id) else {
        return false;
    };
    m.files.iter().any(|e| {
        (e.conversation_dev, e.conversation_ino) == (Some(conversation.0), Some(conversation.1))
    })
}
