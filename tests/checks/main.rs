//! A test home per check: `tests/checks/<check>.rs` (the check's id with
//! `_` for `-`) holds the tests of that check's findings and repair on
//! hand-built or fixture folders. Regression and attack tests stay in the
//! files named by their subject (tests/*.rs). `cargo test --test checks
//! false_root::` runs one check's (its module path).

#[path = "../appserver_shared.rs"]
mod appserver_shared;
#[path = "../common/mod.rs"]
mod common;

mod abandoned_branch;
mod appserver_fs;
mod bad_event_filename;
mod changed_during_read;
mod claude_broken_parent;
mod claude_common;
mod claude_duplicate_uuid;
mod claude_invalid_line;
mod claude_unpaired_tool;
mod codex_common;
mod codex_duplicate_line;
mod codex_invalid_line;
mod codex_missing_session_meta;
mod codex_state_parity;
mod codex_unpaired_call;
mod copy_extra_events;
mod copy_missing_events;
mod dangling_parent;
mod duplicate_event_id;
mod duplicate_index;
mod empty_conversation;
mod events_without_row;
mod false_root;
mod filename_id_mismatch;
mod head_lag;
mod id_mismatch;
mod index_gap;
mod interrupted_repair;
mod invalid_event;
mod invalid_row;
mod invalid_state;
mod legacy_tail_hazard;
mod listing_fixture;
mod live_lease;
mod meta_divergence;
mod meta_duplicate;
mod misparented_recovery_error;
mod not_listed;
mod out_of_order;
mod parent_cycle;
mod plaintext_secret;
mod row_status_divergence;
mod row_title_divergence;
mod row_without_events;
mod s3_listing_limit;
mod secret_undecryptable;
mod session_common;
mod shadowed;
mod stale_leaf;
mod stale_running;
mod unknown_field;
mod unknown_kind;
mod unmigrated_event_layout;
mod unreadable_event;
mod unreadable_state;
mod user_prefix_split;
mod v0_row;

use convo_doctor::checks::REGISTRY;
use convo_doctor::report::{analyze, Options};

/// The checks whose tests still live elsewhere (tests/*.rs named by
/// subject, unit tests beside the check): each leaves this list when its
/// file here is written. A new check is not added to it: it starts with its
/// home.
const NO_HOME_YET: &[&str] = &[];

/// Every check has `tests/checks/<check>.rs`, declared above, or is still
/// listed in [`NO_HOME_YET`] (and only then).
#[test]
fn every_check_has_a_test_home() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/checks");
    let main = std::fs::read_to_string(here.join("main.rs")).unwrap();
    for c in REGISTRY {
        let module = c.id().replace('-', "_");
        let home = here.join(format!("{module}.rs")).is_file();
        let declared = main.contains(&format!("\nmod {module};\n"));
        let waiting = NO_HOME_YET.contains(&c.id());
        assert!(
            home == declared && home != waiting,
            "{}: tests/checks/{module}.rs {}, `mod {module};` {}, {} NO_HOME_YET",
            c.id(),
            if home { "exists" } else { "is missing" },
            if declared { "declared" } else { "not declared" },
            if waiting { "in" } else { "not in" },
        );
    }
    for id in NO_HOME_YET {
        assert!(REGISTRY.iter().any(|c| c.id() == *id), "{id} is no check");
    }
}

/// (check, severity) of every finding of the folder `dir`, judged by SDK
/// `version`'s rules.
pub fn findings(dir: &std::path::Path, version: &str) -> Vec<(String, String)> {
    let all = |_: &str| true;
    let opts = Options {
        version: version.parse().unwrap(),
        version_given: false,
        selected: &all,
        event_list: false,
    };
    analyze(dir, "x".into(), &opts)
        .findings
        .into_iter()
        .map(|f| (f.check.to_string(), f.severity.as_str().to_string()))
        .collect()
}

/// Set `p`'s modification time to `secs_ago` seconds before now.
pub fn set_mtime(p: &std::path::Path, secs_ago: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// The conversation folder of the teaching fixture `name`
/// (`fixtures/<name>/<id>/`).
pub fn fixture_conv(name: &str) -> std::path::PathBuf {
    std::fs::read_dir(common::fixture(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a conversation folder")
}

/// The severities of `check`'s findings on the conversation `dir`, judged
/// by the newest SDK's rules.
pub fn found(dir: &std::path::Path, check: &str) -> Vec<String> {
    findings(dir, convo_doctor::version::NEWEST.to_string().as_str())
        .into_iter()
        .filter(|(c, _)| c == check)
        .map(|(_, s)| s)
        .collect()
}

/// `repair --dry-run [extra…] --only check PATH`: (exit code, stdout).
pub fn plan(path: &std::path::Path, check: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["repair", "--dry-run"];
    args.extend(extra);
    args.extend(["--only", check, common::s(path)]);
    let (code, out, err) = common::run(&args, &[]);
    assert_eq!(err, "", "{out}");
    (code, out)
}

/// A temp copy of fixture `name` repaired for real (`repair [extra…]`, a
/// backup directory beside it), which must exit 0. Returns (guard,
/// conversation folder, stdout).
pub fn repaired(name: &str, extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (tmp, store, conv) = common::fixture_copy(name);
    let backups = tmp.path().join("backups");
    let (code, out, err) = common::repair(&store, &backups, extra, None);
    assert_eq!(code, 0, "{out}{err}");
    (tmp, conv, out)
}

/// The agent's branch (event ids) that the real SDK 1.58.2 loaded from
/// fixture `name` after `repair [extra…]`, as fixtures/gen/prove_repairs.py
/// recorded it in fixtures/repairs.json.
pub fn sdk_branch_after(name: &str, extra: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(common::repo().join("fixtures/repairs.json")).unwrap();
    let proofs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut args = vec!["repair"];
    args.extend(extra);
    let case = proofs["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["fixture"] == name && r["args"] == serde_json::json!(args))
        .unwrap_or_else(|| {
            panic!(
                "fixtures/repairs.json has no `{}` of {name}",
                args.join(" ")
            )
        });
    assert_eq!(case["sdk_verdict_after"]["loads"], true, "{name}");
    case["sdk_verdict_after"]["active_branch_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Repair the conversation `conv` in place (`repair [extra…]`, the backup
/// in a temp dir of its own, outside every conversations directory), which
/// must exit 0; returns stdout.
pub fn repair_here(conv: &std::path::Path, extra: &[&str]) -> String {
    let backups = tempfile::tempdir().unwrap();
    let (code, out, err) = common::repair(conv, &backups.path().join("b"), extra, None);
    assert_eq!(code, 0, "{out}{err}");
    out
}
