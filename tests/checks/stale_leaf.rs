//! `stale-leaf`: base_state.json's `leaf_event_id` (the HEAD) names an event
//! the SDK cannot find, and the conversation fails to load (KeyError). Its
//! repair (unsafe) points the HEAD at the last real event.

use serde_json::json;

use super::common::{agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Three chained messages, the HEAD at `leaf`.
fn log(leaf: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(&b));
    c.set_state(json!({"leaf_event_id": leaf}));
    c
}

#[test]
fn the_fixture_names_a_missing_head() {
    assert_eq!(found(&fixture_conv("stale-leaf"), "stale-leaf"), ["error"]);
    assert!(found(&fixture_conv("clean-tree"), "stale-leaf").is_empty());
}

#[test]
fn a_head_naming_no_event_is_found_and_one_naming_an_event_is_not() {
    let stale = log("0c2a7f8f-0000-4000-8000-000000000000");
    assert_eq!(found(stale.path(), "stale-leaf"), ["error"]);
    assert!(agent_view(stale.path(), "1.58.2").is_err());
    // a HEAD on an earlier event is navigate_to's, not stale
    let earlier = log(&eid(1));
    assert!(found(earlier.path(), "stale-leaf").is_empty());
    assert_eq!(agent_view(earlier.path(), "1.58.2").unwrap(), vec![0, 1]);
}

#[test]
fn the_head_moves_to_the_last_real_event_with_unsafe_fixes_only() {
    let c = log("0c2a7f8f-0000-4000-8000-000000000000");
    let (_, out) = plan(c.path(), "stale-leaf", &[]);
    assert!(
        out.contains("with --unsafe-fixes: point the HEAD at the last real event, 00002")
            && out.contains("nothing to repair"),
        "{out}"
    );
    let (_tmp, conv, _) = repaired("stale-leaf", &["--unsafe-fixes"]);
    assert!(found(&conv, "stale-leaf").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("stale-leaf", &["--unsafe-fixes"])
    );
}
