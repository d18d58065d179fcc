//! The app server's SQL record of each conversation: table
//! `conversation_metadata` (`StoredConversationMetadata` in openhands-ai's
//! `sql_app_conversation_info_service.py`), in SQLite (`<persistence_dir>/
//! openhands.db`, the default) or Postgres (`DB_HOST` set). Read only: SQLite
//! is opened `mode=ro`, Postgres reads inside a `READ ONLY` transaction.
//!
//! Columns arrive by alembic revision (001: the table; 003:
//! `parent_conversation_id`; 004: `public`; 005: `github_user_id` dropped,
//! `user_id` nullable; 008: `tags`; 009: `agent_kind`; 013:
//! `execution_status`), so only the columns the table has are asked for.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use anyhow::bail;

/// Where the Codex adapter finds it too.
pub(crate) use super::sqlite::{checked_path, file_uri, open_read_only, SIDE_FILES};

/// Where the database is, as given to `--db`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbSpec {
    Sqlite(PathBuf),
    /// A libpq-style URL (`postgres://user@host:port/db`, or with
    /// `?host=/socket/dir`), parsed as the Postgres client parses it.
    Postgres(Box<PgSpec>),
    /// A `--db` that is neither: the message (which never quotes what was
    /// given, so a password in it cannot be echoed) is the run's error.
    Invalid(String),
}

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

impl DbSpec {
    /// `sqlite:PATH`, `sqlite:///PATH`, `postgres://...`, `postgresql://...`,
    /// or a plain path to a file (SQLite). Never fails: a `--db` that cannot
    /// be used is [`DbSpec::Invalid`], so the argument parser never echoes
    /// it (it may hold a password).
    pub fn parse(s: &str) -> DbSpec {
        DbSpec::parse_with(s, &|k| std::env::var(k).ok())
    }

    /// [`DbSpec::parse`] with libpq's environment (`PGHOST`, `PGPORT`,
    /// `PGUSER`, `PGDATABASE`, `PGPASSWORD`, `PGPASSFILE`, `HOME`) read
    /// through `env`.
    pub fn parse_with(s: &str, env: &dyn Fn(&str) -> Option<String>) -> DbSpec {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return match super::pg::spec(s, env) {
                Ok(spec) => DbSpec::Postgres(Box::new(spec)),
                Err(e) => DbSpec::Invalid(e),
            };
        }
        if let Some(rest) = s.strip_prefix("sqlite:") {
            // sqlite:///abs/path (SQLAlchemy's spelling) and sqlite:PATH
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return DbSpec::Invalid(
                    "`sqlite:` needs a path: sqlite:/path/to/openhands.db".into(),
                );
            }
            return DbSpec::Sqlite(PathBuf::from(path));
        }
        if let Some(i) = s.find("://") {
            let scheme: String = s[..i]
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                .take(40)
                .collect();
            return DbSpec::Invalid(format!(
                "--db: the scheme `{scheme}://` is neither sqlite:PATH nor postgres://... (the app server's two databases; for SQLAlchemy's `postgresql+asyncpg://` write `postgresql://`); the rest of the value is not shown, it may hold a password"
            ));
        }
        if s.is_empty() {
            return DbSpec::Invalid("an empty --db".into());
        }
        DbSpec::Sqlite(PathBuf::from(s))
    }

    /// How reports name it: never with a password.
    pub fn display(&self) -> String {
        match self {
            DbSpec::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbSpec::Postgres(pg) => pg.display.clone(),
            DbSpec::Invalid(_) => "--db".into(),
        }
    }
}

/// One row of `conversation_metadata`, every value as text (`NULL` is
/// `None`), as the app server's model reads it.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// The stored `conversation_id` (the app server writes `str(UUID)`,
    /// dashed).
    pub conversation_id: String,
    pub conversation_version: Option<String>,
    pub title: Option<String>,
    pub sandbox_id: Option<String>,
    /// `None` also when the table has no such column (before revision 013):
    /// see [`Rows::has_column`].
    pub execution_status: Option<String>,
    pub parent_conversation_id: Option<String>,
    pub user_id: Option<String>,
    pub trigger: Option<String>,
    pub git_provider: Option<String>,
    pub created_at: Option<String>,
    pub last_updated_at: Option<String>,
}

impl Row {
    pub fn is_v1(&self) -> bool {
        self.conversation_version.as_deref() == Some("V1")
    }
}

/// Every row, keyed by the 32-hex id; rows whose id is not a UUID are kept
/// apart (the app server cannot read them either).
#[derive(Debug, Default)]
pub struct Rows {
    pub display: String,
    /// `alembic_version.version_num`, when the table exists.
    pub revision: Option<String>,
    pub columns: BTreeSet<String>,
    pub by_id: HashMap<String, Row>,
    /// Rows whose `conversation_id` is not a UUID.
    pub bad_ids: Vec<Row>,
}

impl Rows {
    pub fn has_column(&self, c: &str) -> bool {
        self.columns.contains(c)
    }

