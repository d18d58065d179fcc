//! The command line as an operator and a script see it: exit codes, stdout
//! carrying only the report, the JSON schema, and snapshots of the human
//! output of a few fixtures (reviewed by hand against the SDK verdicts), kept
//! by insta in tests/snapshots/cli__*.snap (`cargo insta review`).

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Run in the repository root so paths in the output are stable.
fn cd(args: &[&str]) -> (i32, String, String) {
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

#[test]
fn human_output_snapshots() {
    for (name, extra) in [
        ("false-root", &["--events"][..]),
        ("unknown-kind", &[][..]),
        ("deliberate-root", &["--events"][..]),
        ("index-gap", &[][..]),
    ] {
        let fixture = format!("fixtures/{name}");
        let mut args = vec!["diagnose", fixture.as_str()];
        args.extend_from_slice(extra);
        let (_, out, err) = cd(&args);
        assert_eq!(err, "", "{name}: nothing on stderr");
        insta::assert_snapshot!(format!("diagnose-{name}"), out);
    }
    let (_, out, _) = cd(&["repair", "--dry-run", "fixtures/false-root"]);
    insta::assert_snapshot!("repair-dry-run-false-root", out);
}

#[test]
fn exit_codes_follow_fail_on() {
    assert_eq!(cd(&["diagnose", "fixtures/clean-tree"]).0, 0);
    assert_eq!(cd(&["diagnose", "fixtures/false-root"]).0, 1);
    assert_eq!(
        cd(&["diagnose", "fixtures/false-root", "--fail-on", "never"]).0,
        0
    );
    // abandoned-branch is info only
    assert_eq!(cd(&["diagnose", "fixtures/abandoned-branch"]).0, 0);
    assert_eq!(
        cd(&["diagnose", "fixtures/abandoned-branch", "--fail-on", "info"]).0,
        1
    );
    // a warning fails by default, not with --fail-on error
    assert_eq!(cd(&["diagnose", "fixtures/bad-event-filename"]).0, 1);
    assert_eq!(
        cd(&[
            "diagnose",
            "fixtures/bad-event-filename",
            "--fail-on",
            "error"
        ])
        .0,
        0
    );
    // usage errors and unreadable paths are 2, with a message on stderr only
    let (code, out, err) = cd(&["diagnose", "does/not/exist"]);
    assert_eq!(code, 2);
    assert_eq!(
        out,
        "0 conversations scanned: 0 clean, 0 with findings\n\
         1 scan error: not everything could be read, so this report is incomplete \
         (the errors are on stderr; exit status 2)\n",
        "only the summary, which says the run failed"
    );
    assert!(err.contains("does/not/exist"), "{err}");
    assert_eq!(
        cd(&["diagnose", "fixtures", "--only", "no-such-check"]).0,
        2
    );
    assert_eq!(cd(&["diagnose"]).0, 2);
}

#[test]
fn only_and_skip_select_checks() {
    let (code, out, _) = cd(&["diagnose", "fixtures/false-root", "--skip", "false-root"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("false-root]"));
    let (code, out, _) = cd(&[
        "diagnose",
        "fixtures/",
        "--only",
        "index-gap",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let checks: Vec<&str> = v["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["findings"].as_array().unwrap())
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert_eq!(checks, ["index-gap"]);
}

#[test]
fn json_and_jsonl_carry_the_documented_schema() {
    let (code, out, err) = cd(&["diagnose", "fixtures/", "--format", "json"]);
    assert_eq!(code, 1);
    assert_eq!(err, "");
    let doc: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["schema_version"], 1);
    let convs = doc["conversations"].as_array().unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fixtures/manifest.json")).unwrap(),
    )
    .unwrap();
    // every fixture's conversation is there (nested sub-agent conversations too)
    let paths: Vec<&str> = convs.iter().map(|c| c["path"].as_str().unwrap()).collect();
    for f in manifest["fixtures"].as_array().unwrap() {
        let want = format!("fixtures/{}", f["path"].as_str().unwrap());
        assert!(paths.contains(&want.as_str()), "{want} not scanned");
    }
    for c in convs {
        for key in ["path", "id", "events", "findings", "verdict"] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
        for key in ["on_disk", "agent_view", "orphaned"] {
            assert!(c["events"].get(key).is_some(), "events.{key} missing");
        }
        for f in c["findings"].as_array().unwrap() {
            for key in ["check", "severity", "file", "message", "fixable"] {
                assert!(f.get(key).is_some(), "finding.{key} missing");
            }
        }
    }
    assert!(doc["summary"]["conversations"].as_u64().unwrap() as usize == convs.len());

    let (_, lines, _) = cd(&["diagnose", "fixtures/", "--format", "jsonl"]);
    // every line carries the schema version, as its last key
    let rows: Vec<Value> = lines
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let version = v.as_object_mut().unwrap().remove("schema_version");
            assert_eq!(version, Some(Value::from(1)), "{l}");
            v
        })
        .collect();
    assert_eq!(rows.len(), convs.len() + 1);
    assert!(rows.last().unwrap().get("summary").is_some());
    // the same objects in the same (path) order as the json document
    for (a, b) in rows.iter().zip(convs) {
        assert_eq!(a, b);
    }
    let paths: Vec<&str> = convs.iter().map(|c| c["path"].as_str().unwrap()).collect();
    // path order: component by component (`false-root/` before
    // `false-root-damaged/`), as Path compares
    let mut sorted = paths.clone();
    sorted.sort_by(|a, b| std::path::Path::new(a).cmp(std::path::Path::new(b)));
    assert_eq!(paths, sorted);
}

#[test]
fn colour_only_when_asked() {
    let (_, plain, _) = cd(&["diagnose", "fixtures/false-root"]);
    assert!(!plain.contains('\u{1b}'));
    let (_, coloured, _) = cd(&["--color", "always", "diagnose", "fixtures/false-root"]);
    assert!(coloured.contains("\u{1b}["));
    let (_, json, _) = cd(&[
        "--color",
        "always",
        "diagnose",
        "fixtures/false-root",
        "--format",
        "json",
    ]);
    assert!(!json.contains('\u{1b}'), "never colour JSON");
}

#[test]
fn explain_prints_every_check() {
    let (code, out, _) = cd(&["explain"]);
    assert_eq!(code, 0);
    for id in ["false-root", "meta-divergence", "live-lease"] {
        assert!(out.contains(id));
    }
    let (code, out, _) = cd(&["explain", "false-root"]);
    assert_eq!(code, 0);
    assert!(out.contains("navigate_to(None)"));
    assert_eq!(cd(&["explain", "nope"]).0, 2);
}

// --- issue 17, item 8: the small things ---------------------------------------

#[test]
fn a_mistyped_check_id_gets_a_did_you_mean() {
    for args in [
        &["explain", "fals-root"][..],
        &["diagnose", "--only", "fals-root", "fixtures/false-root"][..],
        &["diagnose", "--skip", "fals-root", "fixtures/false-root"][..],
        &[
            "repair",
            "--dry-run",
            "--only",
            "fals-root",
            "fixtures/false-root",
        ][..],
    ] {
        let (code, out, err) = cd(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}");
        assert!(
            err.contains("unknown check `fals-root`; did you mean `false-root`?"),
            "{args:?}: {err}"
        );
    }
    // nothing close: no guess
    let (_, _, err) = cd(&["explain", "qqqq"]);
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn every_error_has_one_prefix() {
    // a usage error clap finds, one convo-doctor finds, an unreadable PATH
    for args in [
        &["diagnose", "--no-such-flag", "fixtures"][..],
        &["diagnose", "--format", "yaml", "fixtures"][..],
        &["diagnose"][..],
        &[
            "repair",
            "--format",
            "json",
            "--dry-run",
            "--diff-format",
            "patch",
            "fixtures",
        ][..],
        &["explain", "nope"][..],
        &["diagnose", "does/not/exist"][..],
    ] {
        let (code, _, err) = cd(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.starts_with("convo-doctor: error: "), "{args:?}: {err}");
        for line in err.lines() {
            assert!(!line.starts_with("error:"), "{args:?}: {err}");
        }
    }
    // help and version are not errors
    let (code, out, err) = cd(&["--version"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("convo-doctor "));
}

/// "1 events" as a count of its own ("21 events" is fine).
fn says_1_events(out: &str) -> bool {
    out.match_indices("1 events")
        .any(|(i, _)| i == 0 || !out.as_bytes()[i - 1].is_ascii_digit())
}

#[test]
fn says_1_events_reads_whole_numbers() {
    assert!(says_1_events("1 events") && says_1_events("sees 1 events"));
    assert!(!says_1_events("sees 21 events") && !says_1_events("1 event"));
}

#[test]
fn one_event_is_not_1_events() {
    // one event the agent cannot see
    let (_, out, _) = cd(&["diagnose", "fixtures/misparented-recovery-error"]);
    assert!(out.contains("; 1 event the agents cannot see"), "{out}");
    let store = tempfile::tempdir().unwrap();
    common::copy_fixture("misparented-recovery-error", store.path());
    common::copy_fixture("clean-tree", store.path());
    let (_, out, _) = cd(&["diagnose", store.path().to_str().unwrap()]);
    assert!(!says_1_events(&out), "{out}");
    // a lone event cut off: "0 of 1 event"
    let mut c = common::Conv::new(serde_json::json!({}));
    c.push("MessageEvent", Some("e0000000-0000-4000-8000-999999999999"));
    let (_, out, _) = cd(&["diagnose", c.path().to_str().unwrap()]);
    assert!(!says_1_events(&out), "{out}");
}

#[test]
fn the_same_path_twice_is_scanned_once() {
    let (_, once, _) = cd(&["diagnose", "fixtures/false-root", "--format", "json"]);
    for twice in [
        &["fixtures/false-root", "fixtures/false-root"][..],
        &["fixtures/false-root", "fixtures/false-root/"][..],
        // a store and a conversation in it
        &[
            "fixtures/false-root",
            "fixtures/false-root/fd9bd2a279b352c3a6c9a47437e5143e",
        ][..],
    ] {
        let mut args = vec!["diagnose", "--format", "json"];
        args.extend(twice);
        let (code, out, _) = cd(&args);
        assert_eq!(code, 1);
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["summary"]["conversations"], 1, "{twice:?}");
        assert_eq!(
            doc["summary"],
            serde_json::from_str::<Value>(&once).unwrap()["summary"]
        );
    }
}

#[test]
fn notes_go_to_stderr_in_human_and_concise_output() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    common::copy_fixture("clean-tree", &store);
    std::os::unix::fs::symlink(repo().join("fixtures/false-root"), store.join("linked")).unwrap();
    let p = store.to_str().unwrap();
    for format in ["human", "concise"] {
        let (code, out, err) = cd(&["diagnose", "--format", format, p]);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("note"), "{format}: {out}");
        assert!(
            err.contains("convo-doctor: note: `") && err.contains("linked` is a symbolic link"),
            "{format}: {err}"
        );
    }
    // JSON keeps them in the summary: it is data
    let (_, out, err) = cd(&["diagnose", "--format", "json", p]);
    assert_eq!(err, "");
    assert!(out.contains("is a symbolic link"), "{out}");
}

