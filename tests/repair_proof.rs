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

use common::{fixture_copy, run};
use convo_doctor::store::{Conversation, Index};
use convo_doctor::version::NEWEST;
use convo_doctor::view::Reader;
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

/// Every event file of `conv` (`events/<name>`) with its bytes.
fn event_bytes(conv: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("event-") && n.ends_with(".json"))
        .map(|n| {
            (
                format!("events/{n}"),
                fs::read(conv.join("events").join(&n)).unwrap(),
            )
        })
        .collect()
}

/// The event files the newest SDK cannot read, as convo-doctor models it:
/// unreadable or unknown kinds in the log, every file the index does not
/// keep (a duplicated index's other copies), and a later copy of an id that
/// is byte for byte the copy the SDK resolves the id to.
fn unreadable_by_the_sdk(conv: &Path) -> Vec<String> {
    let c = Conversation::load(conv, NEWEST);
    let index = Index::build(&c.events);
    let reader = Reader::new(&c, &index, NEWEST);
    let mut out = Vec::new();
    for (pos, f) in c.events.files.iter().enumerate() {
        let in_log = index.by_idx.iter().position(|&p| p == pos);
        let beyond = index.beyond_gap.contains(&pos);
        let read = |i: usize| fs::read(conv.join("events").join(&reader.file(i).name)).ok();
        let bad = match in_log {
            Some(i) => {
                let first = index.id_to_idx[reader.id(i)];
                reader.read(i).is_err() || (first != i && read(first) == read(i))
            }
            None => !beyond,
        };
        if bad {
            out.push(format!("events/{}", f.name));
        }
    }
    out
}

/// The id in an event file's name.
fn name_id(rel: &str) -> Option<&str> {
    let n = rel.strip_prefix("events/event-")?.strip_suffix(".json")?;
    let (idx, id) = n.split_once('-')?;
    idx.bytes().all(|b| b.is_ascii_digit()).then_some(id)
}

/// `"parent_id":<value>` blanked, so two event texts compare equal when
/// they differ only there.
fn without_parent(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    match text.find("\"parent_id\":") {
        None => text,
        Some(i) => {
            let rest = &text[i + 12..];
            let end = if let Some(r) = rest.strip_prefix('"') {
                1 + r.find('"').unwrap() + 1
            } else {
                rest.find([',', '}']).unwrap()
            };
            format!("{}\"parent_id\":P{}", &text[..i], &rest[end..])
        }
    }
}

