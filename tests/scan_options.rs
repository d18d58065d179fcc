//! Issue 17, item 7: `repair` takes `diagnose`'s scan options where they
//! mean the same thing (`-q`, `-j`, `--skip`, `--since`, `--shard`, and a
//! changes-only view), and `undo --list` has `--format json`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{copy_fixture, run, s};
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A store of several fixtures: some with something to repair, some not.
fn store() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    for f in [
        "false-root",
        "clean-tree",
        "misparented-recovery-error",
        "legacy-flat",
        "index-gap",
        "stale-leaf",
    ] {
        copy_fixture(f, &store);
    }
    (tmp, store)
}

fn paths(doc: &Value) -> Vec<String> {
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

fn repair_json(store: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["repair", "--dry-run", "--format", "json"];
    args.extend(extra);
    args.push(s(store));
    let (code, out, err) = run(&args, &[]);
    assert_ne!(code, 2, "{err}");
    (code, json(&out))
}

#[test]
fn repair_jobs_do_not_change_the_report() {
    let (_tmp, store) = store();
    let (c1, one) = repair_json(&store, &["-j", "1"]);
    let (c4, four) = repair_json(&store, &["--jobs", "4"]);
    assert_eq!((c1, &one), (c4, &four));
    assert_eq!(one["summary"]["totals"]["scanned"], 6);
    // in path order, as diagnose
    let p = paths(&one);
    let mut sorted = p.clone();
    sorted.sort();
    assert_eq!(p, sorted);
}

#[test]
fn repair_skip_leaves_those_checks_unrepaired() {
    let (_tmp, store) = store();
    let (_, all) = repair_json(&store, &[]);
    assert!(all["summary"]["by_check"]["false-root"]["planned"] == 1);
    let (_, skipped) = repair_json(&store, &["--skip", "false-root"]);
    let fr = &skipped["summary"]["by_check"]["false-root"];
    assert_eq!(fr["planned"], 0, "{fr}");
    assert_eq!(fr["left"], 1, "left, not repaired: {fr}");
    // the other repairs are still planned
    assert_eq!(
        skipped["summary"]["by_check"]["misparented-recovery-error"]["planned"],
        1
    );
    // an unknown id is a usage error, as for diagnose
    let (code, _, err) = run(
        &["repair", "--dry-run", "--skip", "no-such", s(&store)],
        &[],
    );
    assert_eq!(code, 2);
    assert!(err.contains("no-such"), "{err}");
}

/// Set the mtime of everything under `dir` to `when`.
fn age(dir: &Path, when: SystemTime) {
    for e in walkdir::WalkDir::new(dir).contents_first(true) {
        let e = e.unwrap();
        let f = fs::File::open(e.path()).unwrap();
        f.set_modified(when).unwrap();
    }
}

#[test]
fn repair_since_and_shard_choose_the_conversations_diagnose_would() {
    let (_tmp, store) = store();
    // every conversation two days old but false-root's
    let old = SystemTime::now() - Duration::from_secs(2 * 86_400);
    for e in fs::read_dir(&store).unwrap() {
        let conv = e.unwrap().path();
        if !conv
            .to_string_lossy()
            .contains("fd9bd2a279b352c3a6c9a47437e5143e")
        {
            age(&conv, old);
        }
    }
    let (_, recent) = repair_json(&store, &["--since", "25h"]);
    assert_eq!(paths(&recent).len(), 1, "{recent}");
    assert!(paths(&recent)[0].ends_with("fd9bd2a279b352c3a6c9a47437e5143e"));
    assert_eq!(recent["summary"]["skipped_unmodified"], 5);
    let (code, out, _) = run(
        &["diagnose", "--since", "25h", "--format", "json", s(&store)],
        &[],
    );
    assert_eq!(code, 1);
    assert_eq!(paths(&json(&out)), paths(&recent));
    // --changed-since a file newer than everything: nothing looked at
    let stamp = _tmp.path().join("stamp");
    std::thread::sleep(Duration::from_millis(20));
    fs::write(&stamp, "").unwrap();
    let (code, none) = repair_json(&store, &["--changed-since", s(&stamp)]);
    assert_eq!(code, 0);
    assert!(paths(&none).is_empty(), "{none}");
    assert_eq!(none["summary"]["skipped_unmodified"], 6);

    // shards: disjoint, covering the store, the same as diagnose's
    let mut union = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let (_, r) = repair_json(&store, &["--shard", &shard]);
        assert_eq!(r["summary"]["shard"], shard.as_str());
        let (_, d, _) = run(
            &["diagnose", "--shard", &shard, "--format", "json", s(&store)],
            &[],
        );
        assert_eq!(paths(&r), paths(&json(&d)), "shard {shard}");
        union.extend(paths(&r));
    }
    union.sort();
    let (_, all) = repair_json(&store, &[]);
    assert_eq!(union, paths(&all));
}

