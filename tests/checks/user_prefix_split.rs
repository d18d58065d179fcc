//! `user-prefix-split`: the app server's event copy of one conversation
//! split across two user prefixes (no user, then `alice` after a change to
//! a multi-user setup): the app server reads one prefix only. No repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn a_copy_under_two_prefixes_is_found() {
    let f = found("user-prefix-split");
    assert_eq!(on(&f), planted("user-prefix-split"));
    assert_eq!(on(&f), ["split-prefix"]);
    assert_eq!(f[0].severity, "warning");
    let m = &f[0].message;
    assert!(
        m.contains("split across 2 prefixes") && m.contains("(user `alice`)"),
        "{m}"
    );
    // the prefix without a user holds what the real app server counted
    let n = conversation("split-prefix")["filesystem_count_events"]
        .as_u64()
        .unwrap();
    assert!(m.contains(&format!("(no user): {n} events")), "{m}");
}
