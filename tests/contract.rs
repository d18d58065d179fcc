//! The operator's contract (issue 11): what cron, a ticket and a monitoring
//! system can rely on. Exit codes, stderr lines, counts and output formats,
//! each tested on the binary as an operator runs it.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Run the binary in the repository root; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).expect("stdout is one JSON document")
}

/// Copy a fixture's conversation folder(s) into `to`.
fn copy_fixture(name: &str, to: &Path) {
    for e in fs::read_dir(repo().join("fixtures").join(name)).unwrap() {
        let e = e.unwrap();
        copy_dir(&e.path(), &to.join(e.file_name()));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
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

#[test]
fn human_finding_lines_carry_the_conversation_path() {
    let (_, out, _) = run(&["diagnose", "fixtures"]);
    let hits: Vec<&str> = out.lines().filter(|l| l.contains("[false-root]")).collect();
    assert!(!hits.is_empty());
    for l in hits {
        assert!(
            l.contains("fixtures/false-root/fd9bd2a279b352c3a6c9a47437e5143e/events/event-00008-"),
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

/// A directory that cannot be listed is not "an empty directory".
#[allow(clippy::print_stderr)]
#[cfg(unix)]
#[test]
fn an_unlistable_directory_is_not_called_empty() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let locked = tmp.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::write(locked.join("x"), "").unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o311)).unwrap();
    // As root, permissions do not deny: run as `nobody` when setpriv can.
    let as_root = fs::read_dir(&locked).is_ok();
    let setpriv = [
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let mut cmd = if as_root {
        if !Path::new(setpriv[0]).exists() {
            eprintln!("note: skipped: running as root without setpriv");
            return;
        }
        let mut c = Command::new(setpriv[0]);
        c.args(&setpriv[1..])
            .arg(env!("CARGO_BIN_EXE_convo-doctor"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
    };
    let out = cmd
        .args(["diagnose", locked.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a directory that cannot be listed"), "{err}");
    assert!(!err.contains("an empty directory"), "{err}");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
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
    let mut stores = Vec::new();
    for (id, fx) in [
        ("run-a", "false-root"),
        ("run-b", "misparented-recovery-error"),
    ] {
        let s = tmp.path().join(fx);
        copy_fixture(fx, &s);
        let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
            .args(["repair", "--backup-dir", bs, s.to_str().unwrap()])
            .env("CONVO_DOCTOR_RUN_ID", id)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        stores.push(s);
    }
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
    let events = fs::read_dir(&stores[1])
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("events");
    let relinked = fs::read_dir(&events)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("event-00006-"))
        .unwrap();
    let mut text = fs::read_to_string(&relinked).unwrap();
    text.push('\n');
    fs::write(&relinked, text).unwrap();
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
