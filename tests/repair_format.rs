//! `repair --format json|jsonl`: the per-conversation record (changes
//! planned or applied, findings left with their reason, findings refused),
//! the run summary, and how both match what the files and `diagnose` show.
//! Everything runs on copies of the fixtures in a temp dir.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::{copy_tree, run, snapshot};
use serde_json::{json, Value};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A store in a temp dir holding the conversation of each named fixture.
fn store_of(names: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    for name in names {
        for e in fs::read_dir(fixtures().join(name)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                copy_tree(&p, &store.join(p.file_name().unwrap()));
            }
        }
    }
    (tmp, store)
}

fn doc(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not one JSON document ({e}): {out}"))
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn set(ks: &[&str]) -> BTreeSet<String> {
    ks.iter().map(|k| k.to_string()).collect()
}

fn conversations(d: &Value) -> &Vec<Value> {
    d["conversations"].as_array().unwrap()
}

/// Findings per check as `diagnose --format json` counts them.
fn diagnose_by_check(store: &Path) -> BTreeMap<String, u64> {
    let (_, out, _) = run(
        &[
            "diagnose",
            "--format",
            "json",
            "--fail-on",
            "never",
            s(store),
        ],
        &[],
    );
    doc(&out)["summary"]["by_check"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

const MIXED: &[&str] = &[
    "false-root",
    "index-gap",
    "empty-event",
    "unknown-kind",
    "fat-meta-divergence",
    "parent-cycle",
];

#[test]
fn schema_is_the_documented_one() {
    let (_t, store) = store_of(MIXED);
    let (code, out, err) = run(&["repair", "--dry-run", "--format", "json", s(&store)], &[]);
    assert_eq!(code, 1, "{err}");
    let d = doc(&out);
    assert_eq!(
        keys(&d),
        set(&["schema_version", "conversations", "summary"])
    );
    assert_eq!(d["schema_version"], 1);
    let conv_keys = set(&[
        "path",
        "id",
        "status",
        "planned",
        "applied",
        "left",
        "refused",
        "refusal",
        "refusal_kind",
        "files",
        "notes",
        "verdict",
        "verdict_after",
        "by_check",
    ]);
    let (mut changes, mut lefts) = (0, 0);
    for c in conversations(&d) {
        assert_eq!(keys(c), conv_keys);
        for ch in c["planned"].as_array().unwrap() {
            changes += 1;
            assert_eq!(
                keys(ch),
                set(&["checks", "file", "action", "to", "applicability", "what"])
            );
            let action = ch["action"].as_str().unwrap();
            assert!(
                ["rewrite", "renumber", "move-to-quarantine", "create"].contains(&action),
                "{ch}"
            );
            assert_eq!(ch["to"].is_string(), action == "renumber", "{ch}");
            assert!(["safe", "unsafe"].contains(&ch["applicability"].as_str().unwrap()));
        }
        for l in c["left"].as_array().unwrap() {
            lefts += 1;
            assert_eq!(
                keys(l),
                set(&["check", "file", "severity", "reason", "why"])
            );
        }
        for counts in c["by_check"].as_object().unwrap().values() {
            assert_eq!(
                keys(counts),
                set(&["planned", "cleared", "left", "refused"])
            );
        }
    }
    assert!(
        changes > 0 && lefts > 0,
        "the store must exercise both: {out}"
    );
    let sum = &d["summary"];
    assert_eq!(
        keys(sum),
        set(&[
            "run",
            "totals",
            "by_check",
            "refused_because",
            "errors",
            "error_messages"
        ])
    );
    assert_eq!(sum["errors"], 0);
    assert_eq!(
        keys(&sum["run"]),
        set(&[
            "id",
            "backup_dir",
            "dry_run",
            "unsafe_fixes",
            "server_version"
        ])
    );
    assert_eq!(
        sum["run"],
        json!({"id": null, "backup_dir": null, "dry_run": true, "unsafe_fixes": false,
               "server_version": "1.58.2"})
    );
    assert_eq!(
        keys(&sum["totals"]),
        set(&[
            "scanned",
            "files",
            "conversations",
            "failed",
            "refused",
            "left"
        ])
    );
    assert_eq!(sum["totals"]["scanned"], MIXED.len());
}

/// A dry run writes nothing and plans exactly the changes a real run then
/// applies; every applied change is visible on disk, every changed file is
/// named by a change, and the per-check counts equal what `diagnose` counts
/// before minus after.
#[test]
fn applied_is_what_the_files_now_show() {
    let (tmp, store) = store_of(MIXED);
    let before_files = snapshot(&store);
    let before_checks = diagnose_by_check(&store);

    let (dcode, dry, err) = run(
        &[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--format",
            "json",
            s(&store),
        ],
        &[],
    );
    assert_eq!(dcode, 1, "{err}");
    assert!(snapshot(&store) == before_files, "a dry run wrote");
    let dry = doc(&dry);

    let backups = tmp.path().join("backups");
    let (code, out, err) = run(
        &[
            "repair",
            "--unsafe-fixes",
            "--format",
            "json",
            "--backup-dir",
            s(&backups),
            s(&store),
        ],
        &[("CONVO_DOCTOR_RUN_ID", "run-fmt")],
    );
    let real = doc(&out);
    assert_eq!(
        real["summary"]["run"],
        json!({"id": "run-fmt", "backup_dir": s(&backups.join("run-fmt")), "dry_run": false,
               "unsafe_fixes": true, "server_version": "1.58.2"}),
        "{err}"
    );
    // parent-cycle stays (manual): findings remain, exit 1
    assert_eq!(code, 1, "{err}");

    let before: BTreeMap<PathBuf, Vec<u8>> =
        before_files.into_iter().map(|(p, b, _)| (p, b)).collect();
    let after: BTreeMap<PathBuf, Vec<u8>> = snapshot(&store)
        .into_iter()
        .map(|(p, b, _)| (p, b))
        .collect();
    let quarantined: BTreeSet<String> = walkdir::WalkDir::new(backups.join("run-fmt"))
        .into_iter()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut named = BTreeSet::new();
    let mut applied_by_check: BTreeMap<String, u64> = BTreeMap::new();
    for (c, dc) in conversations(&real).iter().zip(conversations(&dry)) {
        assert_eq!(c["path"], dc["path"]);
        // the dry run planned exactly what was applied
        assert_eq!(c["applied"], dc["planned"], "{}", c["path"]);
        assert_eq!(c["planned"], json!([]));
        let conv = PathBuf::from(c["path"].as_str().unwrap());
        let changes = c["applied"].as_array().unwrap();
        assert_eq!(
            c["status"],
            if changes.is_empty() {
                "unchanged"
            } else {
                "applied"
            }
        );
        // a file's name once the renumbering is done
        let final_name = |file: &str| -> String {
            changes
                .iter()
                .find(|x| x["action"] == "renumber" && x["file"] == file)
                .map(|x| x["to"].as_str().unwrap().to_string())
                .unwrap_or_else(|| file.to_string())
        };
        for ch in changes {
            let file = ch["file"].as_str().unwrap();
            let path = conv.join(file);
            named.insert(path.clone());
            match ch["action"].as_str().unwrap() {
                "rewrite" => {
                    let now = conv.join(final_name(file));
                    assert_ne!(after.get(&now), before.get(&path), "{ch} left the bytes");
                    assert!(after.contains_key(&now), "{ch}");
                }
                "renumber" => {
                    let to = conv.join(ch["to"].as_str().unwrap());
                    assert!(after.contains_key(&to), "{ch}");
                    named.insert(to);
                }
                "move-to-quarantine" => {
                    assert!(!after.contains_key(&path), "{ch} is still there");
                    let name = path.file_name().unwrap().to_string_lossy();
                    assert!(
                        quarantined.contains(name.as_ref()),
                        "{ch} not in the backup"
                    );
                }
                "create" => {
                    assert!(
                        !before.contains_key(&path) && after.contains_key(&path),
                        "{ch}"
                    );
                }
                other => panic!("unknown action {other}"),
            }
        }
        for (check, n) in c["by_check"].as_object().unwrap() {
            *applied_by_check.entry(check.clone()).or_default() += n["applied"].as_u64().unwrap();
        }
    }
    // every file that changed (added, removed, rewritten) is named by a change
    // (the SDK's lock files, created when missing, aside)
    for p in before.keys().chain(after.keys()) {
        let lock = p.to_string_lossy().ends_with(".lock");
        if before.get(p) != after.get(p) && !lock {
            assert!(
                named.contains(p),
                "{} changed but no change names it",
                p.display()
            );
        }
    }
    let after_checks = diagnose_by_check(&store);
    let mut checked = 0;
    for (check, n) in &applied_by_check {
        if *n > 0 {
            let was = before_checks.get(check).copied().unwrap_or(0);
            let now = after_checks.get(check).copied().unwrap_or(0);
            assert_eq!(
                was - now,
                *n,
                "{check}: diagnose counts {was} before, {now} after"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "the store must exercise several repairs: {applied_by_check:?}"
    );
    // and the human run on an identical copy exits the same
    let (_t2, store2) = store_of(MIXED);
    let (hcode, _, _) = run(
        &[
            "repair",
            "--unsafe-fixes",
            "--backup-dir",
            s(&tmp.path().join("b2")),
            s(&store2),
        ],
        &[],
    );
    assert_eq!(hcode, code);
}

fn left_of(d: &Value) -> Vec<(String, String, String)> {
    conversations(d)
        .iter()
        .flat_map(|c| c["left"].as_array().unwrap().iter())
        .map(|l| {
            (
                l["check"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
                l["why"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn left_findings_carry_their_reason_and_the_human_text() {
    // manual, unsafe-not-requested, no-repair (copies that differ)
    let (_t, store) = store_of(&[
        "plaintext-secret",
        "parent-cycle",
        "unknown-kind",
        "fuzz/dup-id-first-copy-unreadable",
    ]);
    let args = ["repair", "--dry-run", s(&store)];
    let (hcode, human, _) = run(&args, &[]);
    let (code, out, _) = run(&[&args[..], &["--format", "json"]].concat(), &[]);
    assert_eq!(code, hcode);
    let left = left_of(&doc(&out));
    let has = |check: &str, reason: &str| left.iter().any(|l| l.0 == check && l.1 == reason);
    assert!(has("plaintext-secret", "manual"), "{left:?}");
    assert!(has("parent-cycle", "unsafe-not-requested"), "{left:?}");
    assert!(has("unknown-kind", "unsafe-not-requested"), "{left:?}");
    assert!(has("duplicate-event-id", "no-repair"), "{left:?}");
    assert_eq!(
        left.iter().filter(|l| l.0 == "unknown-kind").count(),
        2,
        "two unknown kinds in the fixture"
    );
    for (_, _, why) in &left {
        assert!(
            human.contains(why.as_str()),
            "human output lacks `{why}`:\n{human}"
        );
    }
    // the closing line of the human output counts them by reason
    assert!(
        human.contains("unknown-kind ×2 (unsafe: --unsafe-fixes)"),
        "{human}"
    );
    assert!(
        human.contains("parent-cycle ×1 (unsafe: --unsafe-fixes)"),
        "{human}"
    );
    assert!(human.contains("plaintext-secret ×1 (manual)"), "{human}");
    assert!(!human.contains("(see above)\n"), "{human}");

    // --only leaves the other repairs out: not-selected
    let (_t, store) = store_of(&["false-root", "index-gap"]);
    let (_, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--only",
            "false-root",
            "--format",
            "json",
            s(&store),
        ],
        &[],
    );
    let d = doc(&out);
    let left = left_of(&d);
    assert!(
        left.iter()
            .any(|l| l.0 == "index-gap" && l.1 == "not-selected"),
        "{left:?}"
    );
    assert_eq!(
        d["summary"]["by_check"]["false-root"]["planned"], 1,
        "{out}"
    );
    assert!(
        d["summary"]["by_check"]["index-gap"]["planned"] == 0,
        "{out}"
    );
}

#[test]
fn a_live_lease_is_a_refusal_with_the_human_reason() {
    let (tmp, store) = store_of(&["false-root"]);
    let conv = fs::read_dir(&store)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    common::live_lease(&conv, 12345);
    let before = snapshot(&store);
    let b = tmp.path().join("b");
    let (hcode, human, _) = run(&["repair", "--backup-dir", s(&b), s(&store)], &[]);
    for fmt in ["json", "jsonl"] {
        let (code, out, err) = run(
            &["repair", "--format", fmt, "--backup-dir", s(&b), s(&store)],
            &[],
        );
        assert_eq!(code, 1, "{err}");
        assert_eq!(code, hcode);
        let c: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        let c = if fmt == "json" {
            &c["conversations"][0]
        } else {
            &c
        };
        assert_eq!(c["status"], "refused");
        assert_eq!(c["refusal_kind"], "in-use");
        let why = c["refusal"].as_str().unwrap();
        assert!(why.starts_with("in use by another-host"), "{why}");
        assert!(human.contains(&format!("refused: {why}")), "{human}");
        let refused = c["refused"].as_array().unwrap();
        assert_eq!(refused.len(), 1, "{c}");
        assert_eq!(refused[0]["check"], "false-root");
        assert_eq!(refused[0]["reason"], why);
        assert_eq!(c["applied"], json!([]));
        assert_eq!(c["by_check"]["false-root"]["refused"], 1);
        assert_eq!(c["by_check"]["false-root"]["applied"], 0);
    }
    // counted by why it was refused, not by the findings it happened to have
    assert!(
        human.contains("refused: 1 conversation (1 in use by a server)"),
        "{human}"
    );
    assert!(snapshot(&store) == before, "a refused repair wrote");
    assert!(!b.join("run").exists());
}

#[test]
fn jsonl_lines_parse_and_the_summary_is_the_sum_of_its_lines() {
    let (_t, store) = store_of(MIXED);
    let args = ["repair", "--dry-run", "--unsafe-fixes", s(&store)];
    let (lcode, lines, _) = run(&[&args[..], &["--format", "jsonl"]].concat(), &[]);
    let (jcode, one, _) = run(&[&args[..], &["--format", "json"]].concat(), &[]);
    assert_eq!(lcode, jcode);
    // every line says its schema version, as the last key
    let parsed: Vec<Value> = lines
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(l.ends_with(",\"schema_version\":1}"), "{l}");
            v.as_object_mut().unwrap().remove("schema_version");
            v
        })
        .collect();
    let (summary, convs) = parsed.split_last().unwrap();
    assert_eq!(keys(summary), set(&["summary"]));
    let summary = &summary["summary"];
    let one = doc(&one);
    assert_eq!(convs, &conversations(&one)[..], "jsonl and json disagree");
    assert_eq!(summary, &one["summary"]);
    assert_eq!(
        convs.len() as u64,
        summary["totals"]["scanned"].as_u64().unwrap()
    );
    let mut sum: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let (mut files, mut changed, mut left) = (0, 0, 0);
    for c in convs {
        assert!(c.get("summary").is_none());
        files += c["files"].as_u64().unwrap();
        changed += u64::from(c["files"].as_u64().unwrap() > 0);
        left += c["left"].as_array().unwrap().len() as u64;
        for (check, n) in c["by_check"].as_object().unwrap() {
            let e = sum.entry(check.clone()).or_default();
            e[0] += n["planned"].as_u64().unwrap();
            e[1] += n["left"].as_u64().unwrap();
            e[2] += n["refused"].as_u64().unwrap();
        }
        // the per-check counts match the lists
        for (check, n) in c["by_check"].as_object().unwrap() {
            let count = |list: &str| {
                c[list]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|x| x["check"] == check.as_str())
                    .count() as u64
            };
            assert_eq!(n["left"].as_u64().unwrap(), count("left"), "{c}");
            assert_eq!(n["refused"].as_u64().unwrap(), count("refused"), "{c}");
        }
    }
    let by: BTreeMap<String, [u64; 3]> = summary["by_check"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| {
            (
                k.clone(),
                [
                    n["planned"].as_u64().unwrap(),
                    n["left"].as_u64().unwrap(),
                    n["refused"].as_u64().unwrap(),
                ],
            )
        })
        .collect();
    assert_eq!(by, sum);
    assert_eq!(summary["totals"]["files"], files);
    assert_eq!(summary["totals"]["conversations"], changed);
    assert_eq!(summary["totals"]["left"], left);
    // counted by hand from the fixtures: one false root, one gap, three
    // diverging meta values, one empty event, two unknown kinds
    for (check, n) in [
        ("false-root", 1),
        ("index-gap", 1),
        ("meta-divergence", 3),
        ("unreadable-event", 1),
        ("unknown-kind", 2),
    ] {
        assert_eq!(by[check][0], n, "{check}: {by:?}");
    }
    // a loop is re-linked only with consent (this run has it)
    assert_eq!(by["parent-cycle"], [1, 0, 0]);
}

#[test]
fn exit_codes_are_those_of_the_human_output() {
    let root = fixtures();
    for name in [
        "false-root",
        "index-gap",
        "unknown-kind",
        "parent-cycle",
        "live-lease",
        "clean-tree",
        "plaintext-secret",
    ] {
        let path = root.join(name);
        for extra in [&[][..], &["--unsafe-fixes"][..]] {
            let mut args = vec!["repair", "--dry-run", s(&path)];
            args.extend(extra);
            let (h, _, _) = run(&args, &[]);
            for fmt in ["json", "jsonl"] {
                let (code, out, _) = run(&[&args[..], &["--format", fmt]].concat(), &[]);
                assert_eq!(code, h, "{name} {extra:?} {fmt}: {out}");
            }
        }
    }
    // a PATH that does not exist: exit 2, and still a document
    let (code, out, err) = run(
        &["repair", "--dry-run", "--format", "json", "/nonexistent/x"],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(doc(&out)["summary"]["totals"]["scanned"], 0);
    // a backup root others can write: exit 2, nothing written, and the
    // document is still whole
    use std::os::unix::fs::PermissionsExt;
    let (tmp, store) = store_of(&["false-root"]);
    let before = snapshot(&store);
    let open = tmp.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    for fmt in ["json", "jsonl"] {
        let (code, out, err) = run(
            &[
                "repair",
                "--format",
                fmt,
                "--backup-dir",
                s(&open),
                s(&store),
            ],
            &[],
        );
        assert_eq!(code, 2, "{err}");
        let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert!(last.get("summary").is_some(), "{out}");
    }
    assert!(snapshot(&store) == before);
}

#[test]
fn json_and_a_patch_diff_are_a_usage_error() {
    let path = fixtures().join("false-root");
    for fmt in ["json", "jsonl"] {
        let (code, out, err) = run(
            &[
                "repair",
                "--dry-run",
                "--format",
                fmt,
                "--diff-format",
                "patch",
                s(&path),
            ],
            &[],
        );
        assert_eq!(code, 2, "{err}");
        assert_eq!(out, "");
        assert!(err.contains("cannot be used with"), "{err}");
    }
    let (code, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--format",
            "human",
            "--diff-format",
            "patch",
            "--show-content",
            s(&path),
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert!(out.starts_with("--- a/"), "{out}");
}

/// JSON says what would change, never the bytes: no diff, no event content,
/// even with --show-content.
#[test]
fn json_carries_no_diff_and_no_event_content() {
    let path = fixtures().join("false-root");
    let (_, human, _) = run(&["repair", "--dry-run", "--show-content", s(&path)], &[]);
    assert!(human.contains("+++ b/"), "{human}");
    let (_, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--show-content",
            "--format",
            "json",
            s(&path),
        ],
        &[],
    );
    let d = doc(&out);
    let planned = &conversations(&d)[0]["planned"];
    assert_eq!(planned.as_array().unwrap().len(), 1, "{out}");
    assert_eq!(planned[0]["action"], "rewrite");
    assert_eq!(planned[0]["checks"], json!(["false-root"]));
    assert_eq!(planned[0]["applicability"], "safe");
    for bytes in ["+++", "@@", "What is my name?", "llm_message", "__root__"] {
        assert!(!out.contains(bytes), "`{bytes}` in {out}");
    }
}

#[test]
fn secrets_are_redacted_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    // a store whose very name is a Fernet token
    let fernet = "gAAAAABpQ2FuYXJ5LWZvcm1hdC10b2tlbi1yZXBhaXI=";
    let store = tmp.path().join(fernet);
    let src = fixtures().join("fat-meta-divergence");
    copy_tree(&src, &store);
    let conv = fs::read_dir(&store)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let base_key = format!("sk-CANARY-base-{}", "x".repeat(40));
    let meta_key = format!("sk-CANARY-meta-{}", "y".repeat(40));
    for (file, key) in [("base_state.json", &base_key), ("meta.json", &meta_key)] {
        let mut v: Value = serde_json::from_slice(&fs::read(conv.join(file)).unwrap()).unwrap();
        v["agent"]["llm"]["api_key"] = json!(key);
        fs::write(conv.join(file), v.to_string()).unwrap();
    }
    // a live lease naming a secret as its host: the refusal quotes it
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    fs::write(
        conv.join("owner_lease.json"),
        json!({"owner_instance_id": "x", "generation": 1, "expires_at": now + 600.0,
               "owner_host": base_key, "owner_pid": 1})
        .to_string(),
    )
    .unwrap();
    let mut all = String::new();
    let b = tmp.path().join("b");
    for fmt in ["json", "jsonl"] {
        let (_, out, err) = run(&["repair", "--dry-run", "--format", fmt, s(&store)], &[]);
        assert!(out.contains("in use by [REDACTED:"), "{out}");
        all.push_str(&out);
        all.push_str(&err);
    }
    fs::remove_file(conv.join("owner_lease.json")).unwrap();
    for fmt in ["json", "jsonl"] {
        let (_, out, err) = run(&["repair", "--dry-run", "--format", fmt, s(&store)], &[]);
        // the api_key divergence is planned, its values redacted
        assert!(out.contains("agent.llm.api_key: \\\"[REDACTED:"), "{out}");
        all.push_str(&out);
        all.push_str(&err);
    }
    let (code, out, err) = run(
        &[
            "repair",
            "--format",
            "json",
            "--backup-dir",
            s(&b),
            s(&store),
        ],
        &[],
    );
    // the plaintext keys themselves stay (manual): exit 1
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(doc(&out)["conversations"][0]["status"], "applied");
    all.push_str(&out);
    all.push_str(&err);
    for secret in [fernet, &base_key, &meta_key, "sk-CANARY"] {
        assert!(!all.contains(secret), "`{secret}` leaked:\n{all}");
    }
}

/// A repair that fails under the locks (a server took the conversation
/// between the plan and the write) is `failed`: nothing applied, its
/// findings refused with the error the human output prints.
#[test]
fn a_lease_taken_before_the_write_is_a_failure_with_the_error() {
    let mut outs = Vec::new();
    for fmt in ["human", "json"] {
        let (tmp, store) = store_of(&["false-root"]);
        let conv = fs::read_dir(&store)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let before = snapshot(&store);
        let b = tmp.path().join("b");
        let gate = tmp.path().join("go");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
            .args(["repair", "--format", fmt, "--backup-dir", s(&b), s(&store)])
            .env("NO_COLOR", "1")
            .env("CONVO_DOCTOR_PAUSE_AT", "before-proof")
            .env("CONVO_DOCTOR_PAUSE_FILE", &gate)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let ready = PathBuf::from(format!("{}.ready", gate.display()));
        let start = std::time::Instant::now();
        while !ready.exists() {
            assert!(start.elapsed().as_secs() < 60, "the repair never paused");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        fs::write(
            conv.join("owner_lease.json"),
            json!({"owner_instance_id": "x", "generation": 1, "expires_at": now + 600.0,
                   "owner_host": "another-host", "owner_pid": 1})
            .to_string(),
        )
        .unwrap();
        fs::write(&gate, "").unwrap();
        let out = child.wait_with_output().unwrap();
        fs::remove_file(conv.join("owner_lease.json")).unwrap();
        assert!(snapshot(&store) == before, "a failed repair wrote");
        outs.push((
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ));
    }
    let (hcode, human) = &outs[0];
    let (code, out) = &outs[1];
    assert_eq!(code, hcode);
    assert_eq!(*code, 1, "{out}");
    let d = doc(out);
    let c = &conversations(&d)[0];
    assert_eq!(c["status"], "failed", "{out}");
    let why = c["refusal"].as_str().unwrap();
    assert!(why.contains("owner_lease.json became live"), "{why}");
    assert!(human.contains(&format!("not applied: {why}")), "{human}");
    assert_eq!(c["applied"], json!([]));
    assert_eq!(c["refused"][0]["check"], "false-root");
    assert_eq!(c["refused"][0]["reason"], why);
    assert_eq!(d["summary"]["totals"]["failed"], 1);
    assert_eq!(d["summary"]["totals"]["files"], 0);
    assert!(
        human.contains("not applied: false-root ×1 in 1 conversation"),
        "{human}"
    );
}
