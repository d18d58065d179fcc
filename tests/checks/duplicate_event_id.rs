//! `duplicate-event-id`: two events carry the same id; the SDK resolves the
//! id to one of them only. Its repair (unsafe) gives the later copy a new id
//! (a rename) or, when it is byte for byte the first, sets it aside.

use serde_json::json;

use super::common::{self, agent_branch_ids, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Messages 0 and 1 chained, then at index 2 a message whose id (in its
/// name and JSON) is `id`, below message 1.
fn log(id: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    let mut ev = json!({"id": id, "timestamp": "2026-01-02T00:00:00", "source": "user",
                        "parent_id": b, "kind": "MessageEvent"});
    ev["llm_message"] = common::required_fields("MessageEvent")["llm_message"].clone();
    c.write_raw(2, id, &ev.to_string());
    c
}

#[test]
fn the_fixtures_reused_id_is_a_warning() {
    assert_eq!(
        found(&fixture_conv("duplicate-event-id"), "duplicate-event-id"),
        ["warning"]
    );
    assert!(found(&fixture_conv("clean-tree"), "duplicate-event-id").is_empty());
}

#[test]
fn a_reused_id_is_found_and_a_new_one_is_not() {
    assert_eq!(
        found(log(&eid(0)).path(), "duplicate-event-id"),
        ["warning"]
    );
    assert!(found(log(&eid(2)).path(), "duplicate-event-id").is_empty());
}

/// A safe run leaves it; `--unsafe-fixes` renames the fixture's later copy
/// (00005) to a new id, and the real SDK loaded the result as we do.
#[test]
fn the_later_copy_gets_a_new_id_with_unsafe_fixes_only() {
    let (_, out) = plan(
        &fixture_conv("duplicate-event-id"),
        "duplicate-event-id",
        &[],
    );
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: duplicate-event-id ×1 (unsafe: --unsafe-fixes)"),
        "{out}"
    );
    let (_tmp, conv, out) = repaired("duplicate-event-id", &["--unsafe-fixes"]);
    assert!(
        out.contains("rename from") && out.contains("event-00005-ac211f42"),
        "{out}"
    );
    assert!(found(&conv, "duplicate-event-id").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("duplicate-event-id", &["--unsafe-fixes"])
    );
}
