//! What the homes of the listing checks share: fixtures/listing/, stores
//! written by real 1.33.0 and 1.58.2 agent-servers and then damaged, with
//! what each real release's `search_conversations()` listed
//! (fixtures/gen/listing.py, its manifest.json).

use std::path::PathBuf;

use serde_json::Value;

pub fn root() -> PathBuf {
    super::common::fixture("listing")
}

pub fn manifest() -> Value {
    let text = std::fs::read_to_string(root().join("manifest.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// (case, folder, listed by the real `release`) of every folder of `store`.
pub fn folders(store: &str, release: &str) -> Vec<(String, String, bool)> {
    manifest()["stores"][store]["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["case"].as_str().unwrap().to_string(),
                f["folder"].as_str().unwrap().to_string(),
                f["listed"][release].as_bool().unwrap(),
            )
        })
        .collect()
}
