//! `bad-event-filename`: an `event-*.json` the SDK's event-name rule rejects
//! (invisible to it, yet counted by the next append), or one it matches but
//! does not read back under that name. A 6-digit spelling of a small index
//! is renamed (safe); a name that says nothing of its index stays for a
//! human.

use serde_json::json;

use super::common::{self, agent_view, eid, Conv};
use super::{fixture_conv, found, plan};

/// Three chained messages; the last one's file renamed to `name`.
fn log_with_last_named(name: &str) -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    let b = c.push("MessageEvent", Some(&a));
    c.push("MessageEvent", Some(&b));
    let last = common::event_at(c.path(), 2);
    std::fs::rename(&last, c.path().join("events").join(name)).unwrap();
    c
}

/// The fixture's `event-5-<id>.json` (a short index, after 00004): a
/// warning, and no repair applies.
#[test]
fn the_fixtures_short_index_is_found_and_left_for_a_human() {
    let conv = fixture_conv("bad-event-filename");
    assert_eq!(found(&conv, "bad-event-filename"), ["warning"]);
    let (_, out) = plan(&conv, "bad-event-filename", &["--unsafe-fixes"]);
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: bad-event-filename ×1 (no repair applies)"),
        "{out}"
    );
    assert!(found(&fixture_conv("clean-tree"), "bad-event-filename").is_empty());
}

/// `event-x-<id>.json` fails the rule; the canonical name does not.
#[test]
fn a_name_without_an_index_is_found_and_the_canonical_one_is_not() {
    let bad = log_with_last_named(&format!("event-x-{}.json", eid(2)));
    assert_eq!(found(bad.path(), "bad-event-filename"), ["warning"]);
    // invisible to the SDK: the log ends at 00001
    assert_eq!(agent_view(bad.path(), "1.58.2").unwrap(), vec![0, 1]);
    let good = log_with_last_named(&format!("event-00002-{}.json", eid(2)));
    assert!(found(good.path(), "bad-event-filename").is_empty());
}

/// `event-000002-<id>.json` matches the rule, but the SDK reads index 2 back
/// as `event-00002-<id>.json`: a safe rename to that spelling, every byte
/// kept.
#[test]
fn a_six_digit_index_is_renamed_to_the_sdks_spelling() {
    let c = log_with_last_named(&format!("event-000002-{}.json", eid(2)));
    assert!(!found(c.path(), "bad-event-filename").is_empty());
    let bytes = std::fs::read(
        c.path()
            .join(format!("events/event-000002-{}.json", eid(2))),
    )
    .unwrap();
    let (code, out) = plan(c.path(), "bad-event-filename", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rename from") && out.contains("rename to"),
        "{out}"
    );
    super::repair_here(c.path(), &[]);
    assert_eq!(std::fs::read(common::event_at(c.path(), 2)).unwrap(), bytes);
    assert!(found(c.path(), "bad-event-filename").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
}
