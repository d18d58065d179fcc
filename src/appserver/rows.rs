//! One row of the app server's `conversation_metadata` as read, the
//! columns asked for, and what a read may cost: what the SQLite and the
//! Postgres readers share (`db` chooses between them).

use std::collections::{BTreeSet, HashMap};

use anyhow::bail;

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
