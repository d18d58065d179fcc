//! The app server's Postgres database (`DB_HOST` set): the URL parsed as
//! the client parses it, credentials found where libpq finds them
//! (`PGPASSWORD`, `PGPASSFILE` or `~/.pgpass` with libpq's 0600 rule,
//! `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE`), so that `--db
//! postgres://oh@host/db` needs no secret on the command line; read inside
//! a `READ ONLY` transaction with a connect and statement timeout.
//!
//! Long because: libpq's rules for the URL, the environment and `~/.pgpass` (which decide what is a password, hence what is redacted) sit with the one reader that uses them; about 70 lines are their tests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::rows::{select_list, set, Budget, Limits, Row, Rows};

/// A Postgres connection, parsed once, exactly as the client
/// (`tokio_postgres::Config`) parses it: the password is what the client
/// would send (everything after the first `:` up to the first `@`,
/// percent-decoded, or the `password` query key), remembered by the
/// redaction layer so that it is replaced wherever it would appear, and
/// never part of [`PgSpec::display`].
#[derive(Clone)]
pub struct PgSpec {
    pub config: postgres::Config,
    pub display: String,
    /// What was passed over on the way (a password file libpq would not
    /// use), for the run's notes.
    pub notes: Vec<String>,
}

impl PartialEq for PgSpec {
    fn eq(&self, other: &PgSpec) -> bool {
        self.display == other.display
    }
}
impl Eq for PgSpec {}

impl std::fmt::Debug for PgSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// Parse `url` as `tokio_postgres::Config` does and complete it from the
/// environment as libpq would. The error never quotes the URL.
pub fn spec(url: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<PgSpec, String> {
    // Whatever the client would take for a password is a secret from now
    // on, in every form the value spells it, even if the URL is refused.
    for raw in raw_passwords(url) {
        crate::secrets::remember_credential(&raw);
        crate::secrets::remember_credential(&percent_decode(&raw));
    }
    let mut config: postgres::Config = url.parse().map_err(|_| {
        "--db: not a Postgres URL the client can parse (postgres://USER@HOST[:PORT]/DB; the value is not shown, it may hold a password)".to_string()
    })?;
    if let Some(p) = config.get_password() {
        crate::secrets::remember_credential(&String::from_utf8_lossy(p));
    }
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        config.host(non_empty("PGHOST").as_deref().unwrap_or("localhost"));
    }
    if config.get_ports().is_empty() {
        if let Some(p) = non_empty("PGPORT").and_then(|p| p.parse::<u16>().ok()) {
            config.port(p);
        }
    }
    if config.get_user().is_none() {
        let user = non_empty("PGUSER")
            .or_else(|| non_empty("USER"))
            .or_else(|| non_empty("LOGNAME"))
            .unwrap_or_else(|| "postgres".into());
        config.user(&user);
    }
    if config.get_dbname().is_none() {
        let db =
            non_empty("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").to_string());
        config.dbname(&db);
    }
    let mut notes = Vec::new();
    let host = host_name(&config);
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("").to_string();
    let dbname = config.get_dbname().unwrap_or("").to_string();
    if config.get_password().is_none() {
        let found = non_empty("PGPASSWORD")
            .or_else(|| passfile(env, &host, port, &dbname, &user, &mut notes));
        if let Some(pw) = found {
            crate::secrets::remember_credential(&pw);
            config.password(pw);
        }
    }
    let display = format!("postgres://{user}@{host}:{port}/{dbname}");
    Ok(PgSpec {
        config,
        display,
        notes,
    })
}

/// The host as libpq's password file matches it: a socket directory is
/// `localhost`.
fn host_name(config: &postgres::Config) -> String {
    match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    }
}

