//! The row the Codex client writes in its state database (`threads`) for a
//! rollout it finds without one, derived from the rollout's own records.
//! Measured with the real client (0.171.0): the row a scanning
//! `thread/list` writes back, column by column
//! (fixtures/codex/state/client_row.json, `statedb.py`); convo-doctor's
//! differs only in the times the client stamps from its clock. Used by the
//! repair of `codex-state-parity` ([`super::state_fix`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::session::{self, Rollout};

/// A column's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
}

impl Cell {
    fn shown(&self) -> String {
        match self {
            Cell::Text(t) => serde_json::to_string(t).unwrap_or_default(),
            Cell::Int(n) => n.to_string(),
        }
    }
}

/// The row of one rollout: (column, value) in the table's order.
#[derive(Clone, Debug)]
pub struct Row {
    pub id: String,
    pub path: PathBuf,
    pub cells: Vec<(&'static str, Cell)>,
}

impl Row {
    /// The row as the dry run and the report show it: the columns that say
    /// which thread it is (the title and the first message, which may hold
    /// anything the user typed, are said by their length only).
    pub fn shown(&self) -> String {
        let mut parts = Vec::new();
        for (c, v) in &self.cells {
            match (c, v) {
                (&"title" | &"first_user_message" | &"preview", Cell::Text(t)) => {
                    parts.push(format!("{c}=({} chars)", t.chars().count()))
                }
                (
                    &"id" | &"rollout_path" | &"created_at" | &"source" | &"model_provider"
                    | &"cwd" | &"cli_version",
                    _,
                ) => parts.push(format!("{c}={}", v.shown())),
                _ => {}
            }
        }
        format!("threads row: {}", parts.join(", "))
    }
}

/// Milliseconds since the epoch of an RFC 3339 UTC time
/// (`2026-12-03T07:40:46.739Z`).
pub fn epoch_ms(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !t.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac = t[19..t.len() - 1].strip_prefix('.').unwrap_or("");
    if !frac.bytes().all(|c| c.is_ascii_digit()) || !(1..=12).contains(&m) {
        return None;
    }
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    // days from the civil date (Howard Hinnant's algorithm)
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

/// The first record of type `kind` (and payload type `ptype`) whose payload
/// `pick` answers.
fn first<T>(r: &Rollout, kind: &str, pick: impl Fn(&Value) -> Option<T>) -> Option<T> {
    r.records().find_map(|(i, x)| {
        if x.kind != kind {
            return None;
        }
        let v: Value = serde_json::from_slice(r.text(i)).ok()?;
        pick(v.get("payload")?)
    })
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_string)
}

/// The first message the user typed: the first `UserMessage` item the
/// client completed (an `event_msg`), else the first `user_message` event.
fn first_user_message(r: &Rollout) -> String {
    let joined = |content: &Value| -> Option<String> {
        let parts: Vec<&str> = content
            .as_array()?
            .iter()
            .filter_map(|c| c.get("text")?.as_str())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    };
    first(r, "event_msg", |p| match p.get("type")?.as_str()? {
        "item_completed" => {
            let item = p.get("item")?;
            (item.get("type")?.as_str()? == "UserMessage").then(|| joined(item.get("content")?))?
        }
        "user_message" => text(p, "message"),
        _ => None,
    })
    .unwrap_or_default()
}

/// The row the client writes for the rollout `r` at `path` (measured: the
/// row a scanning `thread/list` of 0.171.0 writes back, column by column,
/// fixtures/codex/state/client_row.json), for the columns the table has.
/// `Err` says what the rollout does not say that the table needs.
pub fn row(r: &Rollout, path: &Path, mtime_ms: i64, columns: &[String]) -> Result<Row, String> {
    let meta = first(r, "session_meta", |p| Some(p.clone()))
        .ok_or("the rollout has no session_meta to write its row from")?;
    let turn = first(r, "turn_context", |p| Some(p.clone())).unwrap_or(Value::Null);
    let id = text(&meta, "id").ok_or("its session_meta has no id")?;
    let file_id = session::name_parts(path).map(|p| p.0);
    if file_id.as_deref() != Some(id.to_ascii_lowercase().as_str()) {
        return Err("its session_meta's id is not its file name's".into());
    }
    let created = text(&meta, "timestamp")
        .and_then(|t| epoch_ms(&t))
        .ok_or("its session_meta has no timestamp")?;
    let need = |what: Option<String>, name: &str| {
        what.ok_or_else(|| format!("the rollout does not say its {name}"))
    };
    let source = match meta.get("source") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => serde_json::to_string(v).ok(),
        _ => None,
    };
    let provider = text(&meta, "model_provider").or_else(|| {
        first(r, "event_msg", |p| {
            text(p.get("thread_settings")?, "model_provider_id")
        })
    });
    let sandbox = turn
        .get("permission_profile")
        .or_else(|| turn.get("sandbox_policy"))
        .and_then(|v| serde_json::to_string(v).ok());
    let message = first_user_message(r);
    let tokens = r
        .records()
        .filter(|(_, x)| x.kind == "event_msg")
        .rev()
        .find_map(|(i, _)| {
            let v: Value = serde_json::from_slice(r.text(i)).ok()?;
            let p = v.get("payload")?;
            (p.get("type")?.as_str()? == "token_count").then_some(())?;
            p.get("info")?
                .get("total_token_usage")?
                .get("total_tokens")?
                .as_i64()
        });
    let effort = text(&turn, "effort").or_else(|| {
        text(
            turn.get("collaboration_mode")?.get("settings")?,
            "reasoning_effort",
        )
    });
    let git = meta.get("git").cloned().unwrap_or(Value::Null);
    let abs = std::path::absolute(path).map_err(|e| e.to_string())?;
    let mut all: Vec<(&'static str, Option<Cell>, bool)> = vec![
        ("id", Some(Cell::Text(id.clone())), true),
        (
            "rollout_path",
            Some(Cell::Text(abs.to_string_lossy().into_owned())),
            true,
        ),
        (
            "created_at",
            Some(Cell::Int(created.div_euclid(1000))),
            true,
        ),
        (
            "updated_at",
            Some(Cell::Int(mtime_ms.div_euclid(1000))),
            true,
        ),
        ("source", Some(Cell::Text(need(source, "source")?)), true),
        (
            "model_provider",
            Some(Cell::Text(need(provider, "model provider")?)),
            true,
        ),
        (
            "cwd",
            Some(Cell::Text(need(text(&meta, "cwd"), "working directory")?)),
            true,
        ),
        ("title", Some(Cell::Text(message.clone())), true),
        (
            "sandbox_policy",
            Some(Cell::Text(need(sandbox, "sandbox policy")?)),
            true,
        ),
        (
            "approval_mode",
            Some(Cell::Text(need(
                text(&turn, "approval_policy"),
                "approval policy",
            )?)),
            true,
        ),
        ("tokens_used", tokens.map(Cell::Int), false),
        ("archived", Some(Cell::Int(0)), false),
        ("git_sha", text(&git, "commit_hash").map(Cell::Text), false),
        ("git_branch", text(&git, "branch").map(Cell::Text), false),
        (
            "git_origin_url",
            text(&git, "repository_url").map(Cell::Text),
            false,
        ),
        (
            "cli_version",
            text(&meta, "cli_version").map(Cell::Text),
            false,
        ),
        (
            "first_user_message",
            Some(Cell::Text(message.clone())),
            false,
        ),
        (
            "agent_nickname",
            text(&meta, "agent_nickname").map(Cell::Text),
            false,
        ),
        (
            "agent_role",
            text(&meta, "agent_role").map(Cell::Text),
            false,
        ),
        ("model", text(&turn, "model").map(Cell::Text), false),
        ("reasoning_effort", effort.map(Cell::Text), false),
        (
            "agent_path",
            text(&meta, "agent_path").map(Cell::Text),
            false,
        ),
        ("created_at_ms", Some(Cell::Int(created)), false),
        ("updated_at_ms", Some(Cell::Int(mtime_ms)), false),
        (
            "thread_source",
            text(&meta, "thread_source").map(Cell::Text),
            false,
        ),
        ("preview", Some(Cell::Text(message)), false),
        (
            "history_mode",
            text(&meta, "history_mode").map(Cell::Text),
            false,
        ),
        (
            "originator",
            text(&meta, "originator").map(Cell::Text),
            false,
        ),
    ];
    let has = |c: &str| columns.iter().any(|x| x == c);
    let mut cells = Vec::new();
    for (c, v, required) in all.drain(..) {
        if !has(c) {
            if required {
                return Err(format!(
                    "the database's threads table has no column `{c}`: not the schema convo-doctor knows (Codex 0.171.0)"
                ));
            }
            continue;
        }
        if let Some(v) = v {
            cells.push((c, v));
        }
    }
    Ok(Row {
        id: id.to_ascii_lowercase(),
        path: abs,
        cells,
    })
}
