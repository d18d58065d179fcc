//! Applying a plan, and undoing it. Every write is:
//! - done under the SDK's own locks (`events/.eventlog.lock`, and the
//!   agent-server's `.owner_lease.lock` when it exists; flock, never waiting)
//!   and only when no live `owner_lease.json` says a server owns the folder;
//! - preceded by a backup of the original bytes and a manifest (path, sha256
//!   before and after, owner, mode, check ids, time), both synced to disk, in
//!   a run folder created 0700 under a backup root the invoking user owns;
//! - made through directory handles opened once, without following any link
//!   (`openat`/`renameat` relative to the folder's descriptor, `O_NOFOLLOW`
//!   everywhere, `O_NONBLOCK` for anything that might be a FIFO), so a folder
//!   swapped for a link mid-repair cannot redirect a write;
//! - atomic: a temp file created 0600 with `O_CREAT|O_EXCL|O_NOFOLLOW` in the
//!   same directory, given the original's owner, group and mode (fchown then
//!   fchmod) before the rename, fsync, rename, fsync of the directory;
//! - verified: the bytes, owner, group and mode read back must be the planned
//!   ones, and the directory written must still be the one at the path.

use crate::store::conversation::REPAIR_JOURNAL;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags, Stat};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::clock::utc;

use super::Plan;

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where backups go by default: `$XDG_STATE_HOME/convo-doctor/backups`, else
/// `~/.local/state/convo-doctor/backups`: never inside a conversation folder
/// (the agent-server zips those into trajectory downloads) or a store.
pub fn default_backup_root() -> Result<PathBuf, String> {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("convo-doctor/backups"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/state/convo-doctor/backups")),
        None => Err("neither XDG_STATE_HOME nor HOME is set: pass --backup-dir".into()),
    }
}

/// Test hooks (`CONVO_DOCTOR_RUN_ID`, `CONVO_DOCTOR_CRASH_AT`) are honoured
/// only in debug builds (what `cargo test` runs); a release build ignores
/// them, so nothing in a production environment can steer a run.
fn test_hook(name: &str) -> Option<String> {
    if cfg!(debug_assertions) {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    } else {
        None
    }
}

/// Whether `id` may name a run folder: one plain path component.
pub fn valid_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// A new run id from the clock (or `CONVO_DOCTOR_RUN_ID` in a debug build,
/// for tests; an id that is not one plain path component is ignored).
pub fn new_run_id() -> String {
    if let Some(id) = test_hook("CONVO_DOCTOR_RUN_ID").filter(|id| valid_run_id(id)) {
        return id;
    }
    format!("{}-{}", utc(SystemTime::now()).1, std::process::id())
}

/// The pid of the process that made run `run_id` (its last `-` part).
fn run_pid(run_id: &str) -> Option<u32> {
    run_id.rsplit_once('-')?.1.parse().ok()
}

/// The temp file that `pid` writes `name` through, beside it: a dot-file
/// the SDK never lists (it reads only `event-*.json` and its state files).
fn temp_name(name: &str, pid: u32) -> String {
    format!(".convo-doctor-{name}.{pid}.tmp")
}

/// Whether `file` is a temp file of process `pid` ([`temp_name`]).
fn is_temp_of(file: &str, pid: u32) -> bool {
    file.starts_with(".convo-doctor-") && file.ends_with(&format!(".{pid}.tmp"))
}

#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct ManifestEntry {
    /// The conversation folder (absolute, resolved at repair time: no link).
    pub conversation: PathBuf,
    /// The file, relative to the conversation folder.
    pub file: String,
    /// The backup copy, relative to the run folder.
    pub backup: String,
    pub sha256_before: String,
    pub sha256_after: String,
    pub checks: Vec<String>,
    pub time: String,
    pub mode: u32,
    /// The original's owner and group.
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    /// Device and inode of the conversation folder at repair time: `undo`
    /// writes only into that very directory.
    #[serde(default)]
    pub conversation_dev: Option<u64>,
    #[serde(default)]
    pub conversation_ino: Option<u64>,
    /// The file's name after the repair, when it was renamed (renumbering;
    /// relative to the conversation folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// The file was moved into this backup (quarantine): the backup copy is
    /// the only copy; `sha256_after` is empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    /// The repair created this file (an answer to a tool call): `undo`
    /// removes it if it still holds `sha256_after`; `sha256_before` is empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// The original's modification time (seconds, nanoseconds): `undo` puts
    /// it back with the bytes (the `head-lag` guard reads mtimes as crash
    /// evidence, which a restore stamped "now" would erase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<(i64, i64)>,
}

