//! `abandoned-branch`: events on branches the agent left (navigate_to, a
//! fork) or before a deliberate new root. The SDK's own design: information,
//! and nothing to repair.

use serde_json::json;

use super::common::{agent_view, Conv};
use super::{fixture_conv, found, plan};

/// Message 0, message 1 below it, then two children of 1: message 2 and
/// (when `left`) message 3, which holds the HEAD; otherwise the HEAD at 2.
fn log(left: bool) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    let mut head = c.push("MessageEvent", Some(&b));
    if left {
        head = c.push("MessageEvent", Some(&b));
    }
    c.set_state(json!({"leaf_event_id": head}));
    c
}

#[test]
fn the_fixtures_left_branch_and_deliberate_root_are_information() {
    for name in ["abandoned-branch", "deliberate-root"] {
        assert_eq!(
            found(&fixture_conv(name), "abandoned-branch"),
            ["info"],
            "{name}"
        );
    }
    assert!(found(&fixture_conv("clean-tree"), "abandoned-branch").is_empty());
}

/// Message 2 is left when the HEAD moved to its sibling; with the HEAD on
/// it, nothing is left.
#[test]
fn a_sibling_holding_the_head_leaves_a_branch_and_a_chain_does_not() {
    let left = log(true);
    assert_eq!(found(left.path(), "abandoned-branch"), ["info"]);
    assert_eq!(agent_view(left.path(), "1.58.2").unwrap(), vec![0, 1, 3]);
    let chain = log(false);
    assert!(found(chain.path(), "abandoned-branch").is_empty());
}

#[test]
fn nothing_is_repaired_even_with_unsafe_fixes() {
    let c = log(true);
    let (code, out) = plan(c.path(), "abandoned-branch", &["--unsafe-fixes"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), "nothing to repair", "{out}");
}
