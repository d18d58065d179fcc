//! Compound damage, replayed: each case under fixtures/compound/ is a folder
//! a real SDK wrote plus 1-4 faults (fixtures/gen/compound_cases.json, most
//! of them minimised by fixtures/gen/compound_fuzz.py), and
//! fixtures/compound/manifest.json holds what the real SDK 1.58.2 said of it
//! before the repair, and of the folder `repair --unsafe-fixes` of the
//! recorded build made of it (with that folder's hash). No Python runs here.
//!
//! On a temp copy (same mtimes) the built binary's `repair --unsafe-fixes`:
//! * when it writes the very bytes that were recorded (same hash), our own
//!   agent view of them must be the one the real SDK reported;
//! * must keep issue 15's invariants: the repaired folder loads (our
//!   `diagnose`), no event of the SDK's branch before the repair is lost
//!   (except the events the repair says it quarantined), a false root over
//!   a legacy log gets every readable legacy event back on the branch, a
//!   second run plans nothing, and `undo` restores every name, byte, mode
//!   and mtime (and removes what the run created).
//!
//! A case recorded with `known_failure` (the recorded build broke one of
//! them) must break exactly those invariants while the bytes are the same;
//! once the repair writes other bytes every invariant must hold, and the
//! case is re-recorded (`compound_fuzz.py record`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{copy_tree, repair, s, undo};
use convo_doctor::version::NEWEST;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compound")
}

fn manifest() -> Value {
    let text =
        fs::read_to_string(root().join("manifest.json")).expect("fixtures/compound/manifest.json");
    serde_json::from_str(&text).expect("manifest is JSON")
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every entry below `conv` by relative path: a file's sha256, mode and
/// mtime (ns), a directory's mode.
type Snap = BTreeMap<String, (Option<String>, u32, i128)>;

fn snapshot(conv: &Path) -> Snap {
    let mut out = Snap::new();
    for e in walkdir::WalkDir::new(conv).min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(conv)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let md = fs::symlink_metadata(e.path()).unwrap();
        if md.is_file() {
            let mtime = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
            let sha = sha256(&fs::read(e.path()).unwrap());
            out.insert(rel, (Some(sha), md.mode() & 0o7777, mtime));
        } else {
            out.insert(rel, (None, md.mode(), 0));
        }
    }
    out
}

/// The digest compound_fuzz.py records: sha256 of "<rel> <sha256>\n" over
/// every regular file, sorted by relative path.
fn folder_hash(snap: &Snap) -> String {
    let mut h = Sha256::new();
    for (rel, (sha, _, _)) in snap {
        if let Some(sha) = sha {
            h.update(format!("{rel} {sha}\n").as_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn diff(a: &Snap, b: &Snap) -> Vec<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|k| match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x == y => None,
            (None, Some(_)) => Some(format!("left behind: {k}")),
            (Some(_), None) => Some(format!("missing: {k}")),
            (Some(x), Some(y)) => Some(format!(
                "{k}:{}{}{}",
                if x.0 != y.0 { " bytes" } else { "" },
                if x.1 != y.1 { " mode" } else { "" },
                if x.2 != y.2 { " mtime" } else { "" }
            )),
            (None, None) => unreachable!(),
        })
        .collect()
}

/// The damaged folder from its flat copy (`<path with / as __>.in`, so that
/// `diagnose fixtures/` finds no conversation in fixtures/compound/).
fn unflatten(src: &Path, conv: &Path) {
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let Some(flat) = name.strip_suffix(".in") else {
            continue;
        };
        let dest = conv.join(flat.replace("__", "/"));
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(e.path(), dest).unwrap();
    }
}

/// Whether the repair leaves an error with a reason an operator can act on
/// (not the generic "needs a human" line).
fn left_with_reason(doc: &Value) -> bool {
    doc["conversations"][0]["left"]
        .as_array()
        .is_some_and(|left| {
            left.iter().any(|l| {
                l["severity"] == "error"
                    && l["why"]
                        .as_str()
                        .is_some_and(|w| w.len() > 30 && !w.contains("no safe automatic repair"))
            })
        })
}

