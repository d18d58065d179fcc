//! The SDK's and the agent-server's locks, taken the way their writers
//! take them (flock, exclusive), never waiting.

use std::os::fd::OwnedFd;

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};

use super::fsio::*;
use super::temp_name;

/// The locks held for as long as this value lives.
#[derive(Debug)]
pub struct Locks {
    _held: Vec<OwnedFd>,
    /// `events/.eventlog.lock` did not exist and was created to be taken
    /// (the run's manifest records it, so `undo` removes it again).
    pub created_lock: bool,
}

/// Open an existing lock file (`O_NOFOLLOW|O_NONBLOCK`, read-write), check
/// it is a regular file and flock it exclusively without waiting.
pub(super) fn take_lock(fd: OwnedFd, what: &str) -> Result<OwnedFd, String> {
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

pub(super) const LOCK_OPEN: OFlags = OFlags::RDWR
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

pub(super) fn create_lock_like_dir(dir: &OwnedFd, name: &str) -> Result<OwnedFd, String> {
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

/// Whether a live `owner_lease.json` holds the conversation now, read fresh
/// through the folder's descriptor (for the moment before a write), judged
/// as the agent-server's `claim` judges it.
pub(super) fn lease_live(conv: &OwnedFd) -> bool {
    use crate::store::{Doc, Unreadable};
    const LEASE: &str = "owner_lease.json";
    let doc = match read_at(conv, LEASE) {
        Err(_) if rfs::statat(conv, LEASE, AtFlags::SYMLINK_NOFOLLOW).is_err() => Doc::Missing,
        Err(e) => Doc::Unreadable(Unreadable::Io(e.to_string())),
        Ok((b, _)) => match serde_json::from_slice(&b) {
            Ok(v) => Doc::Present(v),
            Err(e) => Doc::Unreadable(Unreadable::InvalidJson(e.to_string())),
        },
    };
    let env = crate::server::lease::Env::here(std::time::SystemTime::now());
    crate::server::lease::judge(&doc, &env).is_live()
}
