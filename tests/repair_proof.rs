//! Every repair proven against the real SDK (fixtures/repairs.json, written by
//! fixtures/gen/prove_repairs.py): on a fresh copy of the fixture, with the
//! same mtimes and arguments, the built binary must change exactly the
//! recorded files into exactly the recorded bytes, leave the agent view the
//! real newest SDK reported for the repaired folder, find nothing to do on a
//! second run, and `undo` must give the original bytes back. No Python runs
//! here.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{fixture_copy, run};
use convo_doctor::store::{Conversation, Index};
use convo_doctor::version::NEWEST;
use convo_doctor::view::{Reader, Views};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn load(name: &str) -> Value {
    let text = fs::read_to_string(fixtures_dir().join(name)).expect(name);
    serde_json::from_str(&text).expect("JSON")
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// sha256 of every file under `conv`, keyed by its path relative to `conv`.
fn hashes(conv: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(conv).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(conv).unwrap();
            let rel = rel.to_str().unwrap().replace('\\', "/");
            out.insert(rel, sha256(&fs::read(e.path()).unwrap()));
        }
    }
    out
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn set_mtime(path: &Path, secs: u64) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(at(secs)).unwrap();
}

/// The mtimes the proof used: every file `all_files`, then the overrides.
fn apply_mtimes(conv: &Path, mtimes: &Value) {
    let all = mtimes["all_files"].as_u64().expect("mtimes.all_files");
    for e in walkdir::WalkDir::new(conv) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            set_mtime(e.path(), all);
        }
    }
    for (rel, secs) in mtimes["files"].as_object().expect("mtimes.files") {
        set_mtime(&conv.join(rel), secs.as_u64().unwrap());
    }
}

/// The agent view of the newest SDK as convo-doctor computes it, as the
/// JSON ids of the events (what the SDK's `active_branch()` returns).
fn agent_view_ids(conv: &Path) -> Option<Vec<String>> {
    let c = Conversation::load(conv, NEWEST);
    let index = Index::build(&c.events);
    let views = Views::compute(&c, &index, NEWEST);
    let reader = Reader::new(&c, &index, NEWEST);
    views.agent.as_ref().ok().map(|chain| {
        chain
            .iter()
            .map(|&i| {
                reader
                    .record(i)
                    .and_then(|r| r.id.clone())
                    .unwrap_or_else(|| reader.id(i).to_string())
            })
            .collect()
    })
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

fn check(entry: &Value, n: usize) -> Vec<String> {
    let mut fails = Vec::new();
    let name = entry["fixture"].as_str().unwrap();
    let key = match entry["variant"].as_str() {
        Some(v) => format!("{name}--{v}"),
        None => name.to_string(),
    };
    let (tmp, store, conv) = fixture_copy(name);
    apply_mtimes(&conv, &entry["mtimes"]);
    let before = hashes(&conv);
    let backups = tmp.path().join("backups");
    let run_id = format!("proof-{n}");
    let env = [("CONVO_DOCTOR_RUN_ID", run_id.as_str())];
    let args = strs(&entry["args"]);
    let mut cmd: Vec<&str> = vec![args[0], "--backup-dir", backups.to_str().unwrap()];
    cmd.extend(&args[1..]);
    cmd.push(store.to_str().unwrap());

    let (code, out, err) = run(&cmd, &env);
    if code as i64 != entry["repair_exit"].as_i64().unwrap() {
        fails.push(format!(
            "{key}: repair exit {code}, recorded {}: {out}{err}",
            entry["repair_exit"]
        ));
    }
    let after = hashes(&conv);

    // exactly the recorded files changed, into the recorded bytes
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)))
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    let recorded: Vec<&str> = entry["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    if changed.iter().map(|s| s.as_str()).collect::<Vec<_>>() != recorded {
        fails.push(format!("{key}: changed {changed:?}, recorded {recorded:?}"));
    }
    for f in entry["files"].as_array().unwrap() {
        let rel = f["file"].as_str().unwrap();
        if before.get(rel).map(String::as_str) != f["sha256_before"].as_str() {
            fails.push(format!(
                "{key}: {rel}: the fixture is not the proven original"
            ));
        }
        if after.get(rel).map(String::as_str) != f["sha256_after"].as_str() {
            fails.push(format!("{key}: {rel}: sha256 after differs from the proof"));
        }
        if let Some(copy) = f["repaired_copy"].as_str() {
            let want = fs::read(fixtures_dir().join(copy)).expect(copy);
            if fs::read(conv.join(rel)).ok().as_deref() != Some(&want[..]) {
                fails.push(format!("{key}: {rel}: bytes differ from fixtures/{copy}"));
            }
            if sha256(&want) != f["sha256_after"].as_str().unwrap() {
                fails.push(format!("{key}: fixtures/{copy} is not the recorded sha256"));
            }
        }
    }

    // the agent view matches what the real SDK made of the repaired folder
    let verdict = &entry["sdk_verdict_after"];
    let theirs: Option<Vec<String>> = verdict["loads"].as_bool().unwrap().then(|| {
        strs(&verdict["active_branch_ids"])
            .into_iter()
            .map(String::from)
            .collect()
    });
    let ours = agent_view_ids(&conv);
    if ours != theirs {
        fails.push(format!(
            "{key}: agent view after repair {ours:?}, the SDK says {theirs:?}"
        ));
    }

    // a second run finds nothing to do
    let (code2, out2, err2) = run(&cmd, &[("CONVO_DOCTOR_RUN_ID", "proof-second")]);
    if entry["second_run_noop"].as_bool() != Some(true) {
        fails.push(format!(
            "{key}: the proof recorded a second run that was not a no-op"
        ));
    }
    if code2 as i64 != entry["second_run_exit"].as_i64().unwrap()
        || !out2.contains("nothing to repair")
        || hashes(&conv) != after
    {
        fails.push(format!(
            "{key}: second run exit {code2} changed something: {out2}{err2}"
        ));
    }

    // undo gives the originals back
    let (code3, out3, err3) = run(
        &["undo", "--backup-dir", backups.to_str().unwrap(), &run_id],
        &[],
    );
    if code3 != 0 || hashes(&conv) != before {
        fails.push(format!(
            "{key}: undo exit {code3} did not restore the originals: {out3}{err3}"
        ));
    }
    if entry["undo_restores"].as_bool() != Some(true) {
        fails.push(format!("{key}: the proof recorded an undo that failed"));
    }
    fails
}

