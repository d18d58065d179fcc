//! Shared by the claude-* homes: a session's findings as (check, severity,
//! where), read from fixtures/claude/sessions (recorded with the real
//! client, tests/claude.rs) or from bytes a test built.

use convo_doctor::claude::{checks, session, view};

use super::session_common::triples;

pub fn fixture(name: &str) -> Vec<u8> {
    super::session_common::fixture("claude", name)
}

pub fn findings(bytes: Vec<u8>) -> Vec<(String, String, String)> {
    let s = session::parse(bytes);
    let v = view::build(&s);
    triples(checks::run(&s, &v, &|_: &str| true))
}

/// `(check, severity)` pairs only.
pub fn kinds(bytes: Vec<u8>) -> Vec<(String, String)> {
    super::session_common::kinds(findings(bytes))
}
