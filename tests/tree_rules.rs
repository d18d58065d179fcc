//! The SDK's tree rules on small hand-built logs: every branch of
//! `_effective_parent_id`, both `_resolve_active_leaf` rules, and the
//! failures of `path_to_root`.

mod common;

use common::{agent_view, eid, Conv};
use convo_doctor::view::{LoadError, ReadError};
use serde_json::json;

const NEW: &str = "1.58.2";
const OLD_TREE: &str = "1.33.0";

#[test]
fn legacy_events_chain_to_the_previous_index() {
    // no parent_id anywhere: index 0 is a root, each later event's parent is idx-1
    let mut c = Conv::new(json!({}));
    for _ in 0..4 {
        c.push("MessageEvent", None);
    }
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 1, 2, 3]);
}

#[test]
fn explicit_parent_is_followed_and_skips_siblings() {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(&b)); // 2: abandoned sibling branch
    let d = c.push("MessageEvent", Some(&b)); // 3
    c.set_state(json!({"leaf_event_id": d}));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 1, 3]);
}

#[test]
fn root_marker_stops_the_walk() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push("MessageEvent", None);
    let r = c.push("MessageEvent", Some("__root__"));
    let l = c.push("MessageEvent", Some(&r));
    c.set_state(json!({"leaf_event_id": l}));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![2, 3]);
}

#[test]
fn head_is_empty_gives_an_empty_branch() {
    let mut c = Conv::new(json!({"head_is_empty": true}));
    c.push("MessageEvent", None);
    assert_eq!(agent_view(c.path(), NEW).unwrap(), Vec::<usize>::new());
}

#[test]
fn a_set_leaf_wins_over_head_is_empty() {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    c.set_state(json!({"leaf_event_id": a, "head_is_empty": true}));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0]);
}

#[test]
fn new_leaf_rule_skips_trailing_artifacts() {
    // legacy log whose tail is a state update and an error event with parent_id
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", Some(&b));
    c.push("ConversationErrorEvent", Some(&b));
    // ≥1.35: leaf = last non-artifact = 1
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 1]);
}

#[test]
fn old_leaf_rule_gives_no_leaf_when_the_tail_has_a_parent() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", Some(&b));
    // 1.31–1.34: the last event carries parent_id → no leaf → empty branch
    assert_eq!(agent_view(c.path(), OLD_TREE).unwrap(), Vec::<usize>::new());
}

#[test]
fn old_leaf_rule_takes_a_bare_last_event() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", None);
    assert_eq!(agent_view(c.path(), OLD_TREE).unwrap(), vec![0, 1]);
    // the new rule skips the legacy artifact as a leaf
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0]);
}

#[test]
fn only_artifacts_means_no_leaf() {
    let mut c = Conv::new(json!({}));
    c.push("ConversationStateUpdateEvent", None);
    assert_eq!(agent_view(c.path(), NEW).unwrap(), Vec::<usize>::new());
}

#[test]
fn unknown_leaf_is_a_key_error() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.set_state(json!({"leaf_event_id": eid(99)}));
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::UnknownLeaf { .. })
    ));
}

#[test]
fn unknown_parent_is_a_key_error() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&eid(77)));
    c.set_state(json!({"leaf_event_id": b}));
    assert_eq!(
        agent_view(c.path(), NEW),
        Err(LoadError::UnknownParent {
            idx: 1,
            parent: eid(77)
        })
    );
}

#[test]
fn a_cycle_is_detected() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&eid(2)));
    c.push("MessageEvent", Some(&eid(1)));
    c.set_state(json!({"leaf_event_id": eid(2)}));
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::Cycle { .. })
    ));
}

#[test]
fn an_unreadable_event_on_the_branch_fails_the_load_but_not_off_it() {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push_raw(""); // 1: empty, off the branch
    let leaf = c.push("MessageEvent", Some(&a)); // 2
    c.set_state(json!({"leaf_event_id": leaf}));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 2]);
    // now put the empty file on the branch
    c.write_raw(
        2,
        &leaf,
        &json!({"id": leaf, "parent_id": eid(1), "kind": "MessageEvent", "source": "user",
                "llm_message": {"role": "user", "content": []}})
        .to_string(),
    );
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::Read {
            idx: 1,
            error: ReadError::Unreadable(_)
        })
    ));
}

#[test]
fn an_unreadable_tail_breaks_the_leaf_scan() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push_raw("{\"id\": \"x\", \"kind\": \"Mess");
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::Read { idx: 1, .. })
    ));
}

#[test]
fn unknown_kinds_fail_only_where_the_sdk_reads() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push("CanvasUIObservation", None);
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::Read {
            idx: 1,
            error: ReadError::UnknownKind { .. }
        })
    ));
}

#[test]
fn a_gap_ends_the_log() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push("MessageEvent", None);
    c.write_raw(
        5,
        &eid(5),
        &json!({"id": eid(5), "kind": "MessageEvent"}).to_string(),
    );
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 1]);
}

#[test]
fn pre_tree_readers_reject_parent_id_and_tolerate_empty_files() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push_raw("");
    c.push("MessageEvent", None);
    assert_eq!(agent_view(c.path(), "1.29.3").unwrap(), vec![0, 2]);
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    assert!(matches!(
        agent_view(c.path(), "1.29.3"),
        Err(LoadError::Read {
            idx: 1,
            error: ReadError::TreeFieldTooNew
        })
    ));
}

#[test]
fn missing_base_state_cannot_load_on_new_servers() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    std::fs::remove_file(c.path().join("base_state.json")).unwrap();
    assert_eq!(agent_view(c.path(), NEW), Err(LoadError::NoBaseState));
}

#[test]
fn id_mismatch_is_refused() {
    let mut c = Conv::new(json!({"id": "ffffffff-89ab-cdef-0123-456789abcdef"}));
    c.push("MessageEvent", None);
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::IdMismatch { .. })
    ));
}
