//! Quarantine, renumbering and gap closing (issue 9) on copies of the
//! real-SDK fixtures: what `--dry-run` shows, consent, the guards, a kill
//! mid-repair, and an exact `undo`. What the real SDK makes of the results
//! is in fixtures/repairs.json (tests/repair_proof.rs).

mod common;

use std::fs;
use std::path::Path;

use common::{files, fixture_copy, repair, run, s, snapshot, undo};

fn names(conv: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn without_consent_an_unsafe_repair_is_listed_not_made() {
    let (tmp, store, _) = fixture_copy("empty-event");
    let before = snapshot(&store);
    for args in [
        vec!["repair", "--dry-run", s(&store)],
        vec![
            "repair",
            "--backup-dir",
            s(&tmp.path().join("b")),
            s(&store),
        ],
    ] {
        let (code, out, err) = run(&args, &[]);
        assert_eq!(code, 1, "an unsafe repair is pending: {out}{err}");
        assert!(
            out.contains("unsafe    [unreadable-event] events/event-00003-")
                && out.contains("with --unsafe-fixes: quarantine event 00003"),
            "{out}"
        );
        assert!(out.contains("nothing to repair"), "{out}");
        assert!(snapshot(&store) == before, "{args:?} changed something");
    }
}

#[test]
fn dry_run_shows_renames_and_quarantines_and_writes_nothing() {
    let (_t, store, _) = fixture_copy("truncated-event");
    let before = snapshot(&store);
    let (code, out, _) = run(&["repair", "--dry-run", "--unsafe-fixes", s(&store)], &[]);
    assert_eq!(code, 1, "changes are pending: {out}");
    for want in [
        "quarantine  2da4f284943f5c28867e8a3f75d7ef5c/events/event-00002-65002fc1-5189-43d3-8a85-398597997aab.json (286 bytes",
        "rename from 2da4f284943f5c28867e8a3f75d7ef5c/events/event-00003-d0c27b53-f85a-486e-a8b1-46051eb11c41.json",
        "rename to   2da4f284943f5c28867e8a3f75d7ef5c/events/event-00002-d0c27b53-f85a-486e-a8b1-46051eb11c41.json",
        "rename from 2da4f284943f5c28867e8a3f75d7ef5c/events/event-00004-ccb97828-d6a6-4556-92fb-a81b4e353097.json",
        "rename to   2da4f284943f5c28867e8a3f75d7ef5c/events/event-00003-ccb97828-d6a6-4556-92fb-a81b4e353097.json",
        "quarantine  2da4f284943f5c28867e8a3f75d7ef5c/events/.eventlog-len-5.marker",
        // the child of the truncated action, re-linked to the user message
        "+  \"parent_id\": \"343342d9-877a-4592-b54f-8becd414e4a3\",",
        "after repair: agent sees all 4 events",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
    assert!(
        snapshot(&store) == before,
        "dry-run changed a byte or an mtime"
    );
}

#[test]
fn quarantine_renumbers_relinks_drops_the_marker_and_undo_is_exact() {
    let (tmp, store, conv) = fixture_copy("truncated-event");
    let backups = tmp.path().join("b");
    let before = files(&conv);
    let (code, out, err) = repair(&store, &backups, &["--unsafe-fixes"], Some("q-1"));
    assert_eq!(code, 0, "{out}{err}");
    // by hand from the fixture: 00002 (the truncated action) leaves, 00003
    // and 00004 move down one, the marker goes, nothing is added (the action
    // is gone, so there is no tool call to answer)
    assert_eq!(
        names(&conv),
        [
            ".eventlog.lock",
            "event-00000-b3e28017-921d-471e-a5ca-3c631222a1e7.json",
            "event-00001-343342d9-877a-4592-b54f-8becd414e4a3.json",
            "event-00002-d0c27b53-f85a-486e-a8b1-46051eb11c41.json",
            "event-00003-ccb97828-d6a6-4556-92fb-a81b4e353097.json",
        ]
    );
    let after = files(&conv);
    // the observation keeps every byte but its parent_id, now the user message
    let old = String::from_utf8(
        before["events/event-00003-d0c27b53-f85a-486e-a8b1-46051eb11c41.json"].clone(),
    )
    .unwrap();
    let new = String::from_utf8(
        after["events/event-00002-d0c27b53-f85a-486e-a8b1-46051eb11c41.json"].clone(),
    )
    .unwrap();
    assert_eq!(
        old.replace(
            "\"parent_id\":\"65002fc1-5189-43d3-8a85-398597997aab\"",
            "\"parent_id\":\"343342d9-877a-4592-b54f-8becd414e4a3\""
        ),
        new
    );
    // the reply moves with the same bytes; base_state.json's HEAD (the reply) stays
    assert_eq!(
        before["events/event-00004-ccb97828-d6a6-4556-92fb-a81b4e353097.json"],
        after["events/event-00003-ccb97828-d6a6-4556-92fb-a81b4e353097.json"]
    );
    assert_eq!(before["base_state.json"], after["base_state.json"]);
    // the quarantined file and the marker are in the backup, byte for byte
    let run_dir = backups.join("q-1");
    assert_eq!(
        fs::read(run_dir.join("0001/events/event-00002-65002fc1-5189-43d3-8a85-398597997aab.json"))
            .unwrap(),
        before["events/event-00002-65002fc1-5189-43d3-8a85-398597997aab.json"]
    );
    assert!(run_dir.join("0001/events/.eventlog-len-5.marker").is_file());
    // nothing left inside the store but the conversation
    assert_eq!(fs::read_dir(&store).unwrap().count(), 1);
    // a second run is a no-op
    let (code, out, _) = repair(&store, &backups, &["--unsafe-fixes"], Some("q-2"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to repair"), "{out}");
    assert_eq!(files(&conv), after);
    // undo: every original name and byte back, nothing else
    let (code, out, err) = undo(&backups, "q-1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), before);
}

/// The empty file is the observation of the `ls` call: quarantining it
/// alone would leave the call unanswered, and the SDK's next step would run
/// it again (fixtures/repairs-quarantine-only-control.json). The repair
/// answers it in the same slot, as the agent-server's crash recovery does.
#[test]
fn a_quarantined_observation_is_answered_like_a_crash_and_undo_removes_the_answer() {
    let (tmp, store, conv) = fixture_copy("empty-event");
    let backups = tmp.path().join("b");
    let before = files(&conv);
    let (code, out, err) = repair(&store, &backups, &["--unsafe-fixes"], Some("a-1"));
    assert_eq!(code, 0, "{out}{err}");
    let after = files(&conv);
    let answer: Vec<&String> = after
        .keys()
        .filter(|k| k.starts_with("events/event-00003-") && !before.contains_key(*k))
        .collect();
    assert_eq!(answer.len(), 1, "{:?}", after.keys());
    let v: serde_json::Value = serde_json::from_slice(&after[answer[0]]).unwrap();
    // the fields event_service.py's crash recovery sets, from the action
    // (events/event-00002-3f791da1…: terminal, call_ls_1)
    assert_eq!(v["kind"], "AgentErrorEvent");
    assert_eq!(v["source"], "agent");
    assert_eq!(v["parent_id"], "3f791da1-44f3-429f-b4ef-0e91e890d7ef");
    assert_eq!(v["tool_call_id"], "call_ls_1");
    assert_eq!(v["tool_name"], "terminal");
    let id = v["id"].as_str().unwrap();
    assert!(answer[0].ends_with(&format!("{id}.json")));
    // the reply keeps its index and now follows the answer
    let reply = String::from_utf8(
        after["events/event-00004-ea925fa0-ea52-4b31-88d1-11bf4a1a7986.json"].clone(),
    )
    .unwrap();
    assert!(
        reply.contains(&format!("\"parent_id\":\"{id}\"")),
        "{reply}"
    );
    assert!(!after.contains_key("events/event-00003-93e867e6-083e-433c-81ea-a6d05e5842a6.json"));
    // undo removes the answer and puts everything back
    let (code, out, err) = undo(&backups, "a-1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), before);
}

#[test]
fn closing_an_index_gap_is_safe_and_undone_exactly() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let backups = tmp.path().join("b");
    let before = files(&conv);
    let (code, out, err) = repair(&store, &backups, &[], Some("g-1"));
    assert_eq!(code, 0, "no consent needed: {out}{err}");
    assert_eq!(
        names(&conv),
        [
            ".eventlog.lock",
            "event-00000-be6cd2c3-527d-459d-8e77-8741a8a76f9e.json",
            "event-00001-a605e619-3747-415b-aa09-f5d50d400363.json",
            "event-00002-eba42a9a-d85a-40ca-a2c6-5659f8550267.json",
            "event-00003-be1f8529-b244-4ea6-bde3-e5b715fecbf3.json",
        ]
    );
    // the reply after the gap moves with the same bytes
    assert_eq!(
        before["events/event-00004-be1f8529-b244-4ea6-bde3-e5b715fecbf3.json"],
        files(&conv)["events/event-00003-be1f8529-b244-4ea6-bde3-e5b715fecbf3.json"]
    );
    let (code, out, err) = undo(&backups, "g-1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), before);
}

#[test]
fn a_held_event_log_lock_refuses_a_quarantine() {
    let (tmp, store, conv) = fixture_copy("unknown-kind");
    let f = common::hold_event_log_lock(&conv);
    let before = snapshot(&store);
    let (code, out, _) = repair(&store, &tmp.path().join("b"), &["--unsafe-fixes"], None);
    common::assert_refused_by_lock(code, &out, &store, &before);
    drop(f);
}

/// A kill right after the quarantine (before any rename) leaves a folder
/// that `undo` restores byte for byte, names included.
#[test]
fn a_kill_mid_quarantine_is_undone_exactly() {
    for point in ["after-quarantine", "after-rename"] {
        let (tmp, store, conv) = fixture_copy("unknown-kind");
        let backups = tmp.path().join("b");
        let before = files(&conv);
        let (code, _, _) = run(
            &[
                "repair",
                "--unsafe-fixes",
                "--backup-dir",
                s(&backups),
                s(&store),
            ],
            &[
                ("CONVO_DOCTOR_RUN_ID", "k-1"),
                ("CONVO_DOCTOR_CRASH_AT", point),
            ],
        );
        assert_ne!(code, 0, "{point}: the process was aborted");
        assert_ne!(files(&conv), before, "{point}: something had changed");
        let (code, out, err) = undo(&backups, "k-1");
        assert_eq!(code, 0, "{point}: {out}{err}");
        assert_eq!(files(&conv), before, "{point}: undo is exact");
    }
}

/// `undo` refuses to restore a quarantined file over a file that took its
/// name since, and removes nothing.
#[test]
fn undo_never_replaces_a_file_that_took_a_quarantined_name() {
    let (tmp, store, conv) = fixture_copy("duplicate-index");
    let backups = tmp.path().join("b");
    let (code, out, err) = repair(&store, &backups, &["--unsafe-fixes"], Some("d-1"));
    assert_eq!(code, 0, "{out}{err}");
    let taken = conv.join("events/event-00004-75713256-c73d-519c-8efa-f9af87d4e7e5.json");
    assert!(!taken.exists());
    fs::write(&taken, b"{\"someone\":\"else\"}").unwrap();
    let (code, out, _) = undo(&backups, "d-1");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("refused"), "{out}");
    assert_eq!(fs::read(&taken).unwrap(), b"{\"someone\":\"else\"}");
}

/// An event the SDK's model refuses (`invalid-event`: `action.command` is a
/// number) is quarantined like an unreadable one. The real SDK 1.58.2 judged
/// the repaired copy by hand (fixtures/gen/judge.py, 2026-11-30): it loads,
/// with 4 events on the active branch (it drops the orphaned observation from
/// the LLM's view with a warning). Not yet in fixtures/repairs.json, whose
/// generator reads only fixtures/manifest.json.
#[test]
fn an_invalid_event_is_quarantined_with_consent() {
    let (tmp, _store, conv) = fixture_copy("validation/action-field-mistyped");
    let bad = "events/event-00002-7f932a5a-88e0-478f-8738-1f348ce8a079.json";
    let original = fs::read(conv.join(bad)).unwrap();
    let (code, out, _) = run(&["diagnose", s(&conv), "--format", "json"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("invalid-event"), "{out}");
    let backups = tmp.path().join("b");
    let (code, out, err) = repair(&conv, &backups, &["--unsafe-fixes"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        names(&conv),
        [
            ".eventlog.lock",
            "event-00000-a207274d-a9f1-4c12-88f7-f04b12174398.json",
            "event-00001-629787e5-b7bb-4b2b-ba36-4c6448aa601b.json",
            "event-00002-242cf122-9809-4b3c-98e9-7314199590ab.json",
            "event-00003-061877c9-8e20-4a6a-862b-ee5b139d2e1b.json",
        ]
    );
    // the refused bytes are kept in the run's backup, unchanged
    let kept = walkdir::WalkDir::new(&backups)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .any(|e| fs::read(e.path()).unwrap() == original);
    assert!(kept, "the quarantined event is in the backup");
    let (code, out, _) = run(&["diagnose", s(&conv), "--format", "json"], &[]);
    assert_eq!(code, 0, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["conversations"][0]["events"]["agent_view"], 4,
        "{out}"
    );
    assert_eq!(report["conversations"][0]["events"]["on_disk"], 4, "{out}");
}
