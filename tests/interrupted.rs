//! A repair run killed between two of its changes (found by
//! bench/kill_campaign.py: a quarantine killed after the bad file left but
//! before the AgentErrorEvent answering its tool call was written, then
//! repaired afresh, closed the gap instead and left the call unanswered).
//! Now the run keeps a journal in the folder until its last change is
//! verified: `diagnose` reports `interrupted-repair`, `repair` refuses the
//! folder, and `undo` (the command the finding prints) puts it back and
//! removes the journal, after which a repair gives the planned result.

mod common;

use std::fs;
use std::path::Path;

use common::{files, fixture_copy, repair, run, s, undo};
use serde_json::Value;

const JOURNAL: &str = ".convo-doctor-repair.json";

fn findings(conv: &Path) -> Vec<Value> {
    let (_, out, _) = run(&["diagnose", "--format", "json", s(conv)], &[]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    doc["conversations"][0]["findings"]
        .as_array()
        .unwrap()
        .clone()
}

/// `repair --unsafe-fixes` of `store` as run `run_id`, aborted (debug
/// builds' test hook) right after the quarantined file left `events/`;
/// returns its exit code.
fn killed_after_quarantine(store: &Path, backups: &Path, run_id: &str) -> i32 {
    let args = [
        "repair",
        "--unsafe-fixes",
        "--backup-dir",
        s(backups),
        s(store),
    ];
    let env = [
        ("CONVO_DOCTOR_RUN_ID", run_id),
        ("CONVO_DOCTOR_CRASH_AT", "after-quarantine"),
    ];
    run(&args, &env).0
}

/// The reference: the same fixture repaired in one go.
fn repaired_in_one_go(name: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let (tmp, store, conv) = fixture_copy(name);
    let (code, out, err) = repair(&store, &tmp.path().join("b"), &["--unsafe-fixes"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !conv.join(JOURNAL).exists(),
        "a finished run leaves no journal"
    );
    files(&conv)
}

#[test]
fn a_repair_killed_half_way_is_reported_refused_and_undone_by_the_printed_command() {
    let reference = repaired_in_one_go("index-gap");
    let (tmp, store, conv) = fixture_copy("index-gap");
    let before = files(&conv);
    let backups = tmp.path().join("my backups");
    // killed after the re-link was written and the count marker left
    // events/, before the renames closed the gap (the kind of state the
    // kill campaign found)
    let code = killed_after_quarantine(&store, &backups, "20261130T000000Z-4242");
    assert_ne!(code, 0, "the process was aborted");
    assert_ne!(files(&conv), before, "it had changed something");
    let journal: Value = serde_json::from_slice(&fs::read(conv.join(JOURNAL)).unwrap()).unwrap();
    assert_eq!(journal["run_id"], "20261130T000000Z-4242");

    // diagnose says so, with a command that can be pasted
    let f = findings(&conv);
    let hit = f
        .iter()
        .find(|f| f["check"] == "interrupted-repair")
        .unwrap_or_else(|| panic!("{f:?}"));
    assert_eq!(hit["severity"], "error");
    let msg = hit["message"].as_str().unwrap();
    let cmd = msg
        .split('`')
        .find(|part| part.starts_with("convo-doctor undo"))
        .unwrap_or_else(|| panic!("{msg}"));
    assert!(
        cmd.contains("'"),
        "the backup dir with a space is quoted: {cmd}"
    );
    // nothing is called fixable while `repair` would refuse the folder
    assert!(f.iter().all(|f| f["fixable"] == false), "{f:?}");

    // repair refuses the folder and changes nothing
    let half = files(&conv);
    let (code, out, _) = repair(&store, &tmp.path().join("b2"), &["--unsafe-fixes"], None);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stopped half-way"), "{out}");
    assert_eq!(files(&conv), half, "a refused repair changed something");

    // the printed command, run by a shell, puts everything back
    let sh = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd.replacen(
            "convo-doctor",
            &format!("'{}'", env!("CARGO_BIN_EXE_convo-doctor")),
            1,
        ))
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stdout)
    );
    assert_eq!(
        files(&conv),
        before,
        "undo is exact and removes the journal"
    );

    // and a repair now gives what one run would have given
    let (code, out, err) = repair(&store, &tmp.path().join("b3"), &["--unsafe-fixes"], None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), reference);
}

