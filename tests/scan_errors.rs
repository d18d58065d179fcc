//! Issue 17, items 2 and 3: what this user cannot read is an error of the
//! scan, never a finding about the conversation, and a failed run's JSON
//! says why. Run as uid 65534 (`nobody`): as root through `setpriv`, as
//! another user as that user; a file of mode 000 then denies, while the
//! server's own user would read it fine.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin_as_nobody, chmod, copy_fixture, open_tempdir, output, run, s};
use serde_json::Value;

/// A store holding the clean-tree and false-root fixtures, readable by all.
fn store() -> (tempfile::TempDir, PathBuf) {
    let tmp = open_tempdir();
    let store = tmp.path().join("store");
    copy_fixture("clean-tree", &store);
    copy_fixture("false-root", &store);
    for e in walkdir::WalkDir::new(&store) {
        let e = e.unwrap();
        chmod(e.path(), if e.file_type().is_dir() { 0o755 } else { 0o644 });
    }
    (tmp, store)
}

const CLEAN: &str = "a5050c9292d85c568ea70f078f0dddb5";
const FALSE_ROOT: &str = "fd9bd2a279b352c3a6c9a47437e5143e";

fn denied(path: &Path, uid: u32) -> String {
    format!(
        "cannot read `{}` as uid {uid}: Permission denied",
        path.display()
    )
}

/// Run as uid 65534: (exit code, stdout, stderr).
fn run_as(cmd: &mut Command, args: &[&str]) -> (i32, String, String) {
    output(cmd.args(args))
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn all_findings(doc: &Value) -> Vec<String> {
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["findings"].as_array().unwrap().clone())
        .map(|f| f["check"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_mode_000_conversation_folder_is_a_scan_error_not_an_empty_conversation() {
    let Some((mut cmd, uid)) = bin_as_nobody("a_mode_000_conversation_folder") else {
        return;
    };
    let (_tmp, store) = store();
    let locked = store.join("0123456789abcdef0123456789abcdef");
    fs::create_dir(&locked).unwrap();
    fs::write(locked.join("base_state.json"), "{}").unwrap();
    chmod(&locked, 0o000);
    let (code, out, err) = run_as(&mut cmd, &["diagnose", "--format", "json", s(&store)]);
    chmod(&locked, 0o755);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&denied(&locked, uid)), "{err}");
    let doc = json(&out);
    // not "empty-conversation … a new conversation started with this id
    // replaces it": the folder is not reported at all, only its error
    assert!(!out.contains("empty-conversation"), "{out}");
    assert!(
        !out.contains("0123456789abcdef0123456789abcdef\",\"id\""),
        "{out}"
    );
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 2);
    assert_eq!(doc["summary"]["errors"], 1);
    assert_eq!(doc["summary"]["error_messages"][0], denied(&locked, uid));
}

#[test]
fn an_unreadable_base_state_is_a_scan_error_not_cannot_load() {
    let Some((mut cmd, uid)) = bin_as_nobody("an_unreadable_base_state") else {
        return;
    };
    let (_tmp, store) = store();
    let state = store.join(CLEAN).join("base_state.json");
    chmod(&state, 0o000);
    let (code, out, err) = run_as(&mut cmd, &["diagnose", s(&store)]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(&denied(&state, uid)), "{err}");
    // never "the SDK cannot load this conversation", never unreadable-state
    assert!(!out.contains("cannot load"), "{out}");
    assert!(!out.contains("unreadable-state"), "{out}");
    assert!(!out.contains(CLEAN), "not reported: {out}");
    assert!(out.contains("1 conversation scanned"), "{out}");
    assert!(
        out.contains("1 scan error: not everything could be read"),
        "{out}"
    );
    // JSONL: the summary line says why, and no line describes the folder
    let (code, out, _) = run_as(
        &mut cmd_again(uid),
        &["diagnose", "--format", "jsonl", s(&store)],
    );
    assert_eq!(code, 2);
    let last = json(out.lines().last().unwrap());
    assert_eq!(last["summary"]["errors"], 1);
    assert_eq!(last["summary"]["error_messages"][0], denied(&state, uid));
    assert_eq!(out.lines().count(), 2, "{out}");
    // an unreadable event file likewise, with the other conversations' findings kept
    chmod(&state, 0o644);
    let event = fs::read_dir(store.join(FALSE_ROOT).join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("event-00003-"))
        .unwrap();
    chmod(&event, 0o000);
    let (code, out, err) = run_as(
        &mut cmd_again(uid),
        &["diagnose", "--format", "json", s(&store)],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&denied(&event, uid)), "{err}");
    let doc = json(&out);
    assert!(all_findings(&doc).is_empty(), "{out}");
    assert_eq!(doc["summary"]["conversations"], 1);
}

