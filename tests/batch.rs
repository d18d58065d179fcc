//! `diagnose STORE` as cron and a cluster use it: stable JSONL order equal to
//! a sequential run, shards that partition the store, --since skipping,
//! exit codes, nothing but the report on stdout. No timings are asserted.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

mod common;

/// Run the binary; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn eid(conv: usize, n: usize) -> String {
    format!("e{conv:07x}-0000-4000-8000-{n:012}")
}

/// How a hand-built conversation is damaged.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Clean,
    /// Event 1 is truncated JSON: the SDK cannot load it (error).
    Truncated,
    /// No base_state.json and no agent: cannot load (error).
    NoState,
}

/// A conversation folder `<store>/<32 hex>` with `n` chained events.
fn conversation(store: &Path, k: usize, n: usize, shape: Shape) -> PathBuf {
    let id = format!("{k:08x}0123456789abcdef01234567");
    let dir = store.join(&id);
    fs::create_dir_all(dir.join("events")).unwrap();
    let mut parent: Option<String> = None;
    for i in 0..n {
        let this = eid(k, i);
        let mut ev = json!({"id": this, "timestamp": "2026-01-01T00:00:00", "source": "user"});
        ev["parent_id"] = json!(parent.as_deref().unwrap_or("__root__"));
        ev["kind"] = json!("MessageEvent");
        ev["llm_message"] = common::required_fields("MessageEvent")["llm_message"].clone();
        let mut text = ev.to_string();
        if shape == Shape::Truncated && i == 1 {
            text.truncate(text.len() / 2);
        }
        fs::write(dir.join(format!("events/event-{i:05}-{this}.json")), text).unwrap();
        parent = Some(this);
    }
    if shape != Shape::NoState {
        let state = common::valid_state(json!({"id": id, "leaf_event_id": parent}));
        fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
    }
    dir
}

/// A store of `n` conversations; every 7th is truncated, every 11th has no state.
fn store(n: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for k in 0..n {
        let shape = if k % 7 == 3 {
            Shape::Truncated
        } else if k % 11 == 5 {
            Shape::NoState
        } else {
            Shape::Clean
        };
        conversation(tmp.path(), k, 2 + k % 5, shape);
    }
    tmp
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

fn paths(stdout: &str) -> Vec<String> {
    lines(stdout)
        .iter()
        .filter_map(|v| v["path"].as_str().map(String::from))
        .collect()
}

fn summary(stdout: &str) -> Value {
    lines(stdout).last().unwrap()["summary"].clone()
}

#[test]
fn jsonl_is_in_path_order_and_equal_to_a_sequential_run() {
    let s = store(40);
    let p = s.path().to_str().unwrap();
    let (code, parallel, err) = run(&["diagnose", p, "--format", "jsonl", "-j", "4"]);
    assert_eq!(code, 1, "{err}");
    let (_, sequential, _) = run(&["diagnose", p, "--format", "jsonl", "-j", "1"]);
    assert_eq!(parallel, sequential);
    let (_, again, _) = run(&["diagnose", p, "--format", "jsonl"]);
    assert_eq!(parallel, again, "two runs diff cleanly");
    let got = paths(&parallel);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted);
    assert_eq!(got.len(), 40, "one line per conversation");
    assert_eq!(summary(&parallel)["conversations"], 40);
    // The broken conversations did not stop the scan.
    assert_eq!(summary(&parallel)["cannot_load"], 6 + 3);
}

#[test]
fn shards_partition_the_store_and_concatenate() {
    let s = store(30);
    let p = s.path().to_str().unwrap();
    let (_, all, _) = run(&["diagnose", p, "--format", "jsonl"]);
    let all: BTreeSet<String> = paths(&all).into_iter().collect();
    let mut union = BTreeSet::new();
    let mut total = 0;
    for k in 0..3 {
        let shard = format!("{k}/3");
        let (code, out, err) = run(&["diagnose", p, "--format", "jsonl", "--shard", &shard]);
        assert!(code == 0 || code == 1, "{err}");
        let mine = paths(&out);
        assert_eq!(summary(&out)["shard"], shard.as_str());
        assert_eq!(summary(&out)["conversations"], mine.len());
        total += mine.len();
        union.extend(mine);
        // The same shard twice: the same conversations.
        let (_, again, _) = run(&["diagnose", p, "--format", "jsonl", "--shard", &shard]);
        assert_eq!(out, again);
    }
    assert_eq!(total, all.len(), "no conversation in two shards");
    assert_eq!(union, all, "every conversation in some shard");
    assert_eq!(run(&["diagnose", p, "--shard", "3/3"]).0, 2);
    assert_eq!(run(&["diagnose", p, "--shard", "x"]).0, 2);
}

/// Set the mtime of every file and folder of a conversation.
fn age(dir: &Path, when: SystemTime) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
        }
        fs::File::open(&p).unwrap().set_modified(when).unwrap();
    }
}

