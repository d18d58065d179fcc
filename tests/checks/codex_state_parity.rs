//! `codex-state-parity`: the state database's rows against the rollouts
//! (measured with the real client, 0.171.0: a row naming a rollout that is
//! gone makes resume fail; a rollout without a row is found by its id).

use std::path::Path;

use serde_json::Value;

use super::common::{cli, diagnose_json};

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
    let doc = diagnose_json(&h, &[]);
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
    let doc = diagnose_json(&h, &[]);
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2, "{doc}");
    // the rollout that is here and listed: clean
    assert!(convs[0]["findings"].as_array().unwrap().is_empty(), "{doc}");
    assert_eq!(convs[1]["findings"][0]["check"], "codex-state-parity");
    assert!(convs[1]["load_error"].is_object());
    assert!(!client_resumed("rollout-gone"));
}

#[test]
fn a_rollout_without_a_row_is_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let h = home(tmp.path(), "2026/12/03", &[]);
    let doc = diagnose_json(&h, &[]);
    let c = &doc["conversations"][0];
    assert_eq!(c["findings"][0]["check"], "codex-state-parity", "{c}");
    assert_eq!(c["findings"][0]["severity"], "warning");
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
    let doc = diagnose_json(&h, &[]);
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

/// What the real client said of the state database (fixtures/codex/state,
/// `statedb.py`).
fn state_verdicts() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/state/verdicts.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// A CODEX_HOME whose state database has the client's own schema
/// (fixtures/codex/state/schema.sql), in WAL mode as the client keeps it,
/// and no row; the clean rollout in it. (home, database, rollout)
fn client_home(tmp: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let home = tmp.join("codex-home");
    let d = home.join("sessions/2026/12/03");
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join(rollout_name());
    std::fs::write(&f, super::codex_common::fixture("clean.jsonl")).unwrap();
    let db = home.join("state_5.sqlite");
    let schema = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/state/schema.sql"),
    )
    .unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    c.execute_batch(&schema).unwrap();
    drop(c);
    (home, db, f)
}

/// Every file of the database: name → bytes.
fn db_files(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm", "-journal"]
        .iter()
        .filter_map(|s| {
            let p = format!("{}{s}", db.display());
            std::fs::read(&p).ok().map(|b| (p, b))
        })
        .collect()
}