    pub(super) fn add(&mut self, row: Row) {
        match crate::appserver::uuid_hex(&row.conversation_id) {
            Some(hex) => {
                self.by_id.insert(hex, row);
            }
            None => self.bad_ids.push(row),
        }
    }
}

/// The columns read, in order: each maps to a [`Row`] field.
const WANTED: &[&str] = &[
    "conversation_id",
    "conversation_version",
    "title",
    "sandbox_id",
    "execution_status",
    "parent_conversation_id",
    "user_id",
    "trigger",
    "git_provider",
    "created_at",
    "last_updated_at",
];

pub(super) fn set(row: &mut Row, col: &str, v: Option<String>) {
    let slot = match col {
        "conversation_id" => {
            row.conversation_id = v.unwrap_or_default();
            return;
        }
        "conversation_version" => &mut row.conversation_version,
        "title" => &mut row.title,
        "sandbox_id" => &mut row.sandbox_id,
        "execution_status" => &mut row.execution_status,
        "parent_conversation_id" => &mut row.parent_conversation_id,
        "user_id" => &mut row.user_id,
        "trigger" => &mut row.trigger,
        "git_provider" => &mut row.git_provider,
        "created_at" => &mut row.created_at,
        _ => &mut row.last_updated_at,
    };
    *slot = v;
}

pub(super) fn select_list(columns: &BTreeSet<String>) -> (Vec<&'static str>, String) {
    let cols: Vec<&'static str> = WANTED
        .iter()
        .copied()
        .filter(|c| columns.contains(*c))
        .collect();
    let list = cols
        .iter()
        .map(|c| format!("CAST(\"{c}\" AS TEXT)"))
        .collect::<Vec<_>>()
        .join(", ");
    (cols, list)
}

/// Read every row. Errors name the database (never its password).
pub fn read(spec: &DbSpec, limits: &Limits) -> anyhow::Result<Rows> {
    match spec {
        DbSpec::Sqlite(path) => super::sqlite::read(path, spec.display(), limits),
        DbSpec::Postgres(pg) => super::pg::read(pg, limits),
        DbSpec::Invalid(msg) => bail!("{msg}"),
    }
}

/// What a database read may cost before it is abandoned with an error.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connecting (the TCP connection and the server's greeting and
    /// authentication) and each statement.
    pub timeout: std::time::Duration,
    /// Rows of `conversation_metadata` read at most.
    pub max_rows: u64,
    /// Bytes of row values read at most.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: std::time::Duration::from_secs(30),
            max_rows: 10_000_000,
            max_bytes: 4 << 30,
        }
    }
}

/// Counts what was read against [`Limits`].
pub(super) struct Budget<'a> {
    limits: &'a Limits,
    rows: u64,
    bytes: u64,
}

impl<'a> Budget<'a> {
    pub(super) fn new(limits: &'a Limits) -> Budget<'a> {
        Budget {
            limits,
            rows: 0,
            bytes: 0,
        }
    }

    pub(super) fn take(&mut self, row: &Row, display: &str) -> anyhow::Result<()> {
        self.rows += 1;
        let len = |v: &Option<String>| v.as_ref().map_or(0, |s| s.len() as u64);
        self.bytes += row.conversation_id.len() as u64
            + [
                &row.conversation_version,
                &row.title,
                &row.sandbox_id,
                &row.execution_status,
                &row.parent_conversation_id,
                &row.user_id,
                &row.trigger,
                &row.git_provider,
                &row.created_at,
                &row.last_updated_at,
            ]
            .iter()
            .map(|v| len(v))
            .sum::<u64>();
        if self.rows > self.limits.max_rows {
            bail!(
                "`{display}`: conversation_metadata holds more than {} rows, the most read (a table the app server made would not)",
                self.limits.max_rows
            );
        }
        if self.bytes > self.limits.max_bytes {
            bail!(
                "`{display}`: conversation_metadata's rows hold more than {} MiB, the most read",
                self.limits.max_bytes >> 20
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            DbSpec::parse("sqlite:/x/openhands.db"),
            DbSpec::Sqlite("/x/openhands.db".into())
        );
        assert_eq!(
            DbSpec::parse("sqlite:///x/openhands.db"),
            DbSpec::Sqlite("/x/openhands.db".into())
        );
        assert_eq!(
            DbSpec::parse("openhands.db"),
            DbSpec::Sqlite("openhands.db".into())
        );
        let pg = DbSpec::parse("postgres://u:secret@h:5432/openhands");
        assert_eq!(pg.display(), "postgres://u@h:5432/openhands");
        // an unusable URL is never quoted, whatever the password holds
        for bad in [
            "mysql://u:s3cr/et@h/x",
            "postgresql+asyncpg://oh:hunter2-pw@db/openhands",
        ] {
            match DbSpec::parse(bad) {
                DbSpec::Invalid(msg) => {
                    assert!(!msg.contains("s3cr") && !msg.contains("hunter2"), "{msg}")
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
