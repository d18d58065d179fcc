//! The Codex adapter against the real client's recorded verdicts
//! (fixtures/codex/sessions/verdicts.json, written by
//! fixtures/codex/gen/gen.sh with the Codex CLI itself, and the differential
//! fuzzer's fixtures/codex/fuzz): for every committed rollout, whether the
//! client resumes and the lines convo-doctor says it resends are the
//! client's; each repaired rollout is byte for byte the one the client
//! resumed, and resends what convo-doctor says.

mod common;

use common::{cli, diagnose_json};
use std::path::{Path, PathBuf};

use serde_json::Value;

use convo_doctor::codex::{repair, session, view, Analysis};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/sessions")
}

fn load(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn nums(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

fn lines_of(r: &session::Rollout, idx: &[usize]) -> Vec<u64> {
    idx.iter().map(|&i| r.lines[i].no as u64).collect()
}

fn analysis(bytes: Vec<u8>, name: &str) -> Analysis {
    Analysis::of(session::parse(bytes), Path::new(name))
}

/// Whether convo-doctor's view of `bytes` says what the client said
/// (`want`: resumed, sent); `base` the undamaged rollout's (the items of its
/// own the client adds to it, and convo-doctor's count of them), so the
/// items of its own the client adds beyond those are counted too: answers,
/// a compaction's items, its context declared again.
fn agrees(a: &Analysis, want: &Value, base: Option<(u64, usize)>) -> Result<(), String> {
    let v = &a.view;
    if want["resumed"].as_bool() != Some(v.resumes()) {
        return Err(format!(
            "client resumed={}, convo-doctor {:?}",
            want["resumed"], v.no_resume
        ));
    }
    if !v.resumes() {
        return Ok(());
    }
    let mine = lines_of(&a.rollout, &v.resent);
    if mine != nums(&want["sent"]) {
        return Err(format!(
            "client sent {}, convo-doctor {mine:?}",
            want["sent"]
        ));
    }
    if let (Some((b, b_own)), Some(e)) = (base, want["extra"].as_u64()) {
        let (theirs, mine) = (e as i64 - b as i64, v.own_items() as i64 - b_own as i64);
        if theirs != mine {
            return Err(format!(
                "client added {theirs} items of its own beyond the undamaged rollout's (answers, a compaction's summary, its context), convo-doctor {mine}",
            ));
        }
    }
    Ok(())
}

#[test]
fn resent_lines_match_the_real_client_on_every_fixture() {
    let all = load(&dir().join("verdicts.json"));
    let name = all["rollout"].as_str().unwrap();
    let cases = all["cases"].as_object().unwrap();
    let base = cases["clean"]["extra"].as_u64().map(|e| (e, 0));
    let mut wrong = Vec::new();
    for (case, want) in cases {
        let bytes = std::fs::read(dir().join(format!("{case}.jsonl"))).unwrap();
        let name = want["rollout"].as_str().unwrap_or(name);
        if let Err(e) = agrees(&analysis(bytes, name), want, base) {
            wrong.push(format!("{case}: {e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(cases.len() >= 14, "the fixtures are there");
}

#[test]
fn each_repair_is_the_rollout_the_client_resumed_as_convo_doctor_says() {
    let all = load(&dir().join("verdicts.json"));
    let name = all["rollout"].as_str().unwrap();
    let cases = all["cases"].as_object().unwrap();
    let clean = nums(&cases["clean"]["sent"]);
    let mut repaired = 0;
    for (case, want) in cases {
        let bytes = std::fs::read(dir().join(format!("{case}.jsonl"))).unwrap();
        let name = want["rollout"].as_str().unwrap_or(name);
        let a = analysis(bytes, name);
        let edits = repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
        let Some(after) = want.get("repaired") else {
            assert!(edits.is_empty(), "{case}: a repair the client never judged");
            continue;
        };
        let out = repair::apply(&a.rollout, &edits).unwrap();
        let committed = std::fs::read(dir().join(format!("{case}.repaired.jsonl"))).unwrap();
        assert!(out == committed, "{case}: the bytes the client judged");
        let id = a.file.as_ref().map(|f| f.0.as_str());
        repair::prove(&a.view, &edits, &out, id).unwrap();
        let fixed = analysis(out, name);
        agrees(&fixed, after, None).unwrap_or_else(|e| panic!("{case} repaired: {e}"));
        // every repair but the item cut short gives back the whole history
        if case.starts_with("compact-") {
            let whole = nums(&cases["compact-clean"]["sent"]);
            if case != "compact-last-cut" {
                assert_eq!(nums(&after["sent"]), whole, "{case}");
            }
        } else if case != "truncated-item" {
            assert_eq!(nums(&after["sent"]), clean, "{case}");
        }
        repaired += 1;
    }
    assert!(repaired >= 9, "{repaired} repaired cases");
}

/// Fuzz cases where convo-doctor's view still differs from the client's,
/// each with what differs: asserted to differ still, so a fix is noticed.
const KNOWN_DISAGREEMENTS: &[&str] = &[];

/// The differential fuzzer's cases (fixtures/codex/gen/fuzz.py): samples,
/// and every case on which convo-doctor disagreed with the client. A seed
/// that kept its undamaged rollout (`<seed>-base`) has the items of the
/// client's own counted too, and each repair the client judged replayed.
#[test]
fn resent_lines_match_the_real_client_on_every_fuzz_case() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/fuzz");
    let all = load(&fuzz.join("verdicts.json"));
    let cases = all["cases"].as_object().unwrap();
    let read = |case: &str| std::fs::read(fuzz.join(format!("{case}.jsonl"))).unwrap();
    // the undamaged rollouts by name: (the client's own items, convo-doctor's)
    let mut bases = std::collections::HashMap::new();
    for (case, want) in cases.iter().filter(|(_, w)| w["how"] == "undamaged") {
        let name = want["rollout"].as_str().unwrap();
        let a = analysis(read(case), name);
        bases.insert(name, (want["extra"].as_u64().unwrap(), a.view.own_items()));
    }
    let mut wrong = Vec::new();
    let mut repairs = 0;
    for (case, want) in cases {
        let name = want["rollout"].as_str().unwrap();
        let base = bases.get(name).copied();
        let a = analysis(read(case), name);
        let mut ok = agrees(&a, want, base);
        if let (Ok(()), Some(after)) = (&ok, want.get("repair").filter(|_| base.is_some())) {
            let edits = repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
            let out = repair::apply(&a.rollout, &edits).unwrap();
            ok = agrees(&analysis(out, name), after, base).map_err(|e| format!("repaired: {e}"));
            repairs += 1;
        }
        let known = KNOWN_DISAGREEMENTS.contains(&case.as_str());
        if ok.is_ok() == known {
            wrong.push(format!("{case} ({}): {ok:?}", want["how"]));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(cases.len() >= 30, "{} cases", cases.len());
    assert!(repairs > 0 || bases.is_empty(), "no repair replayed");
}

/// A CODEX_HOME holding the fixture `case` as its one rollout, under its
/// real file name: (home, rollout path).
fn home_with(tmp: &Path, case: &str) -> (PathBuf, PathBuf) {
    let all = load(&dir().join("verdicts.json"));
    let name = all["rollout"].as_str().unwrap();
    let home = tmp.join(".codex");
    let day = home.join("sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(home.join("config.toml"), "model = \"x\"\n").unwrap();
    let f = day.join(name);
    std::fs::copy(dir().join(format!("{case}.jsonl")), &f).unwrap();
    (home, f)
}

#[test]
fn diagnose_says_what_resume_sends_and_where_it_is_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, _) = home_with(tmp.path(), "meta-twice");
    let doc = diagnose_json(&home, &["--events"]);
    let c = &doc["conversations"][0];
    assert_eq!(c["events"]["ui_view"], 12);
    assert_eq!(c["events"]["agent_view"], 6);
    assert!(c["load_error"].is_null());
    let verdict = c["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("resume sends 6 of 12 items: 6 cut off at line "),
        "{verdict}"
    );
    assert_eq!(c["findings"][0]["check"], "codex-duplicate-line");
    assert_eq!(c["findings"][0]["severity"], "error");
    assert_eq!(c["server_version"], "codex 0.171.0");
    // the rows marked resent are the client's lines
    let all = load(&dir().join("verdicts.json"));
    let marked: Vec<u64> = c["event_list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["in_agent_view"] == true)
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(marked, nums(&all["cases"]["meta-twice"]["sent"]));

    // a rollout the client cannot resume: load_error, no agent view
    let doc = diagnose_json(&dir().join("no-meta.jsonl"), &["--events"]);
    let c = &doc["conversations"][0];
    assert!(c["load_error"].is_object(), "{c}");
    assert!(c["events"]["agent_view"].is_null());
    assert_eq!(c["findings"][0]["check"], "codex-missing-session-meta");

    // the sessions folder of the fixtures: every rollout, none a Claude one
    let doc = diagnose_json(&dir(), &["--events"]);
    let n = doc["conversations"].as_array().unwrap().len();
    assert!(n >= 20, "{n}");
}

#[test]
fn claude_sessions_and_openhands_folders_are_no_codex_stores() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    assert_eq!(
        convo_doctor::codex::shape(&root.join("claude/sessions/clean.jsonl")),
        None
    );
    assert_eq!(
        convo_doctor::codex::shape(&root.join("claude/sessions")),
        None
    );
    assert_eq!(convo_doctor::codex::shape(&root.join("false-root")), None);
    assert_eq!(convo_doctor::codex::shape(&root.join("appserver")), None);
    // a folder above the rollouts is the other adapters' to scan
    assert_eq!(convo_doctor::codex::shape(&root), None);
    assert_eq!(convo_doctor::codex::shape(&root.join("codex")), None);
    assert_eq!(
        convo_doctor::codex::shape(&dir().join("clean.jsonl")),
        Some(convo_doctor::codex::Shape::Rollout)
    );
}

#[test]
fn bad_input_is_a_finding_and_a_link_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let day = tmp.path().join("sessions/2026/01/01");
    std::fs::create_dir_all(&day).unwrap();
    let id = "00000000-0000-4000-8000-00000000000";
    std::fs::copy(
        dir().join("clean.jsonl"),
        day.join(format!("rollout-2026-01-01T00-00-00-{id}1.jsonl")),
    )
    .unwrap();
    std::fs::write(
        day.join(format!("rollout-2026-01-01T00-00-01-{id}2.jsonl")),
        b"\x00\xff{not json\n[1,2]\n",
    )
    .unwrap();
    std::fs::write(
        day.join(format!("rollout-2026-01-01T00-00-02-{id}3.jsonl")),
        b"",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "/dev/zero",
        day.join(format!("rollout-2026-01-01T00-00-03-{id}4.jsonl")),
    )
    .unwrap();
    let doc = diagnose_json(&tmp.path().join("sessions"), &["--events"]);
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 3, "the link is not a rollout: {doc}");
    // the first names another id than its file name: cannot resume
    assert!(convs[0]["load_error"].is_object());
    assert_eq!(convs[1]["findings"][0]["check"], "codex-invalid-line");
    assert!(convs[1]["load_error"].is_object());
    assert!(convs[2]["load_error"].is_object());
}

#[test]
fn a_secret_in_a_rollout_never_reaches_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp
        .path()
        .join("rollout-2026-01-01T00-00-00-00000000-0000-4000-8000-000000000001.jsonl");
    let key = "sk-proj-SECRETSECRETSECRET0123456789";
    let text = format!(
        "{{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"00000000-0000-4000-8000-000000000001\",\"timestamp\":\"t\",\"cwd\":\"/w\",\"originator\":\"x\",\"cli_version\":\"1\",\"env\":{{\"OPENAI_API_KEY\":\"{key}\"}}}}}}\n\
         {{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call_output\",\"call_id\":\"{key}\",\"output\":\"x\"}}}}\n"
    );
    std::fs::write(&f, text).unwrap();
    let (_, out, err) = cli(&[
        "diagnose",
        "--format",
        "json",
        "--events",
        f.to_str().unwrap(),
    ]);
    let all = format!("{out}{err}");
    assert!(!all.contains(key), "{all}");
    assert!(all.contains("codex-unpaired-call"), "{all}");
}

#[test]
fn repair_rebuilds_the_meta_keeps_the_mode_and_undo_is_exact() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (home, f) = home_with(tmp.path(), "no-meta");
    let original = std::fs::read(&f).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let bk = tmp.path().join("backups");
    let b = bk.to_str().unwrap();

    // a dry run shows the diff and writes nothing
    let (code, out, _) = cli(&["repair", "--dry-run", home.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("would fix") && out.contains("[codex-missing-session-meta]"),
        "{out}"
    );
    assert!(out.contains("  + {\"timestamp\""), "{out}");
    assert!(out.contains("after:  resume sends all 12 items"), "{out}");
    assert_eq!(std::fs::read(&f).unwrap(), original);

    // the repair writes the bytes the client resumed whole, keeps the mode
    let (code, out, err) = cli(&["repair", "--backup-dir", b, home.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let committed = std::fs::read(dir().join("no-meta.repaired.jsonl")).unwrap();
    assert!(std::fs::read(&f).unwrap() == committed);
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    let doc = diagnose_json(&f, &["--events"]);
    assert_eq!(
        doc["conversations"][0]["verdict"],
        "resume sends all 12 items"
    );

    // undo puts every byte back
    let run = std::fs::read_dir(&bk).unwrap().next().unwrap().unwrap();
    let run = run.file_name().into_string().unwrap();
    let (code, out, err) = cli(&["undo", "--backup-dir", b, &run]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(std::fs::read(&f).unwrap() == original);
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
}

#[test]
fn repair_json_carries_no_content_and_refuses_a_backup_inside_the_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, f) = home_with(tmp.path(), "user-twice");
    let before = std::fs::read(&f).unwrap();
    let (code, out, _) = cli(&[
        "repair",
        "--dry-run",
        "--format",
        "json",
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["sessions"][0]["status"], "would-fix");
    assert_eq!(
        doc["sessions"][0]["edits"][0]["check"],
        "codex-duplicate-line"
    );
    assert!(!out.contains("second prompt"), "{out}");
    let inside = home.join("sessions/bk");
    let (code, _, err) = cli(&[
        "repair",
        "--backup-dir",
        inside.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside a Codex sessions folder"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // a Codex rollout and an OpenHands folder in one run: refused
    let oh = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/false-root");
    let (code, _, _) = cli(&[
        "repair",
        "--dry-run",
        f.to_str().unwrap(),
        oh.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

#[test]
fn a_rollout_appended_to_after_the_read_is_left_alone() {
    // the write re-checks the bytes it proved: a client appending between
    // plan and write (a live session) makes it refuse
    let tmp = tempfile::tempdir().unwrap();
    let (_, f) = home_with(tmp.path(), "user-twice");
    let original = std::fs::read(&f).unwrap();
    let a = Analysis::of(session::parse(original.clone()), &f);
    let edits = repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
    let bytes = repair::apply(&a.rollout, &edits).unwrap();
    let mut appended = original.clone();
    appended.extend_from_slice(b"{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{}}\n");
    std::fs::write(&f, &appended).unwrap();
    let bk = tmp.path().join("bk");
    let mut run = convo_doctor::fix::persist::Run::new(&bk, "t-1".into()).unwrap();
    let err = convo_doctor::fix::persist::rewrite_file(&mut run, &f, &original, &bytes, &["x"], 1)
        .unwrap_err();
    assert!(err.contains("changed since it was read"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), appended);
    assert!(run.manifest.files.is_empty());
}

#[test]
fn the_view_counts_every_item_once() {
    let r = session::parse(std::fs::read(dir().join("clean.jsonl")).unwrap());
    let v = view::build(&r, None);
    assert_eq!(v.items.len(), 12);
    assert_eq!(v.resent, v.items);
}

#[test]
fn a_thread_a_client_is_writing_now_is_refused() {
    // the real client holds an exclusive flock on
    // thread-writer-locks/<id>.lock while it writes (gen.py --lock)
    use std::os::fd::AsFd;
    let tmp = tempfile::tempdir().unwrap();
    let (home, f) = home_with(tmp.path(), "user-twice");
    let before = std::fs::read(&f).unwrap();
    let all = load(&dir().join("verdicts.json"));
    let name = all["rollout"].as_str().unwrap();
    let id = &name[name.len() - 42..name.len() - 6];
    let locks = home.join("thread-writer-locks");
    std::fs::create_dir_all(&locks).unwrap();
    let lock = std::fs::File::create(locks.join(format!("{id}.lock"))).unwrap();
    rustix::fs::flock(lock.as_fd(), rustix::fs::FlockOperation::LockExclusive).unwrap();
    let bk = tmp.path().join("bk");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        home.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("a Codex client is writing this thread now"),
        "{out}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // released, the repair goes ahead
    rustix::fs::flock(lock.as_fd(), rustix::fs::FlockOperation::Unlock).unwrap();
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        home.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(std::fs::read(&f).unwrap() != before);
}

/// The repair's JSON (src/render/sessions.rs, shared with Claude Code): one
/// document with `sessions` and `summary`, or a line per rollout then the
/// summary, each parseable.
#[test]
fn repair_json_and_jsonl_are_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, _) = home_with(tmp.path(), "no-meta");
    let h = home.to_str().unwrap();
    let (code, out, err) = cli(&["repair", "--dry-run", "--format", "json", h]);
    assert_eq!(code, 1, "{out}{err}");
    let doc: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON document");
    let sessions = doc["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{out}");
    assert!(doc["summary"].is_object(), "{out}");
    let (code, out, err) = cli(&["repair", "--dry-run", "--format", "jsonl", h]);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line a document"))
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[1]["summary"].is_object(), "{out}");
    assert!(lines[0].get("summary").is_none(), "{out}");
}

/// Rollouts `codex archive` moved to `archived_sessions` are found in a
/// CODEX_HOME and diagnosed like the others, their verdict saying the
/// client refuses them until unarchived (measured: fixtures/codex/state
/// `archived`); `repair` leaves them alone, saying so.
#[test]
fn archived_rollouts_are_diagnosed_and_never_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, _) = home_with(tmp.path(), "clean");
    let all = load(&dir().join("verdicts.json"));
    let name = all["rollout"].as_str().unwrap();
    let archived = home.join("archived_sessions");
    std::fs::create_dir_all(&archived).unwrap();
    let other = name.replace(
        &name[name.len() - 42..name.len() - 6],
        "00000000-0000-4000-8000-0000000000a1",
    );
    let f = archived.join(&other);
    let bytes = std::fs::read(dir().join("invalid-mid.jsonl"))
        .unwrap()
        .replace_id(
            &name[name.len() - 42..name.len() - 6],
            "00000000-0000-4000-8000-0000000000a1",
        );
    std::fs::write(&f, &bytes).unwrap();
    let doc = diagnose_json(&home, &["--events"]);
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2, "{doc}");
    let a = convs
        .iter()
        .find(|c| c["verdict"].as_str().unwrap().starts_with("archived"))
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(
        a["verdict"].as_str().unwrap().contains("codex unarchive"),
        "{a}"
    );
    assert!(
        a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["check"] == "codex-invalid-line"),
        "{a}"
    );
    let bk = tmp.path().join("bk");
    let (code, out, err) = cli(&[
        "repair",
        "--backup-dir",
        bk.to_str().unwrap(),
        home.to_str().unwrap(),
    ]);
    assert!(code < 2, "{out}{err}");
    assert!(
        err.contains("1 rollout in archived_sessions not repaired"),
        "{err}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), bytes);
    // what the client said
    let v = load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex/state/verdicts.json"));
    let c = &v["cases"]["archived"];
    assert_eq!(c["moved_to"], "archived_sessions");
    assert_eq!(c["resumed"], false);
    assert!(c["error"].as_str().unwrap().contains("is archived"));
    assert_eq!(c["resumed_after_unarchive"], true);
}

trait ReplaceId {
    fn replace_id(self, from: &str, to: &str) -> Vec<u8>;
}

impl ReplaceId for Vec<u8> {
    fn replace_id(self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8(self)
            .unwrap()
            .replace(from, to)
            .into_bytes()
    }
}
