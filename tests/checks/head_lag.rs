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
