//! `empty-conversation`: a folder of a store named like a conversation id
//! that holds no base_state.json, no meta.json and no events/: the
//! agent-server skips it, and its history is gone from every view. No
//! automatic repair.

use super::common::{run, s};

/// `diagnose --format json` of `store`: the checks found on each folder.
fn checks(store: &std::path::Path) -> Vec<(String, String, String)> {
    let (_, out, err) = run(&["diagnose", "--format", "json", s(store)], &[]);
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let mut v = Vec::new();
    for c in doc["conversations"].as_array().unwrap() {
        for f in c["findings"].as_array().unwrap() {
            v.push((
                c["id"].as_str().unwrap().to_string(),
                f["check"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            ));
        }
    }
    v
}

/// An emptied folder named after an id beside a real conversation (a copy
/// of clean-tree): reported, as an error; the conversation is not.
#[test]
fn an_emptied_id_folder_is_found() {
    let (_tmp, store, _conv) = super::common::fixture_copy("clean-tree");
    std::fs::create_dir(store.join("0123456789abcdef0123456789abcdef")).unwrap();
    let got = checks(&store);
    let empty: Vec<_> = got
        .iter()
        .filter(|(_, c, _)| c == "empty-conversation")
        .collect();
    assert_eq!(empty.len(), 1, "{got:?}");
    assert!(
        empty[0].0.replace('-', "") == "0123456789abcdef0123456789abcdef",
        "{got:?}"
    );
    assert_eq!(empty[0].2, "error");
}

/// A folder with an events/ folder in it is not empty (the other checks
/// judge it), and a folder not named like an id is no conversation.
#[test]
fn a_folder_with_events_or_without_an_id_name_is_not_empty() {
    let (_tmp, store, _conv) = super::common::fixture_copy("clean-tree");
    std::fs::create_dir_all(store.join("0123456789abcdef0123456789abcdef/events")).unwrap();
    std::fs::create_dir(store.join("notes")).unwrap();
    let got = checks(&store);
    assert!(
        got.iter().all(|(_, c, _)| c != "empty-conversation"),
        "{got:?}"
    );
}
