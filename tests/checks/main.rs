//! A test home per check: `tests/checks/<check>.rs` (the check's id with
//! `_` for `-`) holds the tests of that check's findings and repair on
//! hand-built or fixture folders. Regression and attack tests stay in the
//! files named by their subject (tests/*.rs). `cargo test --test checks
//! <check>` runs one check's.

#[path = "../common/mod.rs"]
mod common;

mod head_lag;
mod stale_running;

use convo_doctor::report::{analyze, Options};

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
