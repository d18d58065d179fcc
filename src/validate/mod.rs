//! Validation of event files and `base_state.json` with the exact model each
//! SDK release applies, extracted from the release's pydantic-core schema by
//! `fixtures/gen/extract_schemas.py` into `data/schemas/<v>.json`.
//!
//! The SDK validates in pydantic's **Python** lax mode on the parsed JSON (an
//! event: `Event.model_validate_json`, whose kind dispatch re-validates the
//! concrete class with `model_validate(dict)`; the state:
//! `ConversationState.model_validate(json.loads(...))`), so that is what
//! [`check`] implements. Where a function validator's semantics are not
//! encoded, the result says "cannot judge" instead of guessing.

pub mod jv;
mod outcome;
pub mod scalar;
mod schema;
mod sdk;
mod walker;

pub use outcome::{Outcome, VError};
pub use schema::Schema;

use std::sync::OnceLock;

use serde_json::Value;

use crate::version::{self, Version};

/// How many validation errors a document keeps (pydantic reports them all).
pub const MAX_KEPT_ERRORS: usize = 3;

type Compiled = OnceLock<Result<Schema, String>>;

/// One slot per source, compiled on first use (a run needs one release).
fn slots() -> &'static [Compiled] {
    static SLOTS: OnceLock<Vec<Compiled>> = OnceLock::new();
    SLOTS.get_or_init(|| version::extracted().map(|_| OnceLock::new()).collect())
}

fn compiled(i: usize) -> &'static Result<Schema, String> {
    slots()[i].get_or_init(|| {
        let (_, v, data) = version::extracted()
            .nth(i)
            .unwrap_or_else(|| unreachable!("one slot per extracted release"));
        Schema::parse(data.schema).map_err(|e| format!("data/schemas/{v}.json: {e}"))
    })
}

/// The schema of the newest extracted release not newer than `v` (the oldest
/// for older versions), or the one-line reason its data file is unusable.
pub fn schema_for(v: Version) -> Result<&'static Schema, &'static str> {
    compiled(version::extracted_for(v))
        .as_ref()
        .map_err(|e| e.as_str())
}

/// Every schema data file that does not load, as one-line messages.
pub fn broken_schema_files() -> Vec<String> {
    (0..slots().len())
        .filter_map(|i| compiled(i).as_ref().err().cloned())
        .collect()
}

/// Validate one event (the parsed JSON of its file) as `Event.model_validate_json`.
pub fn event(schema: &Schema, v: &Value) -> Outcome {
    event_tree(schema, &jv::Value::from_serde(v))
}

/// [`event`] on the borrowed tree the event reader parses (see [`jv`]).
pub fn event_tree(schema: &Schema, v: &jv::Value) -> Outcome {
    schema.validate(schema.event_root, v, true)
}

/// Validate `base_state.json` as `ConversationState.model_validate(json.loads(..))`.
pub fn state(schema: &Schema, v: &Value) -> Outcome {
    schema.validate(schema.state_root, &jv::Value::from_serde(v), false)
}

/// Parse and validate an event file's text for release `v`. `None` when the
/// schema data is unusable or the text does not parse here (other checks
/// report unreadable files).
pub fn event_text(v: Version, text: &str) -> Option<Outcome> {
    let schema = schema_for(v).ok()?;
    let value: jv::Value = serde_json::from_str(text).ok()?;
    Some(event_tree(schema, &value))
}

/// Validate meta.json as the agent-server's
/// `StoredConversation.model_validate_json`.
pub fn meta(schema: &Schema, v: &Value) -> Outcome {
    schema.validate(
        schema.meta_root,
        &jv::Value::from_serde(v),
        schema.meta_json,
    )
}

/// The state verdict for the view (the hook `view::tree` calls): `Err` with
/// pydantic's first errors when `ConversationState` refuses base_state.json.
pub fn state_verdict(v: Version, base_state: &Value) -> Result<(), Vec<VError>> {
    let Ok(schema) = schema_for(v) else {
        return Ok(());
    };
    first_errors(state(schema, base_state))
}

