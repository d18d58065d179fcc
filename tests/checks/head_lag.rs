//! `head-lag`: events below a HEAD that never advanced to them.

use serde_json::Value;

use super::common;
use super::{findings, set_mtime};

/// clean-tree (system prompt, message, action, its observation, message)
/// with the HEAD left at the action, base_state.json saved after every
/// event (no modification-time evidence of a crash); the observation's
/// `action_id` set to `action_id`. Returns (guard, conversation folder).
fn head_at_the_action(action_id: Option<&str>) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, _store, conv) = common::fixture_copy("clean-tree");
    let events = common::event_files(&conv);
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let action = read(&events[2]);
    assert_eq!(action["kind"], "ActionEvent");
    let state_file = conv.join("base_state.json");
    let mut state = read(&state_file);
    state["leaf_event_id"] = action["id"].clone();
    std::fs::write(&state_file, state.to_string()).unwrap();
    if let Some(a) = action_id {
        let mut obs = read(&events[3]);
        assert_eq!(obs["kind"], "ObservationEvent");
        assert_eq!(obs["tool_call_id"], action["tool_call_id"]);
        obs["action_id"] = Value::from(a);
        std::fs::write(&events[3], obs.to_string()).unwrap();
    }
    for e in &events {
        set_mtime(e, 100);
    }
    set_mtime(&state_file, 10);
    (tmp, conv)
}

fn head_lag(conv: &std::path::Path) -> Vec<String> {
    findings(conv, "1.58.2")
        .into_iter()
        .filter(|(c, _)| c == "head-lag")
        .map(|(_, s)| s)
        .collect()
}

/// The HEAD is a tool call whose result is the first event below it: crash
/// evidence without modification times (the SDK moves the HEAD with every
/// result it appends), so a warning with a safe repair.
#[test]
fn a_result_right_below_the_head_is_crash_evidence() {
    let (_tmp, conv) = head_at_the_action(None);
    assert_eq!(head_lag(&conv), ["warning"]);
}

/// An observation below the HEAD that carries the call's `tool_call_id` but
/// names another action does not answer the HEAD's call: the SDK matches an
/// observation by `action_id` alone (`ConversationState.get_unmatched_actions`),
/// so it is no evidence, and the lag is only information (navigate_to may
/// have left it).
#[test]
fn an_observation_naming_another_action_is_no_evidence() {
    let (_tmp, conv) = head_at_the_action(Some("00000000-0000-4000-8000-000000000000"));
    assert_eq!(head_lag(&conv), ["info"]);
}

/// The head-lag fixture with its modification times set: base_state.json
/// saved after every event is no crash evidence (navigate_to may have moved
/// the HEAD: information, left alone); the newest event written after the
/// last save is, and the safe repair moves the HEAD onto it.
#[test]
fn head_lag_with_crash_evidence_is_repaired_and_without_it_is_left() {
    let (tmp, store, conv) = common::fixture_copy("head-lag");
    let events = common::event_files(&conv);
    for e in &events {
        set_mtime(e, 100);
    }
    set_mtime(&conv.join("base_state.json"), 10);
    let found = findings(&conv, "1.58.2");
    assert!(
        found.contains(&("head-lag".into(), "info".into())),
        "{found:?}"
    );
    let (code, out, _) = common::run(&["repair", "--dry-run", common::s(&store)], &[]);
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
    let found = findings(&conv, "1.58.2");
    assert!(
        found.contains(&("head-lag".into(), "warning".into())),
        "{found:?}"
    );
    let before = common::agent_view(&conv, "1.58.2").unwrap().len();
    let b = tmp.path().join("b");
    let (code, out, err) = common::run(
        &["repair", "--backup-dir", common::s(&b), common::s(&store)],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("move the HEAD from event 00003 to event 00004"),
        "{out}"
    );
    assert_eq!(
        common::agent_view(&conv, "1.58.2").unwrap().len(),
        before + 1
    );
}
