//! Changing a client's SQLite database (the Codex state database, issue 26)
//! with the guarantees of a file's rewrite ([`super::rewrite_file`]): the
//! folder reached from `/` without a link; the database and its side files
//! (`-wal`, `-shm`, `-journal`) regular files of one link, checked before
//! SQLite opens any of them ([`crate::appserver::db::checked_path`]);
//! refused while another process holds the database; each of those files
//! backed up, and listed in the manifest, before the write; the change made
//! by SQLite in one transaction (atomic, and crash-safe the way SQLite's
//! own commits are), read back and verified by the caller inside it; every
//! file's owner, group and mode checked after; so `undo RUN-ID` puts every
//! file of the database back byte for byte (a side file the write made is
//! removed, one it removed brought back).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::time::SystemTime;

use rustix::fs as rfs;

use super::fsio::*;
use super::{crash_point, sha256, utc, ManifestEntry, Run};
use crate::appserver::db::SIDE_FILES;

/// What one of the database's files was before the write.
struct Before {
    name: String,
    bytes: Vec<u8>,
    owner: Owner,
    mtime: (i64, i64),
}

fn mtime_of(st: &rfs::Stat) -> (i64, i64) {
    (st.st_mtime, st.st_mtime_nsec as i64)
}

/// Whether another process holds the SQLite database `name` in `dir` open
/// now: a connection in WAL mode holds a shared lock on the `-shm` file's
/// "DMS" byte (128) for as long as it is open, and a transaction of a
/// rollback journal holds the database file's lock bytes (from 2^30); each
/// is asked with `F_GETLK` (nothing is taken). `Some` says who.
pub fn held(dir: &OwnedFd, name: &str) -> Option<String> {
    let ask = |file: &str, start: i64, len: i64| -> Option<i32> {
        let fd = rfs::openat(
            dir,
            file,
            rfs::OFlags::RDONLY
                | rfs::OFlags::NOFOLLOW
                | rfs::OFlags::NONBLOCK
                | rfs::OFlags::CLOEXEC,
            rfs::Mode::empty(),
        )
        .ok()?;
        // SAFETY: a zeroed `flock` is a valid value; F_GETLK writes into it.
        let mut lk: libc::flock = unsafe { std::mem::zeroed() };
        lk.l_type = libc::F_WRLCK as _;
        lk.l_whence = libc::SEEK_SET as _;
        lk.l_start = start as _;
        lk.l_len = len as _;
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor and a valid `flock`.
        let rc = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETLK, &mut lk) };
        (rc == 0 && lk.l_type as i32 != libc::F_UNLCK).then_some(lk.l_pid)
    };
    if let Some(pid) = ask(&format!("{name}-shm"), 128, 1) {
        return Some(format!(
            "a process (pid {pid}) has the database open (it holds `{name}-shm`)"
        ));
    }
    if let Some(pid) = ask(name, 1 << 30, 512) {
        return Some(format!(
            "a process (pid {pid}) is writing the database (it holds its lock)"
        ));
    }
    None
}

/// The database's files now: (name, bytes, stat) of each that exists.
fn files_now(dir: &OwnedFd, name: &str) -> Result<Vec<(String, Vec<u8>, rfs::Stat)>, String> {
    let mut out = Vec::new();
    for suffix in std::iter::once("").chain(SIDE_FILES) {
        let n = format!("{name}{suffix}");
        match read_at(dir, &n) {
            Ok((b, st)) => {
                if st.st_nlink != 1 {
                    return Err(format!(
                        "`{n}` has {} hard links; nothing was changed",
                        st.st_nlink
                    ));
                }
                out.push((n, b, st));
            }
            Err(_) if rfs::statat(dir, n.as_str(), rfs::AtFlags::SYMLINK_NOFOLLOW).is_err() => {}
            Err(e) => return Err(format!("`{n}`: {e}; nothing was changed")),
        }
    }
    Ok(out)
}

