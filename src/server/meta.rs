//! meta.json as the agent-server reads it: `StoredConversation.model_validate_json`
//! of the release, with the pydantic model extracted from that release
//! (`data/schemas/<v>.json`, root `meta`: every field, nested objects
//! included), judged by the same validator as events and base_state.json.

use serde_json::Value;

use crate::validate::{self, scalar};
use crate::version::Version;

/// Why the release's `StoredConversation` refuses this meta.json, in a
/// sentence (`None`: it validates). Keys from the file are passed through
/// `q` (pydantic's locations name them); values are never quoted.
pub fn problem(meta: &Value, version: Version, q: &dyn Fn(&str) -> String) -> Option<String> {
    if !meta.is_object() {
        return Some("meta.json is not a JSON object".into());
    }
    let errors = validate::meta_verdict(version, meta).err()?;
    let shown: Vec<String> = errors
        .iter()
        .map(|e| match e.loc.as_str() {
            "" => format!("{} [type={}]", e.msg, e.kind),
            loc => format!("`{}`: {} [type={}]", q(loc), e.msg, e.kind),
        })
        .collect();
    Some(format!(
        "meta.json is not a valid StoredConversation of this release ({})",
        shown.join("; ")
    ))
}

/// Whether it validates (the catalog keeps the record).
pub fn valid(meta: &Value, version: Version) -> bool {
    problem(meta, version, &|s| s.to_string()).is_none()
}

/// meta.json's `id` as pydantic reads it (canonical hex), if it is a UUID.
pub fn id(meta: &Value) -> Option<String> {
    meta.get("id").and_then(|v| scalar::serde::uuid(v).ok())
}

/// meta.json carries no agent (absent or null): before 1.37 the event
/// service is rebuilt from it.
pub fn no_agent(meta: &Value) -> bool {
    meta.get("agent").is_none_or(Value::is_null)
}

/// meta.json's `created_at` makes a naive datetime (no timezone).
pub fn naive_created_at(meta: &Value) -> bool {
    meta.get("created_at")
        .and_then(|v| scalar::serde::datetime(v).ok())
        == Some(scalar::Tz::Naive)
}
