//! `copy-extra-events`: events in the app server's copy that the folder no
//! longer has (the folder restored from an older backup): the UI shows them,
//! the agent does not. No repair.

use super::appserver_fs::{found, on, planted};

/// Each event named is one of the files the fixture's damage took from the
/// restored folder.
#[test]
fn the_restored_folders_lost_events_are_found() {
    let f = found("copy-extra-events");
    assert_eq!(on(&f), planted("copy-extra-events"));
    assert_eq!(on(&f), ["restored-folder"]);
    assert_eq!(f[0].severity, "warning");
    let damage = super::appserver_fs::manifest()["damage"]
        .to_string()
        .replace('-', "");
    let named: Vec<&str> = f[0]
        .message
        .split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 32)
        .collect();
    assert!(!named.is_empty(), "{}", f[0].message);
    for id in named {
        assert!(damage.contains(id), "{id} was not taken from the folder");
    }
}
