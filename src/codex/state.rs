//! Codex's state database (`$CODEX_HOME/state_<n>.sqlite`, table `threads`:
//! `id`, `rollout_path`), read only, opened so that nothing is written
//! beside it (the app server's rule, [`crate::appserver::db`]), its reads
//! bounded in rows, memory and time. Measured with the real client (0.171.0;
//! docs/codex.md): a thread whose row names a rollout that is gone cannot be
//! resumed ("no rollout found for thread id"), even when its rollout is
//! elsewhere in the sessions tree; a rollout without a row is found by its
//! id and its row written back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// At most this many rows are read.
const ROWS: usize = 200_000;

/// The `CODEX_HOME` a rollout path lies in: the parent of its nearest
/// `sessions` (or `archived_sessions`) ancestor that holds a state database.
pub fn home_of(path: &Path) -> Option<PathBuf> {
    path.ancestors().skip(1).find_map(|a| {
        let n = a.file_name()?;
        if n != "sessions" && n != "archived_sessions" {
            return None;
        }
        let home = a.parent()?;
        newest_db(home).map(|_| home.to_path_buf())
    })
}

/// Whether `name` is a state database's (`state_<n>.sqlite`) or one of
/// its side files' (`-wal`, `-shm`, `-journal`): what a repair of the
/// database writes.
pub fn is_db_file(name: &str) -> bool {
    let base = crate::appserver::db::SIDE_FILES
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    base.strip_prefix("state_")
        .and_then(|r| r.strip_suffix(".sqlite"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The newest `state_<n>.sqlite` of `home` (the highest `n`): the one the
/// client reads.
pub fn newest_db(home: &Path) -> Option<PathBuf> {
    std::fs::read_dir(home)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u32 = name
                .strip_prefix("state_")?
                .strip_suffix(".sqlite")?
                .parse()
                .ok()?;
            // whatever it is (a link, a FIFO: [`threads`] says so and
            // opens nothing), it is the one the client would read
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, p)| p)
}

/// The rows of a state database, as [`threads`] gives them.
pub type Rows = std::sync::Arc<Result<HashMap<String, PathBuf>, String>>;

/// What a database's files were when it was read: (device, inode, size,
/// modification time) of the database and of its `-wal`.
type Stamp = [Option<(u64, u64, u64, i64, i64)>; 2];

fn stamp(db: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let of = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    };
    let mut wal = db.as_os_str().to_os_string();
    wal.push("-wal");
    [of(db), of(Path::new(&wal))]
}

/// The state databases read so far: each is read once for a whole store
/// scan (every rollout of a home asks it), again only when its files
/// changed since (a repair that wrote it).
static READ: std::sync::Mutex<Vec<(PathBuf, Stamp, Rows)>> = std::sync::Mutex::new(Vec::new());

/// How many times each database was read from disk (for tests).
static TIMES: std::sync::Mutex<Vec<(PathBuf, usize)>> = std::sync::Mutex::new(Vec::new());

/// How many times the state database `db` was read from disk by this
/// process (not the times it was asked: [`rows`] reads it once a scan).
pub fn times_read(db: &Path) -> usize {
    let times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
    times
        .iter()
        .find(|(p, _)| p == db)
        .map(|(_, n)| *n)
        .unwrap_or(0)
}

/// [`threads`] of `db`, read once while its files stay as they were.
pub fn rows(db: &Path) -> Rows {
    let now = stamp(db);
    // held while reading: two rollouts asking at once read it once
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, rows)) = read.iter().find(|(p, s, _)| p == db && *s == now) {
        return rows.clone();
    }
    let rows: Rows = std::sync::Arc::new(threads(db));
    {
        let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
        match times.iter_mut().find(|(p, _)| p == db) {
            Some((_, n)) => *n += 1,
            None => times.push((db.to_path_buf(), 1)),
        }
    }
    read.retain(|(p, _, _)| p != db);
    read.push((db.to_path_buf(), now, rows.clone()));
    rows
}

/// The threads of a state database: id → rollout path. `Err` says why it
/// could not be read: a database that is not a regular file (a link, a
/// FIFO) is not opened at all. Read from disk each call: a scan asks
/// [`rows`].
pub fn threads(db: &Path) -> Result<HashMap<String, PathBuf>, String> {
    let display = db.display().to_string();
    match std::fs::symlink_metadata(db) {
        Ok(md) => {
            if let Some(what) = crate::store::fsread::file_kind(&md) {
                return Err(format!(
                    "`{display}` is a {what}, not a regular file: not opened"
                ));
            }
        }
        Err(e) => {
            return Err(format!(
                "cannot read `{display}`: {}",
                crate::store::fsread::os_words(&e)
            ))
        }
    }
    let conn = crate::appserver::db::open_read_only(db, &display).map_err(|e| format!("{e:#}"))?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(2));
    let _ = conn.pragma_update(None, "hard_heap_limit", 1i64 << 28);
    let interrupt = conn.get_interrupt_handle();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            done_rx.recv_timeout(std::time::Duration::from_secs(10))
        {
            interrupt.interrupt();
        }
    });
    let read = || -> rusqlite::Result<HashMap<String, PathBuf>> {
        let mut st = conn.prepare("SELECT id, rollout_path FROM threads LIMIT ?1")?;
        let mut out = HashMap::new();
        let mut rows = st.query([ROWS as i64])?;
        while let Some(r) = rows.next()? {
            let (Ok(id), Ok(p)) = (r.get::<_, String>(0), r.get::<_, String>(1)) else {
                continue;
            };
            out.insert(id.to_ascii_lowercase(), PathBuf::from(p));
        }
        Ok(out)
    };
    let result = read();
    let _ = done_tx.send(());
    let _ = watchdog.join();
    result.map_err(|e| format!("cannot read `{display}`: {e}"))
}

