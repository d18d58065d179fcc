//! `invalid-state`: a base_state.json that parses but that the release's
//! `ConversationState` model refuses (a value outside its enum, a mistyped
//! field, a required field missing); the SDK does not load the conversation.
//! Its repair (unsafe) drops each refused field that has a default; a
//! refused required field is left to a human.

use serde_json::{json, Value};

use super::common::{agent_view, Conv};
use super::{found, plan, repair_here};

/// Two chained messages under a state with `fields` set.
fn conv(fields: Value) -> Conv {
    let mut c = Conv::new(fields);
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    c
}

fn state(c: &Conv) -> Value {
    serde_json::from_slice(&std::fs::read(c.path().join("base_state.json")).unwrap()).unwrap()
}

#[test]
fn a_status_outside_the_enum_is_found_and_a_real_one_is_not() {
    let bad = conv(json!({"execution_status": "bogus"}));
    assert_eq!(found(bad.path(), "invalid-state"), ["error"]);
    assert!(agent_view(bad.path(), "1.58.2").is_err());
    let good = conv(json!({"execution_status": "paused"}));
    assert!(found(good.path(), "invalid-state").is_empty());
    // pydantic's lax rules take an integer written as a string
    let lax = conv(json!({"max_iterations": "500"}));
    assert!(found(lax.path(), "invalid-state").is_empty());
}

/// `execution_status` has a default (idle): dropped with `--unsafe-fixes`.
#[test]
fn a_refused_field_with_a_default_is_dropped_with_unsafe_fixes_only() {
    let c = conv(json!({"execution_status": "bogus"}));
    let (_, out) = plan(c.path(), "invalid-state", &[]);
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: invalid-state ×1 (unsafe: --unsafe-fixes)"),
        "{out}"
    );
    repair_here(c.path(), &["--unsafe-fixes"]);
    let s = state(&c);
    assert!(
        s.get("execution_status").is_none(),
        "{}",
        s["execution_status"]
    );
    assert!(s["agent"].is_object());
    assert!(found(c.path(), "invalid-state").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1]);
}

/// `agent` is required: no value can be invented, nothing is written.
#[test]
fn a_refused_required_field_is_left_to_a_human() {
    let c = conv(json!({"agent": null}));
    assert_eq!(found(c.path(), "invalid-state"), ["error"]);
    let (_, out) = plan(c.path(), "invalid-state", &["--unsafe-fixes"]);
    assert!(!out.contains("would fix"), "{out}");
    assert!(state(&c)["agent"].is_null());
}
