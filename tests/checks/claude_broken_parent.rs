//! `claude-broken-parent`: a record whose `parentUuid` does not lead back
//! to the session's start, judged on sessions the real client resumed
//! (fixtures/claude/sessions, verdicts in tests/claude.rs).

use super::claude_common::{findings, fixture, kinds};
use super::session_common::only;

#[test]
fn a_cut_that_loses_messages_is_an_error_and_one_the_client_bridges_a_warning() {
    // a null parentUuid mid-session: the client's walk ends there
    let null = findings(fixture("user-null.jsonl"));
    only(&null, "claude-broken-parent", "error");
    assert!(null[0].2.starts_with("line "), "{null:?}");
    // a phantom parent the client re-attaches to the line before
    assert_eq!(
        kinds(fixture("user-phantom.jsonl")),
        [("claude-broken-parent".to_string(), "warning".to_string())]
    );
}

#[test]
fn the_clean_and_the_repaired_sessions_have_none() {
    for name in [
        "clean.jsonl",
        "compact-clean.jsonl",
        "user-null.repaired.jsonl",
        "env-phantom.repaired.jsonl",
    ] {
        assert!(
            !kinds(fixture(name))
                .iter()
                .any(|(c, _)| c == "claude-broken-parent"),
            "{name}"
        );
    }
}

#[test]
fn only_the_selected_checks_run() {
    use convo_doctor::claude::{checks, session, view};
    let s = session::parse(fixture("user-null.jsonl"));
    let v = view::build(&s);
    assert!(checks::run(&s, &v, &|c: &str| c != "claude-broken-parent").is_empty());
}