/// The meta.json verdict for the listing: `Err` with pydantic's first errors
/// when the release's `StoredConversation` refuses it (a place it cannot
/// judge counts as accepted).
pub fn meta_verdict(v: Version, meta_json: &Value) -> Result<(), Vec<VError>> {
    let Ok(schema) = schema_for(v) else {
        return Ok(());
    };
    first_errors(meta(schema, meta_json))
}

/// Whether `value` validates as field `name` of the release's
/// `ConversationState` (the agent-server's catalog calls
/// `ConversationExecutionStatus(value)` on base_state.json's status: for a
/// str enum, the same members by value). `true` when the data is unusable.
pub fn state_field_valid(v: Version, name: &str, value: &Value) -> bool {
    let Ok(schema) = schema_for(v) else {
        return true;
    };
    match schema.field(schema.state_root, name) {
        Some(node) => schema
            .validate(node, &jv::Value::from_serde(value), false)
            .is_valid(),
        None => true,
    }
}

fn first_errors(mut out: Outcome) -> Result<(), Vec<VError>> {
    if out.errors.is_empty() {
        return Ok(());
    }
    // a crash (not a ValidationError) aborts the validation: it is what the SDK raises
    if let Some(crash) = out
        .errors
        .iter()
        .find(|e| e.exception() != "ValidationError")
    {
        return Err(vec![crash.clone()]);
    }
    out.errors.truncate(MAX_KEPT_ERRORS);
    Err(out.errors)
}

/// The keys of base_state.json that `ConversationState` of release `v` does
/// not require: dropping one makes the SDK use its declared default.
pub fn state_keys_with_default(v: Version) -> Vec<String> {
    let Ok(schema) = schema_for(v) else {
        return Vec::new();
    };
    let mut node = schema.state_root;
    for _ in 0..16 {
        match &schema.nodes[node] {
            schema::Node::Model { fields, .. } => {
                return fields
                    .iter()
                    .filter(|f| !f.required)
                    .map(|f| f.key.clone())
                    .collect()
            }
            schema::Node::Fn {
                inner: Some(inner), ..
            } => node = *inner,
            schema::Node::Chain(steps) if !steps.is_empty() => node = steps[steps.len() - 1],
            _ => break,
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_file_loads() {
        assert!(
            broken_schema_files().is_empty(),
            "{:?}",
            broken_schema_files()
        );
        for (v, _, _) in version::extracted() {
            assert!(schema_for(v).is_ok(), "{v}");
        }
    }

    #[test]
    fn an_unknown_client_action_kind_is_marked_for_the_reader() {
        let schema = schema_for(crate::version::NEWEST).unwrap();
        let ev: Value = serde_json::from_str(
            r#"{"id":"x","kind":"ActionEvent","source":"agent","thought":[],"tool_name":"t",
                "tool_call_id":"c","llm_response_id":"r",
                "tool_call":{"id":"c","name":"t","arguments":"{}","origin":"completion"},
                "action":{"kind":"ClientAction_mytool","x":1}}"#,
        )
        .unwrap();
        let out = event(schema, &ev);
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert_eq!(out.errors[0].loc, "action");
        assert_eq!(
            out.errors[0].client_kind.as_deref(),
            Some("ClientAction_mytool")
        );
        // any other unknown kind is not a client one
        let mut other = ev.clone();
        other["action"]["kind"] = Value::from("NoSuchAction");
        assert_eq!(event(schema, &other).errors[0].client_kind, None);
    }

    #[test]
    fn a_corrupt_schema_is_a_one_line_error() {
        for text in [
            "",
            "{",
            "[]",
            r#"{"roots":{}}"#,
            r#"{"roots":{"event":{"t":"ref","r":"nope"},"state":{"t":"any"}},"defs":{}}"#,
            r#"{"roots":{"event":{"t":"wat"},"state":{"t":"any"}},"defs":{}}"#,
        ] {
            let Err(e) = Schema::parse(text) else {
                panic!("{text:?} must fail")
            };
            assert!(!e.contains('\n') && !e.is_empty(), "{e}");
        }
    }
}
