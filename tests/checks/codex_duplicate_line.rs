//! `codex-duplicate-line`: a line written twice, byte for byte.

use super::codex_common::{findings, fixture, kinds, repaired};
use super::session_common::only;

#[test]
fn a_user_message_written_twice_is_resent_twice_and_the_copy_dropped() {
    assert_eq!(
        kinds(fixture("user-twice.jsonl")),
        [("codex-duplicate-line".into(), "warning".into())]
    );
    for case in ["user-twice", "call-twice", "output-twice"] {
        let fixed = repaired(fixture(&format!("{case}.jsonl"))).unwrap();
        assert!(fixed == fixture("clean.jsonl"), "{case}");
        assert!(
            fixed == fixture(&format!("{case}.repaired.jsonl")),
            "{case}"
        );
    }
}

#[test]
fn a_session_meta_written_again_cuts_the_history_before_it() {
    let f = findings(fixture("meta-twice.jsonl"));
    only(&f, "codex-duplicate-line", "error");
    assert!(repaired(fixture("meta-twice.jsonl")).unwrap() == fixture("clean.jsonl"));
}

#[test]
fn blank_lines_are_no_copies() {
    assert!(findings(fixture("blank-lines.jsonl")).is_empty());
}
