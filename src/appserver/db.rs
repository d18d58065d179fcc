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

use anyhow::{bail, Context};

/// Where the database is, as given to `--db`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbSpec {
    Sqlite(PathBuf),
    /// A libpq-style URL (`postgres://user:pass@host:port/db`, or with
    /// `?host=/socket/dir`).
    Postgres(String),
}

impl DbSpec {
    /// `sqlite:PATH`, `sqlite:///PATH`, `postgres://...`, `postgresql://...`,
    /// or a plain path to a file (SQLite).
    pub fn parse(s: &str) -> Result<DbSpec, String> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DbSpec::Postgres(s.to_string()));
        }
        if let Some(rest) = s.strip_prefix("sqlite:") {
            // sqlite:///abs/path (SQLAlchemy's spelling) and sqlite:PATH
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("`sqlite:` needs a path: sqlite:/path/to/openhands.db".into());
            }
            return Ok(DbSpec::Sqlite(PathBuf::from(path)));
        }
        if s.contains("://") {
            return Err(format!(
                "`{}` is neither sqlite:PATH nor postgres://... (the app server's two databases)",
                crate::appserver::without_password(s)
            ));
        }
        if s.is_empty() {
            return Err("an empty --db".into());
        }
        Ok(DbSpec::Sqlite(PathBuf::from(s)))
    }

    /// How reports name it: never with a password.
    pub fn display(&self) -> String {
        match self {
            DbSpec::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbSpec::Postgres(url) => crate::appserver::without_password(url),
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

    fn add(&mut self, row: Row) {
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

fn set(row: &mut Row, col: &str, v: Option<String>) {
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

fn select_list(columns: &BTreeSet<String>) -> (Vec<&'static str>, String) {
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
pub fn read(spec: &DbSpec) -> anyhow::Result<Rows> {
    match spec {
        DbSpec::Sqlite(path) => read_sqlite(path, spec.display()),
        DbSpec::Postgres(url) => read_postgres(url, spec.display()),
    }
}

fn read_sqlite(path: &std::path::Path, display: String) -> anyhow::Result<Rows> {
    use rusqlite::{Connection, OpenFlags};
    // Never create it: a mistyped path must not leave an empty database.
    std::fs::metadata(path).with_context(|| format!("cannot read `{display}`"))?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open `{display}` read-only"))?;
    let ctx = || format!("cannot read `{display}`");
    let mut rows = Rows {
        display: display.clone(),
        ..Rows::default()
    };
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
    rows.revision = conn
        .query_row("SELECT version_num FROM alembic_version", [], |r| {
            r.get::<_, String>(0)
        })
        .ok();
    let (cols, list) = select_list(&rows.columns);
    let mut st = conn
        .prepare(&format!("SELECT {list} FROM conversation_metadata"))
        .with_context(ctx)?;
    let mut q = st.query([]).with_context(ctx)?;
    while let Some(r) = q.next().with_context(ctx)? {
        let mut row = Row::default();
        for (i, c) in cols.iter().enumerate() {
            set(
                &mut row,
                c,
                r.get::<_, Option<String>>(i).with_context(ctx)?,
            );
        }
        rows.add(row);
    }
    Ok(rows)
}

fn read_postgres(url: &str, display: String) -> anyhow::Result<Rows> {
    use postgres::fallible_iterator::FallibleIterator as _;
    let ctx = || format!("cannot read `{display}`");
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| anyhow::anyhow!(crate::appserver::without_password(&e.to_string())))
        .with_context(|| format!("cannot connect to `{display}`"))?;
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .with_context(ctx)?;
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
        .with_context(ctx)?
    {
        rows.columns.insert(r.get::<_, String>(0));
    }
    if rows.columns.is_empty() {
        bail!("`{display}` has no table conversation_metadata: not an app server database (openhands-ai 0.60 or newer)");
    }
    let has_alembic = !tx
        .query(
            "SELECT 1 FROM information_schema.tables WHERE table_name = 'alembic_version' AND table_schema = current_schema()",
            &[],
        )
        .with_context(ctx)?
        .is_empty();
    if has_alembic {
        rows.revision = tx
            .query("SELECT version_num::text FROM alembic_version", &[])
            .with_context(ctx)?
            .first()
            .map(|r| r.get::<_, String>(0));
    }
    let (cols, list) = select_list(&rows.columns);
    // Streamed: rows arrive as the server sends them, never all at once.
    let sql = format!("SELECT {list} FROM conversation_metadata");
    let mut it = tx
        .query_raw(sql.as_str(), std::iter::empty::<&str>())
        .with_context(ctx)?;
    while let Some(r) = it.next().with_context(ctx)? {
        let mut row = Row::default();
        for (i, c) in cols.iter().enumerate() {
            set(&mut row, c, r.get::<_, Option<String>>(i));
        }
        rows.add(row);
    }
    drop(it);
    tx.commit().with_context(ctx)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            DbSpec::parse("sqlite:/x/openhands.db"),
            Ok(DbSpec::Sqlite("/x/openhands.db".into()))
        );
        assert_eq!(
            DbSpec::parse("sqlite:///x/openhands.db"),
            Ok(DbSpec::Sqlite("/x/openhands.db".into()))
        );
        assert_eq!(
            DbSpec::parse("openhands.db"),
            Ok(DbSpec::Sqlite("openhands.db".into()))
        );
        let pg = DbSpec::parse("postgres://u:secret@h:5432/openhands").unwrap();
        assert_eq!(pg.display(), "postgres://u@h:5432/openhands");
        assert!(DbSpec::parse("mysql://u:secret@h/x")
            .unwrap_err()
            .contains("mysql://u@h/x"));
    }
}