/// A repair that changes one file (one atomic rename) needs no journal: a
/// kill leaves the old file or the new one, and a second run finishes it.
#[test]
fn a_single_change_repair_keeps_no_journal() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let (code, _, _) = run(
        &[
            "repair",
            "--backup-dir",
            s(&tmp.path().join("b")),
            s(&store),
        ],
        &[("CONVO_DOCTOR_CRASH_AT", "after-backup")],
    );
    assert_ne!(code, 0);
    assert!(!conv.join(JOURNAL).exists());
    assert!(!findings(&conv)
        .iter()
        .any(|f| f["check"] == "interrupted-repair"));
}

/// `undo` of one run leaves a journal that names another run alone (that
/// run's folder is still half-made), and so does a folder whose undo was
/// refused.
#[test]
fn undo_removes_only_its_own_runs_journal() {
    let (tmp, store, conv) = fixture_copy("empty-event");
    let backups = tmp.path().join("b");
    let (code, out, err) = repair(
        &store,
        &backups,
        &["--unsafe-fixes"],
        Some("20261130T000000Z-1"),
    );
    assert_eq!(code, 0, "{out}{err}");
    let foreign = r#"{"run_id":"20261130T000001Z-2","backup_dir":"/elsewhere"}"#;
    fs::write(conv.join(JOURNAL), foreign).unwrap();
    let (code, out, err) = undo(&backups, "20261130T000000Z-1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(fs::read_to_string(conv.join(JOURNAL)).unwrap(), foreign);
}

/// A temp file the killed run left (`.convo-doctor-NAME.PID.tmp`, PID from
/// the run id) goes with `undo`; one of another process stays.
#[test]
fn undo_removes_the_temp_files_of_the_killed_run() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let before = files(&conv);
    let backups = tmp.path().join("b");
    let code = killed_after_quarantine(&store, &backups, "20261130T000000Z-4243");
    assert_ne!(code, 0);
    let ours = conv.join("events/.convo-doctor-event-00003-x.json.4243.tmp");
    let other = conv.join("events/.convo-doctor-event-00003-x.json.999.tmp");
    fs::write(&ours, "partial").unwrap();
    fs::write(&other, "someone else's").unwrap();
    let (code, out, err) = undo(&backups, "20261130T000000Z-4243");
    assert_eq!(code, 0, "{out}{err}");
    assert!(!ours.exists());
    assert!(other.exists());
    fs::remove_file(&other).unwrap();
    assert_eq!(files(&conv), before, "no journal, no temp file left");
}

/// `undo` gives a file back its modification time with its bytes. The kill
/// campaign found that without it a repair after an undo could not repair
/// `head-lag` again: its guard reads "the events below the HEAD are newer
/// than base_state.json" as crash evidence, and a restore stamped "now"
/// made base_state.json the newest file.
#[test]
fn undo_restores_modification_times_so_the_evidence_survives() {
    use std::time::{Duration, SystemTime};
    let (tmp, store, conv) = fixture_copy("head-lag");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let stamp = |p: &Path, t: SystemTime| {
        fs::File::options()
            .append(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap()
    };
    for (rel, _) in files(&conv) {
        stamp(&conv.join(&rel), t0);
    }
    // fixtures/gen/prove_repairs.py MTIME_STORY: the lagging event file is
    // written 2 s after base_state.json's last autosave
    stamp(&common::event_at(&conv, 4), t0 + Duration::from_secs(2));
    let mtimes = || -> Vec<(String, SystemTime)> {
        files(&conv)
            .into_keys()
            .map(|rel| {
                let m = fs::metadata(conv.join(&rel)).unwrap().modified().unwrap();
                (rel, m)
            })
            .collect()
    };
    let before = (files(&conv), mtimes());
    let backups = tmp.path().join("b");
    let (code, out, err) = repair(&store, &backups, &[], Some("20261130T000000Z-7"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("[head-lag]"), "{out}");
    let repaired = files(&conv);
    assert_ne!(repaired, before.0);
    let (code, out, err) = undo(&backups, "20261130T000000Z-7");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        (files(&conv), mtimes()),
        before,
        "bytes and mtimes are back"
    );
    let (code, out, err) = repair(&store, &tmp.path().join("b2"), &[], None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), repaired, "the same repair again");
}