#[derive(Debug, Serialize, Deserialize, Default)]
pub struct Manifest {
    pub run_id: String,
    pub tool: String,
    pub created: String,
    pub files: Vec<ManifestEntry>,
}

// ---------------------------------------------------------------------------
// Descriptor-relative file operations (no link is ever followed).

fn errno(e: rustix::io::Errno) -> io::Error {
    e.into()
}

fn is_dir(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

fn kind_of(st: &Stat) -> &'static str {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        _ => "a device or special file",
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Open the directory `name` below `parent`, refusing a link.
fn open_dir_at<Fd: AsFd>(parent: Fd, name: &str) -> io::Result<OwnedFd> {
    rfs::openat(parent, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::other(format!("`{name}` is a link or not a directory"))
        } else {
            errno(e)
        }
    })
}

/// Open a directory by absolute path; the last component must not be a link.
fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    rfs::openat(rfs::CWD, path, DIR_FLAGS, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::other("it is a link or not a directory")
        } else {
            errno(e)
        }
    })
}

/// Split a relative path into checked components: no empty, `.` or `..`
/// component, not absolute.
fn components(rel: &str) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty()
        || parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0'))
    {
        return Err(format!("`{rel}` is not a plain relative path"));
    }
    Ok(parts)
}

/// What a file held when the plan was made: its bytes, their sha256, or (a
/// file only renamed, whose bytes the plan never kept or hashed) the size
/// and modification time the proof's read saw.
#[derive(Clone, Copy)]
enum Planned<'a> {
    Bytes(&'a [u8]),
    Sha256(&'a str),
    Stat(u64, Option<std::time::SystemTime>),
}

/// What [`still_as_read`] found: the file's directory handle, name, owner,
/// modification time (seconds, nanoseconds) and the sha256 of its bytes.
type AsRead = (OwnedFd, String, Owner, (i64, i64), String);

/// A file a repair is about to replace or move, checked under the lock: it
/// still holds the bytes the plan was made from, has one link, and (unless
/// root) belongs to the invoking user, so its owner can be kept. Returns its
/// directory handle, name and owner.
fn still_as_read(
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

/// The directory holding `rel` below `root` (each step opened without
/// following links) and the file name.
fn open_parent<Fd: AsFd>(root: Fd, rel: &str) -> io::Result<(OwnedFd, String)> {
    let parts = components(rel).map_err(io::Error::other)?;
    let (name, dirs) = parts.split_last().expect("at least one component");
    let mut dir = rfs::openat(root, ".", DIR_FLAGS, Mode::empty()).map_err(errno)?;
    for d in dirs {
        dir = open_dir_at(&dir, d)?;
    }
    Ok((dir, name.to_string()))
}

/// Read a regular file below `dir` (`O_NOFOLLOW|O_NONBLOCK`: a link is
/// refused and a FIFO never blocks), with its `fstat`.
fn read_at<Fd: AsFd>(dir: Fd, name: &str) -> io::Result<(Vec<u8>, Stat)> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            io::Error::other("it is a symbolic link, which is not followed")
        } else {
            errno(e)
        }
    })?;
    let st = rfs::fstat(&fd).map_err(errno)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::other(format!(
            "it is {}, not a regular file",
            kind_of(&st)
        )));
    }
    let limit = crate::store::fsread::READ_LIMIT;
    let mut buf = Vec::new();
    File::from(fd).take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(io::Error::other("it is over the read limit"));
    }
    Ok((buf, st))
}

/// Who owns a file and its permission bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

impl Owner {
    fn of(st: &Stat) -> Owner {
        Owner {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode & 0o7777,
        }
    }
}

