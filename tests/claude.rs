//! The Claude Code adapter against the real client's recorded verdicts
//! (fixtures/claude/sessions/verdicts.json, written by
//! fixtures/claude/gen/gen.sh with Claude Code itself): for every committed
//! session, the lines convo-doctor says `--resume` resends are the lines the
//! client resent; and each repaired session is byte for byte the one the
//! client resumed whole.

mod common;

use common::{cli, diagnose_json};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use convo_doctor::claude::{repair, session, view};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/sessions")
}

fn verdicts() -> Value {
    let text = std::fs::read_to_string(dir().join("verdicts.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn lines_of(s: &session::Session, idx: &[usize]) -> Vec<u64> {
    idx.iter().map(|&i| s.lines[i].no as u64).collect()
}

fn sent(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

/// Cases where convo-doctor's view still differs from the client's, each
/// with what differs: asserted to differ still, so a fix is noticed (and the
/// case moves out of this list), and reported by docs/claude-code.md.
const KNOWN_DISAGREEMENTS: &[&str] = &[];

/// Every case of `verdicts.json` in `dir`: the lines the view resends and
/// whether it resumes, against the client's.
fn check_verdicts(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("verdicts.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    let cases = all["cases"].as_object().unwrap();
    let mut wrong = Vec::new();
    for (case, want) in cases {
        let s = session::read(&dir.join(format!("{case}.jsonl"))).unwrap();
        let v = view::build(&s);
        let agrees = want["resumed"].as_bool() == Some(!v.chain.is_empty())
            && (want["resumed"] == false || lines_of(&s, &v.resent) == sent(&want["sent"]));
        let known = KNOWN_DISAGREEMENTS.contains(&case.as_str());
        if agrees == known {
            wrong.push(format!(
                "{case} ({}){}: client {:?}, convo-doctor {:?}",
                want["how"],
                if known {
                    " agrees now: take it off KNOWN_DISAGREEMENTS"
                } else {
                    ""
                },
                want.get("sent").map(sent),
                lines_of(&s, &v.resent)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    cases.len()
}

#[test]
fn resent_lines_match_the_real_client_on_every_fixture() {
    assert!(check_verdicts(&dir()) >= 15, "the fixtures are there");
}

/// The differential fuzzer's cases (fixtures/claude/gen/fuzz.py): each a
/// session on which convo-doctor once disagreed with the client.
#[test]
fn resent_lines_match_the_real_client_on_every_fuzz_case() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/fuzz");
    assert!(check_verdicts(&fuzz) >= 14);
}

#[test]
fn each_repair_is_the_session_the_client_resumed_whole() {
    let all = verdicts();
    let mut repaired = 0;
    for (case, want) in all["cases"].as_object().unwrap() {
        let Some(after) = want.get("repaired") else {
            continue;
        };
        // the undamaged session of the same base
        let base = if case.starts_with("compact-") {
            "compact-clean"
        } else {
            "clean"
        };
        let clean = sent(&all["cases"][base]["sent"]);
        let s = session::read(&dir().join(format!("{case}.jsonl"))).unwrap();
        let v = view::build(&s);
        let plan = repair::plan(&s, &v);
        assert_eq!(plan.len(), 1, "{case}: one re-link");
        let bytes = repair::apply(&s, &plan).unwrap();
        let committed = std::fs::read(dir().join(format!("{case}.repaired.jsonl"))).unwrap();
        assert!(
            bytes == committed,
            "{case}: the repair's bytes are the ones the client judged"
        );
        // the client resumed the repaired session with every message ...
        assert_eq!(
            sent(&after["sent"]),
            clean,
            "{case}: the client, after the repair"
        );
        // ... and so does the view of it
        let r = session::parse(bytes);
        let rv = view::build(&r);
        assert_eq!(
            lines_of(&r, &rv.resent),
            clean,
            "{case}: the view after the repair"
        );
        assert!(rv.broken.is_empty(), "{case}: no broken link left");
        repaired += 1;
    }
    assert!(repaired >= 14, "{repaired} repaired cases");
}

#[test]
fn diagnose_says_what_resume_sends_and_where_it_is_cut() {
    let doc = diagnose_json(&dir().join("user-null.jsonl"), &["--events"]);
    let c = &doc["conversations"][0];
    assert_eq!(c["events"]["agent_view"], 4);
    assert_eq!(c["events"]["ui_view"], 10);
    assert_eq!(c["events"]["orphaned"], 6);
    assert!(c["load_error"].is_null());
    let verdict = c["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("resume sends 4 of 10 messages: 6 cut off at line "),
        "{verdict}"
    );
    let f = &c["findings"][0];
    assert_eq!(f["check"], "claude-broken-parent");
    assert_eq!(f["severity"], "error");
    assert_eq!(c["server_version"], "claude-code 2.1.328");
    // one row per record, the resent ones marked
    let rows = c["event_list"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        c["events"]["log_length"].as_u64().unwrap() as usize
    );
    let marked: Vec<u64> = rows
        .iter()
        .filter(|r| r["in_agent_view"] == true)
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(marked, sent(&verdicts()["cases"]["user-null"]["sent"]));

    let clean = diagnose_json(&dir().join("clean.jsonl"), &["--events"]);
    let c = &clean["conversations"][0];
    assert_eq!(c["verdict"], "resume sends all 10 messages");
    assert_eq!(c["findings"].as_array().unwrap().len(), 0);
}

#[test]
fn a_re_attached_phantom_is_a_warning_and_a_lossy_one_an_error() {
    let doc = diagnose_json(&dir().join("user-phantom.jsonl"), &["--events"]);
    let f = &doc["conversations"][0]["findings"][0];
    assert_eq!(f["check"], "claude-broken-parent");
    assert_eq!(f["severity"], "warning");
    let doc = diagnose_json(&dir().join("env-phantom.jsonl"), &["--events"]);
    let c = &doc["conversations"][0];
    assert_eq!(c["findings"][0]["severity"], "error");
    assert_eq!(c["events"]["agent_view"], 9);
}

#[test]
fn a_project_folder_is_every_session_in_it_and_bad_input_is_a_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("-home-me-proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::copy(dir().join("clean.jsonl"), proj.join("a.jsonl")).unwrap();
    // garbage, an empty file, and a link that must not be followed
    std::fs::write(proj.join("b.jsonl"), b"\x00\xff{not json\n[1,2]\n").unwrap();
    std::fs::write(proj.join("c.jsonl"), b"").unwrap();
    std::os::unix::fs::symlink("/dev/zero", proj.join("d.jsonl")).unwrap();
    let doc = diagnose_json(&proj, &["--events"]);
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 3, "the link is not a session: {doc}");
    assert_eq!(convs[1]["findings"][0]["check"], "claude-invalid-line");
    assert!(convs[1]["load_error"].is_object());
    assert!(convs[2]["load_error"].is_object());
}

#[test]
fn a_secret_in_a_session_never_reaches_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("s.jsonl");
    let key = "sk-ant-api03-SECRETSECRETSECRET0123456789";
    let text = format!(
        "{{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}},\"env\":{{\"api_key\":\"{key}\"}}}}\n\
         {{\"type\":\"assistant\",\"uuid\":\"{key}\",\"parentUuid\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"x\"}}}}\n"
    );
    std::fs::write(&f, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
        .args(["diagnose", "--format", "json", "--events"])
        .arg(&f)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(key), "{all}");
    assert!(all.contains("claude-broken-parent"), "{all}");
}

#[test]
fn repair_relinks_keeps_the_mode_and_undo_is_exact() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("home/.claude/projects/-work-p");
    std::fs::create_dir_all(&proj).unwrap();
    let bk = tmp.path().join("backups");
    let f = proj.join("0b6c6a8e-0000-4000-8000-000000000001.jsonl");
    let original = std::fs::read(dir().join("user-null.jsonl")).unwrap();
    std::fs::write(&f, &original).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let p = f.to_str().unwrap();
    let b = bk.to_str().unwrap();

    // a dry run says what it would do and writes nothing
    let (code, out, _) = cli(&["repair", "--dry-run", p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("would fix") && out.contains("line 39: parentUuid null"),
        "{out}"
    );
    assert!(
        out.contains("after:  resume sends all 10 messages"),
        "{out}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), original);

    // the repair writes the bytes the client resumed whole, keeps the mode
    let (code, out, err) = cli(&["repair", "--backup-dir", b, proj.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let committed = std::fs::read(dir().join("user-null.repaired.jsonl")).unwrap();
    assert!(std::fs::read(&f).unwrap() == committed);
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    let doc = diagnose_json(&f, &["--events"]);
    assert_eq!(
        doc["conversations"][0]["verdict"],
        "resume sends all 10 messages"
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
fn repair_refuses_a_backup_inside_the_projects_folder_and_mixed_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&proj).unwrap();
    let f = proj.join("s.jsonl");
    std::fs::copy(dir().join("user-null.jsonl"), &f).unwrap();
    let before = std::fs::read(&f).unwrap();
    let inside = tmp.path().join(".claude/projects/bk");
    let (code, _, err) = cli(&[
        "repair",
        "--backup-dir",
        inside.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("inside a Claude Code projects folder"),
        "{err}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), before);
    let oh = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/false-root");
    let (code, _, err) = cli(&[
        "repair",
        "--dry-run",
        f.to_str().unwrap(),
        oh.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

#[test]
fn a_session_appended_to_after_the_read_is_left_alone() {
    // the write re-checks the bytes it proved: simulate a client appending
    // between plan and write by planning on one content and writing over
    // another (the library call the command makes)
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("s.jsonl");
    let original = std::fs::read(dir().join("user-null.jsonl")).unwrap();
    std::fs::write(&f, &original).unwrap();
    let s = session::parse(original.clone());
    let v = view::build(&s);
    let bytes = repair::apply(&s, &repair::plan(&s, &v)).unwrap();
    let mut appended = original.clone();
    appended.extend_from_slice(b"{\"type\":\"user\"}\n");
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
fn a_folder_with_other_json_lines_is_not_a_project_folder() {
    let appserver = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/appserver");
    assert!(appserver.join("bucket.jsonl").is_file());
    assert_eq!(convo_doctor::claude::shape(&appserver), None);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x.jsonl"), b"{\"a\":1}\n").unwrap();
    assert_eq!(convo_doctor::claude::shape(tmp.path()), None);
    std::fs::copy(dir().join("clean.jsonl"), tmp.path().join("s.jsonl")).unwrap();
    assert_eq!(
        convo_doctor::claude::shape(tmp.path()),
        Some(convo_doctor::claude::Shape::Project)
    );
}

fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude/tools")
}

/// Calls without their results (fixtures/claude/gen/tools.py, judged by
/// the real client): the view resends what the client resent, before the
/// repair and after it.
#[test]
fn resent_lines_match_the_real_client_on_every_unpaired_call() {
    assert!(check_verdicts(&tools_dir()) >= 5);
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string(tools_dir().join("verdicts.json")).unwrap())
            .unwrap();
    // the killed client's session: the client answers the call itself and
    // resends it; the view says so, and the check still finds it
    let s = session::read(&tools_dir().join("killed.jsonl")).unwrap();
    let v = view::build(&s);
    assert_eq!(v.interrupted.len(), 1, "the chain ends on the call");
    assert!(v.unpaired.is_empty());
    assert!(sent(&all["cases"]["killed"]["sent"]).contains(&(s.lines[v.interrupted[0]].no as u64)));
    for (case, want) in all["cases"].as_object().unwrap() {
        let Some(after) = want.get("repaired") else {
            continue;
        };
        let r = session::read(&tools_dir().join(format!("{case}.repaired.jsonl"))).unwrap();
        let rv = view::build(&r);
        assert_eq!(
            lines_of(&r, &rv.resent),
            sent(&after["sent"]),
            "{case}: the view of the repaired session"
        );
    }
}

/// `claude-unpaired-tool`'s repair: each answered session is byte for byte
/// the file the client resumed, and the client then resent every message
/// of it (the call with the client's own answer, nothing left out); a
/// result whose call is gone is not answered (only its broken parent is
/// re-linked, and the client still drops it).
#[test]
fn each_answered_call_is_the_session_the_client_resumed_whole() {
    use convo_doctor::claude::repair::{Edit, Sessions, INTERRUPTED};
    use convo_doctor::sessions::repair::Adapter;
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string(tools_dir().join("verdicts.json")).unwrap())
            .unwrap();
    let mut answered = 0;
    for (case, want) in all["cases"].as_object().unwrap() {
        let path = tools_dir().join(format!("{case}.jsonl"));
        let (o, write) = Sessions::plan(&path, true, &|_| true);
        let Some(after) = want.get("repaired") else {
            assert!(write.is_none(), "{case}: nothing to repair");
            continue;
        };
        let (before, bytes, _) = write.unwrap_or_else(|| panic!("{case}: a repair: {:?}", o.error));
        assert_eq!(before, std::fs::read(&path).unwrap());
        let committed = std::fs::read(tools_dir().join(format!("{case}.repaired.jsonl"))).unwrap();
        assert!(
            bytes == committed,
            "{case}: the repair's bytes are the ones the client judged"
        );
        let calls = o
            .changes
            .edits
            .iter()
            .filter(|e| matches!(e, Edit::Answered(_)))
            .count();
        let r = session::parse(bytes.clone());
        let rv = view::build(&r);
        if calls == 0 {
            assert_eq!(case, "call-deleted", "{case}: answered");
            assert!(
                !rv.unpaired.is_empty(),
                "a result without its call stays dropped"
            );
            continue;
        }
        answered += calls;
        // the client resent every message of the answered session
        assert_eq!(
            sent(&after["sent"]),
            lines_of(&r, &rv.messages),
            "{case}: the client resent all of it"
        );
        assert!(rv.unpaired.is_empty() && rv.interrupted.is_empty() && rv.broken.is_empty());
        // each answer is the client's own, right after its call
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.matches(INTERRUPTED).count(), 2 * calls, "{case}");
        // a second run finds nothing left to do
        let tmp = tempfile::tempdir().unwrap();
        let again = tmp.path().join("s.jsonl");
        std::fs::write(&again, &committed).unwrap();
        assert!(
            Sessions::plan(&again, true, &|_| true).1.is_none(),
            "{case}: idempotent"
        );
    }
    assert!(answered >= 5, "{answered} calls answered");
}

#[test]
fn answering_a_call_keeps_the_mode_and_undo_is_exact() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("home/.claude/projects/-work-p");
    std::fs::create_dir_all(&proj).unwrap();
    let bk = tmp.path().join("backups");
    let f = proj.join("0b6c6a8e-0000-4000-8000-000000000002.jsonl");
    let original = std::fs::read(tools_dir().join("result-deleted.jsonl")).unwrap();
    std::fs::write(&f, &original).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (p, b) = (f.to_str().unwrap(), bk.to_str().unwrap());
    let (code, out, _) = cli(&["repair", "--dry-run", p]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("answered as interrupted") && out.contains("[claude-unpaired-tool]"),
        "{out}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), original);
    // --only the other check: the call is not answered
    let (_, out, _) = cli(&["repair", "--dry-run", "--only", "claude-broken-parent", p]);
    assert!(!out.contains("answered"), "{out}");
    let (code, out, err) = cli(&["repair", "--backup-dir", b, "--format", "json", p]);
    assert_eq!(code, 0, "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let o = &doc["sessions"][0];
    assert_eq!(o["status"], "fixed", "{out}");
    assert_eq!(o["answered"][0]["tool_use_ids"][0], "toolu_P2", "{out}");
    assert_eq!(
        o["answered"][0]["written_at"],
        o["answered"][0]["line"].as_u64().unwrap() + 1
    );
    assert_eq!(o["after"], "resume sends all 14 messages", "{out}");
    let committed = std::fs::read(tools_dir().join("result-deleted.repaired.jsonl")).unwrap();
    assert!(std::fs::read(&f).unwrap() == committed);
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o600
    );
    let run = std::fs::read_dir(&bk).unwrap().next().unwrap().unwrap();
    let run = run.file_name().into_string().unwrap();
    let (code, out, err) = cli(&["undo", "--backup-dir", b, &run]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(std::fs::read(&f).unwrap() == original);
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o600
    );
}

/// A subagent (fixtures/claude/tools, case `agent`, written by the real
/// client): 2.1.328 writes its transcript beside the session, in
/// `<session>/subagents/agent-<id>.jsonl` (every record `isSidechain`),
/// and tells the main chain it finished with a task notification, which
/// resume resends (the view too: check_verdicts). A project folder holding
/// both is one session: the transcript is not listed as one of its own.
#[test]
fn a_subagent_transcript_beside_the_session_is_not_a_session() {
    let sub = session::read(&tools_dir().join("agent.subagent.jsonl")).unwrap();
    assert!(sub
        .records()
        .filter(|(_, r)| r.in_tree())
        .all(|(_, r)| r.sidechain));
    let main = session::read(&tools_dir().join("agent.jsonl")).unwrap();
    assert!(main.records().all(|(_, r)| !r.sidechain));
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join(".claude/projects/-p");
    let sid = "6ee42624-8448-43b1-b20c-e02e00133f99";
    std::fs::create_dir_all(proj.join(sid).join("subagents")).unwrap();
    std::fs::copy(
        tools_dir().join("agent.jsonl"),
        proj.join(format!("{sid}.jsonl")),
    )
    .unwrap();
    std::fs::copy(
        tools_dir().join("agent.subagent.jsonl"),
        proj.join(sid).join("subagents/agent-a1.jsonl"),
    )
    .unwrap();
    for p in [proj.clone(), tmp.path().join(".claude/projects")] {
        let doc = diagnose_json(&p, &["--events"]);
        let convs = doc["conversations"].as_array().unwrap();
        assert_eq!(convs.len(), 1, "{doc}");
        assert_eq!(convs[0]["verdict"], "resume sends all 10 messages", "{doc}");
    }
}

/// A result whose call is gone is not said to be fixable (the repair does
/// not answer it); a call whose result is gone is.
#[test]
fn only_a_call_without_its_result_is_fixable() {
    let fixable = |case: &str| -> Vec<bool> {
        let doc = diagnose_json(&tools_dir().join(format!("{case}.jsonl")), &[]);
        doc["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "claude-unpaired-tool")
            .map(|f| f["fixable"].as_bool().unwrap())
            .collect()
    };
    assert_eq!(fixable("call-deleted"), vec![false]);
    assert_eq!(fixable("result-deleted"), vec![true]);
    assert_eq!(fixable("killed"), vec![true]);
}
