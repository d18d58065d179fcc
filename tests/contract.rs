//! The operator's contract (issue 11): what cron, a ticket and a monitoring
//! system can rely on. Exit codes, stderr lines, counts and output formats,
//! each tested on the binary as an operator runs it.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{chmod, copy_fixture, copy_tree, repo};
use serde_json::Value;

/// Run the binary in the repository root; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    common::run_in(repo(), args, &[])
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("stdout is one JSON document")
}

/// One repair run per (run id, fixture), each of a copy of the fixture in
/// `tmp/<run id>`, with its backups in `backups`; returns the stores.
fn repair_runs(tmp: &Path, backups: &Path, runs: &[(&str, &str)]) -> Vec<PathBuf> {
    let mut stores = Vec::new();
    for (id, fx) in runs {
        let s = tmp.join(id);
        copy_fixture(fx, &s);
        let (code, out, err) = common::repair(&s, backups, &[], Some(id));
        assert_eq!(code, 0, "{out}{err}");
        stores.push(s);
    }
    stores
}

/// Append a newline to the event misparented-recovery-error's repair
/// re-links (00006) in a repaired copy of that fixture: a file changed
/// since the repair. Returns its path.
fn change_relinked_event(store: &Path) -> PathBuf {
    let conv = fs::read_dir(store).unwrap().next().unwrap().unwrap().path();
    let relinked = common::event_at(&conv, 6);
    let mut text = fs::read_to_string(&relinked).unwrap();
    text.push('\n');
    fs::write(&relinked, text).unwrap();
    relinked
}

// --- Cron-safe: nothing to scan is an error -------------------------------

