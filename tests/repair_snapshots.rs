//! `repair --dry-run` human output on every fixture, with and without
//! `--unsafe-fixes`, as insta snapshots (tests/snapshots/repair_snapshots__*.snap,
//! reviewed by hand against the fixtures' manifest and the real SDK's verdicts
//! in fixtures/repairs.json). A dry run writes nothing, so it runs on the
//! fixtures themselves.

mod common;

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Assert `text` against insta's snapshot `name`; false when it differs
/// (insta has said how, and outside CI written `name`'s `.snap.new`), so
/// that one run reports every drifted snapshot, not only the first.
fn matches(name: &str, text: &str) -> bool {
    std::panic::catch_unwind(|| insta::assert_snapshot!(name, text)).is_ok()
}

#[test]
fn repair_dry_run_snapshots_on_every_fixture() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fixtures/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut fails = Vec::new();
    for fx in manifest["fixtures"].as_array().unwrap() {
        let name = fx["name"].as_str().unwrap();
        // head-lag's repair depends on file mtimes, which git does not keep
        if name == "head-lag" {
            continue;
        }
        for (suffix, extra) in [("", None), ("-unsafe", Some("--unsafe-fixes"))] {
            let fixture = format!("fixtures/{name}");
            let mut args = vec!["repair", "--dry-run"];
            args.extend(extra);
            args.push(&fixture);
            let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
                .args(&args)
                .current_dir(repo())
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let text = format!(
                "$ convo-doctor {}\n(exit {})\n{}",
                args.join(" "),
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout)
            );
            let snap = format!("dry-run{suffix}-{name}");
            if !matches(&snap, &text) {
                fails.push(snap);
            }
        }
    }
    assert!(
        fails.is_empty(),
        "snapshots differ: {} (review with `cargo insta review`, or \
         `INSTA_UPDATE=always cargo test --test repair_snapshots` and the git diff)",
        fails.join(", ")
    );
}

/// A snapshot that differs fails its test, and nothing in the repository
/// (an insta config file) makes insta accept it: checked on a snapshot of
/// its own in a temp dir. Passed over while the environment asks insta to
/// accept (`INSTA_UPDATE=always` or `force`, `INSTA_FORCE_PASS=1`), as when
/// snapshots are being rewritten on purpose.
#[test]
fn a_differing_snapshot_fails_the_test() {
    let update = std::env::var("INSTA_UPDATE").unwrap_or_default();
    let force_pass = std::env::var("INSTA_FORCE_PASS").unwrap_or_default();
    if update == "always" || update == "force" || force_pass == "1" {
        common::skip(
            "a_differing_snapshot_fails_the_test",
            "INSTA_UPDATE or INSTA_FORCE_PASS asks insta to accept snapshots",
        );
        return;
    }
    for config in [".config/insta.yaml", "insta.yaml", ".insta.yaml"] {
        assert!(
            !repo().join(config).exists(),
            "{config}: snapshots must fail on drift, whatever it sets"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("drift.snap"),
        "---\nsource: tests/repair_snapshots.rs\nexpression: text\n---\nwhat was reviewed\n",
    )
    .unwrap();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(tmp.path());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        assert!(matches("drift", "what was reviewed"));
        assert!(!matches("drift", "what the code prints now"));
    });
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("drift.snap")).unwrap(),
        "---\nsource: tests/repair_snapshots.rs\nexpression: text\n---\nwhat was reviewed\n",
        "the reviewed snapshot is never overwritten"
    );
}
