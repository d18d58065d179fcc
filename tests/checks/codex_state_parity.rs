//! `codex-state-parity`: the state database's rows against the rollouts
//! (measured with the real client, 0.171.0: a row naming a rollout that is
//! gone makes resume fail; a rollout without a row is found by its id).

use std::path::Path;

use serde_json::Value;

fn rollout_name() -> String {
    super::codex_common::rollout_name()
}

/// A CODEX_HOME with the clean fixture under `day`, and a state database
/// whose rows are `rows` (id, rollout path).
fn home(tmp: &Path, day: &str, rows: &[(&str, &Path)]) -> std::path::PathBuf {
    let home = tmp.join("codex-home");
    let d = home.join("sessions").join(day);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join(rollout_name()),
        super::codex_common::fixture("clean.jsonl"),
    )
    .unwrap();
    let db = rusqlite::Connection::open(home.join("state_5.sqlite")).unwrap();
    db.execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL)")
        .unwrap();
    for (id, p) in rows {
        db.execute(
            "INSERT INTO threads VALUES (?1, ?2)",
            (id, p.to_str().unwrap()),
        )
        .unwrap();
    }
    home
}

fn diagnose(p: &Path) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
        .args(["diagnose", "--format", "json"])
        .arg(p)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What the real client did in each state case (fixtures/codex/sessions/
/// state.json, gen.py's `state_cases`): whether it resumed.
fn client_resumed(case: &str) -> bool {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/sessions/state.json");
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["cases"][case]["resumed"].as_bool().unwrap()
}

fn id() -> String {
    let n = rollout_name();
    n[n.len() - 42..n.len() - 6].to_string()
}

#[test]
fn a_row_naming_a_rollout_that_is_gone_is_an_error_on_the_rollout_found() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp
        .path()
        .join("codex-home/sessions/2026/12/03")
        .join(rollout_name());
    let h = home(tmp.path(), "2026/01/01", &[(&id(), &old)]);
    let doc = diagnose(&h);
    let c = &doc["conversations"][0];
    assert_eq!(c["findings"][0]["check"], "codex-state-parity", "{c}");
    assert_eq!(c["findings"][0]["severity"], "error");
    assert!(c["load_error"].is_object(), "{c}");
    assert!(c["events"]["agent_view"].is_null());
    // as the client said, and pointing the row at the rollout resumes it
    assert!(!client_resumed("row-names-a-moved-rollout"));
    assert!(client_resumed("row-pointed-at-the-moved-rollout"));
    assert!(client_resumed("row-deleted-for-a-moved-rollout"));
}

#[test]
fn a_row_whose_rollout_is_nowhere_is_reported_under_the_path_it_names() {
    let tmp = tempfile::tempdir().unwrap();
    let lost = tmp
        .path()
        .join("codex-home/sessions/2026/02/02/rollout-2026-02-02T00-00-00-00000000-0000-4000-8000-000000000009.jsonl");
    let here = tmp
        .path()
        .join("codex-home/sessions/2026/12/03")
        .join(rollout_name());
    let h = home(
        tmp.path(),
        "2026/12/03",
        &[
            (&id(), &here),
            ("00000000-0000-4000-8000-000000000009", &lost),
        ],
    );
    let doc = diagnose(&h);
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2, "{doc}");
    // the rollout that is here and listed: clean
    assert!(convs[0]["findings"].as_array().unwrap().is_empty(), "{doc}");
    assert_eq!(convs[1]["findings"][0]["check"], "codex-state-parity");
    assert!(convs[1]["load_error"].is_object());
    assert!(!client_resumed("rollout-gone"));
}

#[test]
fn a_rollout_without_a_row_is_information() {
    let tmp = tempfile::tempdir().unwrap();
    let h = home(tmp.path(), "2026/12/03", &[]);
    let doc = diagnose(&h);
    let c = &doc["conversations"][0];
    assert_eq!(c["findings"][0]["check"], "codex-state-parity", "{c}");
    assert_eq!(c["findings"][0]["severity"], "info");
    assert!(c["load_error"].is_null());
    assert!(client_resumed("row-missing"));
    // read only: nothing written beside the database
    let names: Vec<String> = std::fs::read_dir(&h)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with("-wal") || n.ends_with("-shm")),
        "{names:?}"
    );
}

/// The state database is read once for a whole store scan, not once per
/// rollout; again only once its files changed (a repair that wrote it).
#[test]
fn the_state_database_is_read_once_per_scan() {
    use convo_doctor::codex::{self, state};
    let tmp = tempfile::tempdir().unwrap();
    let n = rollout_name();
    let day = tmp.path().join("codex-home/sessions/2026/12/03");
    let others: Vec<std::path::PathBuf> = (1..=4)
        .map(|k| {
            let other = n.replace(&id(), &format!("00000000-0000-4000-8000-00000000000{k}"));
            day.join(other)
        })
        .collect();
    let here = day.join(&n);
    let h = home(tmp.path(), "2026/12/03", &[(&id(), &here)]);
    for o in &others {
        std::fs::copy(&here, o).unwrap();
    }
    let db = state::newest_db(&h).unwrap();
    let listed = codex::sessions(&h, &codex::Shape::Home);
    assert_eq!(listed.files.len(), 5, "{:?}", listed.files);
    for f in &listed.files {
        let parts = codex::session::name_parts(f).unwrap();
        assert!(state::parity(f, &parts.0).is_some());
    }
    assert_eq!(state::times_read(&db), 1);
    // the binary's own scan says the same rows
    let doc = diagnose(&h);
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 5);
    // a write to the database: read again
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("DELETE FROM threads", ()).unwrap();
    drop(c);
    assert_eq!(
        state::parity(&here, &id()),
        Some(state::Parity::NoRow { db: db.clone() })
    );
    assert_eq!(state::times_read(&db), 2);
}