#[test]
fn repair_changes_only_reports_only_what_changes() {
    let (_tmp, store) = store();
    let (_, all) = repair_json(&store, &[]);
    let (_, changes) = repair_json(&store, &["--changes-only"]);
    let kept: Vec<&Value> = all["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "unchanged")
        .collect();
    assert!(!kept.is_empty() && kept.len() < 6, "{all}");
    assert_eq!(
        changes["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        kept
    );
    // the summary still counts them all
    assert_eq!(changes["summary"], all["summary"]);
    // human output: no block for a conversation with nothing to change
    let (_, human, _) = run(&["repair", "--dry-run", s(&store)], &[]);
    let (_, short, _) = run(&["repair", "--dry-run", "--changes-only", s(&store)], &[]);
    let id = |c: &Value| {
        c["path"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string()
    };
    for c in all["conversations"].as_array().unwrap() {
        if c["status"] == "unchanged" && !c["left"].as_array().unwrap().is_empty() {
            assert!(
                human.contains(&id(c)),
                "shown without --changes-only: {human}"
            );
        }
        if c["status"] == "unchanged" {
            assert!(!short.contains(&id(c)), "{}: {short}", id(c));
        }
    }
    for c in &kept {
        let id = c["path"].as_str().unwrap().rsplit('/').next().unwrap();
        assert!(short.contains(id), "{id}: {short}");
    }
}

#[test]
fn undo_list_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let backups = tmp.path().join("backups");
    let b = s(&backups);
    let (code, out, _) = run(
        &["undo", "--list", "--format", "json", "--backup-dir", b],
        &[],
    );
    assert_eq!(code, 0);
    assert_eq!(json(&out)["runs"], serde_json::json!([]));
    let store = tmp.path().join("store");
    copy_fixture("false-root", &store);
    let (code, out, err) = common::repair(&store, &backups, &[], Some("run-1"));
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = run(
        &["undo", "--list", "--format", "json", "--backup-dir", b],
        &[],
    );
    assert_eq!(code, 0);
    let doc = json(&out);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["backup_dir"], b);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["run_id"], "run-1");
    assert_eq!(r["state"], "undoable");
    assert_eq!(r["files"], 1);
    assert_eq!(r["conversations"], 1);
    // the command it gives undoes the run
    let undo = r["undo"].as_str().unwrap();
    assert_eq!(undo, format!("convo-doctor undo run-1 --backup-dir {b}"));
    let args: Vec<&str> = undo.split(' ').skip(1).collect();
    assert_eq!(run(&args, &[]).0, 0);
    let (_, out, _) = run(
        &["undo", "--list", "--format", "json", "--backup-dir", b],
        &[],
    );
    let r = &json(&out)["runs"][0];
    assert_eq!(r["state"], "undone");
    assert_eq!(r["undo"], Value::Null);
    // --format belongs to --list
    assert_eq!(run(&["undo", "--format", "json", "run-1"], &[]).0, 2);
}

/// Issue 24: `repair --id` repairs only the folder named after that id
/// (dashed, dashless or the start of it); an id that names no folder is an
/// error and nothing is repaired.
#[test]
fn repair_id_repairs_only_that_conversation() {
    let (_tmp, store) = store();
    let id_of = |fixture: &str| {
        fs::read_dir(common::fixture(fixture))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| n.len() == 32)
            .unwrap()
    };
    let (target, other) = (id_of("false-root"), id_of("index-gap"));
    let dashed = format!(
        "{}-{}-{}-{}-{}",
        &target[..8],
        &target[8..12],
        &target[12..16],
        &target[16..20],
        &target[20..]
    );
    let backups = store.parent().unwrap().join("backups");
    let before_other = common::files(&store.join(&other));
    let (code, out, err) = common::repair(
        &store,
        &backups,
        &["--id", &dashed, "--format", "json"],
        None,
    );
    assert!(code < 2, "{err}");
    let doc = json(&out);
    let repaired: Vec<&str> = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(repaired.len(), 1, "{repaired:?}");
    assert!(repaired[0].ends_with(&target), "{repaired:?}");
    assert_eq!(common::files(&store.join(&other)), before_other);
    // an id that names no folder: exit 2, nothing touched
    let before = common::files(&store);
    let (code, _, err) = common::repair(&store, &backups, &["--id", "ffffffff"], None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ffffffff"), "{err}");
    assert_eq!(common::files(&store), before);
}
