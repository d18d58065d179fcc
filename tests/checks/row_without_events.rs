//! `row-without-events`: the app server lists a conversation whose events
//! are nowhere (not in its events store, no agent-server folder among the
//! PATHs): the UI shows it empty. No repair.

use super::appserver_fs::{conversation, found, on, planted};

/// Each row reported is one whose copy the real app server counted empty;
/// the rows with events in the copy are not reported.
#[test]
fn rows_with_no_event_anywhere_are_found_and_rows_with_events_are_not() {
    let f = found("row-without-events");
    assert_eq!(on(&f), planted("row-without-events"));
    assert!(f.len() >= 2, "{f:?}");
    for x in &f {
        assert_eq!(x.severity, "warning", "{x:?}");
        assert_eq!(
            conversation(&x.conversation)["filesystem_count_events"],
            0,
            "{x:?}"
        );
    }
    for name in ["clean", "dropped-batch", "stale-status"] {
        assert!(
            conversation(name)["filesystem_count_events"]
                .as_u64()
                .unwrap()
                > 0,
            "{name}"
        );
        assert!(!on(&f).contains(&name.to_string()), "{name}");
    }
}
