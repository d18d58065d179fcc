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

mod check;
pub mod jv;
mod schema;

pub use check::{Outcome, VError};
pub use schema::Schema;

use std::sync::OnceLock;

use serde_json::Value;

use crate::version::Version;

/// (version, JSON) for every extracted release, oldest first.
const SOURCES: &[(&str, &str)] = &[
    ("1.29.3", include_str!("../../data/schemas/1.29.3.json")),
    ("1.33.0", include_str!("../../data/schemas/1.33.0.json")),
    ("1.34.0", include_str!("../../data/schemas/1.34.0.json")),
    ("1.38.0", include_str!("../../data/schemas/1.38.0.json")),
    ("1.43.1", include_str!("../../data/schemas/1.43.1.json")),
    ("1.47.0", include_str!("../../data/schemas/1.47.0.json")),
    ("1.52.0", include_str!("../../data/schemas/1.52.0.json")),
    ("1.55.1", include_str!("../../data/schemas/1.55.1.json")),
    ("1.58.2", include_str!("../../data/schemas/1.58.2.json")),
];

type Compiled = OnceLock<Result<Schema, String>>;

/// One slot per source, compiled on first use (a run needs one release).
fn slots() -> &'static [Compiled] {
    static SLOTS: OnceLock<Vec<Compiled>> = OnceLock::new();
    SLOTS.get_or_init(|| SOURCES.iter().map(|_| OnceLock::new()).collect())
}

fn compiled(i: usize) -> &'static Result<Schema, String> {
    slots()[i].get_or_init(|| {
        let (v, text) = SOURCES[i];
        Schema::parse(text).map_err(|e| format!("data/schemas/{v}.json: {e}"))
    })
}

/// The schema of the newest extracted release not newer than `v` (the oldest
/// for older versions), or the one-line reason its data file is unusable.
pub fn schema_for(v: Version) -> Result<&'static Schema, &'static str> {
    let i = SOURCES
        .iter()
        .rposition(|(sv, _)| sv.parse::<Version>().is_ok_and(|sv| sv <= v))
        .unwrap_or(0);
    compiled(i).as_ref().map_err(|e| e.as_str())
}

/// Every schema data file that does not load, as one-line messages.
pub fn broken_schema_files() -> Vec<String> {
    (0..SOURCES.len())
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

/// The state verdict for the view (the hook `view::tree` calls): `Err` with
/// pydantic's first errors when `ConversationState` refuses base_state.json.
pub fn state_verdict(v: Version, base_state: &Value) -> Result<(), Vec<VError>> {
    let Ok(schema) = schema_for(v) else {
        return Ok(());
    };
    let mut out = state(schema, base_state);
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
    out.errors.truncate(crate::store::event::MAX_KEPT_ERRORS);
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
        for (v, _) in SOURCES {
            let v: Version = v.parse().unwrap();
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
