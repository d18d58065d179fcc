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

/// A MessageEvent the real SDK accepts, with an optional `parent_id`.
fn msg(id: &str, parent: Option<&str>) -> String {
    let mut ev = json!({"id": id, "timestamp": "2026-01-01T00:00:00", "source": "user", "kind": "MessageEvent"});
    if let Some(p) = parent {
        ev["parent_id"] = json!(p);
    }
    if let serde_json::Value::Object(m) = common::required_fields("MessageEvent") {
        for (k, v) in m {
            ev[k] = v;
        }
    }
    ev.to_string()
}

// ---- the walk by id (issue 8 part 3). The SDK maps an id to its FIRST index
// (`_scan_and_build_index`) and walks by id (`get_id`/`get_index` in
// `_resolve_active_leaf`, `_effective_parent_id`, `path_to_root`). The same
// rules on folders the real SDK wrote, with its recorded verdicts, are in
// fixtures/fuzz/ (tests/fuzz_regressions.rs).

#[test]
fn a_second_copy_as_the_fallback_leaf_walks_from_the_first_copy() {
    // 0 <- 1 <- 2, then index 3 is a second copy of event 1's id: the leaf
    // fallback returns get_id(3) = id of 1, and path_to_root starts at index 1.
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(&b));
    c.write_raw(3, &b, &msg(&b, Some(&a)));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 1]);
    // 1.31-1.34: the last event unless it has a parent_id; legacy events here
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", None);
    c.write_raw(2, &a, &msg(&a, None));
    assert_eq!(agent_view(c.path(), OLD_TREE).unwrap(), vec![0]);
}

#[test]
fn a_legacy_predecessor_that_is_a_second_copy_continues_from_the_first_copy() {
    // legacy chain 0,1,2,3 where index 2 repeats the id of index 0: event 3's
    // parent is get_id(2) = id of 0, so the walk is 3 -> 0 and skips 1 and 2.
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", None);
    c.write_raw(2, &a, &msg(&a, None));
    let l = eid(3);
    c.write_raw(3, &l, &msg(&l, None));
    assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0, 3]);
}

#[test]
fn the_load_error_comes_from_the_first_copy_the_sdk_reads() {
    // 0: id A, unreadable; 1: a new root; 2: a readable second copy of A
    // (legacy); 3: legacy, so its parent is get_id(2) = A, which resolves to
    // index 0: the walk 3 -> 0 fails on index 0, never reading 2 or 1.
    let c = Conv::new(json!({}));
    let a = eid(0);
    c.write_raw(0, &a, "{\"id\": \"trunc");
    let b = eid(1);
    c.write_raw(1, &b, &msg(&b, Some("__root__")));
    c.write_raw(2, &a, &msg(&a, None));
    let l = eid(3);
    c.write_raw(3, &l, &msg(&l, None));
    assert!(matches!(
        agent_view(c.path(), NEW),
        Err(LoadError::Read { idx: 0, .. })
    ));
}

#[test]
fn head_is_empty_is_read_as_pydantic_reads_a_bool() {
    // verified against the real 1.58.2 ConversationState.model_validate
    // (fuzz_diff.py's HEAD_IS_EMPTY pool): lax true, lax false, errors
    for v in [
        json!(true),
        json!(1),
        json!(1.0),
        json!("yes"),
        json!("True"),
        json!("on"),
        json!("Y"),
        json!("t"),
        json!("1"),
    ] {
        let mut c = Conv::new(json!({"head_is_empty": v}));
        c.push("MessageEvent", None);
        assert_eq!(
            agent_view(c.path(), NEW).unwrap(),
            Vec::<usize>::new(),
            "{v}"
        );
    }
    for v in [
        json!(false),
        json!(0),
        json!(0.0),
        json!("no"),
        json!("FALSE"),
        json!("off"),
        json!("n"),
        json!("f"),
        json!("0"),
    ] {
        let mut c = Conv::new(json!({"head_is_empty": v}));
        c.push("MessageEvent", None);
        assert_eq!(agent_view(c.path(), NEW).unwrap(), vec![0], "{v}");
    }
    for v in [
        json!(null),
        json!(2),
        json!(-1),
        json!(0.5),
        json!(""),
        json!(" true"),
        json!("tru"),
        json!("1.0"),
        json!([]),
        json!({}),
    ] {
        let mut c = Conv::new(json!({"head_is_empty": v}));
        c.push("MessageEvent", None);
        let err = agent_view(c.path(), NEW).unwrap_err();
        assert_eq!(err.exception(), "ValidationError", "{v}: {err:?}");
    }
}

