//! `claude-duplicate-uuid`: one uuid written twice with other content.

use super::claude_common::{findings, fixture};
use super::session_common::only;

#[test]
fn a_uuid_written_twice_with_other_content_is_a_warning() {
    let f = findings(fixture("uuid-twice.jsonl"));
    only(&f, "claude-duplicate-uuid", "warning");
}

#[test]
fn the_same_line_written_twice_is_no_finding() {
    // the client writes a line again whole (a resent record): same content
    let clean = fixture("clean.jsonl");
    let text = String::from_utf8(clean).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("\"type\":\"assistant\""))
        .unwrap()
        .to_string();
    let twice = format!("{text}{line}\n");
    assert!(findings(twice.into_bytes()).is_empty());
}