/// The password the URL spells (userinfo up to the first `@`, after its
/// first `:`; any `password=` query key), undecoded.
fn raw_passwords(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if let Some((creds, _)) = rest.split_once('@') {
        if let Some((_, pw)) = creds.split_once(':') {
            out.push(pw.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=') {
                if percent_decode(k) == "password" {
                    out.push(v.to_string());
                }
            }
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// libpq's password file: `PGPASSFILE`, else `~/.pgpass`; ignored (as
/// libpq does) unless a regular file that neither group nor others may
/// read or write. Lines `host:port:db:user:password`, `*` matches
/// anything, `\` escapes `:` and `\`; the first match wins.
fn passfile(
    env: &dyn Fn(&str) -> Option<String>,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
    notes: &mut Vec<String>,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = env("PGPASSFILE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".pgpass"))
        })?;
    let (bytes, md) = crate::store::fsread::read_regular(&path).ok()?;
    if md.permissions().mode() & 0o077 != 0 {
        notes.push(format!(
            "password file `{}` has group or world access; permissions should be u=rw (0600) or less: not used (libpq's rule)",
            path.display()
        ));
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    let port = port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        let ok = |f: &str, v: &str| f == "*" || f == v;
        if ok(&fields[0], host)
            && ok(&fields[1], &port)
            && ok(&fields[2], db)
            && ok(&fields[3], user)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().unwrap().push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The server's own words for `e` (`password authentication failed for
/// user "oh"`, `database "x" does not exist`, `permission denied for table
/// conversation_metadata`), or the client's with its causes.
fn words(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// What went wrong, said once and short, with what to check next: the
/// server's own words for what it refused (a password, a database, a
/// table), the client's for a server it could not reach (a refused port, a
/// host name that does not resolve).
fn cause(e: &postgres::Error, config: &postgres::Config) -> String {
    use postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let next = if *code == SqlState::INVALID_PASSWORD {
            "check the password given: PGPASSWORD, PGPASSFILE or ~/.pgpass (the app server's DB_PASS)"
        } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            "check the user (the app server's DB_USER) and the server's pg_hba.conf"
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            "check the database name (the app server's DB_NAME)"
        } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            "this user may not read it: give it SELECT on conversation_metadata, or use the app server's own user (DB_USER)"
        } else {
            return db.message().to_string();
        };
        return format!("{}; {next}", db.message());
    }
    let host = host_name(config);
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("connection refused by {host}:{port}: no server listens there; check that PostgreSQL runs and the host and port (the app server's DB_HOST, DB_PORT)")
                }
                std::io::ErrorKind::TimedOut => {
                    return format!("no answer from {host}:{port} (connection timed out); check the host (the app server's DB_HOST) and any firewall between")
                }
                _ if io.to_string().contains("lookup address") => {
                    return format!("unknown host `{host}`: the name does not resolve; check it (the app server's DB_HOST)")
                }
                _ => {}
            }
        }
        src = c.source();
    }
    words(e)
}

/// The first row's text column of `sql`, if any row.
fn first_text(
    tx: &mut postgres::Transaction<'_>,
    sql: &str,
) -> Result<Option<String>, postgres::Error> {
    Ok(tx.query(sql, &[])?.first().map(|r| r.get::<_, String>(0)))
}

/// Read every row, giving up when the server says nothing for
/// `limits.timeout` (connecting included: the client's own connect timeout
/// covers the TCP connection only, not a server that accepts and never
/// answers).
pub fn read(pg: &PgSpec, limits: &Limits) -> anyhow::Result<Rows> {
    let progress = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let (config, display, lim, seen) = (
        pg.config.clone(),
        pg.display.clone(),
        *limits,
        progress.clone(),
    );
    std::thread::spawn(move || {
        let _ = tx.send(read_rows(config, display, &lim, &seen));
    });
    let mut last = (0u64, Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(result) => return result,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                bail!("cannot read `{}`: the reader stopped", pg.display)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let now = progress.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() >= limits.timeout {
                    bail!(
                        "cannot read `{}`: the server did not answer within {} s (--db-timeout)",
                        pg.display,
                        limits.timeout.as_secs_f64()
                    );
                }
            }
        }
    }
}

