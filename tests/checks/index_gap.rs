//! `index-gap`: an event index with no file. The SDK's log stops at the gap,
//! so every event after it is invisible. Its repair (safe) puts a
//! placeholder (a ConversationErrorEvent the LLM never sees) at the missing
//! index, under the id the next event names as its parent.

use serde_json::{json, Value};

use super::common::{self, agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Four chained messages (no HEAD saved), then the file at `missing` removed.
fn log_without(missing: usize) -> Conv {
    let mut c = Conv::new(json!({}));
    let mut parent: Option<String> = None;
    for _ in 0..4 {
        parent = Some(c.push("MessageEvent", parent.as_deref()));
    }
    std::fs::remove_file(common::event_at(c.path(), missing)).unwrap();
    c
}

#[test]
fn the_fixture_has_a_gap_and_a_clean_log_has_none() {
    assert_eq!(found(&fixture_conv("index-gap"), "index-gap"), ["error"]);
    assert!(found(&fixture_conv("clean-tree"), "index-gap").is_empty());
}

/// A missing middle index hides the events after it; a missing last index is
/// only a shorter log.
#[test]
fn a_missing_middle_index_is_a_gap_and_a_missing_last_one_is_not() {
    let gap = log_without(2);
    assert_eq!(found(gap.path(), "index-gap"), ["error"]);
    let shorter = log_without(3);
    assert!(found(shorter.path(), "index-gap").is_empty());
    assert_eq!(agent_view(shorter.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}

#[test]
fn the_gap_is_filled_with_a_placeholder_under_the_id_the_next_event_names() {
    let c = log_without(2);
    let (code, out) = plan(c.path(), "index-gap", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("fill the missing index 00002 with a placeholder"),
        "{out}"
    );
    super::repair_here(c.path(), &[]);
    let placeholder: Value =
        serde_json::from_slice(&std::fs::read(common::event_at(c.path(), 2)).unwrap()).unwrap();
    assert_eq!(placeholder["id"], eid(2), "the id event 00003 names");
    assert_eq!(placeholder["parent_id"], eid(1));
    assert_eq!(placeholder["kind"], "ConversationErrorEvent");
    assert!(found(c.path(), "index-gap").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2, 3]);
}

#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let (_tmp, conv, _) = repaired("index-gap", &[]);
    assert!(found(&conv, "index-gap").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("index-gap", &[])
    );
}