/// A fresh command as uid 65534 (a `Command` keeps its arguments).
fn cmd_again(uid: u32) -> Command {
    let (cmd, again) = bin_as_nobody("cmd_again").unwrap();
    assert_eq!(uid, again);
    cmd
}

#[test]
fn an_unreadable_subfolder_is_an_error_in_every_format() {
    let Some((_, uid)) = bin_as_nobody("an_unreadable_subfolder") else {
        return;
    };
    let (_tmp, store) = store();
    let closed = store.join("closed");
    fs::create_dir(&closed).unwrap();
    chmod(&closed, 0o000);
    let msg = denied(&closed, uid);
    for format in [
        "human",
        "concise",
        "json",
        "jsonl",
        "markdown",
        "prometheus",
    ] {
        let (code, out, err) = run_as(
            &mut cmd_again(uid),
            &["diagnose", "--format", format, s(&store)],
        );
        assert_eq!(code, 2, "{format}: {out}{err}");
        assert!(err.contains(&msg), "{format}: {err}");
        match format {
            "human" | "concise" => assert!(out.contains("1 scan error: "), "{format}: {out}"),
            "json" => assert_eq!(json(&out)["summary"]["errors"], 1),
            "jsonl" => assert_eq!(json(out.lines().last().unwrap())["summary"]["errors"], 1),
            "markdown" => {
                assert!(out.contains("1 scan error") && out.contains("Permission denied"))
            }
            _ => {
                assert!(out.contains("\nconvo_doctor_scan_errors 1\n"), "{out}");
                assert!(
                    !out.contains("convo_doctor_last_success_timestamp_seconds "),
                    "a failed run is not a success: {out}"
                );
            }
        }
        // a note no longer: errors are not notes
        assert!(!out.contains("was skipped"), "{format}: {out}");
    }
    chmod(&closed, 0o755);
}

#[test]
fn allow_empty_never_masks_an_unreadable_store() {
    let Some((mut cmd, uid)) = bin_as_nobody("allow_empty_never_masks") else {
        return;
    };
    let (_tmp, store) = store();
    chmod(&store, 0o000);
    let (code, out, err) = run_as(
        &mut cmd,
        &["diagnose", "--allow-empty", "--format", "json", s(&store)],
    );
    chmod(&store, 0o755);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&denied(&store, uid)), "{err}");
    assert!(
        !err.contains("--allow-empty"),
        "no advice to mask it: {err}"
    );
    assert!(!err.contains("no conversation in"), "{err}");
    assert_eq!(json(&out)["summary"]["errors"], 1);
    // an empty store is still excused by --allow-empty, and only it
    let empty = _tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let (code, _, err) = run(&["diagnose", s(&empty)], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("--allow-empty"), "{err}");
    assert_eq!(run(&["diagnose", "--allow-empty", s(&empty)], &[]).0, 0);
}

#[test]
fn repair_never_plans_on_a_folder_it_cannot_wholly_read() {
    let Some((mut cmd, uid)) = bin_as_nobody("repair_never_plans") else {
        return;
    };
    let (_tmp, store) = store();
    let event = fs::read_dir(store.join(FALSE_ROOT).join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("event-00001-"))
        .unwrap();
    chmod(&event, 0o000);
    let (code, out, err) = run_as(
        &mut cmd,
        &["repair", "--dry-run", "--format", "json", s(&store)],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(&denied(&event, uid)), "{err}");
    let doc = json(&out);
    assert_eq!(doc["summary"]["errors"], 1);
    assert_eq!(
        doc["summary"]["totals"]["files"], 0,
        "nothing planned: {out}"
    );
}

#[test]
fn a_failed_run_says_why_in_json_and_jsonl() {
    let missing = "/nonexistent/convo-doctor-store";
    let (code, out, _) = run(&["diagnose", missing, "--format", "jsonl"], &[]);
    assert_eq!(code, 2);
    let lines: Vec<Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 1, "{out}");
    let summary = &lines[0]["summary"];
    assert_eq!(summary["errors"], 1);
    let why = summary["error_messages"][0].as_str().unwrap();
    assert!(
        why.contains(missing) && why.contains("No such file or directory"),
        "{why}"
    );
    assert_eq!(lines[0]["schema_version"], 1);
    let (code, out, _) = run(&["diagnose", missing, "--format", "json"], &[]);
    assert_eq!(code, 2);
    assert_eq!(json(&out)["summary"]["errors"], 1);
    // a clean run says so: errors 0
    let (code, out, _) = run(
        &[
            "diagnose",
            s(&common::fixture("clean-tree")),
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(code, 0);
    let doc = json(&out);
    assert_eq!(doc["summary"]["errors"], 0);
    assert_eq!(doc["summary"]["error_messages"], serde_json::json!([]));
}