fn read_rows(
    mut config: postgres::Config,
    display: String,
    limits: &Limits,
    progress: &AtomicU64,
) -> anyhow::Result<Rows> {
    use postgres::fallible_iterator::FallibleIterator as _;
    let ms = limits.timeout.as_millis().max(1);
    config.connect_timeout(limits.timeout);
    let options = match config.get_options() {
        Some(o) if !o.is_empty() => format!("{o} -c statement_timeout={ms}"),
        _ => format!("-c statement_timeout={ms}"),
    };
    config.options(&options);
    let err = |what: &'static str| {
        let (display, config) = (display.clone(), config.clone());
        move |e: postgres::Error| anyhow::anyhow!("{what} `{display}`: {}", cause(&e, &config))
    };
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(err("cannot connect to"))?;
    progress.fetch_add(1, Ordering::Relaxed);
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(err("cannot read"))?;
    let mut rows = Rows {
        display: display.clone(),
        ..Rows::default()
    };
    for r in tx
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_name = 'conversation_metadata' AND table_schema = current_schema()",
            &[],
        )
        .map_err(err("cannot read"))?
    {
        rows.columns.insert(r.get::<_, String>(0));
    }
    progress.fetch_add(1, Ordering::Relaxed);
    if rows.columns.is_empty() {
        // a table whose columns this user may not see: the server's own
        // words (`permission denied for table conversation_metadata`)
        let kind = first_text(
            &mut tx,
            "SELECT relkind::text FROM pg_catalog.pg_class WHERE oid = to_regclass('conversation_metadata')",
        )
        .map_err(err("cannot read"))?;
        if matches!(kind.as_deref(), Some("r" | "p")) {
            tx.query("SELECT 1 FROM conversation_metadata LIMIT 0", &[])
                .map_err(err("cannot read"))?;
        }
        bail!("`{display}` has no table conversation_metadata: not an app server database (openhands-ai 0.60 or newer)");
    }
    let kind = first_text(
        &mut tx,
        "SELECT table_type::text FROM information_schema.tables WHERE table_name = 'conversation_metadata' AND table_schema = current_schema()",
    )
    .map_err(err("cannot read"))?;
    if kind.as_deref() != Some("BASE TABLE") {
        bail!(
            "`{display}`: conversation_metadata is a {}, not the table the app server's migrations make; it is not read",
            crate::text::sanitize(kind.as_deref().unwrap_or("relation of another kind"))
        );
    }
    let has_alembic = !tx
        .query(
            "SELECT 1 FROM information_schema.tables WHERE table_name = 'alembic_version' AND table_schema = current_schema()",
            &[],
        )
        .map_err(err("cannot read"))?
        .is_empty();
    if has_alembic {
        rows.revision = first_text(&mut tx, "SELECT version_num::text FROM alembic_version")
            .map_err(err("cannot read"))?;
    }
    let (cols, list) = select_list(&rows.columns);
    // Streamed: rows arrive as the server sends them, never all at once.
    let sql = format!("SELECT {list} FROM conversation_metadata");
    let mut it = tx
        .query_raw(sql.as_str(), std::iter::empty::<&str>())
        .map_err(err("cannot read"))?;
    let mut budget = Budget::new(limits);
    while let Some(r) = it.next().map_err(err("cannot read"))? {
        let mut row = Row::default();
        for (i, c) in cols.iter().enumerate() {
            set(&mut row, c, r.get::<_, Option<String>>(i));
        }
        budget.take(&row, &display)?;
        rows.add(row);
        progress.fetch_add(1, Ordering::Relaxed);
    }
    drop(it);
    tx.commit()
        .map_err(err("cannot read"))
        .context("closing the read-only transaction")?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_password_is_what_the_client_takes_and_never_displayed() {
        for (url, pw) in [
            ("postgres://oh:se/cr?et#x@db:5432/openhands", "se/cr?et#x"),
            ("postgres://oh:p%40ss%2Fword@db/openhands", "p@ss/word"),
            ("postgres://oh@db/openhands?password=hunter%232", "hunter#2"),
        ] {
            let spec = spec(url, &env_of(&[])).unwrap();
            assert_eq!(spec.config.get_password(), Some(pw.as_bytes()), "{url}");
            assert!(!spec.display.contains(pw), "{}", spec.display);
            assert!(
                spec.display.starts_with("postgres://oh@db:"),
                "{}",
                spec.display
            );
            let said = crate::secrets::redact_all(&format!("x {url} y {pw} z"));
            assert!(!said.contains(pw), "{said}");
        }
    }

    #[test]
    fn libpq_environment_fills_what_the_url_leaves_out() {
        let spec = spec(
            "postgres://",
            &env_of(&[
                ("PGHOST", "h1"),
                ("PGPORT", "6543"),
                ("PGUSER", "u1"),
                ("PGDATABASE", "d1"),
                ("PGPASSWORD", "from-env-pw"),
            ]),
        )
        .unwrap();
        assert_eq!(spec.display, "postgres://u1@h1:6543/d1");
        assert_eq!(spec.config.get_password(), Some(&b"from-env-pw"[..]));
    }

    #[test]
    fn pgpass_is_read_with_libpqs_0600_rule() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(
            &f,
            "# comment\nother:*:*:*:nope\ndb:5432:openhands:oh:pa\\:ss-from-file\n",
        )
        .unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let p = f.to_str().unwrap().to_string();
        let env = move |k: &str| (k == "PGPASSFILE").then(|| p.clone());
        let spec = spec("postgres://oh@db/openhands", &env).unwrap();
        assert_eq!(spec.config.get_password(), Some(&b"pa:ss-from-file"[..]));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let p = f.to_str().unwrap().to_string();
        let env = move |k: &str| (k == "PGPASSFILE").then(|| p.clone());
        let spec = super::spec("postgres://oh@db/openhands", &env).unwrap();
        assert_eq!(spec.config.get_password(), None);
    }
}
