//! `unreadable-event`: an event file that cannot be read as an event (empty,
//! cut short, not JSON) or an `events` entry that cannot be listed; the SDK
//! refuses the log. Its repair (unsafe) sets the file aside: into the
//! backup, a placeholder in its place.

use serde_json::json;

use super::common::{agent_branch_ids, agent_view, Conv};
use super::{fixture_conv, found, plan, repaired, sdk_branch_after};
use convo_doctor::report::{analyze, Options};

/// Three chained messages, the middle file's bytes replaced by `bytes`.
fn log_with_middle(bytes: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(&b));
    c.write_raw(1, &b, bytes);
    c
}

#[test]
fn the_empty_and_the_truncated_fixture_are_found() {
    for name in ["empty-event", "truncated-event"] {
        assert_eq!(
            found(&fixture_conv(name), "unreadable-event"),
            ["error"],
            "{name}"
        );
    }
    assert!(found(&fixture_conv("clean-tree"), "unreadable-event").is_empty());
}

#[test]
fn a_file_cut_short_is_found_and_whole_json_is_not() {
    let cut = log_with_middle(r#"{"id": "e0000000-"#);
    assert_eq!(found(cut.path(), "unreadable-event"), ["error"]);
    assert!(agent_view(cut.path(), "1.58.2").is_err());
    let whole = log_with_middle(&{
        let mut c = Conv::new(json!({}));
        let id = c.push("MessageEvent", None);
        std::fs::read_to_string(super::common::event_at(c.path(), 0))
            .unwrap()
            .replace(&id, &super::common::eid(1))
    });
    assert!(found(whole.path(), "unreadable-event").is_empty());
}

#[test]
fn the_file_is_set_aside_with_unsafe_fixes_only() {
    for name in ["empty-event", "truncated-event"] {
        let (_, out) = plan(&fixture_conv(name), "unreadable-event", &[]);
        assert!(
            out.contains("nothing to repair")
                && out.contains("left: unreadable-event ×1 (unsafe: --unsafe-fixes)"),
            "{name}: {out}"
        );
        let (_tmp, conv, _) = repaired(name, &["--unsafe-fixes"]);
        assert!(found(&conv, "unreadable-event").is_empty(), "{name}");
        assert_eq!(
            agent_branch_ids(&conv).unwrap(),
            sdk_branch_after(name, &["--unsafe-fixes"]),
            "{name}"
        );
    }
}

/// `--only` selects what is reported: `events` being a file is
/// `unreadable-event`'s finding and is not shown under `--only index-gap`
/// (the SDK's LocalFileStore.list returns the file itself, which is no event
/// name: it loads an empty log; real 1.58.2's judge.py on such a folder:
/// loads, 0 events, warning "Unrecognized event file name: events").
#[test]
fn events_folder_unreadable_is_shown_only_with_its_check() {
    let c = Conv::new(json!({}));
    std::fs::remove_dir(c.path().join("events")).unwrap();
    std::fs::write(c.path().join("events"), "x").unwrap();
    let report = |only: &str| {
        let sel = |id: &str| id == only;
        let opts = Options {
            version: "1.58.2".parse().unwrap(),
            version_given: false,
            selected: &sel,
            event_list: false,
        };
        analyze(c.path(), "x".into(), &opts)
    };
    let r = report("index-gap");
    assert!(
        r.findings.is_empty(),
        "{:?}",
        r.findings.iter().map(|f| f.check).collect::<Vec<_>>()
    );
    assert_eq!(r.events.agent_view, Some(0));
    let r = report("unreadable-event");
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].check, "unreadable-event");
    assert!(
        r.findings[0].message.contains("is a file"),
        "{}",
        r.findings[0].message
    );
}