#[test]
fn events_is_never_silently_ignored() {
    for format in ["concise", "markdown", "prometheus"] {
        let (code, _, err) = cd(&[
            "diagnose",
            "--events",
            "--format",
            format,
            "fixtures/clean-tree",
        ]);
        assert_eq!(code, 0, "{format}");
        assert!(
            err.contains("convo-doctor: warning: --events lists events in the human, json and jsonl formats only; ignored"),
            "{format}: {err}"
        );
    }
    for format in ["human", "json", "jsonl"] {
        let (_, out, err) = cd(&[
            "diagnose",
            "--events",
            "--format",
            format,
            "fixtures/clean-tree",
        ]);
        assert_eq!(err, "", "{format}");
        assert!(out.contains("MessageEvent"), "{format}");
    }
}

#[test]
fn event_list_parent_is_an_integer_or_null() {
    // a pre-tree log (legacy chaining), a tree log with __root__, a parent
    // not in the log
    let (_, out, _) = cd(&[
        "diagnose",
        "--events",
        "--format",
        "jsonl",
        "fixtures/false-root",
        "fixtures/clean-tree",
        "fixtures/dangling-parent",
    ]);
    let mut links = std::collections::BTreeSet::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for row in v["event_list"].as_array().into_iter().flatten() {
            let parent = &row["parent"];
            assert!(parent.is_u64() || parent.is_null(), "{row}");
            let link = row["parent_link"].as_str().unwrap();
            assert_eq!(
                parent.is_u64(),
                ["event", "legacy"].contains(&link),
                "{row}"
            );
            links.insert(link.to_string());
        }
    }
    for link in ["event", "legacy", "root", "missing", "none"] {
        assert!(links.contains(link), "no `{link}` row among {links:?}");
    }
}