/// Every run folder under `backups` with its manifest's file count (None:
/// no manifest, a run `undo` cannot find).
fn runs(backups: &Path) -> Vec<(String, Option<usize>)> {
    let Ok(rd) = fs::read_dir(backups) else {
        return Vec::new();
    };
    rd.map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| {
            let files = fs::read(e.path().join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|m| m["files"].as_array().map(Vec::len));
            (e.file_name().into_string().unwrap(), files)
        })
        .collect()
}

/// Issue 23: a run that failed before its manifest was written (here the
/// file whose owner a placeholder takes has a second hard link: "no file
/// to take the owner and mode from") said "nothing was changed", yet left
/// the SDK lock file it had created in the folder, and a backup folder
/// with no manifest that `undo` could not find. Now the folder is left
/// byte for byte and name for name as it was, and no run without a
/// manifest stays behind.
#[test]
fn a_run_that_fails_before_changing_a_file_leaves_the_folder_as_it_was() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let _ = fs::remove_file(conv.join("events/.eventlog.lock"));
    let like = common::event_at(&conv, 1);
    fs::hard_link(&like, tmp.path().join("second-link")).unwrap();
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(&store, &backups, &[], Some("20261202T000000Z-4343"));
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("not applied"), "{out}{err}");
    assert_eq!(files(&conv), before, "the folder is as it was:\n{out}{err}");
    for (id, listed) in runs(&backups) {
        assert!(
            listed.is_some(),
            "run {id} has no manifest: undo cannot find it"
        );
    }
}

/// Issue 23: whatever step of a run fails, the run undoes: a failure
/// injected right after its first change (debug builds' test hook) leaves
/// a manifest listing every change, and `undo` puts the folder back byte
/// for byte, the lock file the run created and its journal gone.
#[test]
fn a_run_that_fails_after_its_first_change_is_undone_exactly() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let _ = fs::remove_file(conv.join("events/.eventlog.lock"));
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let args = ["repair", "--backup-dir", s(&backups), s(&store)];
    let env = [
        ("CONVO_DOCTOR_RUN_ID", "20261202T000000Z-4344"),
        ("CONVO_DOCTOR_FAIL_AT", "after-first-change"),
    ];
    let (code, out, err) = run(&args, &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("a failure injected for a test"), "{out}{err}");
    assert_ne!(files(&conv), before, "the first change was made");
    assert_eq!(
        runs(&backups),
        vec![("20261202T000000Z-4344".to_string(), Some(3))],
        "the lock file, the marker taken out and the placeholder"
    );
    let (code, out, err) = undo(&backups, "20261202T000000Z-4344");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), before, "undo restored every name and byte");

    // and a failure injected once everything is checked, before the
    // manifest lists the changes, changes nothing at all
    let (tmp, store, conv) = fixture_copy("index-gap");
    let _ = fs::remove_file(conv.join("events/.eventlog.lock"));
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let args = ["repair", "--backup-dir", s(&backups), s(&store)];
    let (code, out, err) = run(&args, &[("CONVO_DOCTOR_FAIL_AT", "before-manifest")]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(files(&conv), before, "{out}{err}");
    assert_eq!(runs(&backups), vec![], "no run is left: nothing to undo");
}