fn ids(v: &Value) -> Option<Vec<String>> {
    v["loads"].as_bool().unwrap().then(|| {
        v["active_branch_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    })
}

/// The ids of the event files the run moved into its backup: the id in
/// the name and the JSON id of the bytes it held before.
fn quarantined(doc: &Value, before: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let applied = doc["conversations"][0]["applied"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for a in applied
        .iter()
        .filter(|a| a["action"] == "move-to-quarantine")
    {
        let file = a["file"].as_str().unwrap();
        let Some(name) = file.strip_prefix("events/event-") else {
            continue;
        };
        if let Some((_, id)) = name.strip_suffix(".json").and_then(|n| n.split_once('-')) {
            out.insert(id.to_string());
        }
        let json: Option<Value> = fs::read(before.join(file))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(id) = json.as_ref().and_then(|j| j["id"].as_str()) {
            out.insert(id.to_string());
        }
    }
    out
}

/// The python labels this test can check, as the invariant they break.
/// The invariant a recorded label breaks. A case that stays `not-healed`
/// with a reason a human can act on breaks none (see `replay`); without
/// one the recorder adds `reason-not-actionable`, which breaks `loads`.
fn invariant_of(label: &str) -> Option<&'static str> {
    Some(match label {
        "reason-not-actionable" | "harmed-stops-loading" => "loads",
        "harmed-branch-loss" => "branch",
        "false-root-not-healed" => "false-root",
        "second-run-not-idle" => "second-run",
        "undo-not-exact" | "undo-leaves-lock" | "wrote-without-run" => "undo",
        _ => return None,
    })
}

struct Outcome {
    /// invariant -> what broke it
    broken: BTreeMap<&'static str, String>,
    hash_matches: bool,
    /// our agent view of the repaired bytes disagrees with the real SDK's
    disagreement: Option<String>,
}

/// Each JSON id of the folder's event files, with the ids in the names of
/// the files that hold it.
fn json_id_names(conv: &Path) -> std::collections::HashMap<String, Vec<String>> {
    let mut m: std::collections::HashMap<String, Vec<String>> = Default::default();
    let Ok(rd) = std::fs::read_dir(conv.join("events")) else {
        return m;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name
            .strip_suffix(".json")
            .and_then(|n| n.splitn(3, '-').nth(2))
        else {
            continue;
        };
        let json = std::fs::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["id"].as_str().map(String::from));
        if let Some(j) = json {
            m.entry(j).or_default().push(id.to_string());
        }
    }
    m
}

fn replay(case: &Value) -> Outcome {
    let name = case["name"].as_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp
        .path()
        .join("store")
        .join(case["conversation"].as_str().unwrap());
    unflatten(&root().join(case["files"].as_str().unwrap()), &conv);
    common::apply_mtimes(&conv, &case["mtimes"]);
    let before = snapshot(&conv);
    assert_eq!(
        folder_hash(&before),
        case["damaged_hash"].as_str().unwrap(),
        "{name}: the recorded files"
    );
    let pristine = tmp.path().join("pristine");
    copy_tree(&conv, &pristine);
    let backups = tmp.path().join("backups");
    let (rc, out, err) = repair(
        &conv,
        &backups,
        &["--unsafe-fixes", "--format", "json"],
        None,
    );
    assert!(rc == 0 || rc == 1, "{name}: repair exit {rc}\n{err}");
    let doc: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: repair JSON: {e}\n{out}"));
    let mut broken = BTreeMap::new();
    let gone = quarantined(&doc, &pristine);

    let ours = common::agent_branch_ids(&conv);
    let repaired = snapshot(&conv);
    let hash_matches = folder_hash(&repaired) == case["repaired_hash"].as_str().unwrap();
    let real_after = &case["sdk_after_repair"][NEWEST.to_string()];
    let disagreement = (hash_matches && ours != ids(real_after)).then(|| {
        format!(
            "our agent view {ours:?}, the real SDK's {:?} ({})",
            ids(real_after),
            real_after["error"]
        )
    });

    match &ours {
        // A case the real SDK could not load after the recorded repair
        // either, and that the repair leaves with a reason naming what a
        // human must supply (a required field, a missing copy), stays not
        // healed: nothing in the folder holds what it needs.
        None if case["outcome"] == "not-healed" && left_with_reason(&doc) => {}
        None => {
            let c = &doc["conversations"][0];
            broken.insert(
                "loads",
                format!(
                    "does not load after the repair (status {}, refusal {})",
                    c["status"], c["refusal"]
                ),
            );
        }
        Some(after) => {
            let after: BTreeSet<&String> = after.iter().collect();
            if let Some(b) = ids(&case["sdk_before"][NEWEST.to_string()]) {
                // the SDK hands an event back under its JSON id; a repair that
                // sets that id to its file's keeps the event (the fuzzer's
                // `id_names`): lost only when no file that held it is there
                let names = json_id_names(&pristine);
                let lost: Vec<&String> = b
                    .iter()
                    .filter(|i| !after.contains(i) && !gone.contains(*i))
                    .filter(|i| {
                        names
                            .get(i.as_str())
                            .is_none_or(|ns| !ns.iter().any(|n| after.contains(n)))
                    })
                    .collect();
                if !lost.is_empty() {
                    broken.insert("branch", format!("lost from the branch: {lost:?}"));
                }
            }
            // what the recorded repair put on the branch, the real SDK's
            // word: a different repair must keep every one of them
            if !hash_matches {
                if let Some(rec) = ids(real_after) {
                    let dropped: Vec<&String> = rec
                        .iter()
                        .filter(|i| !after.contains(i) && !gone.contains(*i))
                        .collect();
                    if !dropped.is_empty() {
                        broken.insert(
                            "recorded",
                            format!("not on the branch, as after the recorded repair: {dropped:?}"),
                        );
                    }
                }
            }
            if let Some(expect) = case["false_root_expect"].as_array() {
                let missing: Vec<&str> = expect
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .filter(|i| !after.contains(&i.to_string()) && !gone.contains(*i))
                    .collect();
                if !missing.is_empty() {
                    broken.insert(
                        "false-root",
                        format!("{} legacy events still cut off: {missing:?}", missing.len()),
                    );
                }
            }
        }
    }

    // a second run on what a run wrote (a refused run plans the same again)
    let (rc2, out2, err2) = common::run(
        &[
            "repair",
            "--unsafe-fixes",
            "--dry-run",
            "--format",
            "json",
            s(&conv),
        ],
        &[],
    );
    assert!(
        rc2 == 0 || rc2 == 1,
        "{name}: second run exit {rc2}\n{err2}"
    );
    let doc2: Value = serde_json::from_str(&out2).unwrap();
    let planned = doc2["conversations"][0]["planned"].as_array().unwrap();
    if doc["conversations"][0]["status"] == "applied" && !planned.is_empty() {
        let what: Vec<&str> = planned
            .iter()
            .map(|p| p["what"].as_str().unwrap_or(""))
            .collect();
        broken.insert("second-run", format!("a second run plans {what:?}"));
    }
    if snapshot(&conv) != repaired {
        broken.insert("second-run", "the dry run changed the folder".into());
    }

    match doc["summary"]["run"]["id"].as_str() {
        Some(run) => {
            let (rcu, _, erru) = undo(&backups, run);
            let d = diff(&before, &snapshot(&conv));
            if rcu != 0 || !d.is_empty() {
                broken.insert("undo", format!("undo exit {rcu}: {d:?} {}", erru.trim()));
            }
        }
        None => {
            let d = diff(&before, &repaired);
            if !d.is_empty() {
                broken.insert("undo", format!("changed without a run to undo: {d:?}"));
            }
        }
    }
    Outcome {
        broken,
        hash_matches,
        disagreement,
    }
}

#[test]
fn the_recorded_cases_cover_compound_damage() {
    let m = manifest();
    let cases = m["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "{} cases", cases.len());
    // compound: most cases keep two faults or more after minimising
    let multi = cases
        .iter()
        .filter(|c| c["faults"].as_array().unwrap().len() >= 2)
        .count();
    assert!(
        multi * 2 >= cases.len(),
        "{multi} of {} cases have 2+ faults",
        cases.len()
    );
    // the real SDK could not load most of them, and loads some after the repair
    let fails = |c: &&Value, k: &str| c[k][NEWEST.to_string()]["loads"] == false;
    assert!(cases.iter().filter(|c| fails(c, "sdk_before")).count() * 2 >= cases.len());
    assert!(cases
        .iter()
        .any(|c| fails(&c, "sdk_before") && !fails(&c, "sdk_after_repair")));
    // the seed case of issue 15: a false root over a legacy log with a damaged legacy event
    assert!(cases.iter().any(|c| c["false_root_expect"].is_array()));
    for c in cases {
        let dir = root().join(c["files"].as_str().unwrap());
        assert!(
            dir.join("base_state.json.in").is_file(),
            "{}",
            dir.display()
        );
    }
}

#[test]
fn every_compound_case_is_repaired_as_recorded_or_better() {
    let m = manifest();
    let mut failures = Vec::new();
    for case in m["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let o = replay(case);
        if let Some(d) = &o.disagreement {
            failures.push(format!("{name}: same bytes as recorded, but {d}"));
        }
        let known: BTreeSet<&str> = case["known_failure"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| invariant_of(l.as_str().unwrap()))
            .collect();
        let got: BTreeSet<&str> = o.broken.keys().copied().collect();
        if o.hash_matches {
            if got != known {
                failures.push(format!(
                    "{name}: same bytes as recorded, broken invariants {got:?}, recorded {known:?} ({:?})",
                    o.broken
                ));
            }
        } else if !got.is_empty() {
            failures.push(format!(
                "{name}: the repair writes other bytes than recorded and breaks {:?}",
                o.broken
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Findings a repair dry run's document says it clears: fixed by a change
/// serving their check (`planned`) or cleared by the others (`cleared`).
fn planned_to_clear(doc: &Value) -> u64 {
    doc["summary"]["by_check"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n["planned"].as_u64().unwrap() + n["cleared"].as_u64().unwrap_or(0))
        .sum()
}

/// Issue 23: `diagnose` said "N fixable with `convo-doctor repair`" where a
/// safe `repair --dry-run` planned nothing (the fixes needed
/// `--unsafe-fixes`, never named), or said nothing where `--unsafe-fixes`
/// heals the folder. Its counts now come from repair's own planner: per
/// folder, `fixable` is what a safe dry run clears and `fixable_unsafe`
/// what `--unsafe-fixes` clears besides.
#[test]
fn diagnose_calls_fixable_what_a_repair_dry_run_plans_to_fix() {
    let mut wrong = Vec::new();
    for case in manifest()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let conv = tmp.path().join(case["conversation"].as_str().unwrap());
        unflatten(&root().join(case["files"].as_str().unwrap()), &conv);
        common::apply_mtimes(&conv, &case["mtimes"]);
        let json = |args: &[&str]| -> Value {
            let (_, out, err) = common::run(args, &[]);
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}\n{out}{err}"))
        };
        let d = json(&["diagnose", "--format", "json", s(&conv)]);
        let safe = json(&["repair", "--dry-run", "--format", "json", s(&conv)]);
        let all = json(&[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--format",
            "json",
            s(&conv),
        ]);
        let fixable = d["summary"]["fixable"].as_u64();
        let more = d["summary"]["fixable_unsafe"].as_u64();
        let marked = d["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["fixable"] == true)
            .count() as u64;
        let (s_n, a_n) = (planned_to_clear(&safe), planned_to_clear(&all));
        if fixable != Some(s_n) || marked != s_n || more.map(|m| m + s_n) != Some(a_n) {
            wrong.push(format!(
                "{name}: diagnose fixable {fixable:?} (marked {marked}) + {more:?} with --unsafe-fixes; repair --dry-run clears {s_n}, with --unsafe-fixes {a_n}"
            ));
        }
        // a run that clears nothing changes nothing (a count marker or one
        // copy of a doubled index taken out alone, issue 23's fuzzer)
        let changes = |doc: &Value| {
            doc["conversations"][0]["planned"]
                .as_array()
                .map_or(0, Vec::len)
        };
        for (mode, doc, n) in [("", &safe, s_n), (" --unsafe-fixes", &all, a_n)] {
            if n == 0 && changes(doc) > 0 {
                wrong.push(format!(
                    "{name}: repair --dry-run{mode} plans {} changes and clears no finding",
                    changes(doc)
                ));
            }
        }
        let (_, human, _) = common::run(&["diagnose", s(&conv)], &[]);
        if a_n > s_n && !human.contains("--unsafe-fixes") {
            wrong.push(format!(
                "{name}: the advice never names --unsafe-fixes:\n{human}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The copy a `duplicate-index` finding says survives: "a repair keeps
/// `X`" (or the old wording's "the SDK keeps `X`").
fn named_survivor(message: &str) -> Option<String> {
    ["a repair keeps `", "the SDK keeps `"]
        .iter()
        .find_map(|p| {
            let rest = &message[message.find(p)? + p.len()..];
            Some(rest[..rest.find('`')?].to_string())
        })
}

/// Issue 23: `diagnose` said the SDK keeps `event-00009-084e…` ("last in
/// directory order here") while `repair` moved that very file into the
/// backup because "the SDK reads `event-00009-fc92…`": two rules. Now one
/// (`duplicate_index::survivors`): for every doubled index of the compound
/// cases and the teaching fixture, the copy diagnose names is the one an
/// unsafe repair dry run leaves in place, and every other copy is moved.
#[test]
fn the_duplicate_index_copy_diagnose_names_is_the_one_repair_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let mut folders = vec![common::fixture("duplicate-index")];
    for case in manifest()["cases"].as_array().unwrap() {
        let conv = tmp
            .path()
            .join(case["name"].as_str().unwrap())
            .join(case["conversation"].as_str().unwrap());
        unflatten(&root().join(case["files"].as_str().unwrap()), &conv);
        common::apply_mtimes(&conv, &case["mtimes"]);
        folders.push(conv);
    }
    let (mut wrong, mut seen) = (Vec::new(), 0);
    for conv in &folders {
        let json = |args: &[&str]| -> Value {
            let (_, out, err) = common::run(args, &[]);
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}{err}"))
        };
        let d = json(&["diagnose", "--format", "json", s(conv)]);
        let dups: Vec<&Value> = d["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "duplicate-index")
            .collect();
        if dups.is_empty() {
            continue;
        }
        let r = json(&[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--format",
            "json",
            s(conv),
        ]);
        let moved: BTreeSet<String> = r["conversations"][0]["planned"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["action"] == "move-to-quarantine" || c["action"] == "renumber")
            .filter_map(|c| c["file"].as_str()?.strip_prefix("events/"))
            .map(str::to_string)
            .collect();
        for f in dups {
            seen += 1;
            let message = f["message"].as_str().unwrap();
            let copies: Vec<&str> = message
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|n| n.starts_with("event-"))
                .collect();
            let Some(kept) = named_survivor(message) else {
                wrong.push(format!("{}: no survivor named: {message}", conv.display()));
                continue;
            };
            if moved.contains(&kept) {
                wrong.push(format!(
                    "{}: diagnose names `{kept}` the survivor, repair moves it\n  {message}",
                    conv.display()
                ));
            }
            for other in copies.iter().filter(|c| **c != kept) {
                if !moved.contains(*other) {
                    wrong.push(format!(
                        "{}: `{other}` is not the survivor, yet repair leaves it",
                        conv.display()
                    ));
                }
            }
        }
    }
    assert!(seen >= 5, "the cases exercise doubled indices ({seen})");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The numbers of "agent sees all N events (A + P placeholders … + S
/// state-sync records)" or "agent sees K of N events (…): …": (N, the
/// terms in parentheses).
fn event_counts(verdict: &str) -> (u64, Vec<u64>) {
    let rest = verdict
        .split(" of ")
        .nth(1)
        .or_else(|| verdict.split("all ").nth(1));
    let rest = rest.unwrap_or_else(|| panic!("{verdict}"));
    let total = rest.split(' ').next().unwrap().parse().unwrap();
    let terms = rest
        .split_once(" (")
        .filter(|(head, _)| head.split(' ').count() == 2)
        .map(|(_, t)| {
            t.split(" + ")
                .map(|x| x.split([' ', ')']).next().unwrap().parse().unwrap())
                .collect()
        })
        .unwrap_or_default();
    (total, terms)
}

/// Issue 23: "agent sees 2 of 42 events: 40 cut off" became, after the
/// repair, "agent sees all 52 events" with nothing to say that 1 is the
/// placeholder of a set-aside event and 9 state-sync records the re-link
/// brought back (which the events cut off never count). The count now
/// names them, and its terms add up to the events there were.
#[test]
fn event_counts_name_placeholders_and_state_sync_records() {
    let case = manifest()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "seed-case-truncated-legacy")
        .cloned()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp.path().join(case["conversation"].as_str().unwrap());
    unflatten(&root().join(case["files"].as_str().unwrap()), &conv);
    common::apply_mtimes(&conv, &case["mtimes"]);
    let (_, out, _) = common::run(&["diagnose", "--format", "json", s(&conv)], &[]);
    let d: Value = serde_json::from_str(&out).unwrap();
    let (before, _) = event_counts(d["conversations"][0]["verdict"].as_str().unwrap());
    let (_, out, _) = common::run(
        &[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--format",
            "json",
            s(&conv),
        ],
        &[],
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    let after = r["conversations"][0]["verdict_after"].as_str().unwrap();
    let (total, terms) = event_counts(after);
    assert!(after.contains("placeholder"), "{after}");
    assert!(after.contains("state-sync record"), "{after}");
    assert_eq!(terms.iter().sum::<u64>(), total, "{after}");
    assert_eq!(terms.first(), Some(&before), "{after} (before: {before})");
}

/// Issue 23: a conversation's diff was printed above its own header, right
/// under the previous conversation's verdict; and the closing "would fix"
/// tally left out the findings those repairs clear as a side effect (a
/// stale HEAD on a renamed or restored event), which `diagnose` counts as
/// fixable. Two compound cases in one store, one safe dry run.
#[test]
fn diffs_sit_under_their_own_header_and_the_tally_counts_what_is_cleared() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut convs = Vec::new();
    for case in manifest()["cases"].as_array().unwrap() {
        if !["head-lag-deleted-head", "stale-head-one-run"]
            .contains(&case["name"].as_str().unwrap())
        {
            continue;
        }
        let id = case["conversation"].as_str().unwrap();
        let conv = store.join(id);
        unflatten(&root().join(case["files"].as_str().unwrap()), &conv);
        common::apply_mtimes(&conv, &case["mtimes"]);
        convs.push(id.to_string());
    }
    assert_eq!(convs.len(), 2);
    let (_, human, err) = common::run(&["repair", "--dry-run", s(&store)], &[]);
    let mut under: Option<&str> = None;
    let mut diff_lines = 0;
    for line in human.lines() {
        if let Some(c) = convs.iter().find(|c| line.ends_with(c.as_str())) {
            under = Some(c);
            continue;
        }
        let shown = [
            "--- a/",
            "+++ b/",
            "new file    ",
            "rename from ",
            "quarantine  ",
        ]
        .iter()
        .find_map(|p| line.strip_prefix(p));
        if let Some(path) = shown {
            diff_lines += 1;
            let of = convs.iter().find(|c| path.starts_with(c.as_str()));
            assert!(
                of.is_some() && of.map(String::as_str) == under,
                "`{line}` is not under its conversation's header:\n{human}{err}"
            );
        }
    }
    assert!(diff_lines >= 2, "{human}");

    let (_, out, _) = common::run(&["repair", "--dry-run", "--format", "json", s(&store)], &[]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let cleared: u64 = doc["summary"]["by_check"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n["cleared"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        cleared > 0,
        "the cases clear findings as a side effect: {out}"
    );
    let tally = human
        .lines()
        .find(|l| l.starts_with("would fix: "))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(
        tally.contains(&format!("(+{cleared} cleared by those repairs")),
        "{tally}"
    );
}