#[test]
fn the_readmes_first_command_shows_the_teaching_fixtures() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -- diagnose"))
        .expect("README's first command");
    let glob = first.split_whitespace().nth(5).expect("its PATH argument");
    assert_eq!(glob, "fixtures/*-*/", "{first}");
    // what the shell expands it to: every teaching fixture (a folder named
    // after its problem), none of the regression sets
    let out = Command::new("sh")
        .args(["-c", &format!("printf '%s\\n' {glob}")])
        .current_dir(repo())
        .output()
        .unwrap();
    let dirs: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            l.trim_end_matches('/')
                .trim_start_matches("fixtures/")
                .to_string()
        })
        .collect();
    for regression in [
        "fuzz",
        "listing",
        "validation",
        "gen",
        "repaired",
        "validator_diff",
    ] {
        assert!(!dirs.contains(&regression.to_string()), "{dirs:?}");
    }
    for teaching in ["false-root", "clean-tree", "index-gap", "subagent-nested"] {
        assert!(dirs.contains(&teaching.to_string()), "{dirs:?}");
    }
    // about 25 conversations, not 155, and the documented exit status 1
    let mut args = vec!["diagnose".to_string(), "--format".into(), "json".into()];
    args.extend(dirs.iter().map(|d| format!("fixtures/{d}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, _) = cd(&args);
    assert_eq!(code, 1);
    let n = serde_json::from_str::<Value>(&out).unwrap()["summary"]["conversations"]
        .as_u64()
        .unwrap();
    assert!((20..=30).contains(&n), "{n} conversations");
}

/// Issue 23: `repair`'s description promised "the list of repairs below"
/// wherever it was shown (`repair -h`, `convo-doctor --help`, the man
/// pages, the completions), and only `repair --help` had one. Each help
/// text that points at the list must carry it, or name where it is.
#[test]
fn help_points_at_the_list_of_repairs_only_where_it_follows() {
    let long = cd(&["repair", "--help"]).1;
    assert!(long.contains("Repairs (safe: always"), "{long}");
    for args in [&["repair", "-h"][..], &["--help"], &["-h"]] {
        let (_, out, _) = cd(args);
        assert!(
            !out.contains("repairs below") || out.contains("Repairs (safe: always"),
            "`{}` promises a list that does not follow:\n{out}",
            args.join(" ")
        );
    }
    let (_, man, _) = cd(&["man", "repair"]);
    assert!(man.contains("REPAIRS"), "{man}");
    assert!(!man.contains("repairs below"), "{man}");
}
