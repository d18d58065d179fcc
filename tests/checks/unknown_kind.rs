//! `unknown-kind`: an event (or its action/observation) of a kind this SDK
//! release cannot import; the SDK refuses the whole log. Its repair (unsafe)
//! sets the event aside: the file into the backup, a placeholder in its
//! place.

use serde_json::json;

use super::common::{self, agent_branch_ids, agent_view, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Three chained messages, the middle one of kind `kind`.
fn log(kind: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push(kind, Some(&a));
    c.push("MessageEvent", Some(&b));
    c
}

#[test]
fn the_fixtures_canvas_action_and_observation_are_unknown() {
    // CanvasUIAction and CanvasUIObservation: one finding each
    assert_eq!(
        found(&fixture_conv("unknown-kind"), "unknown-kind").len(),
        2
    );
    assert!(found(&fixture_conv("clean-tree"), "unknown-kind").is_empty());
}

#[test]
fn a_kind_the_sdk_does_not_know_is_found_and_a_known_one_is_not() {
    let unknown = log("CanvasUIEvent");
    assert_eq!(found(unknown.path(), "unknown-kind").len(), 1);
    assert!(agent_view(unknown.path(), "1.58.2").is_err());
    let known = log("MessageEvent");
    assert!(found(known.path(), "unknown-kind").is_empty());
}

#[test]
fn the_event_is_set_aside_with_unsafe_fixes_only() {
    let c = log("CanvasUIEvent");
    let (_, out) = plan(c.path(), "unknown-kind", &[]);
    assert!(
        out.contains("with --unsafe-fixes: set event 00001 aside")
            && out.contains("nothing to repair"),
        "{out}"
    );
    super::repair_here(c.path(), &["--unsafe-fixes"]);
    let placeholder: serde_json::Value =
        serde_json::from_slice(&std::fs::read(common::event_at(c.path(), 1)).unwrap()).unwrap();
    assert_eq!(placeholder["kind"], "ConversationErrorEvent");
    assert_eq!(placeholder["code"], "EventQuarantined");
    assert!(found(c.path(), "unknown-kind").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}

#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let (_tmp, conv, _) = repaired("unknown-kind", &["--unsafe-fixes"]);
    assert!(found(&conv, "unknown-kind").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("unknown-kind", &["--unsafe-fixes"])
    );
}
