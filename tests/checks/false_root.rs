//! `false-root`: a 1.31–1.34 server resuming a flat (pre-tree) log stamped
//! its first new event `parent_id: "__root__"` (#4057), cutting the older
//! events out of the agent's view; its safe repair re-links that event to the
//! last real event before it. A deliberate `navigate_to(None)` in a tree-era
//! log has the same `__root__` and is left alone (`abandoned-branch`).

use serde_json::json;

use super::common::{self, agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Two flat messages (no `parent_id`, as before 1.31), a state-sync record
/// parented to the second, then `__root__` and one message below it, the
/// HEAD there. With `tree_era`, the second message names the first as its
/// parent: a log the tree-era SDK wrote, where `__root__` is deliberate.
fn resumed(tree_era: bool) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", tree_era.then_some(a.as_str()));
    c.push("ConversationStateUpdateEvent", Some(&b));
    let root = c.push("MessageEvent", Some("__root__"));
    let last = c.push("MessageEvent", Some(&root));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

#[test]
fn the_fixture_is_a_confirmed_false_root() {
    assert_eq!(found(&fixture_conv("false-root"), "false-root"), ["error"]);
    // the same `__root__` after navigate_to(None) in a tree-era log
    assert!(found(&fixture_conv("deliberate-root"), "false-root").is_empty());
    assert!(found(&fixture_conv("clean-tree"), "false-root").is_empty());
}

#[test]
fn a_root_over_a_flat_log_is_found_and_over_a_tree_era_log_is_not() {
    let flat = resumed(false);
    assert_eq!(found(flat.path(), "false-root"), ["error"]);
    // the agent sees the root and the message below it only
    assert_eq!(agent_view(flat.path(), "1.58.2").unwrap(), vec![3, 4]);
    let tree = resumed(true);
    assert!(found(tree.path(), "false-root").is_empty());
}

/// The plan re-links the root to the message before the state-sync record;
/// the repair does so, and the agent then sees every message (the record
/// stays a side branch of message 1, as state-sync records are).
#[test]
fn the_repair_relinks_the_root_to_the_last_real_event() {
    let c = resumed(false);
    let (code, out) = plan(c.path(), "false-root", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("re-link event 00003 to event 00001 ({})", eid(1))),
        "{out}"
    );
    super::repair_here(c.path(), &[]);
    let root: serde_json::Value =
        serde_json::from_slice(&std::fs::read(common::event_at(c.path(), 3)).unwrap()).unwrap();
    assert_eq!(root["parent_id"], eid(1));
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 3, 4]);
    assert!(found(c.path(), "false-root").is_empty());
}

/// The fixture repaired by a safe run: the branch the real SDK loaded from
/// the repaired fixture (fixtures/repairs.json), and no false root left.
#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let (_tmp, conv, out) = repaired("false-root", &[]);
    assert!(out.contains("re-link event 00008 to event 00004"), "{out}");
    assert!(found(&conv, "false-root").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("false-root", &[])
    );
}

/// An event before the root that cannot be read makes it only probable: a
/// warning whose repair a safe run lists and leaves to `--unsafe-fixes`.
#[test]
fn an_unreadable_event_before_the_root_makes_it_probable_and_unsafe() {
    let conv = fixture_conv("false-root-damaged");
    assert_eq!(found(&conv, "false-root"), ["warning"]);
    let (_, out) = plan(&conv, "false-root", &[]);
    assert!(
        out.contains("unsafe    [false-root]") && out.contains("with --unsafe-fixes: re-link"),
        "{out}"
    );
    let (_tmp, conv, _) = repaired("false-root-damaged", &["--unsafe-fixes"]);
    assert!(found(&conv, "false-root").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("false-root-damaged", &["--unsafe-fixes"])
    );
}