#[test]
fn since_skips_conversations_not_modified() {
    let tmp = tempfile::tempdir().unwrap();
    let old = conversation(tmp.path(), 1, 3, Shape::Clean);
    let fresh = conversation(tmp.path(), 2, 3, Shape::Clean);
    let touched = conversation(tmp.path(), 3, 3, Shape::Truncated);
    let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 86_400);
    age(&old, two_days_ago);
    age(&touched, two_days_ago);
    // Only one event file of `touched` changed (rewritten in place).
    let ev = fs::read_dir(touched.join("events"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::File::open(&ev)
        .unwrap()
        .set_modified(SystemTime::now())
        .unwrap();
    let p = tmp.path().to_str().unwrap();

    let (code, out, _) = run(&["diagnose", p, "--format", "jsonl", "--since", "1d"]);
    assert_eq!(code, 1, "the truncated one was scanned");
    assert_eq!(
        paths(&out),
        vec![fresh.display().to_string(), touched.display().to_string()]
    );
    assert_eq!(summary(&out)["skipped_unmodified"], 1);
    assert_eq!(summary(&out)["conversations"], 2);

    // --changed-since FILE: the stamp's mtime is the cutoff.
    let stamp = tmp.path().join("last-run");
    let (_, out, _) = run(&[
        "diagnose",
        p,
        "--format",
        "jsonl",
        "--changed-since",
        stamp.to_str().unwrap(),
    ]);
    assert_eq!(
        paths(&out).len(),
        3,
        "a missing stamp means scan everything"
    );
    fs::write(&stamp, "").unwrap();
    fs::File::open(&stamp)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(86_400))
        .unwrap();
    let (_, out, _) = run(&[
        "diagnose",
        p,
        "--format",
        "jsonl",
        "--changed-since",
        stamp.to_str().unwrap(),
    ]);
    assert_eq!(paths(&out).len(), 2);
    // Nothing old enough: everything is skipped, and that is a clean run.
    let (code, out, _) = run(&["diagnose", &old.display().to_string(), "--since", "1h"]);
    assert_eq!(code, 0);
    assert!(out.contains("1 conversation not modified"), "{out}");
    assert_eq!(run(&["diagnose", p, "--since", "yesterday"]).0, 2);
    assert_eq!(
        run(&["diagnose", p, "--since", "1d", "--changed-since", "x"]).0,
        2
    );
}

#[test]
fn exit_codes_for_cron() {
    let clean = tempfile::tempdir().unwrap();
    for k in 0..5 {
        conversation(clean.path(), k, 3, Shape::Clean);
    }
    let c = clean.path().to_str().unwrap();
    let (code, out, err) = run(&["diagnose", c]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.contains("5 conversations scanned: 5 clean"), "{out}");
    // With --hide-clean a clean store prints only the summary.
    let (_, out, _) = run(&["diagnose", c, "--hide-clean"]);
    assert!(!out.contains(c), "{out}");

    let broken = store(12);
    let b = broken.path().to_str().unwrap();
    assert_eq!(run(&["diagnose", b]).0, 1);
    assert_eq!(run(&["diagnose", b, "--fail-on", "never"]).0, 0);
    assert_eq!(run(&["diagnose", b, "--skip", "unreadable-event"]).0, 1);
    assert_eq!(run(&["diagnose", b, "--only", "live-lease"]).0, 0);
    let (_, out, _) = run(&["diagnose", b, "--hide-clean", "--format", "jsonl"]);
    assert_eq!(paths(&out).len(), 3, "only the broken ones: {out}");
    assert_eq!(summary(&out)["conversations"], 12);
    // An unreadable PATH is 2 even when another PATH has findings.
    assert_eq!(run(&["diagnose", b, "/nonexistent/store"]).0, 2);
    assert_eq!(run(&["diagnose", b, "--only", "no-such-check"]).0, 2);
}

#[test]
fn stdout_carries_only_the_report() {
    // stderr is a pipe here, not a terminal: no progress bar is drawn, even
    // without --quiet, and stdout is pure JSON lines.
    let s = store(25);
    let p = s.path().to_str().unwrap();
    let (_, out, err) = run(&["diagnose", p, "--format", "jsonl"]);
    assert_eq!(err, "");
    assert_eq!(lines(&out).len(), 26);
    let (_, out, err) = run(&["diagnose", p]);
    assert_eq!(err, "");
    assert!(!out.contains('\r') && !out.contains('\x1b'));
    assert!(out.contains("worst first:") && out.contains("elapsed "));
    let (_, out, err) = run(&["diagnose", p, "--format", "json", "--quiet"]);
    assert_eq!(err, "");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["conversations"].as_array().unwrap().len(), 25);
    assert!(doc["summary"].get("elapsed").is_none());
}

#[test]
fn completions_and_man_pages() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, _) = run(&["completions", shell]);
        assert_eq!(code, 0);
        assert!(
            out.contains("convo-doctor") && out.contains("diagnose"),
            "{shell}"
        );
    }
    let (code, out, _) = run(&["man"]);
    assert_eq!(code, 0);
    assert!(out.contains(".TH convo-doctor 1"));
    let (code, out, _) = run(&["man", "diagnose"]);
    assert_eq!(code, 0);
    assert!(out.contains("\\-\\-shard") && out.contains("\\-\\-since"));
    assert_eq!(run(&["man", "nope"]).0, 2);
}
