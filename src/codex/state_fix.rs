//! The repair of the state database's parity (`codex-state-parity`): the
//! row a rollout lacks, written the way the client writes it when it finds
//! a rollout without one. Measured with the real client (0.171.0,
//! fixtures/codex/state, `statedb.py`): a rollout the database lacks is not
//! listed from the database (the app server's `thread/list` reading the
//! database only), `codex exec resume --last` passes it over, and `codex
//! doctor` warns; a listing that scans the rollouts writes its row back,
//! with the columns [`row`] derives from the same records. A row whose
//! rollout is gone is left to the operator (`codex delete --force <id>`,
//! the client's own command, removes it): what it holds (a name, a pin, a
//! section) is nowhere else.
//!
//! Nothing is written by this module: the write is
//! [`crate::fix::persist::change_sqlite`] (one transaction, a backup of every
//! file of the database, undo).

use std::path::{Path, PathBuf};

use super::checks;
use super::edits::{Edited, Outcome};
use super::session;
use super::state_row::{row, Cell, Row};

/// The `threads` columns of the database (`PRAGMA table_info`), and those
/// that are `NOT NULL` without a default (each must be written).
pub fn columns(conn: &rusqlite::Connection) -> rusqlite::Result<(Vec<String>, Vec<String>)> {
    let mut st =
        conn.prepare("SELECT name, \"notnull\", dflt_value FROM pragma_table_info('threads')")?;
    let mut all = Vec::new();
    let mut needed = Vec::new();
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let name: String = r.get(0)?;
        let notnull: i64 = r.get(1)?;
        let default: Option<String> = r.get(2)?;
        if notnull == 1 && default.is_none() {
            needed.push(name.clone());
        }
        all.push(name);
    }
    Ok((all, needed))
}

/// Insert `rows` (the transaction is the caller's) and read each back: the
/// row must be there, naming its rollout. Columns the table needs that a
/// row does not give refuse it.
pub fn insert(conn: &rusqlite::Connection, rows: &[Row]) -> Result<(), String> {
    let (_, needed) = columns(conn).map_err(|e| e.to_string())?;
    for r in rows {
        if let Some(c) = needed.iter().find(|c| !r.cells.iter().any(|(n, _)| n == c)) {
            return Err(format!(
                "the threads table needs `{c}`, which the rollout of thread `{}` does not say",
                r.id
            ));
        }
        let names: Vec<&str> = r.cells.iter().map(|(n, _)| *n).collect();
        let marks: Vec<String> = (1..=names.len()).map(|k| format!("?{k}")).collect();
        let sql = format!(
            "INSERT INTO threads ({}) VALUES ({})",
            names.join(", "),
            marks.join(", ")
        );
        let values: Vec<rusqlite::types::Value> = r
            .cells
            .iter()
            .map(|(_, v)| match v {
                Cell::Text(t) => rusqlite::types::Value::Text(t.clone()),
                Cell::Int(n) => rusqlite::types::Value::Integer(*n),
            })
            .collect();
        conn.execute(&sql, rusqlite::params_from_iter(values))
            .map_err(|e| format!("cannot insert the row of thread `{}`: {e}", r.id))?;
        let back: String = conn
            .query_row(
                "SELECT rollout_path FROM threads WHERE id = ?1",
                [&r.id],
                |x| x.get(0),
            )
            .map_err(|e| format!("the row of thread `{}` is not there after: {e}", r.id))?;
        if Path::new(&back) != r.path {
            return Err(format!(
                "the row of thread `{}` names another rollout after the write",
                r.id
            ));
        }
    }
    Ok(())
}

/// The state database's repair of one `CODEX_HOME`: the rows its rollouts
/// lack, and why a rollout's cannot be written.
#[derive(Debug, Default)]
pub struct Plan {
    pub db: PathBuf,
    pub rows: Vec<Row>,
    pub skipped: Vec<String>,
    /// A rollout a client is writing now: the database is left alone.
    pub busy: Option<String>,
}

