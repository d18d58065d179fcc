//! `codex-invalid-line`: a line the client skips, or cannot start with.

use super::codex_common::{findings, fixture, kinds, repaired};
use super::session_common::only;

#[test]
fn a_line_that_is_not_json_is_named_by_its_number_and_set_aside() {
    let f = findings(fixture("invalid-mid.jsonl"));
    only(&f, "codex-invalid-line", "warning");
    assert!(f[0].2.starts_with("line "), "{f:?}");
    // set aside, the rollout is the clean one byte for byte
    assert!(repaired(fixture("invalid-mid.jsonl")).unwrap() == fixture("clean.jsonl"));
}

#[test]
fn an_invalid_first_line_stops_the_client_and_setting_it_aside_resumes() {
    assert_eq!(
        kinds(fixture("invalid-first.jsonl")),
        [("codex-invalid-line".into(), "error".into())]
    );
    let fixed = repaired(fixture("invalid-first.jsonl")).unwrap();
    assert!(fixed == fixture("invalid-first.repaired.jsonl"));
    assert!(fixed == fixture("clean.jsonl"));
}

#[test]
fn a_last_line_without_its_newline_is_called_cut_short() {
    use convo_doctor::codex::{checks, session, view};
    let r = session::parse(fixture("truncated-last.jsonl"));
    let v = view::build(&r, None);
    let f = checks::run(&r, &v, &|_: &str| true);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].message.contains("cut short"), "{}", f[0].message);
    // a clean rollout whose last line lost its newline is still whole JSON
    let mut clean = fixture("clean.jsonl");
    assert_eq!(clean.pop(), Some(b'\n'));
    assert!(findings(clean).is_empty());
}

#[test]
fn garbage_never_panics() {
    for bytes in [
        &b""[..],
        b"\n\n",
        b"\x00\xff{",
        b"[1]\n{\"type\":\"session_meta\"}\n",
        b"{\"type\":\"session_meta\",\"payload\":[]}\n{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":7}}\n",
    ] {
        use convo_doctor::codex::{repair, session, Analysis};
        let _ = findings(bytes.to_vec());
        let name = super::codex_common::rollout_name();
        let a = Analysis::of(session::parse(bytes.to_vec()), std::path::Path::new(&name));
        let edits = repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
        if let Ok(out) = repair::apply(&a.rollout, &edits) {
            let _ = repair::prove(&a.view, &edits, &out, None);
        }
        let _ = convo_doctor::codex::verdict(&a);
    }
}
