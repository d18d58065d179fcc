//! Issue 22, attack 7: `diagnose` with no PATH, run as root, looks in
//! `$TMPDIR/openhands-sandboxes/<sandbox>/workspace/conversations` among
//! other default places. An unprivileged user who plants a link there must
//! not lead root into a third user's private store: discovery reads a
//! default place only when root (or the invoking user) owns every part of
//! it, links included, and names what it passed over.

mod common;

use std::os::unix::fs::symlink;

use common::*;

#[test]
fn a7_discovery_as_root_follows_no_strangers_link() {
    if !is_root("a7_discovery_as_root_follows_no_strangers_link") {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    // a third user's private store, with one conversation
    let victim = t.join("victim");
    copy_fixture("clean-tree", &victim.join("conversations"));
    chown_tree(&victim, 65533);
    chmod(&victim, 0o700);
    let victim_id = "a5050c9292d85c568ea70f078f0dddb5";
    // $TMPDIR as /tmp is: root's, everybody's to write, sticky
    let tmp = t.join("tmp");
    let sandboxes = tmp.join("openhands-sandboxes");
    std::fs::create_dir_all(&sandboxes).unwrap();
    chmod(&tmp, 0o1777);
    chmod(&sandboxes, 0o1777);
    // the attacker's sandbox: a link to the victim's store
    let planted = sandboxes.join("mallory/workspace");
    std::fs::create_dir_all(&planted).unwrap();
    symlink(victim.join("conversations"), planted.join("conversations")).unwrap();
    chown_tree(&sandboxes.join("mallory"), 65534);
    // root's own sandbox: still found
    copy_fixture(
        "deliberate-root",
        &sandboxes.join("root-sandbox/workspace/conversations"),
    );
    let root_id = std::fs::read_dir(fixture("deliberate-root"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let home = t.join("home");
    let cwd = t.join("cwd");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let mut cmd = bin();
    cmd.current_dir(&cwd)
        .args(["diagnose", "--format", "json", "--allow-empty"])
        .env("HOME", &home)
        .env("TMPDIR", &tmp);
    for v in [
        "OH_CONVERSATIONS_PATH",
        "OPENHANDS_CONVERSATIONS_DIR",
        "OPENHANDS_PERSISTENCE_DIR",
        "OH_PERSISTENCE_DIR",
        "FILE_STORE_PATH",
    ] {
        cmd.env_remove(v);
    }
    let (code, stdout, stderr) = output(&mut cmd);
    assert!(code < 2, "{stderr}\n{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let ids: Vec<String> = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().replace('-', ""))
        .collect();
    assert!(!ids.contains(&victim_id.to_string()), "{ids:?}");
    assert!(
        ids.contains(&root_id),
        "root's own sandbox not found: {ids:?}"
    );
    let notes = doc["summary"]["notes"].to_string();
    assert!(
        notes.contains("mallory/workspace/conversations")
            && notes.contains("passed over")
            && notes.contains("uid 65534"),
        "{notes}"
    );
}
