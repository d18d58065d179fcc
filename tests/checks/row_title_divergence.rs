//! `row-title-divergence`: a conversation renamed through the
//! agent-server's API: meta.json has the new title, the app server's row
//! (which the webhook does not update) the old one. Information; no repair.

use super::appserver_fs::{conversation, found, on, planted};

#[test]
fn a_rename_the_row_missed_is_found() {
    let f = found("row-title-divergence");
    assert_eq!(on(&f), planted("row-title-divergence"));
    assert_eq!(on(&f), ["renamed-on-agent-server"]);
    assert_eq!(f[0].severity, "info");
    let c = conversation("renamed-on-agent-server");
    let id = c["id"].as_str().unwrap();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            super::common::fixture("appserver/conversations")
                .join(id)
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // the title the real app server returned, and the one meta.json holds
    let row = c["app_server_get"]["title"].as_str().unwrap();
    let folder = meta["title"].as_str().unwrap();
    assert_ne!(row, folder);
    assert!(
        f[0].message.contains(&format!("`{row}`")) && f[0].message.contains(&format!("`{folder}`")),
        "{}",
        f[0].message
    );
}
