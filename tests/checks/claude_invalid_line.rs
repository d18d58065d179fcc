//! `claude-invalid-line`: a line the client skips (not JSON, or the last
//! line cut short by a crash).

use super::claude_common::{findings, fixture};
use super::session_common::only;

#[test]
fn a_line_that_is_not_json_is_named_by_its_number() {
    let f = findings(fixture("invalid-line.jsonl"));
    only(&f, "claude-invalid-line", "warning");
    assert!(f[0].2.starts_with("line "), "{f:?}");
}

#[test]
fn a_last_line_without_its_newline_is_called_cut_short() {
    use convo_doctor::claude::{checks, session, view};
    let s = session::parse(fixture("truncated-last.jsonl"));
    let v = view::build(&s);
    let f = checks::run(&s, &v, &|_: &str| true);
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("cut short"), "{}", f[0].message);
    // a clean session whose last line lost its newline is still whole JSON:
    // no finding
    let mut clean = fixture("clean.jsonl");
    assert_eq!(clean.pop(), Some(b'\n'));
    assert!(findings(clean).is_empty());
}