fn check_moves(
    key: &str,
    moves: &[Value],
    set_aside: &[Value],
    entry: &Value,
    (before, unreadable): (&BTreeMap<String, Vec<u8>>, &[String]),
    conv: &Path,
    backups: &Path,
) -> Vec<String> {
    let mut fails = Vec::new();
    let quarantined: Vec<&str> = moves
        .iter()
        .filter(|m| m["quarantined"] == true)
        .map(|m| m["file"].as_str().unwrap())
        .collect();
    let aside: Vec<&str> = set_aside
        .iter()
        .map(|a| a["file"].as_str().unwrap())
        .collect();
    let now = event_bytes(conv);
    let backup_shas: Vec<String> = walkdir::WalkDir::new(backups)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| sha256(&fs::read(e.path()).unwrap()))
        .collect();
    for q in &quarantined {
        if q.starts_with("events/event-") && !unreadable.iter().any(|u| u == q) {
            fails.push(format!(
                "{key}: {q} was quarantined but the SDK could read it"
            ));
        }
        if now.contains_key(*q) {
            fails.push(format!("{key}: {q} is still in the conversation"));
        }
        if let Some(bytes) = before.get(*q) {
            if !backup_shas.contains(&sha256(bytes)) {
                fails.push(format!("{key}: the bytes of {q} are not in the backup"));
            }
        }
    }
    // each event set aside: one the SDK could not read, its bytes in the
    // backup, a placeholder with its id (or, for a second copy of an id, a
    // new one) in its slot
    for a in set_aside {
        let (q, now_at) = (a["file"].as_str().unwrap(), a["now"].as_str().unwrap());
        if !unreadable.iter().any(|u| u == q) {
            fails.push(format!(
                "{key}: {q} was set aside but the SDK could read it"
            ));
        }
        if let Some(bytes) = before.get(q) {
            if !backup_shas.contains(&sha256(bytes)) {
                fails.push(format!("{key}: the bytes of {q} are not in the backup"));
            }
        }
        let placeholder = now
            .get(now_at)
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(|v| {
                (v["kind"] == "ConversationErrorEvent" && v["code"] == "EventQuarantined")
                    || v["kind"] == "AgentErrorEvent"
            });
        match placeholder {
            None => fails.push(format!("{key}: no placeholder at {now_at}")),
            Some(v) if Some(v["id"].as_str().unwrap_or("")) != name_id(now_at) => {
                fails.push(format!("{key}: the placeholder at {now_at} has another id"))
            }
            Some(_) => {}
        }
    }
    for (rel, bytes) in before {
        if quarantined.contains(&rel.as_str()) || aside.contains(&rel.as_str()) {
            continue;
        }
        let id = name_id(rel).unwrap();
        match now.iter().find(|(n, _)| name_id(n) == Some(id)) {
            None => fails.push(format!("{key}: {rel} is gone")),
            Some((_, b)) if without_parent(b) != without_parent(bytes) => {
                fails.push(format!("{key}: {rel} changed beyond parent_id"))
            }
            Some(_) => {}
        }
    }
    let markers: Vec<String> = fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".eventlog-len-"))
        .collect();
    // a file put at an index a writer with the log open does not know of
    // (a gap closed, a copy moved to the end) must take the markers along
    let index_of = |rel: &str| {
        rel.strip_prefix("events/event-")
            .and_then(|n| n.split_once('-'))
            .and_then(|(i, _)| i.parse::<u64>().ok())
    };
    let reindexed = moves.iter().any(|m| {
        m["renamed_to"]
            .as_str()
            .is_some_and(|to| index_of(to) != index_of(m["file"].as_str().unwrap()))
    });
    if reindexed && !markers.is_empty() {
        fails.push(format!("{key}: count markers left: {markers:?}"));
    }
    // what the proof recorded says the same
    if !set_aside.is_empty() && entry["set_aside_in_backup"] != true {
        fails.push(format!(
            "{key}: the proof did not find the set-aside bytes in its backup"
        ));
    }
    if !moves.is_empty() && entry["quarantined_in_backup"] != true {
        fails.push(format!(
            "{key}: the proof did not find the quarantined bytes in its backup"
        ));
    }
    if entry["events_kept"]["missing_or_changed"] != serde_json::json!([]) {
        fails.push(format!("{key}: the proof found events missing or changed"));
    }
    fails
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
    common::apply_mtimes(&conv, &entry["mtimes"]);
    let before = hashes(&conv);
    let before_files = event_bytes(&conv);
    let unreadable_before = unreadable_by_the_sdk(&conv);
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
    let mut changed_sorted: Vec<&str> = changed.iter().map(|s| s.as_str()).collect();
    changed_sorted.sort_unstable();
    if changed_sorted != recorded {
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

    // renames, quarantines and events set aside: only what the SDK cannot
    // read leaves, into the backup; every other event stays, by id, with the
    // same bytes except the value of parent_id
    let none = Vec::new();
    let moves = entry
        .get("moves")
        .and_then(Value::as_array)
        .unwrap_or(&none);
    let set_aside = entry
        .get("set_aside")
        .and_then(Value::as_array)
        .unwrap_or(&none);
    if !moves.is_empty() || !set_aside.is_empty() {
        fails.extend(check_moves(
            &key,
            moves,
            set_aside,
            entry,
            (&before_files, &unreadable_before),
            &conv,
            &backups,
        ));
    }

    // the agent view matches what the real SDK made of the repaired folder
    let verdict = &entry["sdk_verdict_after"];
    let theirs: Option<Vec<String>> = verdict["loads"].as_bool().unwrap().then(|| {
        strs(&verdict["active_branch_ids"])
            .into_iter()
            .map(String::from)
            .collect()
    });
    let ours = common::agent_branch_ids(&conv);
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
        // A repair that set an action aside (or lost one to a gap) leaves
        // its observation without a call: the SDK's view drops that one
        // observation when it loads, and says so. Nothing else may warn.
        let lost_call = e.get("moves").is_some() || e.get("set_aside").is_some();
        for w in v["sdk_warnings"].as_array().unwrap() {
            let w = w.as_str().unwrap();
            assert!(
                lost_call
                    && w.contains("ToolCallMatchingProperty")
                    && w.contains("1 events dropped"),
                "{w}: {e}"
            );
        }
        // resumable: nothing the next step would run again, and a valid
        // message list for the LLM
        let r = &v["resume"];
        assert_eq!(r["loads"], true, "{e}");
        assert_eq!(r["unmatched_actions"], serde_json::json!([]), "{e}");
        assert_eq!(r["llm_messages_valid"], true, "{e}");
    }
}

