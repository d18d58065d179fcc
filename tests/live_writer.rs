//! Live writers and interrupted repairs:
//! - the SDK's lock (`events/.eventlog.lock`, taken with flock by the SDK's
//!   `filelock.FileLock`) held by a Python process blocks `repair`;
//! - a writer appending events the way servers up to 1.43 do (flock, then
//!   truncate-and-write in place) while `diagnose` and `repair` run in a loop:
//!   no torn file, no lost event, and any half-written event diagnose sees is
//!   flagged `changed-during-read`;
//! - a repair killed at each step leaves the old or the new file, never a mix,
//!   and `undo` still works.

#![allow(clippy::print_stderr)] // skip notes and race counts for the test log

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{event_files, fixture_copy, run, snapshot};
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_python_flock_like_the_sdks_blocks_repair() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let lock = conv.join("events/.eventlog.lock");
    // exactly the call filelock's UnixFileLock makes
    let script = "import fcntl,sys,time\nf=open(sys.argv[1],'a')\nfcntl.flock(f.fileno(),fcntl.LOCK_EX|fcntl.LOCK_NB)\nprint('locked',flush=True)\ntime.sleep(60)\n";
    let child = Command::new("python3")
        .args(["-c", script, s(&lock)])
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!(
            "note: python3 not found; the Rust flock test in tests/repair.rs covers the lock"
        );
        return;
    };
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "locked");
    let before = snapshot(&store);
    let b = tmp.path().join("b");
    let (code, out, _) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
    let (_, diag, _) = run(&["diagnose", s(&store)], &[]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        diag.contains("changed-during-read"),
        "diagnose notices the writer: {diag}"
    );
    common::assert_refused_by_lock(code, &out, &store, &before);
    // released: the repair goes through
    let (code, out, _) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
    assert_eq!(code, 0, "{out}");
}

/// Append `n` events chained onto the newest one, the way servers up to 1.43
/// do: under the flock, the file is created and written in two steps.
fn writer(conv: PathBuf, n: usize, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut ids = Vec::new();
    let mut parent = {
        let files = event_files(&conv);
        let last: Value =
            serde_json::from_slice(&fs::read(files.last().unwrap()).unwrap()).unwrap();
        last["id"].as_str().unwrap().to_string()
    };
    for k in 0..n {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let lock = common::hold_event_log_lock(&conv);
        let idx = event_files(&conv).len();
        let id = format!("7e57e000-0000-4000-8000-{k:012}");
        let body = serde_json::json!({
            "id": id, "timestamp": "2026-11-30T00:00:00", "source": "user", "parent_id": parent,
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "x".repeat(4000)}]},
            "kind": "MessageEvent"
        })
        .to_string();
        let mut f =
            fs::File::create(conv.join(format!("events/event-{idx:05}-{id}.json"))).unwrap();
        f.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
        f.flush().unwrap();
        std::thread::sleep(Duration::from_millis(3));
        f.write_all(&body.as_bytes()[body.len() / 2..]).unwrap();
        drop(f);
        lock.unlock().unwrap();
        parent = id.clone();
        ids.push(id);
        std::thread::sleep(Duration::from_millis(2));
    }
    ids
}

#[test]
fn diagnose_and_repair_beside_a_live_writer() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let (conv, stop) = (conv.clone(), stop.clone());
        std::thread::spawn(move || writer(conv, 150, stop))
    };
    let b = tmp.path().join("b");
    let mut runs = 0;
    let mut torn_seen_flagged = 0;
    while !w.is_finished() && runs < 200 {
        runs += 1;
        let (code, out, err) = run(&["diagnose", "--format", "json", s(&store)], &[]);
        assert!(code == 0 || code == 1, "diagnose failed ({code}): {err}");
        let doc: Value = serde_json::from_str(&out).expect("a whole JSON report");
        let findings = doc["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .clone();
        let has = |c: &str| findings.iter().any(|f| f["check"] == c);
        if has("unreadable-event") {
            assert!(
                has("changed-during-read"),
                "a half-written event reported without saying the folder changed: {out}"
            );
            torn_seen_flagged += 1;
        }
        if runs % 5 == 0 {
            let (code, out, err) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
            assert!(code == 0 || code == 1, "repair failed ({code}): {out}{err}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let ids = w.join().unwrap();
    assert!(
        runs > 3,
        "the writer finished before the test could race it"
    );
    // nothing lost, nothing torn
    for p in event_files(&conv) {
        let v: Value = serde_json::from_slice(&fs::read(&p).unwrap())
            .unwrap_or_else(|e| panic!("{} is torn: {e}", p.display()));
        assert!(v["kind"].is_string());
    }
    let all: String = event_files(&conv)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for id in &ids {
        assert!(all.contains(id.as_str()), "event {id} was lost");
    }
    // once idle, the false root is repaired (if no run got to it) and the
    // report is steady
    let (_, out, err) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
    let (_, out2, _) = run(&["diagnose", s(&store)], &[]);
    assert!(
        !out2.contains("false-root]") && !out2.contains("changed-during-read"),
        "{out}{err}{out2}"
    );
    eprintln!("{runs} diagnose runs beside the writer; {torn_seen_flagged} caught a half-written event and said so");
}

#[test]
fn a_repair_killed_at_any_step_leaves_old_or_new_and_undo_works() {
    for point in ["after-backup", "before-rename", "after-rename"] {
        let (tmp, store, conv) = fixture_copy("false-root");
        let target = event_files(&conv)
            .into_iter()
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("event-00008-")
            })
            .unwrap();
        let old = fs::read(&target).unwrap();
        let b = tmp.path().join("b");
        let (code, _, _) = run(
            &["repair", "--backup-dir", s(&b), s(&store)],
            &[
                ("CONVO_DOCTOR_CRASH_AT", point),
                ("CONVO_DOCTOR_RUN_ID", "crash"),
            ],
        );
        assert_ne!(code, 0, "{point}: the process was meant to die");
        let now = fs::read(&target).unwrap();
        let parsed: Value =
            serde_json::from_slice(&now).unwrap_or_else(|e| panic!("{point}: torn file: {e}"));
        let relinked = parsed["parent_id"] != "__root__";
        assert_eq!(relinked, point == "after-rename", "{point}");
        if !relinked {
            assert_eq!(now, old, "{point}: the original must be intact");
        }
        // the backup and manifest were written before anything changed
        assert!(b.join("crash/manifest.json").is_file(), "{point}");
        let (code, out, _) = run(&["undo", "crash", "--backup-dir", s(&b)], &[]);
        assert_eq!(code, 0, "{point}: {out}");
        assert_eq!(
            fs::read(&target).unwrap(),
            old,
            "{point}: undo restores the original"
        );
        // a fresh repair still works afterwards
        let (code, out, _) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
        assert_eq!(code, 0, "{point}: {out}");
    }
}
