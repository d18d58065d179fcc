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

use std::path::PathBuf;

use anyhow::bail;

pub use super::pg::PgSpec;
pub use super::rows::{Limits, Row, Rows};
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

/// Read every row. Errors name the database (never its password).
pub fn read(spec: &DbSpec, limits: &Limits) -> anyhow::Result<Rows> {
    match spec {
        DbSpec::Sqlite(path) => super::sqlite::read(path, spec.display(), limits),
        DbSpec::Postgres(pg) => super::pg::read(pg, limits),
        DbSpec::Invalid(msg) => bail!("{msg}"),
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