/// The rows of `home`'s state database that the rollouts `files` (those in
/// this home) lack: `None` when the home has no readable state database or
/// every rollout has its row.
pub fn plan(home: &Path, files: &[PathBuf]) -> Option<Plan> {
    use std::os::unix::fs::MetadataExt;
    let db = super::state::newest_db(home)?;
    let read = super::state::rows(&db);
    let listed = read.as_ref().as_ref().ok()?;
    let columns = table_columns(&db).ok()?;
    let mut plan = Plan {
        db,
        ..Plan::default()
    };
    let mut seen = std::collections::HashSet::new();
    for f in files {
        // archived rollouts are read only (and their row would be another)
        if super::state::is_archived(f) {
            continue;
        }
        let Some((id, _)) = session::name_parts(f) else {
            continue;
        };
        if listed.contains_key(&id) || !seen.insert(id.clone()) {
            continue;
        }
        let r = match session::read(f) {
            Ok(r) => r,
            Err(_) => continue,
        };
        if super::state::writer_active(f, &id) {
            plan.busy = Some(format!(
                "a Codex client is writing thread `{id}` now (it holds `thread-writer-locks/{id}.lock`)"
            ));
            continue;
        }
        let mtime_ms = std::fs::symlink_metadata(f)
            .map(|m| m.mtime() * 1000 + m.mtime_nsec() / 1_000_000)
            .unwrap_or(0);
        match row(&r, f, mtime_ms, &columns) {
            Ok(row) => plan.rows.push(row),
            Err(why) => plan.skipped.push(format!("`{}`: {why}", f.display())),
        }
    }
    (!plan.rows.is_empty() || !plan.skipped.is_empty() || plan.busy.is_some()).then_some(plan)
}

/// The `threads` columns of `db`, read only (as [`super::state::threads`]
/// opens it).
fn table_columns(db: &Path) -> Result<Vec<String>, String> {
    let display = db.display().to_string();
    let conn = crate::appserver::db::open_read_only(db, &display).map_err(|e| format!("{e:#}"))?;
    columns(&conn).map(|c| c.0).map_err(|e| e.to_string())
}

/// The outcome of one state database's repair, and its write (none when
/// nothing can be written).
pub fn outcome(plan: Plan) -> (Outcome, Option<crate::sessions::repair::Beside>) {
    let mut o = Outcome::new(&plan.db);
    let n = plan.rows.len() + plan.skipped.len();
    o.before = format!(
        "the state database lacks the rows of {}: the client lists them only when it scans the rollouts, and `codex exec resume --last` passes them over",
        crate::checks::plural(n, "rollout", "rollouts")
    );
    o.after = match plan.skipped.len() {
        0 => "every rollout has its row".into(),
        k => format!(
            "{} still without a row",
            crate::checks::plural(k, "rollout", "rollouts")
        ),
    };
    for r in &plan.rows {
        o.changes.edits.push(Edited {
            check: checks::STATE_PARITY,
            line: None,
            what: format!(
                "the row of `{}`, as the client writes it, inserted into `threads`",
                r.path.display()
            ),
            removed: None,
            added: Some(r.shown()),
        });
    }
    let mut errors = plan.skipped.clone();
    if let Some(busy) = &plan.busy {
        errors.push(format!("{busy}: the database is left alone"));
        o.status = "failed";
        o.after = o.before.clone();
        o.error = Some(errors.join("; "));
        return (o, None);
    }
    if !errors.is_empty() {
        o.error = Some(errors.join("; "));
    }
    if plan.rows.is_empty() {
        // nothing this run can write (as a rollout whose session_meta
        // cannot be rebuilt): unchanged, the error saying why
        o.after = o.before.clone();
        return (o, None);
    }
    let (db, rows) = (plan.db, plan.rows);
    let write: crate::sessions::repair::Beside = Box::new(move |run, ordinal| {
        crate::fix::persist::change_sqlite(run, &db, &[checks::STATE_PARITY], ordinal, &|conn| {
            insert(conn, &rows)
        })
    });
    (o, Some(write))
}
