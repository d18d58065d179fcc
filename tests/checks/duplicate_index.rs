//! `duplicate-index`: two files hold the same event index. The SDK reads
//! only one of them at that index. Its repair (unsafe) keeps the file the
//! SDK reads there (or the copy the other events or the HEAD name) and moves
//! the other into the backup.

use serde_json::json;

use super::common::{self, agent_branch_ids, agent_view, eid, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// An id no event names.
const OTHER: &str = "75713256-0000-4000-8000-000000000000";

/// Message 0, message 1 below it, a second file at index 1 (id OTHER) when
/// `twice`, and message 2 below message 1 (the HEAD).
fn log(twice: bool) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    if twice {
        let mut ev = json!({"id": OTHER, "timestamp": "2026-01-01T00:00:00", "source": "user",
                            "parent_id": a, "kind": "MessageEvent"});
        ev["llm_message"] = common::required_fields("MessageEvent")["llm_message"].clone();
        c.write_raw(1, OTHER, &ev.to_string());
    }
    let last = c.push("MessageEvent", Some(&b));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

#[test]
fn the_fixtures_second_file_at_00004_is_found() {
    assert_eq!(
        found(&fixture_conv("duplicate-index"), "duplicate-index"),
        ["error"]
    );
    assert!(found(&fixture_conv("clean-tree"), "duplicate-index").is_empty());
}

#[test]
fn two_files_at_one_index_are_found_and_one_is_not() {
    assert_eq!(found(log(true).path(), "duplicate-index"), ["error"]);
    assert!(found(log(false).path(), "duplicate-index").is_empty());
}

/// The copy the HEAD's walk names (`eid(1)`) stays; the other goes into the
/// backup, with `--unsafe-fixes` only.
#[test]
fn the_named_copy_stays_and_the_other_is_set_aside_with_unsafe_fixes() {
    let c = log(true);
    let stray = format!("event-00001-{OTHER}.json");
    let (_, out) = plan(c.path(), "duplicate-index", &[]);
    assert!(
        out.contains(&format!(
            "with --unsafe-fixes: move `{stray}` into the backup"
        )),
        "{out}"
    );
    super::repair_here(c.path(), &["--unsafe-fixes"]);
    assert!(!c.path().join("events").join(&stray).exists());
    assert_eq!(
        common::event_at(c.path(), 1)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap(),
        format!("event-00001-{}.json", eid(1))
    );
    assert!(found(c.path(), "duplicate-index").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}

#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let (_tmp, conv, _) = repaired("duplicate-index", &["--unsafe-fixes"]);
    assert!(found(&conv, "duplicate-index").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("duplicate-index", &["--unsafe-fixes"])
    );
}
