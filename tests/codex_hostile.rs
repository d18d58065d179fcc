//! Issue 26: attacker input for the Codex adapter, in the style of
//! tests/hostile.rs and tests/root_safety.rs. Each case is a finding, a
//! load error or a note naming the file, never a hang (every run of the
//! binary is killed after a minute: a hang detector, not a timing claim),
//! never a followed link, never a write through one. The cases that need a
//! second uid run only as root (CI runs as root).

mod common;

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{chown_tree, is_root, s};

/// The file name the fixtures' rollout had (its id and start time).
fn rollout_name() -> String {
    let p = common::repo().join("fixtures/codex/sessions/verdicts.json");
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["rollout"].as_str().unwrap().to_string()
}

fn case(name: &str) -> PathBuf {
    common::repo()
        .join("fixtures/codex/sessions")
        .join(format!("{name}.jsonl"))
}

/// A CODEX_HOME (`config.toml`, `sessions/2026/12/03/`): (home, day folder).
fn home(tmp: &Path) -> (PathBuf, PathBuf) {
    let home = tmp.join(".codex");
    let day = home.join("sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(home.join("config.toml"), "model = \"x\"\n").unwrap();
    (home, day)
}

/// Run the binary, killed if it has not ended after a minute: (exit code,
/// stdout, stderr); a hang fails the test.
fn bounded(args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = common::bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("convo-doctor {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (code, read(&out), read(&err))
}

fn diagnose(path: &Path) -> (i32, Value, String) {
    let (code, out, err) = bounded(&["diagnose", "--format", "json", s(path)]);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc, err)
}

fn notes(doc: &Value) -> String {
    doc["summary"]["notes"].to_string()
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success());
}

const CANARY: &str = "CODEX-OUTSIDE-CANARY-51c2";

/// A rollout outside the home, holding a canary that must never be read.
fn outside_rollout(tmp: &Path) -> PathBuf {
    let outside = tmp.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let mut text = std::fs::read_to_string(case("clean")).unwrap();
    text.push_str(&format!(
        "{{\"timestamp\":\"2026-12-03T07:41:00.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{CANARY}\"}}]}}}}\n{{\"timestamp\":\"2026-12-03T07:41:00.000Z\",\"type\":\"resp\n"
    ));
    let f = outside.join(rollout_name());
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn a_linked_rollout_in_a_home_is_a_note_and_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, day) = home(tmp.path());
    let target = outside_rollout(tmp.path());
    let link = day.join(rollout_name());
    symlink(&target, &link).unwrap();
    let before = std::fs::read(&target).unwrap();
    let (code, doc, err) = diagnose(&home);
    assert_eq!(code, 2, "no rollout to read is an error: {err}");
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 0);
    assert!(
        notes(&doc).contains(&format!(
            "{}` is a symbolic link and was not followed",
            s(&link)
        )),
        "{}",
        notes(&doc)
    );
    assert!(err.contains("no Codex rollout in"), "{err}");
    let bk = tmp.path().join("backups");
    let (code, out, err) = bounded(&["repair", "--backup-dir", s(&bk), s(&home)]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("is a symbolic link and was not followed"),
        "{err}"
    );
    assert!(!out.contains(CANARY) && !err.contains(CANARY));
    assert_eq!(
        std::fs::read(&target).unwrap(),
        before,
        "nothing written through the link"
    );
}

#[test]
fn a_linked_rollout_given_as_path_is_a_load_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, day) = home(tmp.path());
    let target = outside_rollout(tmp.path());
    let link = day.join(rollout_name());
    symlink(&target, &link).unwrap();
    let before = std::fs::read(&target).unwrap();
    let (_, doc, _) = diagnose(&link);
    let c = &doc["conversations"][0];
    assert_eq!(c["path"], s(&link));
    assert!(
        c["load_error"]["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{c}"
    );
    assert!(!doc.to_string().contains(CANARY));
    let bk = tmp.path().join("backups");
    let (code, out, _) = bounded(&["repair", "--backup-dir", s(&bk), s(&link)]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("not repaired") && out.contains("symbolic link"),
        "{out}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), before);
}

#[test]
fn a_linked_sessions_folder_or_day_folder_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let target = outside_rollout(tmp.path());
    // the home's sessions/ a link
    let h1 = tmp.path().join("h1/.codex");
    std::fs::create_dir_all(&h1).unwrap();
    std::fs::write(h1.join("config.toml"), "").unwrap();
    symlink(target.parent().unwrap(), h1.join("sessions")).unwrap();
    let (code, doc, _) = diagnose(&h1);
    assert_eq!(code, 2);
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 0);
    let sessions = h1.join("sessions");
    assert!(
        notes(&doc).contains(&format!(
            "{}` is a symbolic link and was not followed",
            s(&sessions)
        )),
        "{}",
        notes(&doc)
    );
    // a day's folder a link, beside a real one
    let (h2, day) = home(&tmp.path().join("h2"));
    std::fs::copy(case("clean"), day.join(rollout_name())).unwrap();
    let linked = h2.join("sessions/2026/12/04");
    symlink(target.parent().unwrap(), &linked).unwrap();
    let (_, doc, _) = diagnose(&h2);
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 1);
    assert!(notes(&doc).contains(&format!(
        "{}` is a symbolic link to a directory and was not followed",
        s(&linked)
    )));
    assert!(!doc.to_string().contains(CANARY));
}

