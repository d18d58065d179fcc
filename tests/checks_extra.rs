//! Checks beyond the fixtures, on hand-built logs: the crash-recovery error
//! of #4487 (and its repair), the legacy-tail hazard, a stale `running`.

mod common;

use common::{agent_view, eid, run, Conv};
use convo_doctor::report::{analyze, Options};
use serde_json::json;

fn checks(dir: &std::path::Path, version: &str) -> Vec<(String, String)> {
    let all = |_: &str| true;
    let opts = Options {
        version: version.parse().unwrap(),
        version_given: false,
        selected: &all,
        event_list: false,
    };
    analyze(dir, "x".into(), &opts)
        .findings
        .into_iter()
        .map(|f| (f.check.to_string(), f.severity.as_str().to_string()))
        .collect()
}

/// user message, an action, then (after a crash with a lagging HEAD) the
/// server's recovery error stamped onto the stale HEAD instead of the action.
fn recovery_error_log() -> Conv {
    let mut c = Conv::new(json!({}));
    let m = c.push("MessageEvent", None);
    let a = eid(1);
    c.push_raw(
        &json!({"id": a, "source": "agent", "parent_id": m, "tool_name": "terminal",
                "tool_call_id": "call_1", "kind": "ActionEvent",
                // the rest of a real 1.58.2 ActionEvent (fixtures/clean-tree act1)
                "thought": [], "llm_response_id": "resp_1",
                "tool_call": {"id": "call_1", "name": "terminal", "arguments": "{}", "origin": "completion"}})
        .to_string(),
    );
    let e = eid(2);
    c.push_raw(
        &json!({"id": e, "source": "agent", "parent_id": m, "tool_name": "terminal",
                "tool_call_id": "call_1",
                "error": "A restart occurred while this tool was in progress. This may indicate a fatal memory error or system crash.",
                "kind": "AgentErrorEvent"})
        .to_string(),
    );
    c.set_state(json!({"leaf_event_id": e, "execution_status": "error"}));
    c
}

#[test]
fn misparented_recovery_error_is_found_and_relinked() {
    let c = recovery_error_log();
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 2]);
    let found = checks(c.path(), "1.58.2");
    assert!(
        found.contains(&("misparented-recovery-error".into(), "error".into())),
        "{found:?}"
    );

    // outside the folder the conversation sits in (a backup there is refused)
    let bdir = tempfile::tempdir().unwrap();
    let backups = bdir.path().join("b");
    let (code, out, err) = run(
        &[
            "repair",
            "--backup-dir",
            backups.to_str().unwrap(),
            c.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("re-parent the recovery error 00002 onto its action 00001"),
        "{out}"
    );
    // the action is back on the agent's branch, the error answers it
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
    assert!(checks(c.path(), "1.58.2")
        .iter()
        .all(|(c, _)| c != "misparented-recovery-error"));
}

#[test]
fn a_second_result_for_the_call_blocks_the_relink() {
    let mut c = recovery_error_log();
    c.push_raw(
        &json!({"id": eid(3), "source": "environment", "parent_id": eid(1), "tool_name": "terminal",
                "tool_call_id": "call_1", "action_id": eid(1), "kind": "UserRejectObservation"})
        .to_string(),
    );
    let (code, out, _) = run(&["repair", "--dry-run", c.path().to_str().unwrap()], &[]);
    assert_eq!(code, 0, "nothing to change: {out}");
    assert!(out.contains("needs a human"), "{out}");
}

#[test]
fn legacy_tail_hazard_only_for_1_31_to_1_34() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", Some(&b));
    let old = checks(c.path(), "1.33.0");
    assert!(
        old.contains(&("legacy-tail-hazard".into(), "warning".into())),
        "{old:?}"
    );
    assert!(checks(c.path(), "1.35.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    assert!(checks(c.path(), "1.29.3")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    // a stored HEAD makes it safe
    c.set_state(json!({"leaf_event_id": b}));
    assert!(checks(c.path(), "1.33.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
}

#[test]
fn stale_running_is_info() {
    let mut c = Conv::new(json!({"execution_status": "running"}));
    c.push("MessageEvent", None);
    assert!(checks(c.path(), "1.58.2").contains(&("stale-running".into(), "info".into())));
    c.set_state(json!({"execution_status": "idle"}));
    assert!(checks(c.path(), "1.58.2").is_empty());
}

fn set_mtime(p: &std::path::Path, secs_ago: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn head_lag_with_crash_evidence_is_repaired_and_without_it_is_left() {
    let (tmp, store, conv) = common::fixture_copy("head-lag");
    let events = common::event_files(&conv);
    // base_state.json saved after every event: could be a navigate_to
    for e in &events {
        set_mtime(e, 100);
    }
    set_mtime(&conv.join("base_state.json"), 10);
    let found = checks(&conv, "1.58.2");
    assert!(
        found.contains(&("head-lag".into(), "info".into())),
        "{found:?}"
    );
    let (code, out, _) = run(&["repair", "--dry-run", store.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("navigate_to may have moved the HEAD on purpose"),
        "{out}"
    );

    // the newest event written after the last save: a crash
    let newest = events.iter().max().unwrap();
    set_mtime(&conv.join("base_state.json"), 200);
    for e in &events {
        set_mtime(e, if e == newest { 5 } else { 300 });
    }
    let found = checks(&conv, "1.58.2");
    assert!(
        found.contains(&("head-lag".into(), "warning".into())),
        "{found:?}"
    );
    let before = agent_view(&conv, "1.58.2").unwrap().len();
    let b = tmp.path().join("b");
    let (code, out, err) = run(
        &[
            "repair",
            "--backup-dir",
            b.to_str().unwrap(),
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("move the HEAD from event 00003 to event 00004"),
        "{out}"
    );
    assert_eq!(agent_view(&conv, "1.58.2").unwrap().len(), before + 1);
}

/// `--only` selects what is reported: `events` being a file is
/// `unreadable-event`'s finding and is not shown under `--only index-gap`
/// (the SDK's LocalFileStore.list returns the file itself, which is no event
/// name: it loads an empty log; real 1.58.2's judge.py on such a folder:
/// loads, 0 events, warning "Unrecognized event file name: events").
#[test]
fn events_folder_unreadable_is_shown_only_with_its_check() {
    let c = Conv::new(json!({}));
    std::fs::remove_dir(c.path().join("events")).unwrap();
    std::fs::write(c.path().join("events"), "x").unwrap();
    let report = |only: &str| {
        let sel = |id: &str| id == only;
        let opts = Options {
            version: "1.58.2".parse().unwrap(),
            version_given: false,
            selected: &sel,
            event_list: false,
        };
        analyze(c.path(), "x".into(), &opts)
    };
    let r = report("index-gap");
    assert!(
        r.findings.is_empty(),
        "{:?}",
        r.findings.iter().map(|f| f.check).collect::<Vec<_>>()
    );
    assert_eq!(r.events.agent_view, Some(0));
    let r = report("unreadable-event");
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].check, "unreadable-event");
    assert!(
        r.findings[0].message.contains("is a file"),
        "{}",
        r.findings[0].message
    );
}
