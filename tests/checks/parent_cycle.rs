//! `parent-cycle`: events whose `parent_id`s point at each other in a loop
//! (the SDK's walk from the HEAD never ends: it refuses to load). Its repair
//! (unsafe) re-links each event whose parent comes after it to the event
//! before it.

use serde_json::json;

use super::common::{agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Message 0, then 1 and 2 pointing at each other (1's parent is 2), the
/// HEAD at 2; with `forward` false, 1's parent is 0: a plain chain.
fn log(forward: bool) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push(
        "MessageEvent",
        Some(if forward { eid(2) } else { a }.as_str()),
    );
    let last = c.push("MessageEvent", Some(&eid(1)));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

#[test]
fn the_fixture_has_a_loop_on_the_agents_branch() {
    assert_eq!(
        found(&fixture_conv("parent-cycle"), "parent-cycle"),
        ["error"]
    );
    assert!(found(&fixture_conv("clean-tree"), "parent-cycle").is_empty());
}

#[test]
fn a_loop_is_found_and_a_chain_is_not() {
    let looped = log(true);
    assert_eq!(found(looped.path(), "parent-cycle"), ["error"]);
    assert!(agent_view(looped.path(), "1.58.2").is_err());
    let chain = log(false);
    assert!(found(chain.path(), "parent-cycle").is_empty());
    assert_eq!(agent_view(chain.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}

#[test]
fn the_forward_link_is_relinked_with_unsafe_fixes_only() {
    let c = log(true);
    let (_, out) = plan(c.path(), "parent-cycle", &[]);
    assert!(
        out.contains("with --unsafe-fixes: re-link event 00001 (its parent, event 00002, comes after it: a loop) to the event before it, 00000"),
        "{out}"
    );
    let (_tmp, conv, _) = repaired("parent-cycle", &["--unsafe-fixes"]);
    assert!(found(&conv, "parent-cycle").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("parent-cycle", &["--unsafe-fixes"])
    );
}

/// An event that names itself as its parent (swapped contents: its
/// `parent_id` is the id in its own file name) is no forward link to
/// re-link: the repair leaves it and says what a human decides.
#[test]
fn an_event_that_is_its_own_parent_is_left_with_what_to_decide() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let own = c.push("MessageEvent", Some(&eid(1)));
    c.set_state(json!({"leaf_event_id": own}));
    assert_eq!(found(c.path(), "parent-cycle"), ["error"]);
    let (_, out) = plan(c.path(), "parent-cycle", &["--unsafe-fixes"]);
    assert!(
        out.contains("event 00001 names itself as its parent")
            && out.contains("a human decides which event it follows"),
        "{out}"
    );
    assert!(!out.contains("re-link event 00001"), "{out}");
}
