//! Issue 17, item 1 (and item 6's count): `undo --list`, `undo --prune` and
//! `undo RUN --dry-run` decide each file as `undo` does. Before, they hashed
//! each file at its original name only: right after a repair that renamed,
//! took out or created a file, `--list` said "a file changed since the
//! repair", `--prune` removed the run (for a file taken out, its only copy),
//! and after `undo` the run was "can be undone"; and `repair` said "changed
//! 2 files" where `--list` counted 1.

mod common;

use std::fs;
use std::path::Path;

use common::{files, fixture_copy, repair, run, s, undo};
use serde_json::Value;

fn list_json(backups: &Path) -> Value {
    let (code, out, err) = run(
        &[
            "undo",
            "--list",
            "--format",
            "json",
            "--backup-dir",
            s(backups),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

fn the_run(backups: &Path) -> Value {
    let doc = list_json(backups);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{doc}");
    runs[0].clone()
}

/// "changed N files in M conversations" of the human summary.
fn changed_files(out: &str) -> usize {
    let line = out
        .lines()
        .find(|l| l.starts_with("changed "))
        .unwrap_or_else(|| panic!("{out}"));
    line.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Repair `fixture` with --unsafe-fixes as run `r1`; returns (tmp, conv,
/// backups, original files, human output).
fn repaired(
    fixture: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    std::collections::BTreeMap<String, Vec<u8>>,
    String,
) {
    let (tmp, store, conv) = fixture_copy(fixture);
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(&store, &backups, &["--unsafe-fixes"], Some("r1"));
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(files(&conv), before, "the repair changed something");
    (tmp, conv, backups, before, out)
}

/// A file taken out (the count marker) and a placeholder created: the run
/// is undoable, the dry run says what undo will do and changes nothing,
/// prune keeps it, undo restores it and the list then says "undone".
#[test]
fn a_run_that_took_out_and_created_files_is_listed_as_undo_sees_it() {
    let (_tmp, conv, backups, before, out) = repaired("index-gap");
    let r = the_run(&backups);
    assert_eq!(r["state"], "undoable", "{r}");
    assert_eq!(r["only_copy"], 1, "the count marker's only copy: {r}");
    assert_eq!(r["files"], changed_files(&out), "{r}\n{out}");

    // undo RUN --dry-run: what undo will do, file by file; nothing written
    let after = files(&conv);
    let (code, dry, err) = run(
        &["undo", "--dry-run", "--backup-dir", s(&backups), "r1"],
        &[],
    );
    assert_eq!(code, 0, "{dry}{err}");
    assert!(dry.contains("bring it back from the backup"), "{dry}");
    assert!(dry.contains("remove it (the repair created it)"), "{dry}");
    assert!(!dry.contains("would refuse"), "{dry}");
    assert_eq!(files(&conv), after, "a dry run changed the folder");

    // prune: an undoable run that holds the only copy stays
    let (code, pr, _) = run(
        &[
            "undo",
            "--prune",
            "--older-than",
            "0s",
            "--backup-dir",
            s(&backups),
        ],
        &[],
    );
    assert_eq!(code, 0, "{pr}");
    assert!(pr.contains("kept r1"), "{pr}");
    assert!(backups.join("r1").exists(), "prune removed an undoable run");

    let (code, u, err) = undo(&backups, "r1");
    assert_eq!(code, 0, "{u}{err}");
    assert_eq!(files(&conv), before, "undo is exact");
    let r = the_run(&backups);
    assert_eq!(r["state"], "undone", "{r}");
    assert_eq!(r["only_copy"], 0, "{r}");
    let (_, human, _) = run(&["undo", "--list", "--backup-dir", s(&backups)], &[]);
    assert!(
        human.contains("undone (the files hold their originals)"),
        "{human}"
    );
}

/// A file taken out of the conversation (duplicate index): listed as
/// undoable, and after undo, undone.
#[test]
fn a_quarantine_is_undoable_and_then_undone() {
    let (_tmp, conv, backups, before, out) = repaired("duplicate-index");
    let r = the_run(&backups);
    assert_eq!(r["state"], "undoable", "{r}");
    assert_eq!(r["files"], changed_files(&out), "{r}\n{out}");
    assert_eq!(undo(&backups, "r1").0, 0);
    assert_eq!(files(&conv), before);
    assert_eq!(the_run(&backups)["state"], "undone");
}

/// An event edited and renamed (a duplicate id set aside under a new id):
/// one file for `repair` as for `undo --list`, undoable, then undone.
#[test]
fn an_edited_and_renamed_file_is_one_file_and_undoable() {
    let (_tmp, conv, backups, before, out) = repaired("duplicate-event-id");
    let r = the_run(&backups);
    assert_eq!(r["state"], "undoable", "{r}");
    assert_eq!(r["files"], 1, "{r}");
    assert_eq!(changed_files(&out), 1, "{out}");
    let (code, dry, _) = run(
        &["undo", "--dry-run", "--backup-dir", s(&backups), "r1"],
        &[],
    );
    assert_eq!(code, 0, "{dry}");
    assert!(
        dry.contains("rename it back from events/event-00005-") && dry.contains("original bytes"),
        "{dry}"
    );
    assert_eq!(undo(&backups, "r1").0, 0);
    assert_eq!(files(&conv), before);
    assert_eq!(the_run(&backups)["state"], "undone");
}

/// A run whose repair created the SDK's lock file: the lock is not a file
/// of the conversation for `repair`'s count nor for `--list`'s, and an undo
/// that removed it leaves the run "undone".
#[test]
fn the_lock_a_run_created_is_counted_by_neither() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let _ = fs::remove_file(conv.join("events/.eventlog.lock"));
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(&store, &backups, &[], Some("r1"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(conv.join("events/.eventlog.lock").exists());
    let r = the_run(&backups);
    assert_eq!(r["files"], changed_files(&out), "{r}\n{out}");
    assert_eq!(r["state"], "undoable");
    assert_eq!(undo(&backups, "r1").0, 0);
    assert_eq!(files(&conv), before, "the lock is gone again");
    assert_eq!(the_run(&backups)["state"], "undone");
}

/// A run that can no longer be wholly undone but still holds the only copy
/// of a file taken out of the conversation is kept by prune unless --force.
#[test]
fn prune_keeps_the_only_copy_of_a_file_taken_out_unless_forced() {
    let (_tmp, conv, backups, _before, _) = repaired("index-gap");
    // the placeholder the repair created is changed by someone since
    let placeholder = common::event_at(&conv, 2);
    let mut text = fs::read_to_string(&placeholder).unwrap();
    text.push('\n');
    fs::write(&placeholder, text).unwrap();
    let r = the_run(&backups);
    assert_eq!(r["state"], "changed-since", "{r}");
    assert_eq!(r["only_copy"], 1, "{r}");
    let prune = |force: bool| {
        let mut args = vec![
            "undo",
            "--prune",
            "--older-than",
            "0s",
            "--backup-dir",
            s(&backups),
        ];
        if force {
            args.push("--force");
        }
        run(&args, &[])
    };
    let (code, out, _) = prune(false);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kept r1"), "{out}");
    assert!(out.contains("only copy of 1 file"), "{out}");
    assert!(backups.join("r1/manifest.json").exists());
    let (code, out, _) = prune(true);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("removed r1"), "{out}");
    assert!(!backups.join("r1").exists());
}

/// `undo RUN --dry-run` of a run with a file changed since says undo would
/// refuse it (exit 1), as undo then does, and writes nothing.
#[test]
fn a_dry_run_refuses_what_undo_refuses() {
    let (_tmp, conv, backups, _before, _) = repaired("false-root");
    let ev = common::event_at(&conv, 8);
    fs::write(&ev, b"{}").unwrap();
    let now = files(&conv);
    let (code, dry, _) = run(
        &["undo", "--dry-run", "--backup-dir", s(&backups), "r1"],
        &[],
    );
    assert_eq!(code, 1, "{dry}");
    assert!(dry.contains("would refuse"), "{dry}");
    assert!(dry.contains("changed since the repair"), "{dry}");
    assert_eq!(files(&conv), now);
    let (code, out, _) = undo(&backups, "r1");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("changed since the repair"), "{out}");
}

/// Issue 23: `undo` printed "restored" for a file the repair created and
/// removed again, and for the SDK lock file the run made that was already
/// gone. Each line now says what happened: restored, removed, or already
/// gone.
#[test]
fn undo_says_restored_removed_or_already_gone() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let _ = fs::remove_file(conv.join("events/.eventlog.lock"));
    let before = files(&conv);
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(&store, &backups, &[], Some("r1"));
    assert_eq!(code, 0, "{out}{err}");
    // the lock file the run created, gone before the undo
    fs::remove_file(conv.join("events/.eventlog.lock")).unwrap();
    let (code, out, err) = undo(&backups, "r1");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(files(&conv), before);
    let line = |file: &str| -> &str {
        out.lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("no line for {file}:\n{out}"))
    };
    // the count marker the run took out: back from the backup
    assert!(
        line(".eventlog-len-5.marker").starts_with("restored "),
        "{out}"
    );
    // the placeholder the run wrote into the gap: removed
    let created = line("events/event-00002-");
    assert!(created.starts_with("removed "), "{out}");
    let lock = line("events/.eventlog.lock");
    assert!(
        lock.starts_with("unchanged ") && lock.contains("already gone"),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("restored")).count(),
        1,
        "only the marker was restored:\n{out}"
    );
}