#[test]
fn every_proven_repair_reproduces_exactly() {
    let doc = load("repairs.json");
    let entries = doc["repairs"].as_array().expect("repairs array");
    assert!(!entries.is_empty(), "no repairs recorded");
    let mut fails = Vec::new();
    for (n, e) in entries.iter().enumerate() {
        fails.extend(check(e, n));
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

#[test]
fn the_real_sdk_loads_every_repaired_folder() {
    let doc = load("repairs.json");
    for e in doc["repairs"].as_array().unwrap() {
        let v = &e["sdk_verdict_after"];
        assert_eq!(v["loads"], Value::Bool(true), "{e}");
        assert!(v["sdk_warnings"].as_array().unwrap().is_empty(), "{e}");
    }
}

#[test]
fn fixtures_without_a_repair_stay_untouched() {
    let doc = load("repairs.json");
    let mut fails = Vec::new();
    for u in doc["unchanged"].as_array().expect("unchanged array") {
        let name = u["fixture"].as_str().unwrap();
        let (_t, store, conv) = fixture_copy(name);
        apply_mtimes(&conv, &u["mtimes"]);
        let args = strs(&u["args"]);
        let mut cmd: Vec<&str> = vec![args[0], "--dry-run"];
        cmd.extend(&args[1..]);
        cmd.push(store.to_str().unwrap());
        let (code, out, _) = run(&cmd, &[]);
        if code != 0 {
            fails.push(format!("{name}: dry-run exit {code}: {out}"));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// The meta.json repairs, as the real agent-servers saw them.
#[test]
fn meta_repairs_are_what_the_real_servers_need() {
    let doc = load("repairs.json");
    let mut seen = 0;
    for e in doc["repairs"].as_array().unwrap() {
        let Some(s) = e["server_checks"].get("summary") else {
            continue;
        };
        seen += 1;
        let base = &s["base_state_llm"];
        assert_eq!(s["agent_server_1_58_meta_loads"], true, "{e}");
        assert_eq!(s["agent_server_1_58_lists_it"], true, "{e}");
        assert_eq!(&s["agent_server_1_58_live_llm"], base, "{e}");
        assert_eq!(s["switched_llm_survives_1_33_start"], true, "{e}");
        match e["meta_mode"].as_str().unwrap() {
            "sync" => {
                assert_eq!(s["agent_server_1_33_meta_loads"], true, "{e}");
                assert_eq!(&s["stored_agent_llm"], base, "{e}");
                assert_eq!(s["agent_server_1_33_lists_it"], true, "{e}");
            }
            // a slim meta.json is for >= 1.43 servers only: 1.33.0 drops it
            "slim" => {
                assert_eq!(s["agent_server_1_33_meta_loads"], false, "{e}");
                assert_eq!(s["agent_server_1_33_lists_it"], false, "{e}");
            }
            m => panic!("unknown meta_mode {m}"),
        }
    }
    assert!(seen > 0, "no meta repair was proven");
    // the control: the unrepaired fat meta.json makes 1.33.0 revert the switch
    let c = &doc["controls_unrepaired"]["fat-meta-divergence"]["agent_server_1_33_0"];
    assert_ne!(c["base_state_llm_before"], c["base_state_llm_after"], "{c}");
}