/// What the state database says of one rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parity {
    /// Its row names this file, or another file that exists.
    Listed,
    /// No row for its id.
    NoRow { db: PathBuf },
    /// Its row names a rollout that is gone.
    Gone { db: PathBuf, named: PathBuf },
    /// The database cannot be read (a link, a FIFO, not a database): why.
    Unread { db: PathBuf, why: String },
}

/// The state database's word on the rollout `path` of thread `id`: `None`
/// when no state database is found above it or it cannot be read.
pub fn parity(path: &Path, id: &str) -> Option<Parity> {
    let abs = std::path::absolute(path).ok()?;
    let home = home_of(&abs)?;
    let db = newest_db(&home)?;
    let read = rows(&db);
    let rows = match read.as_ref() {
        Ok(rows) => rows,
        Err(why) => {
            return Some(Parity::Unread {
                db,
                why: why.clone(),
            })
        }
    };
    Some(match rows.get(&id.to_ascii_lowercase()) {
        None => Parity::NoRow { db },
        Some(p) if p == &abs || std::fs::symlink_metadata(p).is_ok() => Parity::Listed,
        Some(p) => Parity::Gone {
            db,
            named: p.clone(),
        },
    })
}

/// The rows of `home`'s state database whose rollout is gone and whose id
/// no rollout of `found` carries: the threads the client lists and cannot
/// resume at all.
pub fn ghosts(home: &Path, found: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let Some(db) = newest_db(home) else {
        return Vec::new();
    };
    let read = rows(&db);
    let Ok(rows) = read.as_ref() else {
        return Vec::new();
    };
    let ids: std::collections::HashSet<String> = found
        .iter()
        .filter_map(|f| super::session::name_parts(f).map(|p| p.0))
        .collect();
    let mut out: Vec<(String, PathBuf)> = rows
        .iter()
        .filter(|(id, p)| !ids.contains(*id) && std::fs::symlink_metadata(p).is_err())
        .map(|(id, p)| (id.clone(), p.clone()))
        .collect();
    out.sort();
    out
}

/// Whether a rollout lies in `archived_sessions` (its nearest `sessions` or
/// `archived_sessions` ancestor is the latter): `codex archive <id>` moves
/// it there. Measured (0.171.0, fixtures/codex/state `archived`): `codex
/// exec resume <id>` refuses it ("session is archived. Run `codex
/// unarchive`"); unarchived, it resumes.
pub fn is_archived(path: &Path) -> bool {
    let Ok(abs) = std::path::absolute(path) else {
        return false;
    };
    abs.ancestors()
        .skip(1)
        .find_map(|a| {
            let n = a.file_name()?;
            (n == "sessions" || n == "archived_sessions").then(|| n == "archived_sessions")
        })
        .unwrap_or(false)
}

/// The `CODEX_HOME` a rollout lies in, database or not: the parent of its
/// nearest `sessions` or `archived_sessions` ancestor.
pub fn home_around(path: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(path).ok()?;
    abs.ancestors().skip(1).find_map(|a| {
        let n = a.file_name()?;
        (n == "sessions" || n == "archived_sessions").then(|| a.parent().map(Path::to_path_buf))?
    })
}

/// Whether a Codex client is writing thread `id` right now. Measured with
/// the real client (0.171.0, `gen.py --lock`): while it writes a thread it
/// holds an exclusive flock on `$CODEX_HOME/thread-writer-locks/<id>.lock`
/// (and removes the file when it is done). The lock file is opened
/// read-only with `O_NOFOLLOW|O_NONBLOCK` (never created, never followed,
/// never blocking on a FIFO), checked to be a regular file, and tried with a
/// shared flock released at once.
pub fn writer_active(rollout: &Path, id: &str) -> bool {
    use rustix::fs::{FlockOperation, OFlags};
    use std::os::unix::fs::OpenOptionsExt;
    if !super::session::is_uuid(id) {
        return false;
    }
    let Some(home) = home_around(rollout) else {
        return false;
    };
    let lock = home.join("thread-writer-locks").join(format!("{id}.lock"));
    let flags = OFlags::NONBLOCK | OFlags::NOFOLLOW;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(&lock)
    else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    match rustix::fs::flock(&f, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = rustix::fs::flock(&f, FlockOperation::Unlock);
            false
        }
        Err(e) => e == rustix::io::Errno::WOULDBLOCK,
    }
}

/// A path no file is at, named by a row of the state database above it:
/// the finding (none when the check is not selected).
pub fn ghost(path: &Path, selected: &dyn Fn(&str) -> bool) -> Option<Vec<crate::checks::Finding>> {
    if std::fs::symlink_metadata(path).is_ok() {
        return None;
    }
    let abs = std::path::absolute(path).ok()?;
    let db = newest_db(&home_of(&abs)?)?;
    let read = rows(&db);
    let id = read
        .as_ref()
        .as_ref()
        .ok()?
        .iter()
        .find(|(_, p)| **p == abs)?
        .0;
    let mut out = Vec::new();
    if selected(super::checks::STATE_PARITY) {
        out.push(crate::checks::Finding::new(
            super::checks::STATE_PARITY,
            crate::checks::Severity::Error,
            db.display().to_string(),
            format!("the state database lists thread `{id}` with this rollout, which is gone: the client (0.171.0) cannot resume the thread, nor lists it; `codex doctor` counts a stale row. Not repaired (the row's name, pin and section are nowhere else): if the rollout is lost, `codex delete --force {id}` removes the row"),
        ));
    }
    Some(out)
}
