//! The backup root and its run folders: trusted only when they are the
//! invoking user's, private, and reached without following a link.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, Stat};

use super::fsio::*;
use super::{utc, valid_run_id, Manifest};

/// A folder convo-doctor trusts for backups: owned by the invoking user, not
/// writable by group or others, not a link; every ancestor owned by root or
/// the invoking user and, when group/world-writable, sticky (like /tmp).
pub(super) fn check_trusted_dir(st: &Stat, what: &str) -> Result<(), String> {
    if !is_dir(st) {
        return Err(format!("{what} is {}, not a directory", kind_of(st)));
    }
    if st.st_uid != euid() {
        return Err(format!(
            "{what} is owned by uid {}, not by you (uid {}): refusing to trust it",
            st.st_uid,
            euid()
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(format!(
            "{what} is writable by group or others (mode {:o}): refusing to trust it; chmod go-w it",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// A folder above the backup root: owned by root or the invoking user and,
/// when group/world-writable, sticky (like /tmp): no one else could replace
/// what is below it.
fn check_ancestor(st: &Stat, at: &Path) -> Result<(), String> {
    let owner_ok = st.st_uid == 0 || st.st_uid == euid();
    let writable = st.st_mode & 0o022 != 0;
    let sticky = st.st_mode & 0o1000 != 0;
    if !is_dir(st) || !owner_ok || (writable && !sticky) {
        return Err(format!(
            "{} (above the backup folder) is owned by uid {} with mode {:o}: another user could replace the backup folder; choose another --backup-dir",
            at.display(),
            st.st_uid,
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// Links followed on the way to a backup root before giving up (the
/// kernel's own limit).
const MAX_LINKS: usize = 40;

/// Open (and with `create`, make, 0700) the backup root, refusing a link,
/// a folder owned by someone else, or one writable by group or others.
///
/// The path is walked from `/` one component at a time, each folder opened
/// relative to the one before with `O_NOFOLLOW|O_DIRECTORY` and checked on
/// what was opened (`fstat`): every folder above the root must be root's or
/// yours and, if others can write to it, sticky; the root yours and
/// private. A symbolic link on the way is followed only when root or you own
/// it, in a folder that passed that check (so no one else could have made it
/// or could change it: `/var/run -> /run` is fine, another user's link in
/// their own folder is not); the root itself must not be a link.
pub fn open_backup_root(root: &Path, create: bool) -> Result<OwnedFd, String> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Component;
    let shown = root.display();
    let abs = std::path::absolute(root).map_err(|e| format!("{shown}: {e}"))?;
    let parts = |p: &Path| -> Vec<OsString> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_owned()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect()
    };
    let slash = || rfs::openat(rfs::CWD, "/", DIR_FLAGS, Mode::empty()).map_err(|e| e.to_string());
    let mut queue: VecDeque<OsString> = parts(&abs).into();
    let mut cur = slash()?;
    let mut at = PathBuf::from("/");
    let st = rfs::fstat(&cur).map_err(|e| e.to_string())?;
    if queue.is_empty() {
        check_trusted_dir(&st, &format!("the backup folder {shown}"))?;
    } else {
        check_ancestor(&st, &at)?;
    }
    let mut hops = 0;
    while let Some(name) = queue.pop_front() {
        let last = queue.is_empty();
        let here = at.join(&name);
        if name == ".." {
            at.pop();
        } else {
            match rfs::statat(&cur, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Err(e) if e == rustix::io::Errno::NOENT && create => {
                    match rfs::mkdirat(&cur, name.as_os_str(), Mode::from_raw_mode(0o700)) {
                        Ok(()) => {}
                        Err(e) if e == rustix::io::Errno::EXIST => {}
                        Err(e) => {
                            return Err(format!(
                                "cannot create the backup folder {shown}: {}: {}",
                                here.display(),
                                errno(e)
                            ))
                        }
                    }
                }
                Err(e) => return Err(format!("no backup folder {shown}: {}", errno(e))),
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    if last {
                        return Err(format!(
                            "the backup folder {shown} is a symbolic link, which is not followed: name the real folder"
                        ));
                    }
                    if st.st_uid != 0 && st.st_uid != euid() {
                        return Err(format!(
                            "{} (above the backup folder) is a symbolic link owned by uid {}: another user could point it elsewhere; choose another --backup-dir",
                            here.display(),
                            st.st_uid
                        ));
                    }
                    hops += 1;
                    if hops > MAX_LINKS {
                        return Err(format!("{shown}: too many symbolic links on the way"));
                    }
                    let target = rfs::readlinkat(&cur, name.as_os_str(), Vec::new())
                        .map_err(|e| format!("{}: {}", here.display(), errno(e)))?;
                    let target = Path::new(std::ffi::OsStr::from_bytes(target.as_bytes()));
                    if target.is_absolute() {
                        cur = slash()?;
                        at = PathBuf::from("/");
                    }
                    for p in parts(target).into_iter().rev() {
                        queue.push_front(p);
                    }
                    continue;
                }
                Ok(_) => {}
            }
            at.push(&name);
        }
        let fd = rfs::openat(&cur, name.as_os_str(), DIR_FLAGS, Mode::empty()).map_err(|e| {
            if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
                format!(
                    "{}: a link or not a directory (it changed while being checked)",
                    here.display()
                )
            } else {
                format!("{}: {}", here.display(), errno(e))
            }
        })?;
        let st = rfs::fstat(&fd).map_err(|e| e.to_string())?;
        if last {
            check_trusted_dir(&st, &format!("the backup folder {shown}"))?;
        } else {
            check_ancestor(&st, &at)?;
        }
        cur = fd;
    }
    Ok(cur)
}

/// Make `name` below `parent` (0700) unless it exists, then open it without
/// following a link and check it is ours and private.
pub(super) fn private_subdir(
    parent: &OwnedFd,
    name: &str,
    must_be_new: bool,
) -> Result<OwnedFd, String> {
    match rfs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::EXIST && !must_be_new => {}
        Err(e) if e == rustix::io::Errno::EXIST => {
            return Err(format!(
                "backup run `{name}` already exists; refusing to overwrite it"
            ))
        }
        Err(e) => return Err(format!("cannot create backup folder `{name}`: {e}")),
    }
    let fd = open_dir_at(parent, name).map_err(|e| format!("backup folder `{name}`: {e}"))?;
    let st = rfs::fstat(&fd).map_err(|e| e.to_string())?;
    check_trusted_dir(&st, &format!("backup folder `{name}`"))?;
    Ok(fd)
}

/// A run folder under the backup root, created 0700 when the run starts.
pub struct Run {
    pub id: String,
    pub dir: PathBuf,
    fd: OwnedFd,
    pub manifest: Manifest,
}

impl Run {
    pub fn new(root: &Path, id: String) -> Result<Run, String> {
        if !valid_run_id(&id) {
            return Err(format!("`{id}` is not a run id"));
        }
        let root_fd = open_backup_root(root, true)?;
        let fd = private_subdir(&root_fd, &id, true)?;
        Ok(Run {
            manifest: Manifest {
                run_id: id.clone(),
                tool: format!("convo-doctor {}", env!("CARGO_PKG_VERSION")),
                created: utc(SystemTime::now()).0,
                files: Vec::new(),
            },
            dir: root.join(&id),
            id,
            fd,
        })
    }

    /// Remove the run folder if its manifest lists no file (every repair
    /// of the run was refused, or failed before changing anything): an
    /// empty run only hides real ones. Its manifest, saved before a repair
    /// that then failed, goes with it; anything else keeps the folder.
    pub fn discard_if_empty(&self) {
        if self.manifest.files.is_empty() {
            let _ = rustix::fs::unlinkat(&self.fd, "manifest.json", rustix::fs::AtFlags::empty());
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    pub(super) fn save_manifest(&self) -> io::Result<()> {
        let text = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        write_at(&self.fd, "manifest.json", text.as_bytes(), None, false)
    }

    /// Read a backup copy of this run back.
    pub(super) fn read_back(&self, rel: &str) -> Result<Vec<u8>, String> {
        let (dir, name) = open_parent(&self.fd, rel).map_err(|e| e.to_string())?;
        read_at(&dir, &name)
            .map(|(b, _)| b)
            .map_err(|e| e.to_string())
    }

    /// Write a backup copy at `rel` (below the run folder), making private
    /// folders on the way.
    pub(super) fn backup(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
        let parts = components(rel)?;
        let (name, dirs) = parts.split_last().expect("one component");
        let mut dir =
            rfs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty()).map_err(|e| e.to_string())?;
        for d in dirs {
            dir = private_subdir(&dir, d, false)?;
        }
        write_at(&dir, name, bytes, None, false).map_err(|e| e.to_string())
    }
}

/// A run folder opened for `undo`.
pub struct RunDir {
    fd: OwnedFd,
    pub path: PathBuf,
}

/// Load a run's manifest, trusting it only if the backup root and the run
/// folder are the invoking user's, private and not links, and the manifest
/// is the invoking user's and not writable by others.
pub fn load_run(root: &Path, run_id: &str) -> Result<(RunDir, Manifest), String> {
    if !valid_run_id(run_id) {
        return Err(format!("`{run_id}` is not a run id"));
    }
    let root_fd = open_backup_root(root, false)?;
    let fd = open_dir_at(&root_fd, run_id)
        .map_err(|e| format!("no backup run `{run_id}` under {}: {e}", root.display()))?;
    let st = rfs::fstat(&fd).map_err(|e| e.to_string())?;
    check_trusted_dir(&st, &format!("the run folder `{run_id}`"))?;
    let (bytes, st) = read_at(&fd, "manifest.json").map_err(|e| {
        format!(
            "no backup run `{run_id}` under {}: manifest.json: {e}",
            root.display()
        )
    })?;
    if st.st_uid != euid() || st.st_mode & 0o022 != 0 {
        return Err(format!(
            "the manifest of `{run_id}` is owned by uid {} with mode {:o}: refusing to trust it",
            st.st_uid,
            st.st_mode & 0o7777
        ));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| format!("manifest of `{run_id}` is not valid: {e}"))?;
    Ok((
        RunDir {
            fd,
            path: root.join(run_id),
        },
        m,
    ))
}

/// Read a backup copy: every folder on the way and the file must be the
/// invoking user's and private.
pub(super) fn read_backup(run: &RunDir, rel: &str) -> Result<Vec<u8>, String> {
    let parts = components(rel)?;
    let (name, dirs) = parts.split_last().expect("one component");
    let mut dir = rfs::openat(&run.fd, ".", DIR_FLAGS, Mode::empty()).map_err(|e| e.to_string())?;
    for d in dirs {
        dir = open_dir_at(&dir, d).map_err(|e| e.to_string())?;
        let st = rfs::fstat(&dir).map_err(|e| e.to_string())?;
        check_trusted_dir(&st, &format!("backup folder `{d}`"))?;
    }
    let (bytes, st) = read_at(&dir, name).map_err(|e| e.to_string())?;
    if st.st_uid != euid() || st.st_mode & 0o022 != 0 {
        return Err("the backup copy is not yours alone".into());
    }
    Ok(bytes)
}
