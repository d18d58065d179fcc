//! Issue 26: `diagnose` with no PATH finds the invoking user's own Claude
//! Code sessions (`~/.claude/projects`, `$CLAUDE_CONFIG_DIR/projects`) and
//! Codex rollouts (`$CODEX_HOME`, else `~/.codex`) under the rules of the
//! OpenHands store discovery (tests/discovery_trust.rs): the home is HOME, a
//! place a variable names is trusted as a PATH given, a default place is
//! read only when root or this user owns every part of it (links included),
//! and nothing below it is reached through a link. Each place is said in
//! the notes.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;

use common::{bin, chown_tree, is_root, output};

fn rollout_name() -> String {
    let p = common::repo().join("fixtures/codex/sessions/verdicts.json");
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["rollout"].as_str().unwrap().to_string()
}

/// A home with a Claude Code session and a Codex rollout: (home, session,
/// rollout).
fn home_with_both(top: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let home = top.join("home");
    let proj = home.join(".claude/projects/-work-app");
    std::fs::create_dir_all(&proj).unwrap();
    let session = proj.join("s1.jsonl");
    std::fs::copy(
        common::repo().join("fixtures/claude/sessions/user-null.jsonl"),
        &session,
    )
    .unwrap();
    let day = home.join(".codex/sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    let rollout = day.join(rollout_name());
    std::fs::copy(
        common::repo().join("fixtures/codex/sessions/meta-twice.jsonl"),
        &rollout,
    )
    .unwrap();
    (home, session, rollout)
}

/// `diagnose --format json` with no PATH, HOME and the working and
/// temporary directories in `top`, no store variable set but `vars`.
fn diagnose_here(top: &Path, home: &Path, vars: &[(&str, &Path)]) -> (i32, Value) {
    let cwd = top.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut cmd = bin();
    cmd.current_dir(&cwd)
        .args(["diagnose", "--format", "json"])
        .env("HOME", home)
        .env("TMPDIR", top);
    for v in [
        "OH_CONVERSATIONS_PATH",
        "OPENHANDS_CONVERSATIONS_DIR",
        "OPENHANDS_PERSISTENCE_DIR",
        "OH_PERSISTENCE_DIR",
        "FILE_STORE_PATH",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let (code, out, err) = output(&mut cmd);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc)
}

fn paths(doc: &Value) -> Vec<String> {
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

fn notes(doc: &Value) -> Vec<String> {
    doc["summary"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

fn note_for<'a>(notes: &'a [String], place: &Path) -> &'a str {
    let at = format!("looked in {} for ", place.display());
    notes
        .iter()
        .find(|n| n.starts_with(&at))
        .unwrap_or_else(|| panic!("no note for {}: {notes:#?}", place.display()))
}

#[test]
fn with_no_path_the_users_claude_and_codex_stores_are_found() {
    let top = common::open_tempdir();
    let (home, session, rollout) = home_with_both(top.path());
    let (code, doc) = diagnose_here(top.path(), &home, &[]);
    assert!(code < 2, "{doc}");
    let found = paths(&doc);
    assert!(found.contains(&session.display().to_string()), "{found:?}");
    assert!(found.contains(&rollout.display().to_string()), "{found:?}");
    let n = notes(&doc);
    assert!(
        note_for(&n, &home.join(".claude/projects")).ends_with("Claude Code (default): 1 session")
    );
    assert!(note_for(&n, &home.join(".codex")).ends_with("Codex (default): 1 rollout"));
}

#[test]
fn the_variables_name_the_places_and_are_trusted_as_given() {
    let top = common::open_tempdir();
    let (home, session, rollout) = home_with_both(top.path());
    // CODEX_HOME and CLAUDE_CONFIG_DIR elsewhere: the defaults are not read
    let elsewhere = top.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("codex/sessions")).unwrap();
    std::fs::create_dir_all(elsewhere.join("claude/projects")).unwrap();
    let (code, doc) = diagnose_here(
        top.path(),
        &home,
        &[
            ("CODEX_HOME", &elsewhere.join("codex")),
            ("CLAUDE_CONFIG_DIR", &elsewhere.join("claude")),
        ],
    );
    let found = paths(&doc);
    assert!(!found.contains(&session.display().to_string()), "{found:?}");
    assert!(!found.contains(&rollout.display().to_string()), "{found:?}");
    let n = notes(&doc);
    assert!(note_for(&n, &elsewhere.join("codex")).ends_with("Codex ($CODEX_HOME): 0 rollouts"));
    assert!(note_for(&n, &elsewhere.join("claude/projects"))
        .ends_with("Claude Code ($CLAUDE_CONFIG_DIR/projects): 0 sessions"));
    // nothing found anywhere: the run says so (exit 2) unless --allow-empty
    assert_eq!(code, 2, "{doc}");
    assert!(doc
        .to_string()
        .contains("nor a Claude Code or Codex session of this user"));
}

#[test]
fn links_below_a_trusted_store_are_notes_never_followed() {
    let top = common::open_tempdir();
    let (home, _, rollout) = home_with_both(top.path());
    // a project folder that is a link, and a rollout that is a link
    let outside = top.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(&rollout, outside.join(rollout_name())).unwrap();
    let linked_project = home.join(".claude/projects/-linked");
    symlink(&outside, &linked_project).unwrap();
    let linked_rollout =
        rollout.with_file_name(rollout_name().replace("rollout-2026", "rollout-2025"));
    symlink(outside.join(rollout_name()), &linked_rollout).unwrap();
    let (_, doc) = diagnose_here(top.path(), &home, &[]);
    let found = paths(&doc);
    assert_eq!(found.len(), 2, "{found:?}");
    let n = notes(&doc).join("\n");
    assert!(
        n.contains(&format!(
            "`{}` is a symbolic link to a directory and was not followed",
            linked_project.display()
        )),
        "{n}"
    );
    assert!(
        n.contains(&format!(
            "`{}` is a symbolic link and was not followed",
            linked_rollout.display()
        )),
        "{n}"
    );
}

/// As root: a default place another (non-root) user owns, or that is a
/// link another user planted, is passed over with the reason; a place named
/// by a variable is read as a PATH given.
#[test]
fn as_root_a_default_store_another_user_owns_is_passed_over() {
    if !is_root("as_root_a_default_store_another_user_owns_is_passed_over") {
        return;
    }
    let top = common::open_tempdir();
    let (home, session, rollout) = home_with_both(top.path());
    chown_tree(&home.join(".codex"), 65534);
    // ~/.claude a link another user planted, to that user's own projects
    let victim = top.path().join("victim/.claude");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    std::fs::rename(home.join(".claude"), &victim).unwrap();
    chown_tree(victim.parent().unwrap(), 65533);
    symlink(&victim, home.join(".claude")).unwrap();
    std::os::unix::fs::lchown(home.join(".claude"), Some(65534), Some(65534)).unwrap();
    let (code, doc) = diagnose_here(top.path(), &home, &[]);
    assert_eq!(code, 2, "nothing of this user's: {doc}");
    assert!(paths(&doc).is_empty(), "{:?}", paths(&doc));
    let n = notes(&doc);
    let codex = note_for(&n, &home.join(".codex"));
    assert!(
        codex.contains("passed over (`")
            && codex.contains("owned by uid 65534, neither root nor this user"),
        "{codex}"
    );
    let claude = note_for(&n, &home.join(".claude/projects"));
    assert!(
        claude.contains("passed over") && claude.contains("a symbolic link owned by uid 65534"),
        "{claude}"
    );
    assert!(!doc.to_string().contains(&session.display().to_string()));
    // the same home named by CODEX_HOME: trusted as a PATH given
    let (_, doc) = diagnose_here(top.path(), &home, &[("CODEX_HOME", &home.join(".codex"))]);
    assert!(
        paths(&doc).contains(&rollout.display().to_string()),
        "{doc}"
    );
}

/// `repair --dry-run` with no PATH, HOME in `top`: (exit code, stdout,
/// stderr).
fn repair_here(top: &Path, home: &Path) -> (i32, String, String) {
    let mut cmd = bin();
    cmd.current_dir(top)
        .args(["repair", "--dry-run"])
        .env("HOME", home)
        .env("TMPDIR", top)
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR");
    output(&mut cmd)
}

#[test]
fn repair_with_no_path_takes_the_users_one_store_and_refuses_two() {
    let top = common::open_tempdir();
    let (home, session, rollout) = home_with_both(top.path());
    // both: refused, naming both
    let (code, out, err) = repair_here(top.path(), &home);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("both Claude Code sessions and Codex rollouts"),
        "{err}"
    );
    assert!(
        err.contains(&home.join(".codex").display().to_string()),
        "{err}"
    );
    // the Codex home alone: its rollout planned
    std::fs::remove_dir_all(home.join(".claude")).unwrap();
    let (code, out, err) = repair_here(top.path(), &home);
    assert_eq!(code, 1, "changes pending: {out}{err}");
    assert!(
        out.contains(&format!("would fix {}", rollout.display())),
        "{out}"
    );
    assert!(err.contains("Codex (default): 1 rollout"), "{err}");
    assert!(!out.contains(&session.display().to_string()));
    // none: refused, saying where it looked
    std::fs::remove_dir_all(home.join(".codex")).unwrap();
    let (code, _, err) = repair_here(top.path(), &home);
    assert_eq!(code, 2);
    assert!(
        err.contains("no Claude Code session or Codex rollout of this user"),
        "{err}"
    );
    assert!(err.contains("Claude Code (default): not there"), "{err}");
}
