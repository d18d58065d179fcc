//! `unmigrated-event-layout`: events in the pre-1.2.0 layout
//! (`v1/events/<uuid>/`) that openhands-ai 1.2.0+ never reads (it reads
//! `v1_conversations/<id>/` only). No repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn events_only_in_the_old_layout_are_found() {
    let f = found("unmigrated-event-layout");
    assert_eq!(on(&f), planted("unmigrated-event-layout"));
    assert_eq!(on(&f), ["legacy-layout"]);
    assert_eq!(f[0].severity, "warning");
    assert!(
        f[0].message.contains("in the pre-1.2.0 layout at "),
        "{}",
        f[0].message
    );
    assert!(f[0].message.contains("/v1/events/"), "{}", f[0].message);
    // the real app server counted none of them
    assert_eq!(conversation("legacy-layout")["filesystem_count_events"], 0);
}
