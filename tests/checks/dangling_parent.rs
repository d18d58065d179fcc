//! `dangling-parent`: a `parent_id` that names no event in the log. On the
//! agent's branch the SDK cannot load the conversation (KeyError); on a
//! branch the agent left, only that branch is cut. Its repair (unsafe)
//! re-links the event to the readable event before it.

use serde_json::json;

use super::common::{agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// A missing parent's id: no event has it.
const MISSING: &str = "a953c17a-0000-4000-8000-000000000000";

/// Message 0, message 1 below it, event 2 below MISSING, message 3 below
/// `last_parent`; the HEAD at 3.
fn log(last_parent: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(MISSING));
    let last = c.push("MessageEvent", Some(last_parent));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

#[test]
fn the_fixture_cannot_load_and_a_clean_log_has_none() {
    assert_eq!(
        found(&fixture_conv("dangling-parent"), "dangling-parent"),
        ["error"]
    );
    assert!(found(&fixture_conv("clean-tree"), "dangling-parent").is_empty());
}

/// On the HEAD's walk it stops the load; off it (the HEAD's walk goes 3 → 1
/// → 0) it is a warning and the agent's view loads.
#[test]
fn only_a_dangling_parent_on_the_agents_branch_is_an_error() {
    let on = log(&eid(2));
    assert_eq!(found(on.path(), "dangling-parent"), ["error"]);
    assert!(agent_view(on.path(), "1.58.2").is_err());
    let off = log(&eid(1));
    assert_eq!(found(off.path(), "dangling-parent"), ["warning"]);
    assert_eq!(agent_view(off.path(), "1.58.2").unwrap(), vec![0, 1, 3]);
}

#[test]
fn a_safe_run_leaves_it_and_an_unsafe_run_relinks_to_the_event_before() {
    let conv = fixture_conv("dangling-parent");
    let (code, out) = plan(&conv, "dangling-parent", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("with --unsafe-fixes: re-link event 00004 (its parent is in no file) to the event before it, 00003")
            && out.contains("nothing to repair"),
        "{out}"
    );
    let (_tmp, conv, out) = repaired("dangling-parent", &["--unsafe-fixes"]);
    assert!(out.contains("re-link event 00004"), "{out}");
    assert!(found(&conv, "dangling-parent").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("dangling-parent", &["--unsafe-fixes"])
    );
}
