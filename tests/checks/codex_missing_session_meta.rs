//! `codex-missing-session-meta`: a rollout the client cannot resume for its
//! first line (measured with the real client, fixtures/codex/sessions).

use super::codex_common::{fixture, kinds, repaired};

#[test]
fn a_rollout_without_its_session_meta_is_an_error_and_is_rebuilt() {
    assert_eq!(
        kinds(fixture("no-meta.jsonl")),
        [("codex-missing-session-meta".into(), "error".into())]
    );
    // the rebuilt rollout is the one the client resumed whole
    let fixed = repaired(fixture("no-meta.jsonl")).unwrap();
    assert!(fixed == fixture("no-meta.repaired.jsonl"));
    assert!(kinds(fixed).is_empty());
}

#[test]
fn a_session_meta_on_a_later_line_is_an_error_left_to_the_operator() {
    let f = kinds(fixture("meta-late.jsonl"));
    assert!(
        f.contains(&("codex-missing-session-meta".into(), "error".into())),
        "{f:?}"
    );
    // no rebuild while a session_meta is still in the file
    assert!(repaired(fixture("meta-late.jsonl")).is_none());
}

#[test]
fn a_session_meta_without_a_field_the_client_needs_is_an_error() {
    let text = String::from_utf8(fixture("clean.jsonl")).unwrap();
    let broken = text.replacen("\"cli_version\":", "\"cli_version_was\":", 1);
    assert_eq!(
        kinds(broken.into_bytes()),
        [("codex-missing-session-meta".into(), "error".into())]
    );
}

#[test]
fn a_session_meta_naming_another_id_is_an_error() {
    let text = String::from_utf8(fixture("clean.jsonl")).unwrap();
    let name = super::codex_common::rollout_name();
    let id = &name[name.len() - 42..name.len() - 6];
    let other = text.replace(id, "00000000-0000-4000-8000-000000000000");
    let f = kinds(other.into_bytes());
    assert!(
        f.contains(&("codex-missing-session-meta".into(), "error".into())),
        "{f:?}"
    );
}

#[test]
fn no_rebuild_without_a_rollout_file_name() {
    use convo_doctor::codex::{repair, session, view};
    let r = session::parse(fixture("no-meta.jsonl"));
    let v = view::build(&r, None);
    assert!(repair::plan(&r, &v, None, &|_: &str| true).is_empty());
}