#[test]
fn pre_tree_releases_ignore_the_tree_keys_of_base_state() {
    // 1.29.3's ConversationState has neither field and ignores unknown keys
    for state in [
        json!({"leaf_event_id": 5}),
        json!({"leaf_event_id": "nowhere"}),
        json!({"head_is_empty": null}),
        json!({"head_is_empty": true}),
    ] {
        let mut c = Conv::new(state.clone());
        c.push("MessageEvent", None);
        c.push("MessageEvent", None);
        assert_eq!(
            agent_view(c.path(), "1.29.3").unwrap(),
            vec![0, 1],
            "{state}"
        );
    }
    let mut c = Conv::new(json!({"leaf_event_id": 5}));
    c.push("MessageEvent", None);
    assert_eq!(
        agent_view(c.path(), NEW).unwrap_err().exception(),
        "ValidationError"
    );
}

#[test]
fn base_state_exceptions_are_the_ones_json_loads_and_pydantic_raise() {
    let c = Conv::new(json!({}));
    let write = |bytes: &[u8]| std::fs::write(c.path().join("base_state.json"), bytes).unwrap();
    let exc = || agent_view(c.path(), NEW).unwrap_err().exception();
    let good = br#"{"id": "01234567-89ab-cdef-0123-456789abcdef"}"#;
    write(&good[..20]);
    assert_eq!(exc(), "JSONDecodeError");
    write(&[b"\xef\xbb\xbf".as_slice(), good].concat());
    assert_eq!(exc(), "JSONDecodeError", "json.loads refuses a BOM");
    write(&[good.as_slice(), b"}"].concat());
    assert_eq!(exc(), "JSONDecodeError");
    write(&[good.as_slice(), b"\xff"].concat());
    assert_eq!(exc(), "UnicodeDecodeError");
    write(b"[1]");
    assert_eq!(exc(), "ValidationError");
    // validation comes before the id check: an empty id is a ValidationError
    write(br#"{"id": ""}"#);
    assert_eq!(exc(), "ValidationError");
    write(br#"{"id": 5}"#);
    assert_eq!(exc(), "ValidationError");
    let state = |v: serde_json::Value| common::valid_state(v).to_string();
    write(state(json!({"head_is_empty": null})).as_bytes());
    assert_eq!(exc(), "ValidationError");
    write(
        state(json!({"id": "ffffffff-89ab-cdef-0123-456789abcdef", "head_is_empty": null}))
            .as_bytes(),
    );
    assert_eq!(exc(), "ValidationError", "validation before the id check");
    write(state(json!({"id": "ffffffff-89ab-cdef-0123-456789abcdef"})).as_bytes());
    assert_eq!(exc(), "ValueError");
    // every UUID spelling pydantic accepts names the same conversation
    for id in [
        "0123456789ABCDEF0123456789ABCDEF",
        "{01234567-89ab-cdef-0123-456789abcdef}",
        "urn:uuid:01234567-89AB-CDEF-0123-456789ABCDEF",
    ] {
        write(state(json!({ "id": id })).as_bytes());
        assert_eq!(
            agent_view(c.path(), NEW).unwrap(),
            Vec::<usize>::new(),
            "{id}"
        );
    }
}

#[test]
fn tree_era_readers_reject_an_event_whose_id_is_the_root_sentinel() {
    let mut c = Conv::new(json!({}));
    c.push_raw(&msg("__root__", None));
    // the release's model (`_reject_reserved_id`, in the validator's schemas)
    let err = agent_view(c.path(), NEW).unwrap_err();
    assert!(matches!(err, LoadError::Read { idx: 0, .. }), "{err:?}");
    assert_eq!(err.exception(), "ValidationError");
    assert_eq!(agent_view(c.path(), "1.29.3").unwrap(), vec![0]);
}

#[test]
fn a_directory_where_a_file_should_be_raises_is_a_directory_error() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let id = eid(1);
    std::fs::create_dir(c.path().join(format!("events/event-00001-{id}.json"))).unwrap();
    assert_eq!(
        agent_view(c.path(), NEW).unwrap_err().exception(),
        "IsADirectoryError"
    );
    let c = Conv::new(json!({}));
    std::fs::remove_file(c.path().join("base_state.json")).unwrap();
    std::fs::create_dir(c.path().join("base_state.json")).unwrap();
    assert_eq!(
        agent_view(c.path(), NEW).unwrap_err().exception(),
        "IsADirectoryError"
    );
}
