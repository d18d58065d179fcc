//! Issue 23: a repair for the release that will open the folder. With
//! `--server-version 1.33.0`, events 1.58.2 wrote with `extended_content`
//! cannot be read, so the conversation does not load and `head-lag` moves
//! no HEAD onto them; with `--unsafe-fixes` the key is dropped first and the
//! HEAD then moved, in the same run.

mod common;

use common::*;
use serde_json::Value;

fn plan(extra: &[&str]) -> (Vec<(String, String)>, String) {
    let mut args = vec![
        "repair",
        "--dry-run",
        "--format",
        "json",
        "--server-version",
        "1.33.0",
    ];
    args.extend(extra);
    let path = fixture("head-lag");
    args.push(s(&path));
    let (_, out, err) = run(&args, &[]);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let c = &doc["conversations"][0];
    let planned = c["planned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["checks"][0].as_str().unwrap().to_string(),
                x["file"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (
        planned,
        c["verdict_after"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn head_lag_moves_no_head_onto_events_the_release_cannot_read() {
    let (planned, _) = plan(&[]);
    assert!(planned.is_empty(), "{planned:?}");
    let (planned, after) = plan(&["--unsafe-fixes"]);
    let checks: Vec<&str> = planned.iter().map(|(c, _)| c.as_str()).collect();
    assert!(
        checks.contains(&"unknown-field") && checks.contains(&"head-lag"),
        "{planned:?}"
    );
    assert_eq!(after, "agent sees all 5 events");
}