/// Without `--unsafe-fixes`, a fixture whose only repairs are unsafe is not
/// touched and each unsafe repair is listed, as recorded.
#[test]
fn unsafe_repairs_are_listed_not_made_without_consent() {
    let doc = load("repairs.json");
    let listed = doc["listed_unsafe"]
        .as_array()
        .expect("listed_unsafe array");
    assert!(
        listed.len() >= 4,
        "empty, truncated, unknown kind, duplicate index"
    );
    let mut fails = Vec::new();
    for u in listed {
        let name = u["fixture"].as_str().unwrap();
        let (tmp, store, conv) = fixture_copy(name);
        common::apply_mtimes(&conv, &u["mtimes"]);
        let before = hashes(&conv);
        let b = tmp.path().join("b");
        let (code, out, _) = run(
            &[
                "repair",
                "--backup-dir",
                b.to_str().unwrap(),
                store.to_str().unwrap(),
            ],
            &[],
        );
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("  unsafe "))
            .map(str::trim)
            .collect();
        if code as i64 != u["repair_exit"].as_i64().unwrap() || lines != strs(&u["listed"]) {
            fails.push(format!("{name}: exit {code}, listed {lines:?}"));
        }
        if hashes(&conv) != before {
            fails.push(format!("{name}: changed without consent"));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// The control for the answer: quarantine alone (no AgentErrorEvent) left
/// the `ls` call of empty-event unanswered; the real SDK would run it again
/// on resume and dropped it from the LLM's view. The repair as made now
/// answers it (tests above: nothing unmatched).
#[test]
fn quarantine_alone_leaves_a_tool_call_the_sdk_would_run_again() {
    let c = load("repairs-quarantine-only-control.json");
    let r = &c["sdk_verdict_after"]["resume"];
    assert_eq!(c["sdk_verdict_after"]["loads"], true);
    assert_eq!(
        r["unmatched_actions"][0]["tool_call_id"], "call_ls_1",
        "{c}"
    );
    let doc = load("repairs.json");
    let e = doc["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["fixture"] == "empty-event")
        .expect("empty-event repaired");
    let v = &e["sdk_verdict_after"];
    assert_eq!(
        v["resume"]["unmatched_actions"],
        serde_json::json!([]),
        "{e}"
    );
    assert_eq!(v["active_branch"], 5, "answer included: {e}");
}

#[test]
fn fixtures_without_a_repair_stay_untouched() {
    let doc = load("repairs.json");
    let mut fails = Vec::new();
    for u in doc["unchanged"].as_array().expect("unchanged array") {
        let name = u["fixture"].as_str().unwrap();
        let (_t, store, conv) = fixture_copy(name);
        common::apply_mtimes(&conv, &u["mtimes"]);
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

/// The `fixtures/validation/` entries: (case name, its manifest row).
fn validation_cases() -> Vec<(String, Value)> {
    load("validation/manifest.json")["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c.clone()))
        .collect()
}

/// Names of the validation cases recorded under `section` of repairs.json
/// (fixture `validation/<case>`).
fn proven_validation(doc: &Value, section: &str, variant: &str) -> Vec<String> {
    let mut out: Vec<String> = doc[section]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["variant"] == variant)
        .filter_map(|e| e["fixture"].as_str()?.strip_prefix("validation/"))
        .map(String::from)
        .collect();
    out.sort();
    out
}

/// Every damaged-content folder of fixtures/validation/ for which
/// `repair --dry-run --unsafe-fixes` plans an invalid-event quarantine is in
/// the proof (made with `--unsafe-fixes`, listed and untouched without), and
/// no other: a new damage case or a planner change cannot slip past it.
#[test]
fn every_planned_invalid_event_quarantine_is_proven() {
    let mut planned = Vec::new();
    for (name, _) in validation_cases() {
        let (_t, store, _conv) = fixture_copy(&format!("validation/{name}"));
        let (code, out, err) = run(
            &[
                "repair",
                "--dry-run",
                "--unsafe-fixes",
                store.to_str().unwrap(),
            ],
            &[],
        );
        assert!(code == 0 || code == 1, "{name}: exit {code}: {out}{err}");
        let quarantines = out.lines().any(|l| {
            l.contains("[invalid-event]") && l.contains(": set event ") && l.contains(" aside ")
        });
        if code == 1 && quarantines {
            planned.push(name);
        }
    }
    planned.sort();
    let doc = load("repairs.json");
    assert!(planned.len() >= 10, "{planned:?}");
    assert_eq!(
        proven_validation(&doc, "repairs", "unsafe-fixes"),
        planned,
        "proven with --unsafe-fixes"
    );
    assert_eq!(
        proven_validation(&doc, "listed_unsafe", "safe-only"),
        planned,
        "listed, not made, without --unsafe-fixes"
    );
}

/// The event file ids of `conv` whose bytes differ from the same file in
/// `base` (the undamaged real-SDK folder the case was made from).
fn damaged_files(base: &Path, conv: &Path) -> Vec<String> {
    let (a, b) = (event_bytes(base), event_bytes(conv));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{}",
        conv.display()
    );
    a.into_iter()
        .filter(|(rel, bytes)| b[rel] != *bytes)
        .map(|(rel, _)| rel)
        .collect()
}

/// Against the real SDK on both sides: the repair sets aside exactly the
/// event the damage edited (no other file changes), and the branch 1.58.2
/// loads after the repair is, id for id, the branch it loaded from the
/// undamaged folder: the refused event's slot now holds its placeholder,
/// with its id. Where 1.58.2 already loaded the damaged folder (the refused
/// event was off its branch), its branch is unchanged by the repair.
#[test]
fn the_quarantine_takes_only_the_refused_event_off_the_branch() {
    let doc = load("repairs.json");
    let man = load("manifest.json");
    let cases: BTreeMap<String, Value> = validation_cases().into_iter().collect();
    let judge = doc["judge"]["openhands-sdk"].as_str().unwrap();
    let mut seen = 0;
    for e in doc["repairs"].as_array().unwrap() {
        let Some(name) = e["fixture"].as_str().unwrap().strip_prefix("validation/") else {
            continue;
        };
        seen += 1;
        let case = &cases[name];
        let base_name = case["base"].as_str().unwrap();
        let cid = case["path"].as_str().unwrap().split('/').nth(1).unwrap();
        let base = fixtures_dir().join(base_name).join(cid);
        let damaged = fixtures_dir().join("validation").join(name).join(cid);
        let edited = damaged_files(&base, &damaged);
        assert_eq!(edited.len(), 1, "{name}: {edited:?}");
        let set_aside: Vec<&str> = e["set_aside"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: nothing set aside"))
            .iter()
            .map(|m| m["file"].as_str().unwrap())
            .collect();
        assert_eq!(set_aside, edited, "{name}");
        let changed: Vec<&str> = e["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["file"].as_str().unwrap())
            .collect();
        assert_eq!(
            changed, edited,
            "{name}: only the refused event's file changes"
        );

        // the release that judged the repaired folder, on the damaged one
        let before = &case["sdk_verdicts"][judge];
        let after = &e["sdk_verdict_after"];
        let after_ids = strs(&after["active_branch_ids"]);
        if before["loads"] == true {
            assert_eq!(
                after["active_branch_ids"], before["active_branch_ids"],
                "{name}: 1.58.2 loaded it before; the repair changed its branch"
            );
            continue;
        }
        assert_eq!(before["error"]["type"], "ValidationError", "{name}");
        let undamaged = man["fixtures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == base_name)
            .expect("base fixture in the manifest");
        let base_ids = strs(&undamaged["sdk_verdict"]["active_branch_ids"]);
        assert_eq!(
            after_ids, base_ids,
            "{name}: the branch is not the undamaged one, id for id"
        );
    }
    assert!(seen >= 10, "validation quarantines proven: {seen}");
}
