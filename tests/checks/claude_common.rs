//! Shared by the claude-* homes: a session's findings as (check, severity,
//! where), read from fixtures/claude/sessions (recorded with the real
//! client, tests/claude.rs) or from bytes a test built.

use convo_doctor::claude::{checks, session, view};

pub fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/claude/sessions")
        .join(name);
    std::fs::read(p).unwrap()
}

pub fn findings(bytes: Vec<u8>) -> Vec<(String, String, String)> {
    let s = session::parse(bytes);
    let v = view::build(&s);
    checks::run(&s, &v, &|_: &str| true)
        .into_iter()
        .map(|f| {
            (
                f.check.to_string(),
                f.severity.as_str().to_string(),
                f.file.clone(),
            )
        })
        .collect()
}

/// `(check, severity)` pairs only.
pub fn kinds(bytes: Vec<u8>) -> Vec<(String, String)> {
    findings(bytes)
        .into_iter()
        .map(|(c, s, _)| (c, s))
        .collect()
}
