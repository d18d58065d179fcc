//! `legacy-tail-hazard`: a pre-tree log that a 1.31–1.34 server would cut
//! off at its next resume (the cause of `false-root`). Nothing in the folder
//! to repair: the remedy is a 1.35+ server.

use serde_json::json;

use super::common::Conv;
use super::{findings, fixture_conv, plan};

#[test]
fn legacy_tail_hazard_only_for_1_31_to_1_34() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", Some(&b));
    let old = findings(c.path(), "1.33.0");
    assert!(
        old.contains(&("legacy-tail-hazard".into(), "warning".into())),
        "{old:?}"
    );
    assert!(findings(c.path(), "1.35.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    assert!(findings(c.path(), "1.29.3")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    // a stored HEAD makes it safe
    c.set_state(json!({"leaf_event_id": b}));
    assert!(findings(c.path(), "1.33.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
}

/// The fixture under 1.33.0's rules, and no repair even with
/// `--unsafe-fixes`: the hazard is the server's, not the folder's.
#[test]
fn the_fixture_is_a_hazard_for_1_33_and_nothing_is_repaired() {
    let conv = fixture_conv("legacy-tail-hazard");
    let under = |v: &str| -> Vec<String> {
        findings(&conv, v)
            .into_iter()
            .filter(|(c, _)| c == "legacy-tail-hazard")
            .map(|(_, s)| s)
            .collect()
    };
    assert_eq!(under("1.33.0"), ["warning"]);
    assert!(under("1.58.2").is_empty());
    let (_, out) = plan(
        &conv,
        "legacy-tail-hazard",
        &["--unsafe-fixes", "--server-version", "1.33.0"],
    );
    assert!(
        out.contains("nothing to repair") && out.contains("left: legacy-tail-hazard ×1 (manual)"),
        "{out}"
    );
}