#[test]
fn a_fifo_in_place_of_a_rollout_never_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, day) = home(tmp.path());
    let fifo = day.join(rollout_name());
    mkfifo(&fifo);
    let (code, doc, _) = diagnose(&home);
    assert_eq!(code, 2);
    assert!(
        notes(&doc).contains(&format!(
            "{}` is a FIFO, not a regular file: passed over",
            s(&fifo)
        )),
        "{}",
        notes(&doc)
    );
    let (_, doc, _) = diagnose(&fifo);
    let c = &doc["conversations"][0];
    assert!(
        c["load_error"]["message"]
            .as_str()
            .unwrap()
            .contains("FIFO"),
        "{c}"
    );
    let bk = tmp.path().join("backups");
    for path in [&home, &fifo] {
        let (code, out, _) = bounded(&["repair", "--backup-dir", s(&bk), s(path)]);
        assert_eq!(code, 2, "{out}");
    }
    let (_, out, _) = bounded(&["repair", "--dry-run", s(&fifo)]);
    assert!(
        out.contains("not repaired") && out.contains("FIFO"),
        "{out}"
    );
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo_like());
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

#[test]
fn a_huge_line_is_read_and_a_huge_file_is_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, day) = home(tmp.path());
    // a 40 MB item: read (within the read limit), judged, never quoted whole
    let f = day.join(rollout_name());
    let mut text = std::fs::read(case("clean")).unwrap();
    let big = "y".repeat(40 << 20);
    text.extend_from_slice(format!("{{\"timestamp\":\"2026-12-03T07:41:00.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{big}\"}}]}}}}\n{{\"oops\":\"{big}").as_bytes());
    std::fs::write(&f, &text).unwrap();
    let (_, doc, _) = diagnose(&f);
    let c = &doc["conversations"][0];
    assert!(c["load_error"].is_null(), "{}", c["load_error"]);
    assert!(c["findings"].to_string().contains("codex-invalid-line"));
    let (_, out, _) = bounded(&["repair", "--dry-run", s(&f)]);
    assert!(
        out.len() < 100_000,
        "a diff line is clipped: {} bytes",
        out.len()
    );
    // a 300 MB file (sparse): over the read limit, refused without reading
    let huge = tmp.path().join(rollout_name());
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(300 << 20).unwrap();
    let (_, doc, _) = diagnose(&huge);
    let c = &doc["conversations"][0];
    assert_eq!(c["path"], s(&huge));
    assert!(c["load_error"].is_object(), "{c}");
    let (code, out, _) = bounded(&["repair", "--dry-run", s(&huge)]);
    assert_eq!(code, 2);
    assert!(out.contains("not repaired"), "{out}");
}

