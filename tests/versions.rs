//! convo-doctor's older-release rules (`--server-version`) against what the
//! real older releases did with every fixture (fixtures/versions.json,
//! written by fixtures/gen/judge_versions.py): whether it loads, the
//! exception type when it does not, and the agent view (length and ids).
//! No Python runs here.

use std::path::{Path, PathBuf};

use convo_doctor::store::conversation::Overlay;
use convo_doctor::version::Version;
use convo_doctor::view::{Loaded, Reader};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join(name)).expect(name);
    serde_json::from_str(&text).expect("JSON")
}

/// Cases where convo-doctor disagrees with the real release. Each is a bug
/// to fix in convo-doctor, not an accepted difference; the test skips only
/// these (fixture, sdk) pairs, and fails if one of them starts to match (so
/// the list cannot go stale).
///
/// Cases where convo-doctor's rules for an older release disagree with that
/// real release, each with a `// KNOWN MISMATCH:` reason. Empty: the ten
/// 1.33.0 cases once here (1.58.2's `ObservationEvent.extended_content`,
/// which 1.33.0 forbids) match since convo-doctor applies each release's
/// accepted keys per kind (data/kinds/*.json `event_fields`, check
/// `unknown-field`).
const KNOWN_MISMATCHES: &[(&str, &str)] = &[];

/// (loads, exception type, agent-view ids) as convo-doctor predicts them.
fn predict(dir: &Path, v: Version) -> (bool, Option<String>, Option<Vec<String>>) {
    let Loaded {
        conv, index, views, ..
    } = Loaded::load(dir, v, &Overlay::new());
    let reader = Reader::new(&conv, &index, v);
    match &views.agent {
        Ok(chain) => {
            let ids = chain
                .iter()
                .map(|&i| reader.returned_id(i).to_string())
                .collect();
            (true, None, Some(ids))
        }
        Err(e) => (false, Some(e.exception().to_string()), None),
    }
}

fn recorded(v: &Value) -> (bool, Option<String>, Option<Vec<String>>) {
    let loads = v["loads"].as_bool().unwrap();
    let exc = v["error"]["type"].as_str().map(String::from);
    let ids = v["active_branch_ids"].as_array().map(|a| {
        a.iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    });
    if let (Some(ids), Some(n)) = (&ids, v["active_branch"].as_u64()) {
        assert_eq!(ids.len() as u64, n, "recorded length and ids disagree");
    }
    (loads, exc, ids)
}

#[test]
fn older_release_rules_match_the_real_releases() {
    let man = load("manifest.json");
    let doc = load("versions.json");
    let entries = doc["entries"].as_array().expect("entries array");
    assert!(!entries.is_empty());
    let mut fails = Vec::new();
    let mut stale = Vec::new();
    for e in entries {
        let name = e["fixture"].as_str().unwrap();
        let sdk = e["sdk"].as_str().unwrap();
        let path = man["fixtures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .and_then(|f| f["path"].as_str())
            .unwrap_or_else(|| panic!("{name} is not in the manifest"));
        let v: Version = sdk.parse().unwrap();
        let ours = predict(&fixtures_dir().join(path), v);
        let theirs = recorded(&e["verdict"]);
        let known = KNOWN_MISMATCHES.contains(&(name, sdk));
        match (ours == theirs, known) {
            (true, false) => {}
            (false, true) => {}
            (true, true) => stale.push(format!("{name} @ {sdk}")),
            (false, false) => fails.push(format!(
                "{name} @ {sdk}: convo-doctor predicts {ours:?}, the real release gave {theirs:?}"
            )),
        }
    }
    assert!(
        stale.is_empty(),
        "these KNOWN MISMATCHES now match; remove them from the list: {stale:?}"
    );
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

#[test]
fn the_records_cover_every_fixture_for_each_older_release() {
    let man = load("manifest.json");
    let doc = load("versions.json");
    let entries = doc["entries"].as_array().unwrap();
    for sdk in ["1.29.3", "1.33.0", "1.34.0", "1.38.0", "1.43.1"] {
        for f in man["fixtures"].as_array().unwrap() {
            assert!(
                entries
                    .iter()
                    .any(|e| e["sdk"] == sdk && e["fixture"] == f["name"]),
                "{} has no {sdk} verdict",
                f["name"]
            );
        }
    }
}
