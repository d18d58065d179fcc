//! Shared by the codex-* homes: a rollout's findings as (check, severity,
//! where), read from fixtures/codex/sessions (written and judged by the real
//! Codex CLI, tests/codex.rs) or from bytes a test built.

use convo_doctor::codex::{checks, session, view};

pub fn fixture(name: &str) -> Vec<u8> {
    super::session_common::fixture("codex", name)
}

/// The file name the fixtures' rollout had (its id and start time).
pub fn rollout_name() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/codex/sessions/verdicts.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["rollout"].as_str().unwrap().to_string()
}

pub fn findings(bytes: Vec<u8>) -> Vec<(String, String, String)> {
    let r = session::parse(bytes);
    let name = rollout_name();
    let id = session::name_parts(std::path::Path::new(&name)).map(|p| p.0);
    let v = view::build(&r, id.as_deref());
    super::session_common::triples(checks::run(&r, &v, &|_: &str| true))
}

/// `(check, severity)` pairs only.
pub fn kinds(bytes: Vec<u8>) -> Vec<(String, String)> {
    super::session_common::kinds(findings(bytes))
}

/// The repaired bytes of a fixture, planned and applied as `repair` does
/// (every check selected), under the rollout's own file name.
pub fn repaired(bytes: Vec<u8>) -> Option<Vec<u8>> {
    use convo_doctor::codex::{repair, Analysis};
    let name = rollout_name();
    let a = Analysis::of(session::parse(bytes), std::path::Path::new(&name));
    let edits = repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
    if edits.is_empty() {
        return None;
    }
    let out = repair::apply(&a.rollout, &edits).unwrap();
    let id = a.file.as_ref().map(|f| f.0.as_str());
    repair::prove(&a.view, &edits, &out, id).unwrap();
    Some(out)
}
