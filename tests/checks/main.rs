//! A test home per check: `tests/checks/<check>.rs` (the check's id with
//! `_` for `-`) holds the tests of that check's findings and repair on
//! hand-built or fixture folders. Regression and attack tests stay in the
//! files named by their subject (tests/*.rs). `cargo test --test checks
//! <check>` runs one check's.

#[path = "../common/mod.rs"]
mod common;

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
mod head_lag;
mod interrupted_repair;
mod live_lease;
mod out_of_order;
mod stale_running;

use convo_doctor::checks::REGISTRY;
use convo_doctor::report::{analyze, Options};

/// The checks whose tests still live elsewhere (tests/*.rs named by
/// subject, unit tests beside the check): each leaves this list when its
/// file here is written. A new check is not added to it: it starts with its
/// home.
const NO_HOME_YET: &[&str] = &[
    "changed-during-read",
    "empty-conversation",
    "unreadable-state",
    "id-mismatch",
    "false-root",
    "unreadable-event",
    "unknown-kind",
    "unknown-field",
    "invalid-event",
    "invalid-state",
    "index-gap",
    "duplicate-index",
    "duplicate-event-id",
    "filename-id-mismatch",
    "bad-event-filename",
    "dangling-parent",
    "parent-cycle",
    "stale-leaf",
    "misparented-recovery-error",
    "legacy-tail-hazard",
    "abandoned-branch",
    "meta-divergence",
    "meta-duplicate",
    "plaintext-secret",
    "not-listed",
    "shadowed",
    "secret-undecryptable",
    "invalid-row",
    "v0-row",
    "row-without-events",
    "events-without-row",
    "copy-missing-events",
    "copy-extra-events",
    "s3-listing-limit",
    "user-prefix-split",
    "unmigrated-event-layout",
    "row-status-divergence",
    "row-title-divergence",
];

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
