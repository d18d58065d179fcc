//! `meta-duplicate` (info): meta.json still carries a copy of the agent,
//! which servers from 1.43 no longer read. Its repair drops that copy, but
//! only when `--server-version 1.43.0` or newer is given: servers before
//! 1.43 require it. The secrets cases are in tests/meta_repair.rs.

use serde_json::Value;

use super::{fixture_conv, found, plan, repaired};

fn meta(conv: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(conv.join("meta.json")).unwrap()).unwrap()
}

#[test]
fn an_agent_in_meta_json_is_information_and_none_is_nothing() {
    let conv = fixture_conv("fat-meta-divergence");
    assert!(meta(&conv).get("agent").is_some());
    assert_eq!(found(&conv, "meta-duplicate"), ["info"]);
    let (_tmp, _store, copy) = super::common::fixture_copy("fat-meta-divergence");
    let mut slim = meta(&copy);
    slim.as_object_mut().unwrap().remove("agent");
    std::fs::write(copy.join("meta.json"), slim.to_string()).unwrap();
    assert!(found(&copy, "meta-duplicate").is_empty());
}

/// Without a server version the copy is kept (the default rules are the
/// newest release's, yet dropping the agent is never a default); with 1.58.2
/// it is dropped.
#[test]
fn the_copy_is_dropped_only_for_a_server_version_from_1_43() {
    let conv = fixture_conv("fat-meta-divergence");
    let (_, out) = plan(&conv, "meta-duplicate", &[]);
    assert!(!out.contains("would fix [meta-duplicate]"), "{out}");
    let (_, out) = plan(&conv, "meta-duplicate", &["--server-version", "1.58.2"]);
    assert!(out.contains("would fix [meta-duplicate]"), "{out}");
    let (_tmp, kept, _) = repaired("fat-meta-divergence", &[]);
    assert!(meta(&kept).get("agent").is_some());
    let (_tmp, dropped, _) = repaired("fat-meta-divergence", &["--server-version", "1.58.2"]);
    assert!(meta(&dropped).get("agent").is_none());
    assert!(found(&dropped, "meta-duplicate").is_empty());
}
