//! `unknown-field`: an event with a top-level key its kind's model (of the
//! selected release) does not define; every event model forbids extra keys,
//! so the SDK refuses it. The usual cause is a downgrade. Its repair
//! (unsafe) drops every such key, keeping the value in the backup. The
//! `--server-version` cases are in tests/server_version_repairs.rs.

use serde_json::{json, Value};

use super::common::{self, agent_view, Conv};
use super::{findings, fixture_conv, found, plan, repair_here};

/// Message 0, then message 1 carrying `extra` (top-level keys), then
/// message 2 below it, the HEAD there.
fn log(extra: Value) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = common::eid(1);
    let mut ev = json!({"id": b, "timestamp": "2026-01-01T00:00:00", "source": "user",
                        "parent_id": a, "kind": "MessageEvent"});
    ev["llm_message"] = common::required_fields("MessageEvent")["llm_message"].clone();
    for (k, v) in extra.as_object().unwrap() {
        ev[k] = v.clone();
    }
    c.push_raw(&ev.to_string());
    let last = c.push("MessageEvent", Some(&b));
    c.set_state(json!({"leaf_event_id": last}));
    c
}

/// clean-tree was written by 1.58.2, whose ObservationEvent carries
/// `extended_content`: unknown to 1.33.0's model, known to 1.58.2's.
#[test]
fn a_newer_releases_field_is_unknown_to_an_older_release_only() {
    let conv = fixture_conv("clean-tree");
    let obs = common::event_at(&conv, 3);
    let v: Value = serde_json::from_slice(&std::fs::read(obs).unwrap()).unwrap();
    assert!(v.get("extended_content").is_some());
    let under = |version: &str| -> usize {
        findings(&conv, version)
            .iter()
            .filter(|(c, _)| c == "unknown-field")
            .count()
    };
    assert!(under("1.33.0") >= 1);
    assert_eq!(under("1.58.2"), 0);
}

#[test]
fn an_extra_key_on_the_agents_branch_is_an_error_and_none_is_nothing() {
    let c = log(json!({"bogus_key": 1}));
    assert_eq!(found(c.path(), "unknown-field"), ["error"]);
    assert!(agent_view(c.path(), "1.58.2").is_err());
    assert!(found(log(json!({})).path(), "unknown-field").is_empty());
}

/// Both keys go at once (the SDK names only the first); the rest of the
/// event stays.
#[test]
fn every_extra_key_is_dropped_with_unsafe_fixes_only() {
    let c = log(json!({"bogus_key": 1, "other_key": "x"}));
    let (_, out) = plan(c.path(), "unknown-field", &[]);
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: unknown-field ×1 (unsafe: --unsafe-fixes)"),
        "{out}"
    );
    repair_here(c.path(), &["--unsafe-fixes"]);
    let ev: Value =
        serde_json::from_slice(&std::fs::read(common::event_at(c.path(), 1)).unwrap()).unwrap();
    assert!(
        ev.get("bogus_key").is_none() && ev.get("other_key").is_none(),
        "{ev}"
    );
    assert_eq!(ev["id"], common::eid(1));
    assert_eq!(ev["llm_message"]["role"], "user");
    assert!(found(c.path(), "unknown-field").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}
