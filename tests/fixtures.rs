//! Every fixture written by real SDK releases (fixtures/manifest.json) against
//! the verdict the real newest SDK recorded for it: the agent view must match
//! exactly (length and ids), and the checks the fixture was built to trigger
//! must fire, with no other check at error severity.

use std::path::{Path, PathBuf};

use convo_doctor::checks::Severity;
use convo_doctor::report::{analyze, Options};
use convo_doctor::store::{Conversation, Index};
use convo_doctor::version::NEWEST;
use convo_doctor::view::{Reader, Views};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn manifest() -> Value {
    let text =
        std::fs::read_to_string(root().join("manifest.json")).expect("fixtures/manifest.json");
    serde_json::from_str(&text).expect("manifest is JSON")
}

fn fixtures() -> Vec<Value> {
    manifest()["fixtures"]
        .as_array()
        .expect("fixtures array")
        .clone()
}

#[test]
fn the_manifest_covers_the_required_fixtures() {
    let names: Vec<String> = fixtures()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    for required in ["clean-tree", "legacy-flat", "false-root"] {
        assert!(
            names.iter().any(|n| n == required),
            "missing fixture {required}"
        );
    }
}

#[test]
fn agent_view_matches_the_real_sdk_on_every_fixture() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let name = f["name"].as_str().unwrap();
        let dir = root().join(f["path"].as_str().unwrap());
        let verdict = &f["sdk_verdict"];
        let conv = Conversation::load(&dir, NEWEST);
        let index = Index::build(&conv.events);
        let views = Views::compute(&conv, &index, NEWEST);
        let reader = Reader::new(&conv, &index, NEWEST);
        let ours: Option<Vec<String>> = views
            .agent
            .as_ref()
            .ok()
            // The SDK returns the events it read, so their ids are the JSON
            // `id`s (the walk itself follows the ids in the file names).
            .map(|c| {
                c.iter()
                    .map(|&i| reader.returned_id(i).to_string())
                    .collect()
            });
        let theirs: Option<Vec<String>> = if verdict["loads"].as_bool().unwrap() {
            Some(
                verdict["active_branch_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect(),
            )
        } else {
            None
        };
        if ours != theirs {
            failures.push(format!(
                "{name}: agent view {ours:?} but the SDK says {theirs:?} ({:?})",
                views.agent.as_ref().err()
            ));
        }
        if conv.events.on_disk as u64 != verdict["events_on_disk"].as_u64().unwrap() {
            failures.push(format!(
                "{name}: on_disk {} vs {}",
                conv.events.on_disk, verdict["events_on_disk"]
            ));
        }
        if let Some(n) = verdict["log_length"].as_u64() {
            if index.len() as u64 != n {
                failures.push(format!("{name}: log_length {} vs {n}", index.len()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_fixture_triggers_its_checks_and_no_other_errors() {
    let mut failures = Vec::new();
    let all = |_: &str| true;
    let opts = Options {
        version: NEWEST,
        version_given: false,
        selected: &all,
        event_list: false,
    };
    for f in fixtures() {
        let name = f["name"].as_str().unwrap();
        let dir = root().join(f["path"].as_str().unwrap());
        let report = analyze(&dir, name.to_string(), &opts);
        let expected: Vec<&str> = f["expected_checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for e in &expected {
            if !report.findings.iter().any(|x| x.check == *e) {
                failures.push(format!("{name}: expected `{e}`, got {:?}", report.findings));
            }
        }
        for x in &report.findings {
            if x.severity == Severity::Error && !expected.contains(&x.check) {
                failures.push(format!(
                    "{name}: unexpected error {}: {}",
                    x.check, x.message
                ));
            }
        }
        // the JSON contract: agent_view null exactly when the SDK fails
        let loads = f["sdk_verdict"]["loads"].as_bool().unwrap();
        assert_eq!(report.events.agent_view.is_some(), loads, "{name}");
        if !loads {
            let theirs = f["sdk_verdict"]["error"]["type"].as_str().unwrap();
            let ours = report.load_error.as_ref().map(|e| e.exception);
            if ours != Some(theirs) {
                failures.push(format!(
                    "{name}: the SDK raises {theirs}, we predict {ours:?}"
                ));
            }
            assert!(
                report
                    .findings
                    .iter()
                    .any(|x| x.severity == Severity::Error),
                "{name}: cannot load but no error finding explains why"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