#[test]
fn a_state_database_that_is_a_link_or_a_fifo_is_not_opened() {
    let tmp = tempfile::tempdir().unwrap();
    for kind in ["link", "fifo"] {
        let (home, day) = home(&tmp.path().join(kind));
        std::fs::copy(case("clean"), day.join(rollout_name())).unwrap();
        let db = home.join("state_5.sqlite");
        match kind {
            "link" => symlink("/dev/zero", &db).unwrap(),
            _ => mkfifo(&db),
        }
        let (_, doc, _) = diagnose(&home);
        let c = &doc["conversations"][0];
        let f = c["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "codex-state-parity")
            .unwrap_or_else(|| panic!("{kind}: {c}"));
        assert_eq!(f["file"], s(&db));
        let want = if kind == "link" {
            "symbolic link"
        } else {
            "FIFO"
        };
        assert!(f["message"].as_str().unwrap().contains(want), "{f}");
        let bk = tmp.path().join(format!("bk-{kind}"));
        let (code, out, err) = bounded(&["repair", "--backup-dir", s(&bk), s(&home)]);
        assert!(code < 2, "{out}{err}");
    }
}

/// As root, a CODEX_HOME another user owns, given as PATH: repaired in
/// place keeping every file's owner, group and mode; undo too.
#[test]
fn a_root_repair_of_another_users_codex_home_keeps_owner_and_mode() {
    if !is_root("a_root_repair_of_another_users_codex_home_keeps_owner_and_mode") {
        return;
    }
    let tmp = common::open_tempdir();
    let (home, day) = home(tmp.path());
    let f = day.join(rollout_name());
    std::fs::copy(case("invalid-mid"), &f).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    chown_tree(&home, 65534);
    let bk = tmp.path().join("backups");
    let (code, out, err) = bounded(&["repair", "--backup-dir", s(&bk), s(&home)]);
    assert!(code < 2, "{out}{err}");
    assert!(out.contains("fixed"), "{out}");
    let md = std::fs::metadata(&f).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.mode() & 0o7777),
        (65534, 65534, 0o640)
    );
    assert_ne!(
        std::fs::read(&f).unwrap(),
        std::fs::read(case("invalid-mid")).unwrap()
    );
    let run = out
        .lines()
        .find_map(|l| l.split("convo-doctor undo ").nth(1))
        .unwrap()
        .trim_end_matches(['`', ')']);
    let (code, out, err) = bounded(&["undo", "--backup-dir", s(&bk), run]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read(&f).unwrap(),
        std::fs::read(case("invalid-mid")).unwrap()
    );
    let md = std::fs::metadata(&f).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.mode() & 0o7777),
        (65534, 65534, 0o640)
    );
}

/// A state database in WAL mode with a live `-wal` beside it (the client
/// leaves one after it exits), the clean rollout's row in it.
fn wal_home(tmp: &Path) -> (PathBuf, PathBuf) {
    let (home, day) = home(tmp);
    std::fs::copy(case("clean"), day.join(rollout_name())).unwrap();
    let scratch = tmp.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let made = scratch.join("state_5.sqlite");
    let conn = rusqlite::Connection::open(&made).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL)")
        .unwrap();
    let n = rollout_name();
    conn.execute(
        "INSERT INTO threads VALUES (?1, ?2)",
        (&n[n.len() - 42..n.len() - 6], s(&day.join(&n))),
    )
    .unwrap();
    // copied while the connection is open: the rows are in the `-wal`
    let db = home.join("state_5.sqlite");
    std::fs::copy(&made, &db).unwrap();
    std::fs::copy(
        scratch.join("state_5.sqlite-wal"),
        home.join("state_5.sqlite-wal"),
    )
    .unwrap();
    drop(conn);
    (home, db)
}

/// The side file `suffix` of the state database.
fn side(db: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", db.display()))
}

/// The `codex-state-parity` finding of the home's one rollout.
fn parity_message(home: &Path) -> String {
    let (_, doc, _) = diagnose(home);
    let c = &doc["conversations"][0];
    c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "codex-state-parity")
        .unwrap_or_else(|| panic!("{c}"))["message"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A `-wal`, `-shm` or `-journal` beside the state database that is a
/// symbolic link (to a file the attacker wants written): SQLite would open
/// it by name, and map a `-shm` read-write even for a read-only reader. The
/// database is not opened; the file the link names is left as it was.
#[test]
fn a_state_database_side_file_that_is_a_link_is_never_opened() {
    let tmp = tempfile::tempdir().unwrap();
    for suffix in ["-shm", "-wal", "-journal"] {
        let (home, db) = wal_home(&tmp.path().join(suffix));
        let target = tmp.path().join(format!("target{suffix}"));
        std::fs::write(&target, CANARY).unwrap();
        let planted = side(&db, suffix);
        let _ = std::fs::remove_file(&planted);
        symlink(&target, &planted).unwrap();
        let before = std::fs::metadata(&target).unwrap();
        let m = parity_message(&home);
        assert!(
            m.contains(suffix) && m.contains("symbolic link"),
            "{suffix}: {m}"
        );
        let after = std::fs::metadata(&target).unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            CANARY,
            "{suffix}"
        );
        assert_eq!(
            (before.len(), before.modified().unwrap()),
            (after.len(), after.modified().unwrap()),
            "{suffix}"
        );
        assert!(std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
        // the repair reads it the same way: nothing written through it
        let bk = tmp.path().join(format!("bk{suffix}"));
        let (code, out, err) = bounded(&["repair", "--backup-dir", s(&bk), s(&home)]);
        assert!(code < 2, "{out}{err}");
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            CANARY,
            "{suffix}"
        );
    }
}

