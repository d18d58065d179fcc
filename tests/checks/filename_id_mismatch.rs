//! `filename-id-mismatch`: the id in an event's file name differs from its
//! JSON `id`. The SDK knows the event by the file name, so a `parent_id` or
//! HEAD naming the JSON id breaks the load. Its repair (safe) renames the
//! file to its JSON id when the JSON id is the one named and the file's is
//! not.

use serde_json::json;

use super::common::{self, agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// The JSON id event 00001 carries while its file is named `eid(1)`.
const JSON_ID: &str = "d8e0a1c7-0000-4000-8000-000000000001";

/// Message 0; event 1 whose JSON id is `json_id` (its file named `eid(1)`);
/// message 2 below `json_id`, the HEAD there.
fn log(json_id: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let mut ev = json!({"id": json_id, "timestamp": "2026-01-01T00:00:00", "source": "user",
                        "parent_id": a, "kind": "MessageEvent"});
    ev["llm_message"] = common::required_fields("MessageEvent")["llm_message"].clone();
    c.push_raw(&ev.to_string());
    let last = c.push("MessageEvent", Some(json_id));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

#[test]
fn the_fixtures_renamed_file_is_found() {
    assert_eq!(
        found(
            &fixture_conv("filename-id-mismatch"),
            "filename-id-mismatch"
        )
        .len(),
        1
    );
    assert!(found(&fixture_conv("clean-tree"), "filename-id-mismatch").is_empty());
}

/// A child naming the JSON id cannot be found by it: an error; the same log
/// with matching ids has no finding.
#[test]
fn a_json_id_the_others_name_breaks_the_load_and_matching_ids_do_not() {
    let broken = log(JSON_ID);
    assert_eq!(found(broken.path(), "filename-id-mismatch"), ["error"]);
    assert!(agent_view(broken.path(), "1.58.2").is_err());
    let fine = log(&eid(1));
    assert!(found(fine.path(), "filename-id-mismatch").is_empty());
}

#[test]
fn the_file_is_renamed_to_its_json_id() {
    let c = log(JSON_ID);
    let (code, out) = plan(c.path(), "filename-id-mismatch", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("event-00001-{JSON_ID}.json")),
        "{out}"
    );
    super::repair_here(c.path(), &[]);
    assert!(c
        .path()
        .join(format!("events/event-00001-{JSON_ID}.json"))
        .is_file());
    assert!(found(c.path(), "filename-id-mismatch").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}

#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let (_tmp, conv, _) = repaired("filename-id-mismatch", &[]);
    assert!(found(&conv, "filename-id-mismatch").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("filename-id-mismatch", &[])
    );
}
