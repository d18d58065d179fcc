//! `v0-row`: an app-server row of a V0 conversation, which openhands-ai 1.x
//! (V1 rows only) never lists or opens. Information; no repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn the_v0_row_is_information_and_v1_rows_are_not_reported() {
    let f = found("v0-row");
    assert_eq!(on(&f), planted("v0-row"));
    assert_eq!(on(&f), ["v0-row"]);
    assert_eq!(f[0].severity, "info");
    assert!(
        f[0].message.contains("is a `V0` conversation"),
        "{}",
        f[0].message
    );
    // the real app server's get found no such conversation
    assert!(conversation("v0-row")["app_server_get"].is_null());
}
