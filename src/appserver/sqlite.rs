//! The app server's SQLite database (`<persistence_dir>/openhands.db`, the
//! default), read without writing anything beside it: opened read only,
//! never created, refused when reading would create a WAL's `-shm`.

use anyhow::{bail, Context};

use super::rows::{select_list, set, Budget, Limits, Row, Rows};

/// The side files SQLite opens beside a database (and may create or write,
/// even for a read-only connection: the `-shm` is mapped read-write).
pub(crate) const SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// The database `path` and its side files checked before SQLite opens any
/// of them, without following a link: the database a regular file (not a
/// link, FIFO or folder); each of `-wal`, `-shm`, `-journal` that exists a
/// regular file with one link and, as root, owned by the database's owner
/// (SQLite opens them by name and would write through a planted link or a
/// hard link to another file). The folder is resolved first, so the path
/// SQLite is given holds no link at all (it is opened with
/// `SQLITE_OPEN_NOFOLLOW`). `Ok`: that path and the database's `lstat`.
pub(crate) fn checked_path(
    path: &std::path::Path,
    display: &str,
) -> anyhow::Result<(std::path::PathBuf, std::fs::Metadata)> {
    use std::os::unix::fs::MetadataExt;
    let name = path
        .file_name()
        .with_context(|| format!("`{display}` names no file"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).with_context(|| format!("cannot read `{display}`"))?;
    let path = dir.join(name);
    let md =
        std::fs::symlink_metadata(&path).with_context(|| format!("cannot read `{display}`"))?;
    if let Some(what) = crate::store::fsread::file_kind(&md) {
        bail!("`{display}` is a {what}, not a regular file: not opened");
    }
    let root = rustix::process::geteuid().is_root();
    for suffix in SIDE_FILES {
        let mut p = path.as_os_str().to_os_string();
        p.push(suffix);
        let side = std::path::PathBuf::from(p);
        let sd = match std::fs::symlink_metadata(&side) {
            Ok(sd) => sd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => bail!(
                "cannot read `{display}{suffix}`: {}: not opened",
                crate::store::fsread::os_words(&e)
            ),
        };
        if let Some(what) = crate::store::fsread::file_kind(&sd) {
            bail!("`{display}{suffix}` is a {what}, not a regular file: the database is not opened (SQLite would open it and write through it)");
        }
        if sd.nlink() != 1 {
            bail!(
                "`{display}{suffix}` has {} hard links: the database is not opened (SQLite would write to the other names too)",
                sd.nlink()
            );
        }
        if root && sd.uid() != md.uid() {
            bail!(
                "`{display}{suffix}` is owned by uid {}, the database by uid {}: not opened as root",
                sd.uid(),
                md.uid()
            );
        }
    }
    Ok((path, md))
}

/// The `file:` URI of `path`, every byte but a few plain ones escaped (no
/// query: the caller adds its own).
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// A SQLite file opened to be read, the one way every reader of this crate
/// opens one (the app server's database, the Codex state database): by
/// [`sqlite_uri`] (its checks passed), read-only, not through a link.
pub(crate) fn open_read_only(
    path: &std::path::Path,
    display: &str,
) -> anyhow::Result<rusqlite::Connection> {
    use rusqlite::{Connection, OpenFlags};
    let uri = sqlite_uri(path, display)?;
    Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .with_context(|| format!("cannot open `{display}` read-only"))
}

/// How a SQLite file is opened so that reading it writes nothing beside it:
/// the `file:` URI of [`checked_path`]'s path (its checks passed), to open
/// with `SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW`.
pub(crate) fn sqlite_uri(path: &std::path::Path, display: &str) -> anyhow::Result<String> {
    let (path, _) = checked_path(path, display)?;
    let path = path.as_path();
    let side = |suffix: &str| {
        let mut p = path.as_os_str().to_os_string();
        p.push(suffix);
        std::fs::symlink_metadata(std::path::PathBuf::from(p)).is_ok()
    };
    // The header's write version (byte 18) is 2 in WAL mode.
    let mut head = [0u8; 20];
    let wal_mode = {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags.bits() as i32)
            .open(path)
            .with_context(|| format!("cannot read `{display}`"))?;
        f.read_exact(&mut head).is_ok() && head[18] == 2
    };
    let mut uri = file_uri(path);
    let (wal, shm) = (side("-wal"), side("-shm"));
    if wal_mode && !wal {
        // Nothing in a write-ahead log: the file is the whole database, and
        // `immutable` reads it taking no lock and creating no `-wal`/`-shm`
        // (a read-only open would create both, owned by whoever runs this,
        // and the app server could no longer write its database).
        uri.push_str("?immutable=1");
    } else if wal_mode && !shm {
        bail!(
            "`{display}` is in WAL mode with a `-wal` file but no `-shm`: reading it would create a file beside the app server's database; copy the three files elsewhere and give the copy to --db"
        );
    } else {
        // A rollback journal, or a live WAL whose files exist: read only.
        uri.push_str("?mode=ro");
    }
    Ok(uri)
}