/// Change the SQLite database `db` in one transaction: `change` runs inside
/// it (and verifies what it wrote, reading it back; an `Err` rolls it
/// back). `checks` are the ids the change clears; `ordinal` numbers the
/// backup folder in the run. On an error nothing was changed and the
/// manifest does not list the database, except for an error after the
/// commit, which says so.
pub fn change_sqlite(
    run: &mut Run,
    db: &Path,
    checks: &[&str],
    ordinal: usize,
    change: &dyn Fn(&rusqlite::Connection) -> Result<(), String>,
) -> Result<(), String> {
    use rusqlite::{Connection, OpenFlags};
    let display = db.display().to_string();
    // the database and its side files checked (no link, one link, owners)
    let (path, _) = crate::appserver::db::checked_path(db, &display)
        .map_err(|e| format!("{e:#}; nothing was changed"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| components(n).is_ok())
        .ok_or_else(|| format!("`{display}` has no plain file name"))?
        .to_string();
    let abs = path.parent().expect("a file in a folder").to_path_buf();
    let dir = open_dir_nofollow(&abs)?;
    let dst = rfs::fstat(&dir).map_err(|e| e.to_string())?;
    if let Some(who) = held(&dir, &name) {
        return Err(format!(
            "{who}: a Codex client is running; nothing was changed (repair it once every client has exited)"
        ));
    }
    let before: Vec<Before> = files_now(&dir, &name)?
        .into_iter()
        .map(|(name, bytes, st)| Before {
            name,
            bytes,
            owner: Owner::of(&st),
            mtime: mtime_of(&st),
        })
        .collect();
    let Some(main) = before.iter().find(|b| b.name == name) else {
        return Err(format!("`{display}` is gone; nothing was changed"));
    };
    let main_owner = main.owner;
    let euid = euid();
    if euid != 0 && main_owner.uid != euid {
        return Err(format!(
            "`{display}` is owned by uid {}, not this user (uid {euid}); nothing was changed",
            main_owner.uid
        ));
    }
    // every file backed up and listed before SQLite opens the database;
    // what each holds after is filled in once the write is done
    let start = run.manifest.files.len();
    for b in &before {
        let backup = format!("{ordinal:04}/{}", b.name);
        run.backup(&backup, &b.bytes)
            .map_err(|e| format!("backup of {}: {e}; nothing was changed", b.name))?;
        run.manifest.files.push(ManifestEntry {
            conversation: abs.clone(),
            file: b.name.clone(),
            backup,
            sha256_before: sha256(&b.bytes),
            sha256_after: String::new(),
            checks: checks.iter().map(|c| c.to_string()).collect(),
            time: utc(SystemTime::now()).0,
            mode: b.owner.mode,
            uid: Some(b.owner.uid),
            gid: Some(b.owner.gid),
            conversation_dev: Some(dst.st_dev),
            conversation_ino: Some(dst.st_ino),
            renamed_to: None,
            quarantined: false,
            created: false,
            mtime: Some(b.mtime),
        });
    }
    let forget = |run: &mut Run| {
        run.manifest.files.truncate(start);
        let _ = run.save_manifest();
    };
    if let Err(e) = run.save_manifest() {
        forget(run);
        return Err(format!(
            "cannot write the backup manifest: {e}; nothing was changed"
        ));
    }
    crash_point("after-backup");
    // checked again right before the write: the files as backed up, and
    // no process holding the database
    let again = files_now(&dir, &name)?;
    let same = again.len() == before.len()
        && again
            .iter()
            .zip(&before)
            .all(|((n, b, _), was)| *n == was.name && *b == was.bytes);
    if !same {
        forget(run);
        return Err(format!(
            "`{display}` changed since it was read (a client wrote it); nothing was changed"
        ));
    }
    if let Some(who) = held(&dir, &name) {
        forget(run);
        return Err(format!("{who}; nothing was changed"));
    }
    let uri = crate::appserver::db::file_uri(&path);
    let written = (|| -> Result<(), String> {
        let conn = Connection::open_with_flags(
            format!("{uri}?mode=rw"),
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| format!("cannot open `{display}`: {e}"))?;
        // closed, the last connection checkpoints the write-ahead log into
        // the database and removes `-wal` and `-shm` (no other connection
        // is open): the database is then one file a reader opens without
        // writing beside it (`immutable`), so reading it after the repair
        // (`diagnose`) leaves what `undo` compares as the repair left it
        // never wait for a lock: a client that took one since is refused
        conn.busy_timeout(std::time::Duration::ZERO)
            .map_err(|e| e.to_string())?;
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| format!("cannot begin a transaction on `{display}`: {e}"))?;
        if let Err(why) = change(&conn) {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(why);
        }
        conn.execute_batch("COMMIT")
            .map_err(|e| format!("cannot commit to `{display}`: {e}"))?;
        conn.close().map_err(|(_, e)| e.to_string())
    })();
    let after = files_now(&dir, &name);
    // the manifest says what each file holds now (a side file made by the
    // write is listed as made, one it removed as taken into the backup)
    if let Ok(after) = &after {
        for e in &mut run.manifest.files[start..] {
            match after.iter().find(|(n, _, _)| *n == e.file) {
                Some((_, b, _)) => e.sha256_after = sha256(b),
                None => e.quarantined = true,
            }
        }
        for (n, b, st) in after {
            if before.iter().any(|x| x.name == *n) {
                continue;
            }
            run.manifest.files.push(ManifestEntry {
                conversation: abs.clone(),
                file: n.clone(),
                backup: String::new(),
                sha256_before: String::new(),
                sha256_after: sha256(b),
                checks: checks.iter().map(|c| c.to_string()).collect(),
                time: utc(SystemTime::now()).0,
                mode: st.st_mode & 0o7777,
                uid: Some(st.st_uid),
                gid: Some(st.st_gid),
                conversation_dev: Some(dst.st_dev),
                conversation_ino: Some(dst.st_ino),
                renamed_to: None,
                quarantined: false,
                created: true,
                mtime: None,
            });
        }
    }
    if let Err(why) = written {
        // rolled back (or never begun): the files as they were, or only
        // what SQLite's own open left (an emptied `-wal`): undo restores it
        let unchanged = after.as_ref().is_ok_and(|a| {
            a.len() == before.len()
                && a.iter()
                    .zip(&before)
                    .all(|((n, b, _), w)| *n == w.name && *b == w.bytes)
        });
        if unchanged {
            forget(run);
            return Err(format!("{why}; nothing was changed"));
        }
        let _ = run.save_manifest();
        return Err(format!(
            "{why}; the database's files changed (`convo-doctor undo {}` puts them back)",
            run.id
        ));
    }
    let after = after.map_err(|e| format!("re-reading `{display}` after the write: {e}"))?;
    run.save_manifest()
        .map_err(|e| format!("cannot write the backup manifest after the write: {e}"))?;
    crash_point("after-rename");
    // owner, group and mode: each file as it was; a file the write made,
    // the database's
    for (n, _, st) in &after {
        let want = before
            .iter()
            .find(|b| b.name == *n)
            .map(|b| b.owner)
            .unwrap_or(Owner {
                mode: st.st_mode & 0o7777,
                ..main_owner
            });
        if Owner::of(st) != want {
            return Err(format!(
                "`{n}` is {}:{} mode {:o} after the write, not {}:{} mode {:o}",
                st.st_uid,
                st.st_gid,
                st.st_mode & 0o7777,
                want.uid,
                want.gid,
                want.mode
            ));
        }
    }
    still_at(&dir, &abs, &[])?;
    Ok(())
}
