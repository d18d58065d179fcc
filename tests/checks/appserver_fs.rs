//! What the homes of the app-server checks share: `diagnose --format json`
//! over fixtures/appserver (the SQLite database and filesystem event copy
//! the real openhands-ai 1.11.0 and agent-server 1.34.0 wrote,
//! fixtures/gen/appserver.py, beside the agent-server folders), run once,
//! and the fixture's manifest: which conversation was given which damage,
//! and what the real app server answered about it.

use std::sync::OnceLock;

use serde_json::Value;

use super::common;

/// fixtures/appserver/manifest.json.
pub fn manifest() -> &'static Value {
    static M: OnceLock<Value> = OnceLock::new();
    M.get_or_init(|| {
        let text = std::fs::read_to_string(common::fixture("appserver/manifest.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The manifest's entry for the conversation `name`.
pub fn conversation(name: &str) -> &'static Value {
    &manifest()["conversations"][name]
}

/// The report of `diagnose --format json --db sqlite:… --events-store …
/// fixtures/appserver/conversations`.
fn report() -> &'static Value {
    static R: OnceLock<Value> = OnceLock::new();
    R.get_or_init(|| {
        let persist = common::fixture("appserver/persist");
        let db = format!("sqlite:{}", persist.join("openhands.db").display());
        let convs = common::fixture("appserver/conversations");
        let (code, out, err) = common::run(
            &[
                "diagnose",
                "--format",
                "json",
                "--db",
                &db,
                "--events-store",
                common::s(&persist),
                common::s(&convs),
            ],
            &[],
        );
        assert_eq!(code, 1, "the fixture has findings: {err}");
        serde_json::from_str(&out).unwrap()
    })
}

/// One finding of a check: the manifest's name of its conversation, its
/// severity and its message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Found {
    pub conversation: String,
    pub severity: String,
    pub message: String,
}

/// Every finding of `check` on the fixture, sorted by conversation name.
pub fn found(check: &str) -> Vec<Found> {
    let names: Vec<(String, String)> = manifest()["conversations"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, c)| (c["id"].as_str().unwrap().to_string(), name.clone()))
        .collect();
    let mut out = Vec::new();
    for c in report()["conversations"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap().replace('-', "");
        let name = names
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| panic!("{id} is in no manifest entry"));
        for f in c["findings"].as_array().unwrap() {
            if f["check"] == check {
                out.push(Found {
                    conversation: name.clone(),
                    severity: f["severity"].as_str().unwrap().to_string(),
                    message: f["message"].as_str().unwrap().to_string(),
                });
            }
        }
    }
    out.sort();
    out
}

/// The conversations the manifest plants `check` on, for the app server's
/// filesystem copy, sorted.
pub fn planted(check: &str) -> Vec<String> {
    let mut out: Vec<String> = manifest()["conversations"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| {
            c["expect"]["fs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == check)
        })
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    out
}

/// The conversations `found` reports, in its order.
pub fn on(found: &[Found]) -> Vec<String> {
    found.iter().map(|f| f.conversation.clone()).collect()
}
