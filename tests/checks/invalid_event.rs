//! `invalid-event`: an event whose JSON is fine but which the release's
//! pydantic model refuses (a missing or mistyped field, a value outside its
//! Literal, a nested action that does not fit its kind). Each
//! fixtures/validation case was judged by the real SDK; its repair (unsafe)
//! sets the event aside, as for `unreadable-event`.

use super::common::agent_branch_ids;
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};

/// Cases the real SDK refuses, each repaired with `--unsafe-fixes` in
/// fixtures/repairs.json.
const REFUSED: &[&str] = &[
    "validation/missing-llm-message",
    "validation/source-bogus",
    "validation/timestamp-number",
    "validation/action-no-kind",
];

/// Cases the real SDK accepts under pydantic's lax rules.
const LAX: &[&str] = &[
    "validation/lax-message-content-string",
    "validation/lax-message-extra-key",
];

#[test]
fn what_the_model_refuses_is_found_and_what_lax_rules_accept_is_not() {
    for name in REFUSED {
        assert_eq!(
            found(&fixture_conv(name), "invalid-event").len(),
            1,
            "{name}"
        );
    }
    for name in LAX {
        assert!(
            found(&fixture_conv(name), "invalid-event").is_empty(),
            "{name}"
        );
    }
    assert!(found(&fixture_conv("clean-tree"), "invalid-event").is_empty());
}

#[test]
fn the_event_is_set_aside_with_unsafe_fixes_only() {
    for name in REFUSED {
        let (_, out) = plan(&fixture_conv(name), "invalid-event", &[]);
        assert!(
            out.contains("nothing to repair")
                && out.contains("left: invalid-event ×1 (unsafe: --unsafe-fixes)"),
            "{name}: {out}"
        );
        let (_tmp, conv, _) = repaired(name, &["--unsafe-fixes"]);
        assert!(found(&conv, "invalid-event").is_empty(), "{name}");
        assert_eq!(
            agent_branch_ids(&conv).unwrap(),
            sdk_branch_after(name, &["--unsafe-fixes"]),
            "{name}"
        );
    }
}
