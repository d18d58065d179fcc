//! What the app-server tests share (included by tests/appserver.rs and
//! tests/appserver_services.rs): the fixture manifest written by the real
//! openhands-ai (fixtures/gen/appserver.py), running `diagnose --format
//! json`, and comparing its findings with the manifest's expectations.
#![allow(dead_code)]
#![allow(clippy::print_stderr)] // skip notes for the test log

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The checks of the app server's side (issue 18).
pub const APP_CHECKS: &[&str] = &[
    "invalid-row",
    "v0-row",
    "row-without-events",
    "events-without-row",
    "copy-missing-events",
    "copy-extra-events",
    "s3-listing-limit",
    "user-prefix-split",
    "unmigrated-event-layout",
    "row-status-divergence",
    "row-title-divergence",
];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(p: &str) -> PathBuf {
    repo().join("fixtures/appserver").join(p)
}

pub fn manifest() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("manifest.json")).unwrap()).unwrap()
}

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convo-doctor"));
    c.env("NO_COLOR", "1");
    c
}

/// The environment reaching the GCS emulator at `host` (as
/// `STORAGE_EMULATOR_HOST` spells it), with no credentials of the machine.
pub fn gcs_env(host: &str) -> Vec<(&'static str, String)> {
    vec![("STORAGE_EMULATOR_HOST", host.to_string())]
}

/// `diagnose --format json ARGS`: (exit code, the document, stderr).
pub fn diagnose_json(args: &[&str], envs: &[(&str, &str)]) -> (i32, Value, String) {
    let out = bin()
        .arg("diagnose")
        .args(["--format", "json"])
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The ids of the conversations reported, in order.
pub fn ids(doc: &Value) -> Vec<String> {
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// App-server check ids found per conversation id.
pub fn app_findings(doc: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in doc["conversations"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap().replace('-', "");
        let e = out.entry(id).or_default();
        for f in c["findings"].as_array().unwrap() {
            let check = f["check"].as_str().unwrap();
            if APP_CHECKS.contains(&check) {
                e.insert(check.to_string());
            }
        }
    }
    out
}

/// Every planted divergence is named, each conversation gets exactly the
/// app-server checks the manifest expects for this kind of copy (`fs`,
/// `s3`, `gcs`), and no other conversation gets any.
pub fn assert_expected(doc: &Value, kind: &str) {
    let m = manifest();
    let found = app_findings(doc);
    let mut expected_ids = BTreeSet::new();
    for (name, c) in m["conversations"].as_object().unwrap() {
        let id = c["id"].as_str().unwrap();
        expected_ids.insert(id.to_string());
        // GCS: the S3 bucket's objects (.ci/services.sh loads the emulator
        // from bucket.jsonl), and no one-page listing limit, which is
        // AwsEventService's alone
        let (from, not) = match kind {
            "gcs" => ("s3", "s3-listing-limit"),
            other => (other, ""),
        };
        let want: BTreeSet<String> = c["expect"][from]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .filter(|check| check != not)
            .collect();
        let got = found.get(id).cloned().unwrap_or_default();
        assert_eq!(got, want, "{name} ({id}) with the {kind} copy");
        if !want.is_empty() {
            assert!(found.contains_key(id), "{name} ({id}) not reported at all");
        }
    }
    for (id, checks) in &found {
        if !expected_ids.contains(id) {
            assert!(checks.is_empty(), "unexpected {checks:?} on {id}");
        }
    }
}

/// The conversations the real app server holds whole report clean: no
/// finding at warning or above, from any check.
pub fn assert_clean_part_clean(doc: &Value) {
    let m = manifest();
    let mut seen = 0;
    for (name, c) in m["conversations"].as_object().unwrap() {
        if !name.starts_with("clean") {
            continue;
        }
        let id = c["id"].as_str().unwrap();
        for r in doc["conversations"].as_array().unwrap() {
            if r["id"].as_str().unwrap().replace('-', "") != id {
                continue;
            }
            seen += 1;
            let bad: Vec<&Value> = r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] != "info")
                .collect();
            assert!(bad.is_empty(), "{name}: {bad:?}");
            assert!(r["appserver"]["row"].is_object(), "{name}: no row related");
            assert!(
                !r["appserver"]["copies"].as_array().unwrap().is_empty(),
                "{name}: no copy related"
            );
        }
    }
    assert!(seen >= 2, "the clean conversations were not reported");
}

/// A whole fixture run with the `kind` copy: the findings expected, the
/// clean part clean, and `note` among the notes.
pub fn assert_whole(doc: &Value, kind: &str, note: &str) {
    assert_expected(doc, kind);
    assert_clean_part_clean(doc);
    let notes = doc["summary"]["notes"].to_string();
    assert!(notes.contains(note), "{note} not in {notes}");
}

/// A service for this test: its URL from the environment, or a skip (a
/// failure in CI, where `.ci/run` starts every service).
pub fn service(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("CONVO_DOCTOR_CI").is_ok_and(|v| v == "1") => {
            panic!("{what} is not running ({var} unset), and CI must start it (.ci/services.sh)")
        }
        _ => {
            eprintln!("SKIP: {what} not running ({var} unset; `source .ci/services.sh && services_start`)");
            None
        }
    }
}

/// The fixture folders the real agent-server wrote.
pub fn conversations() -> String {
    fixture("conversations").display().to_string()
}

/// The environment reaching the S3 server at `endpoint` with the fixture
/// credentials.
pub fn s3_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_ACCESS_KEY_ID", "fixture".into()),
        ("AWS_SECRET_ACCESS_KEY", "fixture".into()),
        ("AWS_REGION", "us-east-1".into()),
    ]
}

/// PostgreSQL's URL and the S3 server's environment, or a skip (a failure
/// in CI) when either is not running.
pub fn postgres_and_s3() -> Option<(String, Vec<(&'static str, String)>)> {
    let (Some(url), Some(endpoint)) = (
        service("CONVO_DOCTOR_PG_URL", "PostgreSQL"),
        service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)"),
    ) else {
        return None;
    };
    Some((url, s3_env(&endpoint)))
}

/// `envs` as `diagnose_json` takes them.
pub fn with<'a>(envs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    envs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
