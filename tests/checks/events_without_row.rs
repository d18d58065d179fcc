//! `events-without-row`: events (an agent-server folder or the app server's
//! copy) with no app-server row: the UI never lists them. A folder started
//! on the agent-server's own API is a warning; a copy left by a
//! conversation deleted in the UI is information. No repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn a_folder_without_a_row_warns_and_a_deleted_conversations_copy_informs() {
    let f = found("events-without-row");
    assert_eq!(on(&f), planted("events-without-row"));
    assert_eq!(on(&f), ["agent-server-only", "deleted-in-ui"]);
    let (folder, copy) = (&f[0], &f[1]);
    assert_eq!(folder.severity, "warning");
    let n = conversation("agent-server-only")["folder_events"]
        .as_u64()
        .unwrap();
    assert!(
        folder
            .message
            .contains(&format!("{n} events in the folder")),
        "{}",
        folder.message
    );
    assert_eq!(copy.severity, "info");
    let n = conversation("deleted-in-ui")["filesystem_count_events"]
        .as_u64()
        .unwrap();
    assert!(
        copy.message
            .contains(&format!("{n} events in the app server's copy")),
        "{}",
        copy.message
    );
    // neither has a row the real app server could get
    assert!(conversation("agent-server-only")["app_server_get"].is_null());
    assert!(conversation("deleted-in-ui")["app_server_get"].is_null());
}
