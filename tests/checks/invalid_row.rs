//! `invalid-row`: an app-server row its own code cannot read (here a V1
//! row whose `sandbox_id` is NULL): the conversation list fails with it.
//! Read-only: no repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn the_null_sandbox_row_is_an_error_and_no_readable_row_is_reported() {
    let f = found("invalid-row");
    assert_eq!(on(&f), planted("invalid-row"));
    assert_eq!(on(&f), ["no-sandbox-row"]);
    assert_eq!(f[0].severity, "error");
    assert!(
        f[0].message.contains("its sandbox_id is NULL"),
        "{}",
        f[0].message
    );
    // what the real app server did with that row: its search and its get
    // raised (`assert sandbox_id is not None`)
    assert_eq!(
        super::appserver_fs::manifest()["search"]["error"],
        "AssertionError"
    );
    assert_eq!(
        conversation("no-sandbox-row")["app_server_get"]["error"],
        "AssertionError"
    );
}