/// A `-shm` that is a FIFO, or a hard link to another file: not opened
/// (the one would block, the other be written under both names).
#[test]
fn a_state_database_side_file_that_is_a_fifo_or_a_hard_link_is_never_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, db) = wal_home(&tmp.path().join("fifo"));
    mkfifo(&side(&db, "-shm"));
    let m = parity_message(&home);
    assert!(m.contains("-shm") && m.contains("FIFO"), "{m}");
    let (home, db) = wal_home(&tmp.path().join("hard"));
    let target = tmp.path().join("hard-target");
    std::fs::write(&target, CANARY).unwrap();
    std::fs::hard_link(&target, side(&db, "-shm")).unwrap();
    let m = parity_message(&home);
    assert!(m.contains("-shm") && m.contains("hard links"), "{m}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), CANARY);
}

/// As root, a side file another user owns than the database's owner (a
/// file planted beside the database by someone else) is not opened; a
/// state database whose files are all one user's is read as before.
#[test]
fn as_root_a_side_file_of_another_owner_is_never_opened() {
    if !is_root("as_root_a_side_file_of_another_owner_is_never_opened") {
        return;
    }
    let tmp = common::open_tempdir();
    let (home, db) = wal_home(&tmp.path().join("owned"));
    chown_tree(&home, 65534);
    std::fs::write(side(&db, "-shm"), vec![0u8; 32768]).unwrap();
    std::os::unix::fs::chown(side(&db, "-shm"), Some(0), Some(0)).unwrap();
    let m = parity_message(&home);
    assert!(m.contains("-shm") && m.contains("owned by uid 0"), "{m}");
    // all the user's own: read, the rollout listed
    std::os::unix::fs::chown(side(&db, "-shm"), Some(65534), Some(65534)).unwrap();
    let (_, doc, _) = diagnose(&home);
    let c = &doc["conversations"][0];
    assert!(
        !c["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["check"] == "codex-state-parity"),
        "{c}"
    );
}

/// As root, the state database of a CODEX_HOME another user owns (mode
/// 0640): the row a rollout lacks is written keeping the database's owner
/// and mode (the side files SQLite makes while writing are given its owner
/// and are gone after), and undo puts its bytes, owner and mode back.
#[test]
fn a_root_repair_of_another_users_state_database_keeps_owner_and_mode() {
    if !is_root("a_root_repair_of_another_users_state_database_keeps_owner_and_mode") {
        return;
    }
    let tmp = common::open_tempdir();
    let (home, day) = home(tmp.path());
    std::fs::copy(case("clean"), day.join(rollout_name())).unwrap();
    let db = home.join("state_5.sqlite");
    let schema =
        std::fs::read_to_string(common::repo().join("fixtures/codex/state/schema.sql")).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    c.execute_batch(&schema).unwrap();
    drop(c);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
    chown_tree(&home, 65534);
    let before = std::fs::read(&db).unwrap();
    let bk = tmp.path().join("backups");
    let (code, out, err) = bounded(&["repair", "--backup-dir", s(&bk), s(&home)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("fixed") && out.contains("state_5.sqlite"),
        "{out}"
    );
    assert_ne!(std::fs::read(&db).unwrap(), before);
    let md = std::fs::metadata(&db).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.mode() & 0o7777),
        (65534, 65534, 0o640)
    );
    for suffix in ["-wal", "-shm"] {
        assert!(!side(&db, suffix).exists(), "{suffix}");
    }
    let run = out
        .lines()
        .find_map(|l| l.split("convo-doctor undo ").nth(1))
        .unwrap()
        .trim_end_matches(['`', ')']);
    let (code, out, err) = bounded(&["undo", "--backup-dir", s(&bk), run]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let md = std::fs::metadata(&db).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.mode() & 0o7777),
        (65534, 65534, 0o640)
    );
}

/// An `archived_sessions` folder that is a symbolic link is not followed:
/// a note names it, the rollout it leads to is never read.
#[test]
fn a_linked_archived_sessions_folder_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, day) = home(tmp.path());
    std::fs::copy(case("clean"), day.join(rollout_name())).unwrap();
    let outside = outside_rollout(tmp.path());
    symlink(outside.parent().unwrap(), home.join("archived_sessions")).unwrap();
    let (_, doc, _) = diagnose(&home);
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 1, "{doc}");
    assert!(!doc.to_string().contains(CANARY), "{doc}");
    assert!(notes(&doc).contains("archived_sessions"), "{}", notes(&doc));
}