/// Crash-test hook: `CONVO_DOCTOR_CRASH_AT=<point>` (debug builds only)
/// aborts the process at that point of a repair (`after-backup`,
/// `before-rename`, `after-rename`), as a kill would, so tests can prove an
/// interrupted repair leaves either the old file or the new one, and that
/// `undo` still works.
///
/// `CONVO_DOCTOR_PAUSE_AT=<point>` with `CONVO_DOCTOR_PAUSE_FILE=<f>` (debug
/// builds only) instead writes `<f>.ready` at that point (also
/// `after-create`, right after a temp file is created) and waits (up to a
/// minute) until `<f>` exists, so a test can act between two steps.
pub(crate) fn pause_point(point: &str) {
    crash_point(point)
}

fn crash_point(point: &str) {
    if test_hook("CONVO_DOCTOR_CRASH_AT").is_some_and(|p| p == point) {
        std::process::abort();
    }
    if test_hook("CONVO_DOCTOR_PAUSE_AT").is_some_and(|p| p == point) {
        if let Some(f) = test_hook("CONVO_DOCTOR_PAUSE_FILE") {
            let _ = std::fs::write(format!("{f}.ready"), point);
            for _ in 0..6000 {
                if Path::new(&f).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// Write `bytes` as `name` in `dir`, atomically: a temp file created 0600
/// with `O_CREAT|O_EXCL|O_NOFOLLOW` beside it, given `owner` (fchown, then
/// fchmod, checked with fstat) before anything else can see it under the
/// final name, synced, renamed over `name` relative to the same directory
/// handle, and the directory synced. `owner: None` keeps the new file 0600
/// and owned by the invoking user.
fn write_at(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    owner: Option<Owner>,
    hooks: bool,
) -> io::Result<()> {
    let tmp = temp_name(name, std::process::id());
    let fd = rfs::openat(
        dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(errno)?;
    let result = (|| {
        if hooks {
            crash_point("after-create");
        }
        let mut f = File::from(fd);
        f.write_all(bytes)?;
        if let Some(o) = owner {
            let st = rfs::fstat(&f).map_err(errno)?;
            if st.st_uid != o.uid || st.st_gid != o.gid {
                rfs::fchown(
                    &f,
                    Some(rustix::fs::Uid::from_raw(o.uid)),
                    Some(rustix::fs::Gid::from_raw(o.gid)),
                )
                .map_err(|e| {
                    io::Error::other(format!(
                        "cannot give the new file the original's owner {}:{} ({e}); the original was left alone",
                        o.uid, o.gid
                    ))
                })?;
            }
            // after fchown, which may clear set-id bits
            rfs::fchmod(&f, Mode::from_raw_mode(o.mode)).map_err(errno)?;
            let st = rfs::fstat(&f).map_err(errno)?;
            if Owner::of(&st) != o {
                return Err(io::Error::other(format!(
                    "the new file is {}:{} mode {:o}, not the original's {}:{} mode {:o}",
                    st.st_uid,
                    st.st_gid,
                    st.st_mode & 0o7777,
                    o.uid,
                    o.gid,
                    o.mode
                )));
            }
        }
        f.sync_all()?;
        drop(f);
        if hooks {
            crash_point("before-rename");
        }
        rfs::renameat(dir, tmp.as_str(), dir, name).map_err(errno)?;
        rfs::fsync(dir).map_err(errno)
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
    }
    result
}

/// Write `bytes` to `path` atomically, 0600 and owned by the invoking user
/// (the parent directory is opened by path; its last component must not be
/// a link).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = open_dir_path(path.parent().unwrap_or(Path::new(".")))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("no file name"))?;
    write_at(&dir, name, bytes, None, false)
}

/// Check that `dir` still is what `path` names now (walking from `/`
/// without following a link in the last component) — a write into a
/// directory that was moved away mid-repair did not land where it was meant.
fn still_at(dir: &OwnedFd, root: &Path, rel_dir: &[&str]) -> Result<(), String> {
    let want = rfs::fstat(dir).map_err(|e| e.to_string())?;
    let moved = || {
        format!(
            "the folder was moved or replaced while it was being repaired: the new bytes went to the directory that was read, which is no longer at `{}`",
            root.display()
        )
    };
    let mut here = open_dir_path(root).map_err(|_| moved())?;
    for d in rel_dir {
        here = open_dir_at(&here, d).map_err(|_| moved())?;
    }
    let now = rfs::fstat(&here).map_err(|e| e.to_string())?;
    if (now.st_dev, now.st_ino) != (want.st_dev, want.st_ino) {
        return Err(moved());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Locks.

/// The locks held for as long as this value lives.
#[derive(Debug)]
pub struct Locks {
    _held: Vec<OwnedFd>,
    /// `events/.eventlog.lock` did not exist and was created to be taken
    /// (the run's manifest records it, so `undo` removes it again).
    pub created_lock: bool,
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Open an existing lock file (`O_NOFOLLOW|O_NONBLOCK`, read-write), check
/// it is a regular file and flock it exclusively without waiting.
fn take_lock(fd: OwnedFd, what: &str) -> Result<OwnedFd, String> {
    let st = rfs::fstat(&fd).map_err(|e| format!("cannot stat {what}: {e}"))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(format!(
            "{what} is {}, not a lock file; nothing was changed",
            kind_of(&st)
        ));
    }
    match rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(fd),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::ACCESS => Err(
            format!("another process holds {what} (a live writer); try again when it is idle"),
        ),
        Err(e) => Err(format!("cannot lock {what}: {e}")),
    }
}

const LOCK_OPEN: OFlags = OFlags::RDWR
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// Take the SDK's and the agent-server's locks on a conversation, the way
/// their writers do (flock, exclusive), without waiting: a held lock means
/// a live writer.
///
/// - `.owner_lease.lock` (the agent-server's `ConversationLease`, held around
///   its `meta.json` writes) is taken when it exists and never created: a
///   server creates it when it first claims the folder, and that claim
///   writes `owner_lease.json`, which is checked under these locks.
/// - `events/.eventlog.lock` (`EventLog.append`) is created when missing,
///   owned like `events/` and mode 0644 (filelock's 0666 under the usual
///   umask), and only under its final name once it has that owner (a temp
///   name, then `linkat`), so the SDK running as the folder's owner can
///   always open it.
pub fn lock_conversation(conv: &OwnedFd) -> Result<Locks, String> {
    let mut held = Vec::new();
    match rfs::openat(conv, ".owner_lease.lock", LOCK_OPEN, Mode::empty()) {
        Ok(fd) => held.push(take_lock(fd, ".owner_lease.lock")?),
        Err(e) if e == rustix::io::Errno::NOENT => {}
        Err(e) if e == rustix::io::Errno::LOOP => {
            return Err(
                ".owner_lease.lock is a symbolic link, which is not followed; nothing was changed"
                    .into(),
            )
        }
        Err(e) => return Err(format!("cannot open .owner_lease.lock: {e}")),
    }
    let events = match rfs::openat(conv, "events", DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => {
            return Ok(Locks {
                _held: held,
                created_lock: false,
            })
        }
        Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR => {
            return Err("`events` is a link or not a directory; nothing was changed".into())
        }
        Err(e) => return Err(format!("cannot open events/: {e}")),
    };
    const LOCK: &str = ".eventlog.lock";
    let mut created_lock = false;
    let fd = match rfs::openat(&events, LOCK, LOCK_OPEN, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => {
            created_lock = true;
            create_lock_like_dir(&events, LOCK)?
        }
        Err(e) if e == rustix::io::Errno::LOOP => return Err(
            "events/.eventlog.lock is a symbolic link, which is not followed; nothing was changed"
                .into(),
        ),
        Err(e) => return Err(format!("cannot open events/.eventlog.lock: {e}")),
    };
    held.push(take_lock(fd, "events/.eventlog.lock")?);
    Ok(Locks {
        _held: held,
        created_lock,
    })
}

fn create_lock_like_dir(dir: &OwnedFd, name: &str) -> Result<OwnedFd, String> {
    let st = rfs::fstat(dir).map_err(|e| format!("cannot stat events/: {e}"))?;
    let tmp = temp_name("lock", std::process::id());
    let fd = rfs::openat(
        dir,
        tmp.as_str(),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| format!("cannot create events/{name}: {e}"))?;
    let made = (|| {
        if st.st_uid != euid() || st.st_gid != rustix::process::getegid().as_raw() {
            rfs::fchown(
                &fd,
                Some(rustix::fs::Uid::from_raw(st.st_uid)),
                Some(rustix::fs::Gid::from_raw(st.st_gid)),
            )?;
        }
        rfs::fchmod(&fd, Mode::from_raw_mode(0o644))?;
        match rfs::linkat(dir, tmp.as_str(), dir, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(e) if e == rustix::io::Errno::EXIST => Ok(false), // a writer made it first
            Err(e) => Err(e),
        }
    })();
    let _ = rfs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
    match made {
        Ok(true) => Ok(fd),
        Ok(false) => rfs::openat(dir, name, LOCK_OPEN, Mode::empty())
            .map_err(|e| format!("cannot open events/{name}: {e}")),
        Err(e) => Err(format!(
            "cannot create events/{name} owned like events/: {e}"
        )),
    }
}

// ---------------------------------------------------------------------------
// The backup root and run folders.

/// A folder convo-doctor trusts for backups: owned by the invoking user, not
/// writable by group or others, not a link; every ancestor owned by root or
/// the invoking user and, when group/world-writable, sticky (like /tmp).
fn check_trusted_dir(st: &Stat, what: &str) -> Result<(), String> {
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

fn check_ancestors(path: &Path) -> Result<(), String> {
    let canon = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for a in canon.ancestors().skip(1) {
        let st = rfs::stat(a).map_err(|e| format!("{}: {e}", a.display()))?;
        let owner_ok = st.st_uid == 0 || st.st_uid == euid();
        let writable = st.st_mode & 0o022 != 0;
        let sticky = st.st_mode & 0o1000 != 0;
        if !owner_ok || (writable && !sticky) {
            return Err(format!(
                "{} (above the backup folder) is owned by uid {} with mode {:o}: another user could replace the backup folder; choose another --backup-dir",
                a.display(),
                st.st_uid,
                st.st_mode & 0o7777
            ));
        }
    }
    Ok(())
}

/// Open (and with `create`, make, 0700) the backup root, refusing a link,
/// a folder owned by someone else, or one writable by group or others.
pub fn open_backup_root(root: &Path, create: bool) -> Result<OwnedFd, String> {
    let shown = root.display();
    let lst = match rfs::lstat(root) {
        Ok(st) => st,
        Err(e) if e == rustix::io::Errno::NOENT && create => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(|e| format!("cannot create the backup folder {shown}: {e}"))?;
            rfs::lstat(root).map_err(|e| format!("{shown}: {e}"))?
        }
        Err(e) => return Err(format!("no backup folder {shown}: {e}")),
    };
    if FileType::from_raw_mode(lst.st_mode) == FileType::Symlink {
        return Err(format!(
            "the backup folder {shown} is a symbolic link, which is not followed: name the real folder"
        ));
    }
    check_trusted_dir(&lst, &format!("the backup folder {shown}"))?;
    check_ancestors(root)?;
    let fd = open_dir_path(root).map_err(|e| format!("the backup folder {shown}: {e}"))?;
    let st = rfs::fstat(&fd).map_err(|e| e.to_string())?;
    check_trusted_dir(&st, &format!("the backup folder {shown}"))?;
    Ok(fd)
}

/// Make `name` below `parent` (0700) unless it exists, then open it without
/// following a link and check it is ours and private.
fn private_subdir(parent: &OwnedFd, name: &str, must_be_new: bool) -> Result<OwnedFd, String> {
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

    /// Remove the run folder if no file was backed up in it (every repair
    /// of the run was refused): an empty folder only hides real runs.
    pub fn discard_if_empty(&self) {
        if self.manifest.files.is_empty() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    fn save_manifest(&self) -> io::Result<()> {
        let text = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        write_at(&self.fd, "manifest.json", text.as_bytes(), None, false)
    }

    /// Read a backup copy of this run back.
    fn read_back(&self, rel: &str) -> Result<Vec<u8>, String> {
        let (dir, name) = open_parent(&self.fd, rel).map_err(|e| e.to_string())?;
        read_at(&dir, &name)
            .map(|(b, _)| b)
            .map_err(|e| e.to_string())
    }

    /// Write a backup copy at `rel` (below the run folder), making private
    /// folders on the way.
    fn backup(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
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

// ---------------------------------------------------------------------------
// Applying and undoing.

/// The owner, group and mode of an existing regular file below `conv`
/// (not a link, one link only).
fn owner_at(conv: &OwnedFd, rel: &str) -> Result<Owner, String> {
    let (dir, name) = open_parent(conv, rel).map_err(|e| e.to_string())?;
    let st = rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| errno(e).to_string())?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_nlink != 1 {
        return Err(format!("{rel} is not a regular file with one link"));
    }
    Ok(Owner::of(&st))
}

/// Apply a verified plan. On any failure before the first rename, nothing
/// has changed; after it, the manifest already lists every file so `undo`
/// can restore them.
pub fn apply(plan: &Plan, run: &mut Run, ordinal: usize) -> Result<Vec<String>, String> {
    let abs =
        std::fs::canonicalize(&plan.dir).map_err(|e| format!("{}: {e}", plan.dir.display()))?;
    let conv = open_dir_path(&abs).map_err(|e| format!("{}: {e}", abs.display()))?;
    let cst = rfs::fstat(&conv).map_err(|e| e.to_string())?;
    let locks = lock_conversation(&conv)?;
    // Under the locks, the lease and the files must be what was planned.
    if crate::checks::live_lease::is_live(&abs) {
        return Err(
            "owner_lease.json became live: a server took the conversation; nothing was changed"
                .into(),
        );
    }
    let mut staged = Vec::new();
    for e in &plan.edits {
        let (dir, name, owner, mtime, _) =
            still_as_read(&conv, &e.rel, Planned::Bytes(&e.before), "replace")?;
        staged.push((e, dir, name, owner, mtime));
    }
    // Moves: each file must still hold the bytes planned, have one link,
    // and its new name must be free.
    let mut moves = Vec::new();
    for m in &plan.moves {
        let planned = match (&m.bytes, &m.seen) {
            (Some(b), _) => Planned::Bytes(b),
            (None, Some((size, mtime))) => Planned::Stat(*size, *mtime),
            (None, None) => Planned::Sha256(&m.sha256),
        };
        let (dir, name, owner, mtime, sha) = still_as_read(&conv, &m.rel, planned, "move")?;
        let to_name = match &m.to {
            Some(to) => {
                let (tdir, tname) = open_parent(&conv, to).map_err(|err| format!("{to}: {err}"))?;
                let (a, b) = (rfs::fstat(&tdir), rfs::fstat(&dir));
                let same = matches!((a, b), (Ok(a), Ok(b)) if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino));
                if !same {
                    return Err(format!("{to} is not in the folder of {}", m.rel));
                }
                // free, or freed first: files taken out go before renames
                let freed = plan.moves.iter().any(|o| o.to.is_none() && o.rel == *to);
                if !freed && rfs::statat(&dir, tname.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
                    return Err(format!("{to} already exists; nothing was changed"));
                }
                Some(tname)
            }
            None => None,
        };
        moves.push((m, dir, name, to_name, owner, mtime, sha));
    }
    // Backups and manifest first.
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
    // the SDK's lock file this run created (the folder had none): undo
    // removes it again, so an undone folder is the original, name for name
    if locks.created_lock {
        let owner = Owner {
            uid: cst.st_uid,
            gid: cst.st_gid,
            mode: 0o644,
        };
        run.manifest.files.push(ManifestEntry {
            sha256_after: sha256(b""),
            created: true,
            ..entry(EVENT_LOCK, &[], &owner)
        });
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
        let (dir, name) = open_parent(&conv, &c.rel).map_err(|err| format!("{}: {err}", c.rel))?;
        if rfs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            return Err(format!("{} already exists; nothing was changed", c.rel));
        }
        let owner = match moves.iter().find(|(m, ..)| m.rel == c.like) {
            Some((.., o, _, _)) => *o,
            None => staged
                .iter()
                .find(|(e, ..)| e.rel == c.like)
                .map(|(.., o, _)| *o)
                .map_or_else(|| owner_at(&conv, &c.like), Ok)
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
    run.save_manifest()
        .map_err(|e| format!("cannot write the backup manifest: {e}"))?;
    // More than one change: between two of them the folder is neither the
    // original nor the repair. A journal says so until the last is verified
    // (`interrupted-repair`; `undo` removes it). Owned like the folder, 0600.
    let journaled = staged.len() + moves.len() + creates.len() > 1;
    if journaled {
        let journal = serde_json::json!({
            "run_id": run.id,
            "backup_dir": run.dir.parent().unwrap_or(&run.dir),
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
    let write_edit = |(e, dir, name, owner, _): &(
        &super::Edit,
        OwnedFd,
        String,
        Owner,
        (i64, i64),
    )|
     -> Result<String, String> {
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
    let is_state = |rel: &str| !rel.starts_with("events/");
    for st in staged.iter().filter(|st| !is_state(&st.0.rel)) {
        done.push(write_edit(st)?);
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
    }
    for st in staged.iter().filter(|st| is_state(&st.0.rel)) {
        done.push(write_edit(st)?);
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

/// What `undo` did with one file.
#[derive(Debug)]
pub enum Restored {
    Restored,
    AlreadyOriginal,
    Refused(String),
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

/// The SDK's lock file, which a repair creates when a folder has none.
const EVENT_LOCK: &str = "events/.eventlog.lock";

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
fn remove_created_lock(e: &ManifestEntry) -> Restored {
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
fn repairable_file(rel: &str) -> bool {
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

/// Read a backup copy: every folder on the way and the file must be the
/// invoking user's and private.
fn read_backup(run: &RunDir, rel: &str) -> Result<Vec<u8>, String> {
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

/// The conversation folder a manifest entry names, opened: it must still be
/// at the path recorded (no link, not moved) and be the same folder (device
/// and inode) as at repair time.
fn open_repaired_conversation(e: &ManifestEntry) -> Result<OwnedFd, String> {
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
fn clear_interrupted(e: &ManifestEntry, run_id: &str) {
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

fn restore_one(run: &RunDir, e: &ManifestEntry) -> Restored {
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
fn restore_mtime(dir: &OwnedFd, name: &str, e: &ManifestEntry) {
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
fn restore_quarantined(run: &RunDir, e: &ManifestEntry, dir: &OwnedFd, name: &str) -> Restored {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.json");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        let dir = open_dir_path(d.path()).unwrap();
        let (_, st) = read_at(&dir, "f.json").unwrap();
        write_at(&dir, "f.json", b"new", Some(Owner::of(&st)), false).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_held_lock_refuses() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("events")).unwrap();
        let conv = open_dir_path(d.path()).unwrap();
        let held = lock_conversation(&conv).unwrap();
        // flock locks are per open file description: a second open conflicts
        assert!(lock_conversation(&conv).is_err());
        drop(held);
        assert!(lock_conversation(&conv).is_ok());
    }

    /// Issue 12, defect 3: with `events` a link, the lock is never created
    /// (or taken) in the link's target; a link at the lock is refused.
    #[test]
    fn links_where_the_locks_belong_are_refused_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let conv = d.path().join("c");
        let target = d.path().join("target");
        fs::create_dir_all(&conv).unwrap();
        fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, conv.join("events")).unwrap();
        let fd = open_dir_path(&conv).unwrap();
        assert!(lock_conversation(&fd).is_err());
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
        fs::remove_file(conv.join("events")).unwrap();
        fs::create_dir(conv.join("events")).unwrap();
        std::os::unix::fs::symlink(target.join("made"), conv.join("events/.eventlog.lock"))
            .unwrap();
        assert!(lock_conversation(&fd)
            .unwrap_err()
            .contains("symbolic link"));
        std::os::unix::fs::symlink(target.join("made2"), conv.join(".owner_lease.lock")).unwrap();
        assert!(lock_conversation(&fd)
            .unwrap_err()
            .contains("symbolic link"));
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn run_ids_are_one_plain_component() {
        for bad in ["", "..", "../x", "a/b", ".hidden", "a\nb"] {
            assert!(!valid_run_id(bad), "{bad:?}");
        }
        assert!(valid_run_id("20261130T112233Z-42"));
    }

    #[test]
    fn only_files_a_repair_writes_can_be_restored() {
        assert!(repairable_file("meta.json"));
        assert!(repairable_file("base_state.json"));
        assert!(repairable_file(
            "events/event-00001-0f8b0186-d86c-5dbb-8239-dd60a36a9ec5.json"
        ));
        for bad in [
            "../../etc/passwd",
            "events/../meta.json",
            "owner_lease.json",
            "x/meta.json",
            "events/x.json",
        ] {
            assert!(!repairable_file(bad) || components(bad).is_err(), "{bad}");
        }
    }
}