#[test]
fn an_empty_directory_is_an_error_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().to_str().unwrap();
    let (code, _, err) = run(&["diagnose", p]);
    assert_eq!(code, 2, "a failed mount must not exit 0: {err}");
    assert!(err.contains("found an empty directory"), "{err}");
    let (code, out, err) = run(&["diagnose", p, "--allow-empty"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 conversations scanned"), "{out}");
}

#[test]
fn an_events_folder_is_an_error_that_names_its_parent() {
    let (code, _, err) = run(&[
        "diagnose",
        "fixtures/clean-tree/a5050c9292d85c568ea70f078f0dddb5/events",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("an events/ folder; did you mean its parent?"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_store_of_symbolic_links_is_an_error_that_counts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let target = repo().join("fixtures/clean-tree/a5050c9292d85c568ea70f078f0dddb5");
    for i in 0..3 {
        std::os::unix::fs::symlink(&target, tmp.path().join(format!("c{i}"))).unwrap();
    }
    let (code, _, err) = run(&["diagnose", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("3 symbolic links, which are never followed"),
        "{err}"
    );
}

#[test]
fn one_empty_path_among_several_still_scans_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&[
        "diagnose",
        tmp.path().to_str().unwrap(),
        "fixtures/clean-tree",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(json(&out)["summary"]["conversations"], 1);
}

#[test]
fn a_missing_path_gives_the_os_error() {
    let (code, _, err) = run(&["diagnose", "fixtures/no-such-folder"]);
    assert_eq!(code, 2);
    assert!(err.contains("No such file or directory"), "{err}");
    assert!(err.contains("fixtures/no-such-folder"), "{err}");
    assert!(!err.contains("vanished"), "{err}");
}

// --- --hide-clean and the exit code follow --fail-on ----------------------

#[test]
fn hide_clean_follows_fail_on() {
    // bad-event-filename has warnings and nothing worse (manifest: loads).
    let (code, out, _) = run(&[
        "diagnose",
        "fixtures/bad-event-filename",
        "--fail-on",
        "error",
        "--hide-clean",
    ]);
    assert_eq!(code, 0);
    assert!(
        !out.contains("[bad-event-filename]"),
        "nothing at or above --fail-on: hidden\n{out}"
    );
    assert!(
        out.contains("1 conversation scanned"),
        "still counted\n{out}"
    );
    // abandoned-branch is info only: shown (and failing) with --fail-on info.
    let (code, out, _) = run(&[
        "diagnose",
        "fixtures/abandoned-branch",
        "--fail-on",
        "info",
        "--hide-clean",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("info[abandoned-branch]"), "{out}");
    // and hidden with the default threshold, which it does not reach
    let (code, out, _) = run(&["diagnose", "fixtures/abandoned-branch", "--hide-clean"]);
    assert_eq!(code, 0);
    assert!(!out.contains("[abandoned-branch]"), "{out}");
}

// --- Counts stay honest under --only / --skip -----------------------------

#[test]
fn a_conversation_that_cannot_load_is_never_counted_clean() {
    // truncated-event cannot load (manifest); abandoned-branch finds nothing in it.
    let (code, out, _) = run(&[
        "diagnose",
        "fixtures/truncated-event",
        "--only",
        "abandoned-branch",
        "--format",
        "json",
    ]);
    let s = &json(&out)["summary"];
    assert_eq!(s["conversations"], 1);
    assert_eq!(s["cannot_load"], 1);
    assert_eq!(s["clean"], 0, "{s}");
    assert_eq!(s["with_findings"], 1, "{s}");
    assert_eq!(code, 1, "a conversation the SDK cannot load fails the run");
    let (_, out, _) = run(&[
        "diagnose",
        "fixtures/truncated-event",
        "--only",
        "abandoned-branch",
        "--hide-clean",
    ]);
    assert!(out.contains("cannot load"), "never hidden as clean\n{out}");
}

// --- One server-version default; unknown newer versions warn ---------------

#[test]
fn diagnose_and_repair_share_the_server_version_default() {
    // Both commands apply the newest rules by default, and agree on what
    // `repair` would do: dropping meta.json's agent (which servers before
    // 1.43 would refuse) is offered only when the server version is given.
    for given in [false, true] {
        let mut d = vec![
            "diagnose",
            "fixtures/fat-meta-divergence",
            "--only",
            "meta-duplicate",
            "--format",
            "json",
        ];
        let mut r = vec![
            "repair",
            "--dry-run",
            "--only",
            "meta-duplicate",
            "fixtures/fat-meta-divergence",
        ];
        if given {
            d.extend(["--server-version", "1.58.2"]);
            r.extend(["--server-version", "1.58.2"]);
        }
        let (_, out, _) = run(&d);
        let report = json(&out);
        assert_eq!(
            report["server_version"]
                .as_str()
                .or(report["conversations"][0]["server_version"].as_str()),
            Some("1.58.2"),
            "{out}"
        );
        let f = &report["conversations"][0]["findings"][0];
        assert_eq!(f["check"], "meta-duplicate");
        assert_eq!(f["fixable"], given, "{f}");
        let (code, out, err) = run(&r);
        let drops = out.contains("-  \"agent\": {");
        assert_eq!(drops, given, "version given: {given}\n{out}{err}");
        assert_eq!(code, if given { 1 } else { 0 }, "{out}{err}");
    }
}

#[test]
fn an_unknown_newer_server_version_warns_and_names_the_rules_used() {
    let (code, out, err) = run(&[
        "diagnose",
        "fixtures/clean-tree",
        "--server-version",
        "2.0.0",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    assert!(err.contains("warning: server version 2.0.0"), "{err}");
    assert!(err.contains("the rules of 1.58.2"), "{err}");
    assert_eq!(json(&out)["conversations"][0]["server_version"], "1.58.2");
    let (_, _, err) = run(&[
        "diagnose",
        "fixtures/clean-tree",
        "--server-version",
        "1.33.0",
    ]);
    assert_eq!(err, "", "a known version is not warned about");
}

// --- An emptied conversation folder is a finding --------------------------

#[test]
fn an_emptied_conversation_folder_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("conversations");
    copy_fixture("clean-tree", &store);
    let hex = store.join("0123456789abcdef0123456789abcdef");
    fs::create_dir(&hex).unwrap();
    let uuid = store.join("01234567-89ab-cdef-0123-456789abcdef");
    fs::create_dir(&uuid).unwrap();
    // A folder that only groups conversations (a per-user layout) is no
    // emptied conversation, even when named like an id.
    let group = store.join("fedcba9876543210fedcba9876543210");
    copy_fixture("false-root", &group);
    // Nor is a folder with some other name.
    fs::create_dir(store.join("lost+found")).unwrap();
    // Nor an id-named folder away from any conversation (a cache, say).
    fs::create_dir_all(tmp.path().join("cache/00000000000000000000000000000000")).unwrap();
    // The store itself, and its parent (emptied folders sit next to a
    // conversation there).
    for path in [&store, &tmp.path().to_path_buf()] {
        let (code, out, err) = run(&["diagnose", path.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 1, "{err}");
        let doc = json(&out);
        let empty: Vec<&str> = doc["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["check"] == "empty-conversation")
            })
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            empty,
            [uuid.to_str().unwrap(), hex.to_str().unwrap()],
            "exactly the two emptied folders"
        );
        assert_eq!(doc["summary"]["conversations"], 4, "2 emptied + 2 real");
    }
}

// --- Output for people: concise lines, paths on finding lines, fixable ----

/// Every finding of a JSON report as (location, severity, check, fixable).
fn json_findings(doc: &Value) -> Vec<(String, String, String, bool)> {
    let mut out = Vec::new();
    for c in doc["conversations"].as_array().unwrap() {
        let path = c["path"].as_str().unwrap();
        for f in c["findings"].as_array().unwrap() {
            let file = f["file"].as_str().unwrap();
            let loc = if file.is_empty() {
                path.to_string()
            } else {
                format!("{path}/{file}")
            };
            out.push((
                loc,
                f["severity"].as_str().unwrap().to_string(),
                f["check"].as_str().unwrap().to_string(),
                f["fixable"].as_bool().unwrap(),
            ));
        }
    }
    out
}

#[test]
fn concise_is_one_greppable_line_per_finding_with_its_path() {
    let (code, out, _) = run(&["diagnose", "fixtures/false-root", "--format", "concise"]);
    assert_eq!(code, 1);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(
            "fixtures/false-root/fd9bd2a279b352c3a6c9a47437e5143e/events/event-00008-401859a7-eac9-4f92-a0b8-6ae2349cc6f3.json: error[false-root] false root: event 00008"
        ),
        "{first}"
    );
    // Over every fixture: the lines that carry a finding are exactly the
    // JSON report's findings, in the same order.
    let (_, json_out, _) = run(&["diagnose", "fixtures", "--format", "json"]);
    let want: Vec<String> = json_findings(&json(&json_out))
        .into_iter()
        .map(|(loc, sev, check, _)| format!("{loc}: {sev}[{check}] "))
        .collect();
    let (_, out, _) = run(&["diagnose", "fixtures", "--format", "concise"]);
    let got: Vec<&str> = out.lines().filter(|l| l.contains("] ")).collect();
    assert_eq!(got.len(), want.len(), "{out}");
    for (g, w) in got.iter().zip(&want) {
        assert!(g.starts_with(w.as_str()), "{g}\n  wanted prefix {w}");
    }
}

/// Issue 24: human finding lines name the file relative to the conversation
/// whose full path heads the block (ticket-sized); concise lines carry the
/// full path, so `grep false-root` keeps which conversation it was.
#[test]
fn human_lines_are_relative_to_their_header_and_concise_lines_whole() {
    let (_, out, _) = run(&["diagnose", "fixtures"]);
    let mut header = "";
    let mut hits = 0;
    for l in out.lines() {
        if !l.starts_with(' ') && !l.is_empty() {
            header = l;
        }
        if l.contains("[false-root]") {
            hits += 1;
            assert!(
                l.contains("[false-root] events/event-000"),
                "relative to the header: {l}"
            );
            assert!(!l.contains("fixtures/"), "{l}");
            assert!(
                header.ends_with("false-root/fd9bd2a279b352c3a6c9a47437e5143e")
                    || header.ends_with("false-root-damaged/bb2dee216463595daba58913ae175c91"),
                "under its conversation's header: {header}"
            );
        }
    }
    assert!(hits > 0, "{out}");
    let (_, out, _) = run(&["diagnose", "fixtures", "--format", "concise"]);
    let hits: Vec<&str> = out.lines().filter(|l| l.contains("[false-root]")).collect();
    assert!(!hits.is_empty());
    for l in hits {
        assert!(
            l.contains("fixtures/false-root/fd9bd2a279b352c3a6c9a47437e5143e/events/event-00008-")
                || l.contains(
                    "fixtures/false-root-damaged/bb2dee216463595daba58913ae175c91/events/event-00011-"
                ),
            "grep false-root keeps which conversation it was: {l}"
        );
    }
}

#[test]
fn diagnose_counts_what_repair_can_fix() {
    let (_, out, _) = run(&["diagnose", "fixtures", "--format", "json"]);
    let doc = json(&out);
    let fixable = json_findings(&doc).iter().filter(|f| f.3).count();
    assert!(fixable > 0);
    assert_eq!(doc["summary"]["fixable"], fixable);
    let (_, out, _) = run(&["diagnose", "fixtures"]);
    assert!(
        out.contains(&format!("\n{fixable} fixable with `convo-doctor repair`")),
        "{out}"
    );
    let (_, out, _) = run(&["diagnose", "fixtures", "--format", "concise"]);
    assert!(out.contains(&format!("\n{fixable} fixable with `convo-doctor repair`")));
    // clean-tree has nothing to fix: no such line, and 0 in JSON
    let (_, out, _) = run(&["diagnose", "fixtures/clean-tree"]);
    assert!(!out.contains("fixable with"), "{out}");
    let (_, out, _) = run(&["diagnose", "fixtures/clean-tree", "--format", "json"]);
    assert_eq!(json(&out)["summary"]["fixable"], 0);
}

// --- Monitoring: --format prometheus --------------------------------------

/// The samples of a Prometheus text exposition: (name{labels}, value); every
/// sample's metric has HELP and TYPE lines.
fn samples(text: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::HashSet::new();
    let mut helped = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            typed.insert(it.next().unwrap().to_string());
            assert_eq!(it.next(), Some("gauge"), "{line}");
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.insert(rest.split(' ').next().unwrap().to_string());
        } else {
            let (series, value) = line.rsplit_once(' ').expect(line);
            let name = series.split('{').next().unwrap();
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{line}"
            );
            assert!(typed.contains(name) && helped.contains(name), "{line}");
            if let Some(labels) = series.strip_prefix(name) {
                assert!(labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')));
            }
            out.push((series.to_string(), value.parse().expect(line)));
        }
    }
    out
}

fn sample(s: &[(String, f64)], series: &str) -> Option<f64> {
    s.iter().find(|(k, _)| k == series).map(|(_, v)| *v)
}

#[test]
fn prometheus_metrics_agree_with_the_json_summary() {
    let (code, text, err) = run(&["diagnose", "fixtures", "--format", "prometheus"]);
    assert_eq!(code, 1, "{err}");
    let s = samples(&text);
    let (_, out, _) = run(&["diagnose", "fixtures", "--format", "json"]);
    let doc = json(&out);
    let sum = &doc["summary"];
    let n = |k: &str| sum[k].as_u64().unwrap() as f64;
    assert_eq!(
        sample(&s, "convo_doctor_conversations_scanned"),
        Some(n("conversations"))
    );
    assert_eq!(
        sample(&s, "convo_doctor_conversations_cannot_load"),
        Some(n("cannot_load"))
    );
    assert_eq!(
        sample(&s, "convo_doctor_conversations_clean"),
        Some(n("clean"))
    );
    assert_eq!(
        sample(&s, "convo_doctor_findings_fixable"),
        Some(n("fixable"))
    );
    // findings by check and severity: recount them from the conversations
    let mut want = std::collections::BTreeMap::new();
    for (_, sev, check, _) in json_findings(&doc) {
        *want
            .entry(format!(
                "convo_doctor_findings{{check=\"{check}\",severity=\"{sev}\"}}"
            ))
            .or_insert(0.0) += 1.0;
    }
    for (series, count) in &want {
        assert_eq!(sample(&s, series), Some(*count), "{series}");
    }
    let listed: f64 = s
        .iter()
        .filter(|(k, _)| k.starts_with("convo_doctor_findings{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(listed, want.values().sum::<f64>(), "the other series are 0");
    // a series for every check, even at 0, so alerts never see it absent
    assert_eq!(
        sample(
            &s,
            "convo_doctor_findings{check=\"live-lease\",severity=\"error\"}"
        ),
        Some(0.0)
    );
    assert!(sample(&s, "convo_doctor_scan_duration_seconds").is_some());
    assert_eq!(sample(&s, "convo_doctor_scan_errors"), Some(0.0));
    let last = sample(&s, "convo_doctor_last_success_timestamp_seconds").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - last).abs() < 600.0, "{last} vs {now}");
}

#[test]
fn prometheus_has_no_last_success_after_a_failed_scan() {
    let (code, text, _) = run(&[
        "diagnose",
        "fixtures/clean-tree",
        "fixtures/no-such-store",
        "--format",
        "prometheus",
    ]);
    assert_eq!(code, 2);
    let s = samples(&text);
    assert_eq!(sample(&s, "convo_doctor_scan_errors"), Some(1.0));
    assert_eq!(sample(&s, "convo_doctor_conversations_scanned"), Some(1.0));
    assert!(sample(&s, "convo_doctor_last_success_timestamp_seconds").is_none());
    assert!(sample(&s, "convo_doctor_last_run_timestamp_seconds").is_some());
}

// --- Install where operators are -------------------------------------------

#[test]
fn the_wheel_carries_the_binary_and_the_readme_says_how_to_install() {
    // pyproject.toml: maturin, bindings = "bin", the package named like the
    // binary, the version taken from Cargo.toml (.ci/run builds, installs
    // and runs the wheel; this guards the declaration between CI runs).
    let py = fs::read_to_string(repo().join("pyproject.toml")).expect("pyproject.toml");
    let cargo = fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(py.contains("build-backend = \"maturin\""), "{py}");
    assert!(py.contains("bindings = \"bin\""), "{py}");
    assert!(py.contains("name = \"convo-doctor\""));
    assert!(cargo.contains("name = \"convo-doctor\""));
    assert!(
        py.contains("dynamic = [\"version\"]"),
        "one version, Cargo's"
    );
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let install = &readme[readme.find("## Install").expect("an Install section")..];
    for cmd in [
        "pip install .",
        "uvx --from . convo-doctor",
        "cargo install --path .",
    ] {
        assert!(install.contains(cmd), "README's Install names `{cmd}`");
    }
    assert!(
        readme.contains("The first command exits with status 1"),
        "README says why its first command exits 1"
    );
    // ... which is true: the fixtures have findings
    assert_eq!(run(&["diagnose", "fixtures/"]).0, 1);
    let ci = fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(ci.contains("maturin\" build") && ci.contains("pip install"));
}

/// A directory that cannot be listed is not "an empty directory": it is an
/// unreadable PATH, named with the uid that could not read it (issue 17).
#[cfg(unix)]
#[test]
fn an_unlistable_directory_is_not_called_empty() {
    let tmp = common::open_tempdir();
    let locked = tmp.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::write(locked.join("x"), "").unwrap();
    chmod(&locked, 0o311);
    let Some((mut cmd, uid)) = common::bin_as_nobody("an_unlistable_directory_is_not_called_empty")
    else {
        return;
    };
    let out = cmd
        .args(["diagnose", "--allow-empty", locked.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cannot read `{}` as uid {uid}: Permission denied",
            locked.display()
        )),
        "{err}"
    );
    assert!(!err.contains("an empty directory"), "{err}");
    assert!(!err.contains("--allow-empty"), "{err}");
    chmod(&locked, 0o755);
}

// --- undo --list --------------------------------------------------------------

#[test]
fn undo_list_shows_each_run_and_whether_it_can_be_undone() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("backups");
    let bs = b.to_str().unwrap();
    let (code, out, _) = run(&["undo", "--list", "--backup-dir", bs]);
    assert_eq!(code, 0);
    assert!(out.starts_with("no repair runs under"), "{out}");
    let stores = repair_runs(
        tmp.path(),
        &b,
        &[
            ("run-a", "false-root"),
            ("run-b", "misparented-recovery-error"),
        ],
    );
    let line = |out: &str, id: &str| {
        out.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{id} listed: {out}"))
            .to_string()
    };
    let (code, out, _) = run(&["undo", "--list", "--backup-dir", bs]);
    assert_eq!(code, 0);
    for id in ["run-a", "run-b"] {
        let l = line(&out, id);
        assert!(
            l.contains(&format!(
                "can be undone: convo-doctor undo {id} --backup-dir {bs}"
            )),
            "the hint works when pasted: {l}"
        );
    }
    // undo one; change the repaired file of the other
    assert_eq!(run(&["undo", "run-a", "--backup-dir", bs]).0, 0);
    let relinked = change_relinked_event(&stores[1]);
    let (_, out, _) = run(&["undo", "--list", "--backup-dir", bs]);
    assert!(line(&out, "run-a").contains("undone"), "{out}");
    assert!(
        line(&out, "run-b").contains("changed since the repair"),
        "{out}"
    );
    // --list restores nothing: run-b's changed file is still changed
    assert!(fs::read_to_string(&relinked).unwrap().ends_with('\n'));
    assert_eq!(run(&["undo", "run-a", "--list"]).0, 2, "a run id or --list");
}

// --- The undo hint works when pasted ---------------------------------------

#[test]
fn the_printed_undo_hint_works_when_pasted_with_a_custom_backup_dir() {
    let (tmp, _store, conv) = common::fixture_copy("false-root");
    let before = common::snapshot(&conv);
    let backups = tmp.path().join("my backups");
    let (code, out, err) = run(&[
        "repair",
        "--backup-dir",
        backups.to_str().unwrap(),
        conv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(
        common::snapshot(&conv),
        before,
        "the repair changed something"
    );
    let all = format!("{out}{err}");
    let hint = all
        .split("(undo with `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no undo hint in {all}"));
    assert!(hint.contains("--backup-dir"), "{hint}");
    let bin = env!("CARGO_BIN_EXE_convo-doctor");
    let pasted = hint.replacen("convo-doctor", bin, 1);
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg(&pasted)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(st.status.success(), "{pasted}: {st:?}");
    let after: Vec<_> = common::snapshot(&conv)
        .into_iter()
        .map(|(p, b, _)| (p, b))
        .collect();
    let before: Vec<_> = before.into_iter().map(|(p, b, _)| (p, b)).collect();
    assert_eq!(after, before, "undo restored every byte");
}

#[test]
fn repair_of_a_path_with_no_conversation_is_an_error_too() {
    let tmp = tempfile::tempdir().unwrap();
    for dry in [true, false] {
        let mut args = vec!["repair"];
        if dry {
            args.push("--dry-run");
        }
        let backups = tmp.path().join("b");
        let empty = tmp.path().join("empty");
        fs::create_dir_all(&empty).unwrap();
        args.extend(["--backup-dir", backups.to_str().unwrap()]);
        args.push(empty.to_str().unwrap());
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no conversation in"), "{err}");
        assert!(err.contains("an empty directory"), "{err}");
        let missing = tmp.path().join("nope");
        let (code, _, err) = run(&["repair", "--dry-run", missing.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("No such file or directory"), "{err}");
    }
}

#[test]
fn a_backup_dir_inside_the_scanned_store_is_refused() {
    let (tmp, store, conv) = common::fixture_copy("false-root");
    let before = common::snapshot(&store);
    // inside the store; inside the folder a conversation PATH sits in; and
    // the same reached through `..`
    let sneaky = conv.join("..").join("b");
    for (backup, target) in [
        (store.join("backups"), &store),
        (store.join("backups"), &conv),
        (sneaky, &conv),
    ] {
        let (code, _, err) = run(&[
            "repair",
            "--backup-dir",
            backup.to_str().unwrap(),
            target.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("where a server would list"), "{err}");
        assert!(!backup.exists(), "nothing created at {}", backup.display());
    }
    assert_eq!(common::snapshot(&store), before, "nothing written");
    // outside the store it goes ahead
    let (code, out, err) = run(&[
        "repair",
        "--backup-dir",
        tmp.path().join("outside").to_str().unwrap(),
        conv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

// --- undo --prune --------------------------------------------------------------

/// Set the modification time of `path` (a file or a folder) `days` ago.
fn age(path: &Path, days: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    fs::File::open(path).unwrap().set_modified(t).unwrap();
}

#[test]
fn undo_prune_removes_old_runs_but_keeps_undoable_ones_and_foreign_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("backups");
    let bs = b.to_str().unwrap();
    // nothing there yet: nothing to prune
    let (code, out, err) = run(&["undo", "--prune", "--older-than", "30d", "--backup-dir", bs]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("0 removed"), "{out}");
    let stores = repair_runs(
        tmp.path(),
        &b,
        &[
            ("run-a", "false-root"),
            ("run-b", "misparented-recovery-error"),
            ("run-c", "false-root"),
            ("run-d", "false-root"),
        ],
    );
    // run-a and run-d undone; run-b's repaired file changed since; run-c
    // still in effect (only its backup holds the original bytes)
    assert_eq!(run(&["undo", "run-a", "--backup-dir", bs]).0, 0);
    assert_eq!(run(&["undo", "run-d", "--backup-dir", bs]).0, 0);
    change_relinked_event(&stores[1]);
    // folders prune must not touch: a link to a run elsewhere, and a run
    // folder others can read (not 0700)
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    copy_tree(&b.join("run-c"), &elsewhere.join("run-x"));
    std::os::unix::fs::symlink(elsewhere.join("run-x"), b.join("run-link")).unwrap();
    copy_tree(&b.join("run-c"), &b.join("run-open"));
    chmod(&b.join("run-open"), 0o755);
    // everything but run-d is 40 days old
    for dir in [
        b.join("run-a"),
        b.join("run-b"),
        b.join("run-c"),
        b.join("run-open"),
        elsewhere.join("run-x"),
    ] {
        age(&dir.join("manifest.json"), 40);
        age(&dir, 40);
    }
    // the link itself is old too (its own time: it is never followed)
    let forty_days_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 40 * 86_400;
    let old = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: forty_days_ago,
            tv_nsec: 0,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        b.join("run-link"),
        &old,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let line = |out: &str, start: &str| {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("`{start}` in: {out}"))
            .to_string()
    };
    let names = || {
        let mut v: Vec<String> = fs::read_dir(&b)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let all = ["run-a", "run-b", "run-c", "run-d", "run-link", "run-open"];

    // --dry-run: says what would go, removes nothing
    let (code, out, _) = run(&[
        "undo",
        "--prune",
        "--older-than",
        "30d",
        "--dry-run",
        "--backup-dir",
        bs,
    ]);
    assert_eq!(code, 1, "foreign folders are reported: {out}");
    assert!(line(&out, "would remove run-a").contains("undone"), "{out}");
    assert!(
        line(&out, "would remove run-b").contains("changed since"),
        "{out}"
    );
    assert!(
        line(&out, "kept run-c").contains(&format!("convo-doctor undo run-c --backup-dir {bs}")),
        "{out}"
    );
    assert!(
        line(&out, "left run-link").contains("symbolic link"),
        "{out}"
    );
    assert!(line(&out, "left run-open").contains("755"), "{out}");
    assert!(!out.contains("run-d"), "run-d is new: {out}");
    assert!(out.contains("2 would be removed, 1 kept (can still be undone), 2 left (see above), 1 newer than 30d"), "{out}");
    assert_eq!(names(), all);

    // a longer age spares them all
    let (code, out, _) = run(&["undo", "--prune", "--older-than", "41d", "--backup-dir", bs]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("0 removed"), "{out}");
    assert_eq!(names(), all);

    // the real thing: the undone and the changed-since runs go
    let (code, out, _) = run(&["undo", "--prune", "--older-than", "30d", "--backup-dir", bs]);
    assert_eq!(code, 1, "{out}");
    assert!(line(&out, "removed run-a").contains("undone"), "{out}");
    assert!(
        line(&out, "removed run-b").contains("changed since"),
        "{out}"
    );
    assert_eq!(names(), ["run-c", "run-d", "run-link", "run-open"]);
    assert!(
        elsewhere.join("run-x/manifest.json").exists(),
        "a link is not followed"
    );
    // run-c can still be undone after the prune
    let (code, out, _) = run(&["undo", "--list", "--backup-dir", bs]);
    assert_eq!(code, 0);
    assert!(line(&out, "run-c").contains("can be undone"), "{out}");

    // --force removes the undoable one too; foreign folders still stay
    let (code, out, _) = run(&[
        "undo",
        "--prune",
        "--older-than",
        "30d",
        "--force",
        "--backup-dir",
        bs,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "removed run-c").contains("could still be undone"),
        "{out}"
    );
    assert_eq!(names(), ["run-d", "run-link", "run-open"]);
    assert!(elsewhere.join("run-x/manifest.json").exists());

    // usage: --older-than is required, and --prune takes no run id
    assert_eq!(run(&["undo", "--prune", "--backup-dir", bs]).0, 2);
    assert_eq!(
        run(&["undo", "run-d", "--prune", "--older-than", "1d"]).0,
        2
    );
    assert_eq!(
        run(&["undo", "--older-than", "1d", "--backup-dir", bs]).0,
        2
    );
    // a backup root others can write to is not trusted: nothing removed
    chmod(&b, 0o777);
    let (code, _, err) = run(&[
        "undo",
        "--prune",
        "--older-than",
        "0s",
        "--force",
        "--backup-dir",
        bs,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("writable by group or others"), "{err}");
    chmod(&b, 0o700);
    assert_eq!(names(), ["run-d", "run-link", "run-open"]);
}

// --- repair --dry-run --diff-format patch ------------------------------------

/// Every regular file of `dir` (recursively, dot files aside: locks and
/// markers the repair may create) with its bytes.
fn tree_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    common::files(dir)
        .into_iter()
        .filter(|(rel, _)| !rel.split('/').any(|c| c.starts_with('.')))
        .collect()
}

#[test]
fn patch_diff_format_applies_with_patch_and_git_apply_to_the_same_bytes_as_repair() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (fx, extra) in [
        ("false-root", &[][..]),
        ("misparented-recovery-error", &[][..]),
        ("fat-meta-divergence", &[][..]),
        ("head-lag", &[][..]),
        ("stale-leaf", &["--unsafe-fixes"][..]),
        ("dangling-parent", &["--unsafe-fixes"][..]),
    ] {
        let [by_patch, by_git, by_repair] =
            ["patch", "git", "repair"].map(|how| tmp.path().join(format!("{fx}-{how}")));
        for d in [&by_patch, &by_git, &by_repair] {
            copy_fixture(fx, d);
        }
        let original = tree_bytes(&by_patch);
        let mut args = vec![
            "repair",
            "--dry-run",
            "--diff-format",
            "patch",
            "--show-content",
        ];
        args.extend(extra);
        args.push(by_patch.to_str().unwrap());
        let (code, diff, err) = run(&args);
        assert_eq!(code, 1, "{fx}: changes pending: {err}");
        assert!(
            diff.starts_with("--- a/"),
            "{fx}: stdout is the patch alone: {diff}"
        );
        assert!(
            err.contains("would fix"),
            "{fx}: the story goes to stderr: {err}"
        );
        assert!(!err.contains("no patch"), "{fx}: {err}");
        // the real thing, for comparison
        let mut args = vec!["repair", "--backup-dir"];
        let backups = tmp.path().join(format!("{fx}-backups"));
        args.push(backups.to_str().unwrap());
        args.extend(extra);
        args.push(by_repair.to_str().unwrap());
        let (code, _, err) = run(&args);
        assert_eq!(code, 0, "{fx}: {err}");
        let repaired = tree_bytes(&by_repair);
        assert_ne!(repaired, original, "{fx}: the repair changes something");
        // `patch -p1` and `git apply` from the folder holding the conversation
        let patch_file = tmp.path().join(format!("{fx}.patch"));
        fs::write(&patch_file, &diff).unwrap();
        for (dir, program, pargs) in [
            (
                &by_patch,
                "patch",
                &["-p1", "--batch", "--forward", "-i"][..],
            ),
            (&by_git, "git", &["apply", "-p1"][..]),
        ] {
            if !common::installed(program) {
                common::skip_unless_ci(
                    &format!("patch_diff_format_applies_with_patch_and_git_apply ({program})"),
                    "not installed",
                );
                continue;
            }
            let out = Command::new(program)
                .args(pargs)
                .arg(&patch_file)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{fx}: {program}: {out:?}");
            assert!(
                tree_bytes(dir) == repaired,
                "{fx}: {program} gives the bytes repair writes"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "patch is always there: {checked}");
}

#[test]
fn patch_diff_format_refuses_rather_than_be_inexact_or_leak() {
    let tmp = tempfile::tempdir().unwrap();
    // a plaintext key on the one line of base_state.json the repair edits:
    // redacting it would make the patch wrong, printing it would leak it
    let s = tmp.path().join("secret");
    copy_fixture("stale-leaf", &s);
    let conv = fs::read_dir(&s).unwrap().next().unwrap().unwrap().path();
    let state = conv.join("base_state.json");
    let text = fs::read_to_string(&state).unwrap();
    assert!(text.contains("\"api_key\":\"**********\""));
    fs::write(
        &state,
        text.replace(
            "\"api_key\":\"**********\"",
            "\"api_key\":\"sk-plain-1234567890abcdef\"",
        ),
    )
    .unwrap();
    // each refusal: exit 1, nothing on stdout, the reason on stderr
    let refused = |store: &Path, extra: &[&str]| -> String {
        let mut args = vec!["repair", "--dry-run", "--diff-format", "patch"];
        args.extend(extra);
        args.push(store.to_str().unwrap());
        let (code, out, err) = run(&args);
        assert_eq!(code, 1, "{err}");
        assert_eq!(out, "", "no patch at all");
        err
    };
    let err = refused(&s, &["--unsafe-fixes", "--show-content"]);
    assert!(
        err.contains("no patch: base_state.json: a line of it holds a secret"),
        "{err}"
    );
    assert!(!err.contains("sk-plain"), "{err}");
    // event content only with --show-content
    let s = tmp.path().join("content");
    copy_fixture("false-root", &s);
    let err = refused(&s, &[]);
    assert!(
        err.contains("the patch would print event content; add --show-content"),
        "{err}"
    );
    // renames and quarantines cannot be carried by a patch
    let s = tmp.path().join("gap");
    copy_fixture("index-gap", &s);
    let err = refused(&s, &["--unsafe-fixes", "--show-content"]);
    assert!(
        err.contains("renames, quarantines or creates event files"),
        "{err}"
    );
    // only with --dry-run
    assert_eq!(
        run(&["repair", "--diff-format", "patch", s.to_str().unwrap()]).0,
        2
    );
}
