//! `listed` against the real agent-servers' own listings: every folder of
//! fixtures/listing/ (stores written by real 1.33.0 and 1.58.2 servers, then
//! damaged as the manifest says), judged by each release recorded there
//! (`search_conversations()` of its own ConversationService, in-process;
//! fixtures/gen/listing.py).

mod common;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use convo_doctor::analysis::Analysis;
use convo_doctor::checks::{not_listed, Severity};
use convo_doctor::report::{analyze, Options};
use convo_doctor::server::{self, lease, StoreIds};
use convo_doctor::store::conversation::Overlay;
use convo_doctor::version::Version;
use serde_json::Value;

fn all(_: &str) -> bool {
    true
}

/// The one place these tests build report options (every check selected).
fn opts(version: Version) -> Options<'static> {
    Options {
        version,
        version_given: false,
        selected: &all,
        event_list: false,
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/listing")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(root().join("manifest.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// (store, folder, case, release, listed by the real server)
fn cases(m: &Value) -> Vec<(String, String, String, String, bool)> {
    let mut out = Vec::new();
    for (store, st) in m["stores"].as_object().unwrap() {
        for row in st["folders"].as_array().unwrap() {
            for (rel, listed) in row["listed"].as_object().unwrap() {
                out.push((
                    store.clone(),
                    row["folder"].as_str().unwrap().to_string(),
                    row["case"].as_str().unwrap().to_string(),
                    rel.clone(),
                    listed.as_bool().unwrap(),
                ));
            }
        }
    }
    out
}

/// The verdict with the lease judged on the host where the real servers ran
/// (a lease naming that host and a dead pid is taken over there; here it
/// could name another host).
fn verdict(store: &str, folder: &str, version: Version, host: &str) -> server::Verdict {
    let dir = root().join(store).join(folder);
    let a = Analysis::load(&dir, version, &Overlay::new());
    let ctx = a.ctx(false);
    let ids = StoreIds::read(&root().join(store));
    let env = lease::Env {
        now: SystemTime::now(),
        host: Some(host.to_string()),
        pid_alive: None,
    };
    not_listed::verdict_with(&ctx, &ids, &env)
}

#[test]
fn listed_matches_every_real_server_on_every_folder() {
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap();
    let all = cases(&m);
    assert!(all.len() >= 90, "{} verdicts recorded", all.len());
    let mut wrong = Vec::new();
    for (store, folder, case, rel, real) in &all {
        let v = verdict(store, folder, rel.parse().unwrap(), host);
        if v.listed != Some(*real) {
            wrong.push(format!(
                "{store}/{folder} ({case}) by {rel}: the server says listed={real}, we say {:?} [{}: {}]",
                v.listed, v.rule, v.why
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn both_outcomes_and_every_reason_are_covered() {
    let m = manifest();
    let all = cases(&m);
    for rel in m["judges"].as_array().unwrap() {
        let rel = rel.as_str().unwrap();
        assert!(all.iter().any(|c| c.3 == rel && c.4), "{rel} lists nothing");
        assert!(
            all.iter().any(|c| c.3 == rel && !c.4),
            "{rel} hides nothing"
        );
    }
    for need in ["1.33.0", "1.58.2"] {
        assert!(all.iter().any(|c| c.3 == need), "no verdicts of {need}");
    }
    // the rules that decide, per release, on the real stores
    let host = m["judge_host"].as_str().unwrap();
    let mut rules = std::collections::BTreeSet::new();
    for (store, folder, _, rel, _) in &all {
        rules.insert(verdict(store, folder, rel.parse().unwrap(), host).rule);
    }
    for r in [
        "listed",
        "no-meta",
        "meta-invalid",
        "meta-no-agent",
        "folder-not-uuid",
        "folder-not-id",
        "lease-held",
        "state-does-not-load",
        "events-do-not-load",
        "base-state-unreadable",
        "bad-execution-status",
        "no-base-state",
        "breaks-search",
        "state-id-elsewhere",
        "breaks-sort",
        "agent-mismatch",
    ] {
        assert!(rules.contains(r), "no fixture decided by `{r}`: {rules:?}");
    }
}

/// The disagreement classes fixtures/gen/listing_fuzz.py found, one folder
/// each, and the hand-made cases of issue 16 (fixtures/listing/fuzz-classes/,
/// judged by 1.33.0 and 1.43.1–1.58.2): each is decided by the rule that
/// explains it, not by luck of another rule. Before 1.37 a meta.json without
/// the agent (every copy of a 1.58.2 folder) is refused first.
#[test]
fn fuzz_classes_are_decided_by_their_rule() {
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap();
    let st = &m["stores"]["fuzz-classes"];
    let rows = st["folders"].as_array().expect("the fuzz-classes store");
    assert!(rows.len() >= 25, "{} fuzz classes", rows.len());
    for row in rows {
        let case = row["case"].as_str().unwrap();
        let folder = row["folder"].as_str().unwrap();
        let meta: Value =
            std::fs::read_to_string(root().join("fuzz-classes").join(folder).join("meta.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
        let no_agent = meta.get("agent").is_none_or(Value::is_null);
        for rel in row["listed"].as_object().unwrap().keys() {
            let eager = rel == "1.33.0";
            let want = match case {
                _ if eager && no_agent => "meta-no-agent",
                c if c.starts_with("created-at-") => "listed",
                "idle-truncated-event" if eager => "events-do-not-load",
                "idle-truncated-event" => "listed",
                "fresh-start-unloadable-history" if eager => "listed",
                "fresh-start-unloadable-history" => "base-state-unreadable",
                "agent-tool-removed" if eager => "agent-mismatch",
                "agent-tool-removed" => "listed",
                c if c.starts_with("meta-") || c == "launched-profile-empty" => "meta-invalid",
                "state-agent-empty" | "state-id-other" if eager => "state-does-not-load",
                "state-agent-empty" | "rescued-breaks" => "breaks-search",
                "state-id-other" => "state-id-elsewhere",
                "rescued" | "rescued-eager" => "listed",
                c if c.starts_with("copy-of-") => "folder-not-id",
                other => panic!("unexpected case {other}"),
            };
            let v = verdict("fuzz-classes", folder, rel.parse().unwrap(), host);
            assert_eq!(v.rule, want, "{case} by {rel}: {}", v.why);
        }
    }
}

/// The two issue-16 cases in words: a meta.json `created_at` of `"+5"` or
/// `"2024-01-01_00:00:00Z"` (pydantic takes both) is listed, by the eager
/// and the catalog releases; an idle 1.33.0 conversation with a truncated
/// event on its active branch is not listed by 1.33.0 (its start rebuilds
/// the view from that branch), and the reason says so.
#[test]
fn lax_dates_are_listed_and_an_unloadable_branch_is_not() {
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap();
    let rows = m["stores"]["fuzz-classes"]["folders"].as_array().unwrap();
    let folder = |case: &str| {
        rows.iter().find(|r| r["case"] == case).unwrap()["folder"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for case in ["created-at-plus5", "created-at-underscore"] {
        for rel in ["1.33.0", "1.58.2"] {
            let v = verdict("fuzz-classes", &folder(case), rel.parse().unwrap(), host);
            assert_eq!(v.listed, Some(true), "{case} by {rel}: {}", v.why);
        }
    }
    let idle = folder("idle-truncated-event");
    let v = verdict("fuzz-classes", &idle, "1.33.0".parse().unwrap(), host);
    assert_eq!(v.listed, Some(false));
    assert!(
        v.why.contains("cannot load")
            && v.why.contains("event 00001")
            && v.why.contains("truncated"),
        "{}",
        v.why
    );
    let opts = opts("1.33.0".parse().unwrap());
    let r = analyze(
        &root().join("fuzz-classes").join(&idle),
        idle.clone(),
        &opts,
    );
    assert!(r.load_error.is_some() && r.listed == Some(false));
    assert!(r
        .findings
        .iter()
        .any(|f| f.check == "not-listed" && f.message.contains("[events-do-not-load]")));
    // the catalog does not read events: listed there
    let v = verdict("fuzz-classes", &idle, "1.58.2".parse().unwrap(), host);
    assert_eq!(v.listed, Some(true), "{}", v.why);
    // the one exception the real 1.33.0 shows: base_state.json empty, the
    // start recreates the state from meta.json and reads no event
    let fresh = folder("fresh-start-unloadable-history");
    let r = analyze(
        &root().join("fuzz-classes").join(&fresh),
        fresh.clone(),
        &opts,
    );
    assert!(r.load_error.is_some());
    assert_eq!(r.listed, Some(true));
    let v = verdict("fuzz-classes", &fresh, "1.33.0".parse().unwrap(), host);
    assert!(
        v.why.contains("reads no event") && v.why.contains("fails once it is opened"),
        "{}",
        v.why
    );
}

#[test]
fn a_failing_search_is_told_apart() {
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap();
    for (store, st) in m["stores"].as_object().unwrap() {
        for (rel, res) in st["judged"].as_object().unwrap() {
            let breaking: Vec<String> = st["folders"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["folder"].as_str().unwrap().to_string())
                .filter(|f| verdict(store, f, rel.parse().unwrap(), host).breaks_search)
                .collect();
            let real = res.get("search_error").is_some();
            assert_eq!(
                !breaking.is_empty(),
                real,
                "{store} by {rel}: real search error {:?}, we blame {breaking:?}",
                res.get("search_error")
            );
        }
    }
}

/// Through `analyze`, on this machine: `listed` in the report, a hidden
/// conversation is never clean, a listed one is never reported hidden.
#[test]
fn reports_carry_listed_and_never_call_a_hidden_one_clean() {
    let m = manifest();
    let same_host = lease::this_host().as_deref() == m["judge_host"].as_str();
    for (store, folder, case, rel, real) in cases(&m) {
        if case == "lease-dead-pid" && !same_host {
            continue; // another host here: that lease is live for us
        }
        let opts = opts(rel.parse().unwrap());
        let dir = root().join(&store).join(&folder);
        let r = analyze(&dir, folder.clone(), &opts);
        assert_eq!(r.listed, Some(real), "{store}/{folder} by {rel}");
        let hidden_finding = r.findings.iter().any(|f| f.check == "not-listed");
        // a listed row that makes the whole search fail is an error too
        let sort_breaker = real && case.starts_with("naive-created-at");
        assert_eq!(
            hidden_finding,
            !real || sort_breaker,
            "{store}/{folder} by {rel}: {:?}",
            r.findings
        );
        if sort_breaker {
            assert_eq!(
                r.worst(),
                Some(Severity::Error),
                "{store}/{folder} by {rel}"
            );
        }
        if !real {
            assert!(
                r.worst() >= Some(Severity::Warning),
                "{store}/{folder} by {rel} reported clean"
            );
        }
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["listed"], Value::Bool(real));
    }
}

#[test]
fn sdk_only_folders_and_subagents_are_not_judged() {
    // every other fixture is an SDK-written folder alone in its store
    let opts = opts("1.58.2".parse().unwrap());
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let first = |d: PathBuf| {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .unwrap()
    };
    let r = analyze(&first(fixtures.join("clean-tree")), "x".into(), &opts);
    assert_eq!(r.listed, None);
    assert!(!r.findings.iter().any(|f| f.check == "not-listed"));
    let nested = std::fs::read_dir(fixtures.join("subagent-nested"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("subagents"))
        .find(|p| p.is_dir())
        .and_then(|p| std::fs::read_dir(p).unwrap().flatten().next())
        .map(|e| e.path());
    if let Some(sub) = nested {
        assert_eq!(analyze(&sub, "s".into(), &opts).listed, None);
    }
}

/// Files the SDK and the server write next to the events and state: the
/// count marker (1.58.2), both temp-file namings of `atomic_write_text`
/// (`.<name>.<random>`, and `.<name>.<random>.tmp` in 1.58.2), the lease's
/// temp file and lock, `bash_events/` (Docker runtime) and the task
/// tracker's TASKS.json. None of them is a finding, none changes a verdict,
/// and the folder is still one conversation.
#[test]
fn known_sdk_files_are_not_flagged() {
    let m = manifest();
    let ok = m["stores"]["1.58.2"]["folders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == "ok")
        .unwrap()["folder"]
        .as_str()
        .unwrap()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("conversations");
    let conv = store.join(&ok);
    common::copy_tree(&root().join("1.58.2").join(&ok), &conv);
    let opts = opts("1.58.2".parse().unwrap());
    let findings = |r: &convo_doctor::report::ConversationReport| {
        r.findings
            .iter()
            .map(|f| format!("{} {} {}", f.check, f.file, f.message))
            .collect::<Vec<_>>()
    };
    let before = analyze(&conv, "x".into(), &opts);
    assert_eq!(before.listed, Some(true));

    let first_event = common::event_files(&conv)[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let n = common::event_files(&conv).len();
    let ev = conv.join("events");
    std::fs::write(ev.join(format!(".eventlog-len-{n}.marker")), b"").unwrap();
    std::fs::write(ev.join(format!(".{first_event}.k3j2h1q8")), b"{\"trunc").unwrap();
    std::fs::write(ev.join(format!(".{first_event}.a1b2c3d4.tmp")), b"").unwrap();
    std::fs::write(conv.join(".base_state.json.x1y2z3w4.tmp"), b"{").unwrap();
    std::fs::write(conv.join(".meta.json.abcd1234"), b"").unwrap();
    std::fs::write(conv.join("owner_lease.tmp"), b"{\"owner_instance_id\"").unwrap();
    std::fs::write(conv.join(".owner_lease.lock"), b"").unwrap();
    std::fs::write(
        conv.join("TASKS.json"),
        b"[{\"title\": \"t\", \"status\": \"todo\"}]",
    )
    .unwrap();
    std::fs::create_dir_all(conv.join("bash_events")).unwrap();
    std::fs::write(
        conv.join("bash_events")
            .join("0f8b0186d86c5dbb8239dd60a36a9ec5.json"),
        b"{\"kind\": \"BashCommand\"}",
    )
    .unwrap();

    let after = analyze(&conv, "x".into(), &opts);
    assert_eq!(findings(&after), findings(&before));
    assert_eq!(after.listed, Some(true));
    assert_eq!(after.events.on_disk, before.events.on_disk);
    let found = convo_doctor::store::discover::find(&store).unwrap();
    assert_eq!(found.conversations, vec![conv.clone()], "{:?}", found.notes);

    // and the contrast: a real stray name next to them is flagged
    std::fs::write(ev.join("event-1-x.json"), b"{}").unwrap();
    let stray = analyze(&conv, "x".into(), &opts);
    assert!(stray
        .findings
        .iter()
        .any(|f| f.check == "bad-event-filename"));
}

/// `count_conversations()` counts the catalog, not the list: records whose
/// row search skips (no base_state.json, a folder not named after its id)
/// or whose state breaks the search are counted; folders dropped by the scan
/// are not. ≤ 1.36 counts what it started, including the empty conversation
/// it creates for a folder not named after its id. Our rules predict every
/// recorded count (1.43–1.48 count the `my-conversation` folder, 1.49+ drop
/// it: the folder-name rule). A record whose base_state.json carries
/// another id (`state-id-elsewhere`) is counted too.
#[test]
fn catalog_counts_match() {
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap();
    for (store, st) in m["stores"].as_object().unwrap() {
        for (rel, res) in st["judged"].as_object().unwrap() {
            let mut ids = std::collections::BTreeSet::new();
            for row in st["folders"].as_array().unwrap() {
                let v = verdict(
                    store,
                    row["folder"].as_str().unwrap(),
                    rel.parse().unwrap(),
                    host,
                );
                let counted = v.listed == Some(true)
                    || [
                        "folder-not-id",
                        "no-base-state",
                        "breaks-search",
                        "state-id-elsewhere",
                        "breaks-sort",
                    ]
                    .contains(&v.rule);
                if counted {
                    ids.insert(row["meta_id"].as_str().unwrap().to_string());
                }
            }
            assert_eq!(
                ids.len() as u64,
                res["count"].as_u64().unwrap(),
                "{store} by {rel}: {ids:?}"
            );
        }
    }
}

/// The whole coercion table (fixtures/coercions.json: real pydantic's verdict
/// on each JSON input for each type) through the listing model: each input
/// set as a meta.json field of that type in a copy of the `ok` folder a real
/// server wrote, the folder alone in its store. Listed exactly when pydantic
/// accepts the input (or it is `null` and the field is optional), by the
/// catalog (1.58.2) and by the eager startup scan (1.33.0, whose start then
/// loads the unchanged conversation). One copy of pydantic's scalar rules
/// serves the validator and the listing, so this would catch a second copy.
#[test]
fn the_whole_coercion_table_through_the_listing_model() {
    let table: Value =
        serde_json::from_str(include_str!("../fixtures/coercions.json")).expect("coercions");
    // (type in the table, meta.json fields of exactly that type, optional)
    let fields: &[(&str, &[&str], bool)] = &[
        (
            "bool",
            &["autotitle", "stuck_detection", "secrets_encrypted"],
            false,
        ),
        ("int_gt_0", &["max_iterations"], false),
        ("datetime", &["created_at", "updated_at"], false),
        ("uuid", &["conversation_id"], true),
        ("str", &["title", "user_id"], true),
    ];
    let m = manifest();
    let host = m["judge_host"].as_str().unwrap().to_string();
    let env = lease::Env {
        now: SystemTime::now(),
        host: Some(host),
        pid_alive: None,
    };
    let (mut checked, mut wrong) = (0, Vec::new());
    for writer in ["1.58.2", "1.33.0"] {
        let version: Version = writer.parse().unwrap();
        let ok = m["stores"][writer]["folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["case"] == "ok")
            .unwrap()["folder"]
            .as_str()
            .unwrap()
            .to_string();
        let tmp = tempfile::tempdir().unwrap();
        let conv_dir = tmp.path().join(&ok);
        common::copy_tree(&root().join(writer).join(&ok), &conv_dir);
        let original: Value =
            serde_json::from_str(&std::fs::read_to_string(conv_dir.join("meta.json")).unwrap())
                .unwrap();
        for c in table["cases"].as_array().unwrap() {
            let Some((_, names, optional)) = fields.iter().find(|f| f.0 == c["type"]) else {
                continue;
            };
            let input = c["input"].as_str().unwrap();
            let Ok(value) = serde_json::from_str::<Value>(input) else {
                continue; // 1e400: serde_json refuses it (so does no meta.json here)
            };
            let want = c["accepted"].as_bool().unwrap() || (*optional && value.is_null());
            for name in *names {
                let mut meta = original.clone();
                meta[*name] = value.clone();
                std::fs::write(conv_dir.join("meta.json"), meta.to_string()).unwrap();
                let a = Analysis::load(&conv_dir, version, &Overlay::new());
                let ctx = a.ctx(false);
                let ids = StoreIds::read(tmp.path());
                let v = not_listed::verdict_with(&ctx, &ids, &env);
                checked += 1;
                if v.listed != Some(want) {
                    wrong.push(format!(
                        "{writer} {name} = {input}: pydantic {}, listed {:?} [{}: {}]",
                        if want { "accepts" } else { "refuses" },
                        v.listed,
                        v.rule,
                        v.why
                    ));
                }
            }
        }
    }
    assert!(checked > 1500, "{checked}");
    assert!(
        wrong.is_empty(),
        "{} of {checked}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
