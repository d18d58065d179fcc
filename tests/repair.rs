//! `repair` and `undo` on copies of the real-SDK fixtures.

mod common;

use std::fs;
use std::path::Path;

use common::{fixture_copy, run, snapshot};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn dry_run_shows_the_relink_and_writes_nothing() {
    let (_t, store, _conv) = fixture_copy("false-root");
    let before = snapshot(&store);
    let (code, out, _err) = run(&["repair", "--dry-run", s(&store)], &[]);
    assert_eq!(code, 1, "changes are pending: {out}");
    assert!(out.contains("-  \"parent_id\": \"__root__\","), "{out}");
    assert!(out.contains("+++ b/"), "{out}");
    assert!(out.contains("after repair: agent sees all"), "{out}");
    assert!(
        snapshot(&store) == before,
        "dry-run changed a byte or an mtime"
    );
}

#[test]
fn repair_changes_only_the_parent_id_then_is_a_no_op_and_undo_restores() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let backups = tmp.path().join("backups");
    let before = snapshot(&store);
    let env = [("CONVO_DOCTOR_RUN_ID", "run-1")];
    let (code, out, err) = run(&["repair", "--backup-dir", s(&backups), s(&store)], &env);
    assert_eq!(code, 0, "{out}{err}");
    let after = snapshot(&store);
    let changed: Vec<_> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| (a.0.clone(), a.1.clone(), b.1.clone()))
        .collect();
    assert_eq!(changed.len(), 1, "exactly one file changes");
    assert_eq!(after.len(), before.len(), "no file added or removed");
    let (path, old, new) = &changed[0];
    assert!(path.to_str().unwrap().contains("/events/event-00008-"));
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    // identical outside the parent_id value
    let i = old.find("\"parent_id\":\"").unwrap() + "\"parent_id\":\"".len();
    assert_eq!(old[..i], new[..i]);
    assert_eq!(old[i + "__root__".len()..], new[i + 36..]);
    // the new parent is the last real event before the artifacts (00004)
    let target = fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("event-00004-"))
        .unwrap();
    assert_eq!(
        &new[i..i + 36],
        &target["event-00004-".len()..target.len() - 5]
    );

    // a second repair is a no-op
    let again = snapshot(&store);
    let (code, out, _) = run(
        &["repair", "--backup-dir", s(&backups), s(&store)],
        &[("CONVO_DOCTOR_RUN_ID", "run-2")],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to repair"), "{out}");
    assert!(
        snapshot(&store) == again,
        "a second repair changed something"
    );
    assert!(
        !backups.join("run-2").exists(),
        "a no-op run leaves no backup"
    );

    // undo restores the original bytes
    let (code, out, _) = run(&["undo", "run-1", "--backup-dir", s(&backups)], &[]);
    assert_eq!(code, 0, "{out}");
    let bytes = |v: Vec<(std::path::PathBuf, Vec<u8>, std::time::SystemTime)>| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        v.into_iter().map(|(p, b, _)| (p, b)).collect()
    };
    assert!(
        bytes(snapshot(&store)) == bytes(before),
        "undo did not restore every byte"
    );
}

#[test]
fn undo_refuses_a_file_changed_after_the_repair() {
    let (tmp, store, conv) = fixture_copy("false-root");
    let backups = tmp.path().join("b");
    let (code, _, _) = run(
        &["repair", "--backup-dir", s(&backups), s(&store)],
        &[("CONVO_DOCTOR_RUN_ID", "r")],
    );
    assert_eq!(code, 0);
    let ev = fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("event-00008-")
        })
        .unwrap();
    fs::write(&ev, b"{\"edited\":true}").unwrap();
    let (code, out, _) = run(&["undo", "r", "--backup-dir", s(&backups)], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("refused") && out.contains("changed since the repair"),
        "{out}"
    );
    assert_eq!(fs::read(&ev).unwrap(), b"{\"edited\":true}");
}

#[test]
fn deliberate_roots_and_abandoned_branches_are_never_touched() {
    for name in [
        "deliberate-root",
        "abandoned-branch",
        "clean-tree",
        "legacy-flat",
    ] {
        let (tmp, store, _) = fixture_copy(name);
        let before = snapshot(&store);
        let (code, out, _) = run(&["repair", "--dry-run", s(&store)], &[]);
        assert_eq!(code, 0, "{name}: {out}");
        let (code, out, _) = run(
            &[
                "repair",
                "--backup-dir",
                s(&tmp.path().join("b")),
                s(&store),
            ],
            &[],
        );
        assert_eq!(code, 0, "{name}: {out}");
        assert!(out.contains("nothing to repair"), "{name}: {out}");
        assert!(snapshot(&store) == before, "{name} was modified");
    }
}

#[test]
fn a_held_event_log_lock_refuses_the_repair() {
    let (tmp, store, conv) = fixture_copy("false-root");
    // hold the lock the way the SDK's FileLock does (flock, exclusive)
    let f = common::hold_event_log_lock(&conv);
    let before = snapshot(&store);
    let (code, out, _) = run(
        &[
            "repair",
            "--backup-dir",
            s(&tmp.path().join("b")),
            s(&store),
        ],
        &[],
    );
    common::assert_refused_by_lock(code, &out, &store, &before);
    drop(f);
}

#[test]
fn accept_ambiguous_is_a_deprecated_alias_of_unsafe_fixes() {
    let (_t, store, _) = fixture_copy("false-root");
    let before = snapshot(&store);
    let (code, out, err) = run(
        &["repair", "--dry-run", "--accept-ambiguous", s(&store)],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("deprecated"), "{err}");
    assert!(out.contains("would fix"), "{out}");
    assert!(snapshot(&store) == before, "dry-run wrote");
}
