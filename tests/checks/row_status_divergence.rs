//! `row-status-divergence`: the app server's row keeps a status that
//! base_state.json no longer has (the final status update was lost): the
//! list and dashboard show it stale. No repair.

use super::appserver_fs::{conversation, found, on, planted};

/// The row says `running`; the folder's base_state.json says what it says
/// now. A conversation paused after its events (the status update
/// delivered) is not reported.
#[test]
fn a_lost_status_update_is_found_and_a_delivered_one_is_not() {
    let f = found("row-status-divergence");
    assert_eq!(on(&f), planted("row-status-divergence"));
    assert_eq!(on(&f), ["stale-status"]);
    assert_eq!(f[0].severity, "warning");
    let id = conversation("stale-status")["id"].as_str().unwrap();
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            super::common::fixture("appserver/conversations")
                .join(id)
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let now = state["execution_status"].as_str().unwrap();
    assert_ne!(now, "running");
    assert!(
        f[0].message.contains(&format!(
            "the app server's row says `running`, base_state.json says `{now}`"
        )),
        "{}",
        f[0].message
    );
    assert!(!on(&f).contains(&"clean-paused".to_string()));
}
