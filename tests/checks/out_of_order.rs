//! `out-of-order` (issue 23): two event files trade indexes, each keeping its
//! name and its JSON. The compound fuzzer's cases judged by the real SDK are
//! in fixtures/compound/out-of-order-* (tests/compound_regressions.rs); these
//! tests pin the check's own rules on the real clean-tree fixture.

use super::common::*;
use std::fs;
use std::path::Path;

/// Rename the files at `a` and `b` to each other's index, as the fuzzer's
/// out-of-order operator does.
fn trade(conv: &Path, a: usize, b: usize) {
    let fa = event_at(conv, a);
    let fb = event_at(conv, b);
    let name = |p: &Path, idx: usize| {
        let n = p.file_name().unwrap().to_str().unwrap();
        format!("event-{idx:05}-{}", &n[12..])
    };
    let (na, nb) = (name(&fa, b), name(&fb, a));
    fs::rename(&fa, conv.join("events").join(na)).unwrap();
    fs::rename(&fb, conv.join("events").join(nb)).unwrap();
}

#[test]
fn two_files_traded_back_by_a_safe_repair_and_undone_exactly() {
    let (tmp, store, conv) = fixture_copy("clean-tree");
    let before = files(&conv);
    trade(&conv, 1, 3);
    let damaged = files(&conv);
    let (code, out, err) = run(&["diagnose", s(&store)], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("warning[out-of-order] events/event-00001-")
            && out.contains("events 00001 and 00003 were written out of order"),
        "{out}"
    );
    // safe: no --unsafe-fixes needed, and only two renames
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(&store, &backups, &["--format", "json"], Some("ooo-1"));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        files(&conv),
        before,
        "every name and byte as the SDK wrote them"
    );
    let (code, out, _) = run(&["diagnose", s(&store)], &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = undo(&backups, "ooo-1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), damaged, "undo puts the damaged order back");
}

/// Timestamps all equal: the links alone decide, and here one pair fits.
#[test]
fn equal_timestamps_leave_the_links_to_decide() {
    let (_tmp, store, conv) = fixture_copy("clean-tree");
    stamp(&conv, |_| "2026-01-01T00:00:00".to_string());
    trade(&conv, 1, 2);
    let (_, out, _) = run(&["repair", "--dry-run", s(&store)], &[]);
    assert!(
        out.contains("rename to   ")
            && out.contains("/events/event-00001-629787e5-b7bb-4b2b-ba36-4c6448aa601b.json\n")
            && out.contains("/events/event-00002-7f932a5a-88e0-478f-8738-1f348ce8a079.json\n")
            && out.contains("would fix: out-of-order ×1"),
        "{out}"
    );
}

/// Timestamps that contradict every trade that would fix the links: no
/// repair, and the finding and the plan say a human must decide.
#[test]
fn timestamps_against_every_trade_leave_it_to_a_human() {
    let (_tmp, store, conv) = fixture_copy("clean-tree");
    // newest first: no order of two files makes them run forward
    stamp(&conv, |i| format!("2026-01-0{}T00:00:00", 9 - i));
    trade(&conv, 1, 3);
    let (_, out, _) = run(&["diagnose", s(&store)], &[]);
    assert!(
        out.contains("[out-of-order]") && out.contains("needs a human"),
        "{out}"
    );
    let (_, out, _) = run(&["repair", "--dry-run", "--unsafe-fixes", s(&store)], &[]);
    assert!(!out.contains("rename from"), "{out}");
    assert!(out.contains("needs a human"), "{out}");
}

/// Give the event at each index the timestamp `at(index)`.
fn stamp(conv: &Path, at: impl Fn(usize) -> String) {
    for (i, p) in event_files(conv).iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_slice(&fs::read(p).unwrap()).unwrap();
        v["timestamp"] = serde_json::json!(at(i));
        fs::write(p, v.to_string()).unwrap();
    }
}

/// A clean folder has no link pointing forward: nothing is reported.
#[test]
fn in_order_folders_are_quiet() {
    for f in [
        "clean-tree",
        "false-root",
        "legacy-flat",
        "abandoned-branch",
    ] {
        let (_tmp, store, _conv) = fixture_copy(f);
        let (_, out, _) = run(&["diagnose", "--only", "out-of-order", s(&store)], &[]);
        assert!(!out.contains("[out-of-order]"), "{f}: {out}");
    }
}

/// Issue 23 (`filename-id-mismatch`'s crosses): two files that hold each
/// other's JSON, one of which the release judged for cannot read (1.58.2's
/// `extended_content` under 1.33.0), were put back only half: the proof
/// refused the file that would get the unreadable JSON, so one event's JSON
/// ended in two files and the other's in none. Now both or neither: safe
/// repair leaves both with the reason, `--unsafe-fixes` drops the key and
/// then puts both back.
#[test]
fn a_cross_is_put_back_whole_or_not_at_all() {
    let (_tmp, store, conv) = fixture_copy("clean-tree");
    let (a, b) = (event_at(&conv, 1), event_at(&conv, 3));
    let (ba, bb) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
    assert!(
        String::from_utf8_lossy(&bb).contains("extended_content"),
        "the observation 1.58.2 wrote carries extended_content"
    );
    fs::write(&a, &bb).unwrap();
    fs::write(&b, &ba).unwrap();
    let args = [
        "repair",
        "--dry-run",
        "--server-version",
        "1.33.0",
        "--format",
        "json",
    ];
    let (_, out, err) = run(&[&args[..], &[s(&store)]].concat(), &[]);
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let planned = doc["conversations"][0]["planned"].as_array().unwrap();
    assert!(planned.is_empty(), "nothing half: {planned:?}");
    let left = doc["conversations"][0]["left"].as_array().unwrap();
    assert!(
        left.iter().any(|l| l["why"]
            .as_str()
            .unwrap()
            .contains("cannot be read by SDK 1.33.0")),
        "{left:?}"
    );
    let (_, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--server-version",
            "1.33.0",
            "--format",
            "json",
            s(&store),
        ],
        &[],
    );
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let files: Vec<&str> = doc["conversations"][0]["planned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["file"].as_str().unwrap())
        .collect();
    for want in [&a, &b] {
        let name = format!("events/{}", want.file_name().unwrap().to_str().unwrap());
        assert!(files.contains(&name.as_str()), "{name} not in {files:?}");
    }
}