pub(super) fn read(
    path: &std::path::Path,
    display: String,
    limits: &Limits,
) -> anyhow::Result<Rows> {
    // Never create it: a mistyped path must not leave an empty database;
    // and only a regular file, not through a link (a FIFO would block the
    // open), its side files checked too ([`checked_path`]).
    let conn = open_read_only(path, &display)?;
    let ctx = || format!("cannot read `{display}`");
    conn.busy_timeout(limits.timeout).with_context(ctx)?;
    // A crafted file must not take the machine's memory (SQLite's own heap).
    let _ = conn.pragma_update(None, "hard_heap_limit", 1i64 << 30);
    // Every statement is interrupted once the time is up (a watchdog thread:
    // a query over a crafted schema may never return on its own).
    let interrupt = conn.get_interrupt_handle();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let timeout = limits.timeout;
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(timeout) {
            interrupt.interrupt();
        }
    });
    let result = sqlite_rows(&conn, display.clone(), limits);
    let _ = done_tx.send(());
    let _ = watchdog.join();
    result.map_err(|e| {
        let interrupted = e.chain().any(|c| {
            matches!(
                c.downcast_ref::<rusqlite::Error>(),
                Some(rusqlite::Error::SqliteFailure(f, _))
                    if f.code == rusqlite::ErrorCode::OperationInterrupted
            )
        });
        if interrupted {
            anyhow::anyhow!(
                "`{display}`: reading took longer than {} s and was stopped (--db-timeout)",
                timeout.as_secs_f64()
            )
        } else {
            e
        }
    })
}

fn sqlite_rows(
    conn: &rusqlite::Connection,
    display: String,
    limits: &Limits,
) -> anyhow::Result<Rows> {
    let ctx = || format!("cannot read `{display}`");
    // One snapshot for every statement below.
    conn.execute_batch("BEGIN").with_context(ctx)?;
    let mut rows = Rows {
        display: display.clone(),
        ..Rows::default()
    };
    let kind: Option<String> = conn
        .query_row(
            "SELECT type FROM sqlite_master WHERE name = 'conversation_metadata'",
            [],
            |r| r.get(0),
        )
        .ok();
    match kind.as_deref() {
        Some("table") => {}
        None => bail!("`{display}` has no table conversation_metadata: not an app server database (openhands-ai 0.60 or newer)"),
        Some(other) => bail!(
            "`{display}`: conversation_metadata is a {}, not the table the app server's migrations make; it is not read",
            crate::text::sanitize(other)
        ),
    }
    {
        let mut st = conn
            .prepare("SELECT name FROM pragma_table_info('conversation_metadata')")
            .with_context(ctx)?;
        let names = st
            .query_map([], |r| r.get::<_, String>(0))
            .with_context(ctx)?;
        for n in names {
            rows.columns.insert(n.with_context(ctx)?);
        }
    }
    if rows.columns.is_empty() {
        bail!("`{display}` has no table conversation_metadata: not an app server database (openhands-ai 0.60 or newer)");
    }
    let alembic_is_table = conn
        .query_row(
            "SELECT type FROM sqlite_master WHERE name = 'alembic_version'",
            [],
            |r| r.get::<_, String>(0),
        )
        .ok()
        .as_deref()
        == Some("table");
    if alembic_is_table {
        rows.revision = conn
            .query_row("SELECT version_num FROM alembic_version", [], |r| {
                r.get::<_, String>(0)
            })
            .ok();
    }
    let (cols, list) = select_list(&rows.columns);
    let mut st = conn
        .prepare(&format!("SELECT {list} FROM conversation_metadata"))
        .with_context(ctx)?;
    let mut q = st.query([]).with_context(ctx)?;
    let mut budget = Budget::new(limits);
    while let Some(r) = q.next().with_context(ctx)? {
        let mut row = Row::default();
        for (i, c) in cols.iter().enumerate() {
            set(
                &mut row,
                c,
                r.get::<_, Option<String>>(i).with_context(ctx)?,
            );
        }
        budget.take(&row, &display)?;
        rows.add(row);
    }
    Ok(rows)
}
