//! `interrupted-repair`: a repair run's journal left in the folder; its gate
//! refuses every repair until the run is undone.

use convo_doctor::fix::{self, Refusal, RepairOptions};
use convo_doctor::report::{analyze, Options};
use convo_doctor::store::fsread::DirFd;

use super::common;

/// clean-tree with the journal of run `20261202-120000-ab12` whose backup
/// folder is `/var/tmp/nowhere` (which holds no such run).
fn journaled() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, _store, conv) = common::fixture_copy("clean-tree");
    std::fs::write(
        conv.join(".convo-doctor-repair.json"),
        r#"{"run_id": "20261202-120000-ab12", "backup_dir": "/var/tmp/nowhere"}"#,
    )
    .unwrap();
    (tmp, conv)
}

/// The gate refuses the plan as `interrupted`.
#[test]
fn a_journal_refuses_the_repair() {
    let (_tmp, conv) = journaled();
    let all = |_: &str| true;
    let p = fix::plan(
        &DirFd::open(&conv).unwrap(),
        conv.display().to_string(),
        &RepairOptions {
            server_version: None,
            selected: &all,
            unsafe_fixes: false,
        },
    );
    let refused = p.refused.clone().expect("refused");
    assert_eq!(refused.kind, Refusal::Interrupted);
    assert!(
        refused.why.contains("undo that run first"),
        "{}",
        refused.why
    );
}

/// The backup folder a journal names goes into an `undo` command only when
/// the context's lookup (`Ctx::runs`, which the commands pass) vouches for
/// it: the same real interrupted run is printed as a command by `diagnose`
/// and named by no command in a report made without the lookup.
#[test]
fn the_backup_folder_is_vouched_for_through_the_lookup_passed_in() {
    let (tmp, store, conv) = common::fixture_copy("index-gap");
    let backups = tmp.path().join("backups");
    let run = "20261202T000000Z-2525";
    let env = [
        ("CONVO_DOCTOR_RUN_ID", run),
        ("CONVO_DOCTOR_CRASH_AT", "after-quarantine"),
    ];
    let args = [
        "repair",
        "--unsafe-fixes",
        "--backup-dir",
        common::s(&backups),
        common::s(&store),
    ];
    assert_ne!(common::run(&args, &env).0, 0, "the run stops half-way");
    let want = format!("convo-doctor undo --backup-dir {} {run}", backups.display());
    let (_, out, _) = common::run(&["diagnose", common::s(&conv)], &[]);
    assert!(out.contains(&want), "{out}");
    let all = |_: &str| true;
    let opts = Options {
        version: "1.58.2".parse().unwrap(),
        version_given: false,
        selected: &all,
        event_list: false,
    };
    let r = analyze(&conv, "x".into(), &opts);
    let f = r
        .findings
        .iter()
        .find(|f| f.check == "interrupted-repair")
        .expect("the finding");
    assert_eq!(f.severity.as_str(), "error");
    assert!(f.message.contains(&format!("(run {run})")), "{}", f.message);
    assert!(!f.message.contains(&want), "{}", f.message);
    assert!(f.message.contains("is not printed"), "{}", f.message);
}
