//! `copy-missing-events`: events of the folder that the app server's copy
//! lacks (the webhook's posts were lost): once the sandbox is gone the UI
//! shows the conversation without them. No repair.

use super::appserver_fs::{conversation, found, on, planted};

/// The dropped batch and the run whose last events never reached the app
/// server; a conversation delivered whole is not reported.
#[test]
fn lost_posts_are_found_and_a_whole_copy_is_not() {
    let f = found("copy-missing-events");
    assert_eq!(on(&f), planted("copy-missing-events"));
    assert_eq!(on(&f), ["dropped-batch", "stale-status"]);
    for x in &f {
        assert_eq!(x.severity, "warning", "{x:?}");
        let n = conversation(&x.conversation)["folder_events"]
            .as_u64()
            .unwrap();
        assert!(
            x.message.contains(&format!("of the folder's {n} events")),
            "{}",
            x.message
        );
    }
    assert!(!on(&f).contains(&"clean".to_string()));
}
