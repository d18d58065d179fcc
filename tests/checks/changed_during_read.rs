//! `changed-during-read`: a writer changed the conversation while it was
//! read (it held the SDK's event-log lock, or files changed in between). Its
//! gate refuses every repair while it is so: what was read may never have
//! existed as a whole. The live writer under load is tests/live_writer.rs's
//! subject.

use convo_doctor::fix::{self, Refusal, RepairOptions};
use convo_doctor::store::fsread::DirFd;

use super::common;
use super::found;

fn plan(conv: &std::path::Path) -> fix::Plan {
    let all = |_: &str| true;
    let dir = DirFd::open(conv).unwrap();
    fix::plan(
        &dir,
        conv.display().to_string(),
        &RepairOptions {
            server_version: None,
            selected: &all,
            unsafe_fixes: true,
        },
    )
}

/// false-root (which has a repair) with the SDK's lock held by another open
/// of the lock file: found, and the plan refused as busy with no change;
/// the lock released, neither, and the false root's repair is planned.
#[test]
fn a_held_event_log_lock_is_found_and_refuses_the_repair_until_released() {
    let (_tmp, _store, conv) = common::fixture_copy("false-root");
    let lock = common::hold_event_log_lock(&conv);
    assert!(!found(&conv, "changed-during-read").is_empty());
    let p = plan(&conv);
    let refused = p.refused.clone().expect("refused");
    assert_eq!(refused.kind, Refusal::Busy);
    assert!(
        refused.why.contains("events/.eventlog.lock"),
        "{}",
        refused.why
    );
    assert!(!p.has_changes());
    drop(lock);
    assert!(found(&conv, "changed-during-read").is_empty());
    let p = plan(&conv);
    assert_eq!(p.refused, None);
    assert!(p.has_changes());
}

/// The lock file left behind by a writer that has finished (no one holds
/// it) is no sign of one.
#[test]
fn a_lock_file_no_one_holds_is_nothing() {
    let (_tmp, _store, conv) = common::fixture_copy("clean-tree");
    drop(common::hold_event_log_lock(&conv));
    assert!(conv.join("events/.eventlog.lock").is_file());
    assert!(found(&conv, "changed-during-read").is_empty());
}