/// The repair writes the row the client writes (every column the client's
/// own scan wrote for this rollout, but the times it stamps from its
/// clock), shows it first in a dry run, and undo puts every file of the
/// database back byte for byte. The client judged the same repair
/// (statedb.py): listed from the database again, `resume --last` finds the
/// thread, `codex doctor` is content, undo exact.
#[test]
fn a_rollout_without_a_row_gets_the_row_the_client_writes_and_undo_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let (h, db, f) = client_home(tmp.path());
    let bk = tmp.path().join("backups");
    let before = db_files(&db);
    let (code, out, err) = cli(&["repair", "--dry-run", h.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("would fix") && out.contains("+ threads row: id="),
        "{out}"
    );
    assert_eq!(db_files(&db), before, "a dry run writes nothing");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // the row, against the client's own
    let want: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/state/client_row.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // the repair leaves one file (the log checkpointed): read as is
    assert!(!Path::new(&format!("{}-wal", db.display())).exists());
    let c = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let got: serde_json::Map<String, Value> = c
        .query_row("SELECT * FROM threads WHERE id = ?1", [id()], |r| {
            let mut m = serde_json::Map::new();
            for (k, name) in r.as_ref().column_names().enumerate() {
                let v = match r.get_ref(k)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(n) => Value::from(n),
                    rusqlite::types::ValueRef::Text(t) => {
                        Value::from(String::from_utf8_lossy(t).into_owned())
                    }
                    other => panic!("{other:?}"),
                };
                m.insert(name.to_string(), v);
            }
            Ok(m)
        })
        .unwrap();
    drop(c);
    let clock = ["updated_at", "updated_at_ms", "recency_at", "recency_at_ms"];
    for (k, w) in want.as_object().unwrap() {
        if clock.contains(&k.as_str()) {
            continue;
        }
        let g = &got[k];
        if k == "rollout_path" {
            assert_eq!(g.as_str().unwrap(), f.to_str().unwrap());
            continue;
        }
        assert_eq!(g, w, "column {k}");
    }
    // what the client said of this very repair
    let v = state_verdicts();
    let r = &v["cases"]["repaired"];
    assert_eq!(
        r["columns_unlike_the_clients"],
        serde_json::json!(clock_sorted(&clock))
    );
    assert_eq!(r["doctor"]["status"], "ok");
    assert_eq!(r["listed_db_only"], true);
    assert_eq!(r["undo_exact"], true);
    assert_eq!(r["resumed"], true);
    assert_eq!(v["cases"]["resume-last"]["last"], "another");
    assert_eq!(v["cases"]["resume-last"]["last-after-repair"], "this");
    assert_eq!(v["cases"]["rollout-without-row"]["listed_db_only"], false);
    // diagnose is content; undo puts every file back
    let doc = diagnose_json(&h, &[]);
    assert!(
        doc["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{doc}"
    );
    let run = out
        .lines()
        .find_map(|l| l.split("convo-doctor undo ").nth(1))
        .unwrap()
        .trim_end_matches(['`', ')']);
    let (code, out, err) = cli(&["undo", "--backup-dir", bk.to_str().unwrap(), run]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(db_files(&db), before);
}

fn clock_sorted(c: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = c.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// A process holding the database open makes the repair refuse, writing
/// nothing. A running client (0.171.0: `codex app-server`, statedb.py's
/// `client-running`, refused) holds a read lock on the `-shm` file's byte
/// 128 (SQLite's "DMS" lock, held as long as a connection is open) and on
/// the database file's shared range; this process takes the first the same
/// way (`F_SETLK`), and the repair must see it from its own process.
#[test]
fn a_state_database_a_process_holds_open_is_not_written() {
    use std::os::fd::AsRawFd;
    let tmp = tempfile::tempdir().unwrap();
    let (h, db, _) = client_home(tmp.path());
    std::fs::write(format!("{}-shm", db.display()), b"").unwrap();
    // read before the lock is taken: closing any descriptor of the file
    // drops this process's POSIX locks on it (SQLite's own caveat)
    let before = db_files(&db);
    let shm = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(format!("{}-shm", db.display()))
        .unwrap();
    // SAFETY: a zeroed `flock` is valid; F_SETLK reads it.
    let mut lk: libc::flock = unsafe { std::mem::zeroed() };
    lk.l_type = libc::F_RDLCK as _;
    lk.l_whence = libc::SEEK_SET as _;
    lk.l_start = 128;
    lk.l_len = 1;
    // SAFETY: an open descriptor and a valid `flock`.
    assert_eq!(
        unsafe { libc::fcntl(shm.as_raw_fd(), libc::F_SETLK, &lk) },
        0
    );
    let bk = tmp.path().join("backups");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("has the database open"), "{out}");
    assert_eq!(db_files(&db), before);
    drop(shm);
    let v = state_verdicts();
    assert_eq!(v["cases"]["client-running"]["refused"], true);
    assert_eq!(v["cases"]["client-running"]["unchanged"], true);
}

/// A row whose rollout is gone is not repaired: the client's own `codex
/// delete --force` removes it (measured), and what it holds is nowhere
/// else.
#[test]
fn a_row_whose_rollout_is_gone_is_left_alone() {
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
    let db = h.join("state_5.sqlite");
    let before = db_files(&db);
    let bk = tmp.path().join("backups");
    let (_, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        h.to_str().unwrap(),
    ]);
    assert!(!out.contains("threads row"), "{out}{err}");
    assert_eq!(db_files(&db), before);
    let v = state_verdicts();
    let g = &v["cases"]["row-whose-rollout-is-gone"];
    assert_eq!(g["resumed"], false);
    assert_eq!(g["row_kept_by_scan"], true);
    assert_eq!(g["delete_force_removed_the_row"], true);
}

/// Undo of the database's repair refuses once a client opened the database
/// again (its `-wal` is back): the old bytes under the new log would mix
/// two states. Nothing is put back.
#[test]
fn undo_of_the_database_refuses_once_a_client_opened_it_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (h, db, _) = client_home(tmp.path());
    let bk = tmp.path().join("backups");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let run = out
        .lines()
        .find_map(|l| l.split("convo-doctor undo ").nth(1))
        .unwrap()
        .trim_end_matches(['`', ')'])
        .to_string();
    std::fs::write(format!("{}-wal", db.display()), b"").unwrap();
    let after = db_files(&db);
    let (code, out, err) = cli(&["undo", "--backup-dir", bk.to_str().unwrap(), &run]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("a client opened the database since the repair"),
        "{out}{err}"
    );
    assert_eq!(db_files(&db), after);
}

/// A rollout whose row cannot be derived (its `session_meta` rebuilt by the
/// repair names no `source`): the rollout is repaired, the database left
/// as it was, the outcome saying why; not a failure of the run.
#[test]
fn a_row_the_rollout_does_not_say_is_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (h, db, f) = client_home(tmp.path());
    std::fs::write(&f, super::codex_common::fixture("no-meta.jsonl")).unwrap();
    let before = db_files(&db);
    let bk = tmp.path().join("backups");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("does not say its source"), "{out}");
    assert_eq!(db_files(&db), before);
    assert_eq!(
        std::fs::read(&f).unwrap(),
        super::codex_common::fixture("no-meta.repaired.jsonl")
    );
}
