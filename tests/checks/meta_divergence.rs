//! `meta-divergence`: a field that meta.json and base_state.json both hold
//! has different values in the two (the agent-server lists conversations
//! from meta.json). Its repair (safe) rewrites meta.json's value from
//! base_state.json, the source of truth. The secrets and the server-version
//! cases are in tests/meta_repair.rs.

use serde_json::Value;

use super::{fixture_conv, found, plan, repaired};

fn read(p: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The fixture's meta.json keeps an older model, timeout and usage id than
/// base_state.json: one finding per field.
#[test]
fn each_diverging_field_is_found_and_a_clean_folder_has_none() {
    let conv = fixture_conv("fat-meta-divergence");
    let meta = read(&conv.join("meta.json"));
    let base = read(&conv.join("base_state.json"));
    let differing = ["model", "timeout", "usage_id"]
        .iter()
        .filter(|k| meta["agent"]["llm"][**k] != base["agent"]["llm"][**k])
        .count();
    assert_eq!(differing, 3);
    assert_eq!(found(&conv, "meta-divergence").len(), differing);
    assert!(found(&fixture_conv("clean-tree"), "meta-divergence").is_empty());
}

/// Equal values diverge nowhere: meta.json's agent made base_state.json's.
#[test]
fn a_meta_agent_equal_to_the_base_state_is_not_found() {
    let (_tmp, _store, conv) = super::common::fixture_copy("fat-meta-divergence");
    let mut meta = read(&conv.join("meta.json"));
    let base = read(&conv.join("base_state.json"));
    for k in ["model", "timeout", "usage_id"] {
        meta["agent"]["llm"][k] = base["agent"]["llm"][k].clone();
    }
    std::fs::write(conv.join("meta.json"), meta.to_string()).unwrap();
    assert!(found(&conv, "meta-divergence").is_empty());
}

#[test]
fn meta_json_takes_the_base_states_values() {
    let conv = fixture_conv("fat-meta-divergence");
    let (code, out) = plan(&conv, "meta-divergence", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            r#"agent.llm.model: "openai/gpt-4o-mini" → "openai/gpt-4.1-mini" (from base_state.json)"#
        ) && out.contains("would fix: meta-divergence ×3"),
        "{out}"
    );
    let (_tmp, conv, _) = repaired("fat-meta-divergence", &[]);
    let meta = read(&conv.join("meta.json"));
    let base = read(&conv.join("base_state.json"));
    for k in ["model", "timeout", "usage_id"] {
        assert_eq!(meta["agent"]["llm"][k], base["agent"]["llm"][k], "{k}");
    }
    assert!(found(&conv, "meta-divergence").is_empty());
}
