//! The app server's side against what the real openhands-ai 1.11.0 and
//! agent-server 1.34.0 wrote (fixtures/appserver/, fixtures/gen/appserver.py):
//! its SQLite database and filesystem event copy, related to the agent-server
//! folders; and `diagnose` with no PATH on the homes of a CLI user, an Agent
//! Canvas user and an agent-server host.

#[path = "appserver_shared.rs"]
mod shared;

use std::path::Path;

use serde_json::Value;
use shared::*;

fn fs_args() -> Vec<String> {
    vec![
        "--db".into(),
        format!("sqlite:{}", fixture("persist/openhands.db").display()),
        "--events-store".into(),
        fixture("persist").display().to_string(),
        fixture("conversations").display().to_string(),
    ]
}

fn run_fs(extra: &[&str]) -> (i32, Value, String) {
    let args = fs_args();
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(extra);
    diagnose_json(&all, &[])
}

#[test]
fn sqlite_and_filesystem_copy_name_every_planted_divergence() {
    let (code, doc, err) = run_fs(&[]);
    assert_eq!(code, 1, "findings exit 1: {err}");
    assert_expected(&doc, "fs");
    assert_clean_part_clean(&doc);
    let notes = doc["summary"]["notes"].to_string();
    assert!(notes.contains("alembic revision 014"), "{notes}");
}

#[test]
fn the_real_app_server_agrees_with_the_findings() {
    // what the real services answered, recorded by the generator
    let m = manifest();
    let c = &m["conversations"];
    // the V1 row with a NULL sandbox_id breaks the app server's whole list
    assert_eq!(m["search"]["error"], "AssertionError");
    assert_eq!(
        c["no-sandbox-row"]["app_server_get"]["error"],
        "AssertionError"
    );
    // a deleted conversation: no row, its copy still counted
    assert!(c["deleted-in-ui"]["app_server_get"].is_null());
    assert!(
        c["deleted-in-ui"]["filesystem_count_events"]
            .as_u64()
            .unwrap()
            > 0
    );
    // the V0 row: invisible to every V1 query
    assert!(c["v0-row"]["app_server_get"].is_null());
    // the dropped batch: the app server counts fewer events than the folder holds
    let d = &c["dropped-batch"];
    assert!(d["filesystem_count_events"].as_u64() < d["folder_events"].as_u64());
    // the S3 service sees one page of the long conversation
    assert_eq!(c["long-s3"]["s3_count_events"], 1000);
    // the enums the row check knows are the real ones
    let vals = |k: &str| -> Vec<String> {
        m["enums"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        vals("ConversationTrigger"),
        convo_doctor::checks::invalid_row::TRIGGERS
    );
    assert_eq!(
        vals("ProviderType"),
        convo_doctor::checks::invalid_row::PROVIDERS
    );
    assert_eq!(
        m["webhook_only_kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>(),
        convo_doctor::appserver::relate::WEBHOOK_ONLY_KINDS
    );
}

#[test]
fn only_and_skip_select_app_server_checks() {
    let (_, doc, _) = run_fs(&["--only", "v0-row"]);
    let found = app_findings(&doc);
    let all: Vec<&String> = found.values().flatten().collect();
    assert!(
        !all.is_empty() && all.iter().all(|c| *c == "v0-row"),
        "{all:?}"
    );
    let (_, doc, _) = run_fs(&["--skip", "copy-missing-events"]);
    assert!(!app_findings(&doc)
        .values()
        .flatten()
        .any(|c| c == "copy-missing-events"));
}

#[test]
fn shards_split_the_app_server_conversations_too() {
    let (_, all, _) = run_fs(&[]);
    let total = all["conversations"].as_array().unwrap().len();
    let mut ids = std::collections::BTreeSet::new();
    let mut sum = 0;
    for k in 0..3 {
        let shard = format!("{k}/3");
        let (_, doc, _) = run_fs(&["--shard", &shard]);
        for c in doc["conversations"].as_array().unwrap() {
            assert!(
                ids.insert(c["id"].as_str().unwrap().to_string()),
                "twice: {c}"
            );
            sum += 1;
        }
    }
    assert_eq!(sum, total);
}

#[test]
fn the_human_report_says_what_the_user_sees() {
    let args = fs_args();
    let out = bin().arg("diagnose").args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warning[copy-missing-events]"), "{text}");
    assert!(text.contains("the UI"), "{text}");
    assert!(
        text.contains("no agent-server folder among the PATHs"),
        "{text}"
    );
}

#[test]
fn a_database_at_an_old_revision_reads() {
    // revision 004: no execution_status, tags, agent_kind; user_id NOT NULL
    let db = format!("sqlite:{}", fixture("old-schema.db").display());
    let (code, doc, err) =
        diagnose_json(&["--db", &db, "--allow-empty"], &[("HOME", "/nonexistent")]);
    assert_eq!(code, 0, "{err}");
    let notes = doc["summary"]["notes"].to_string();
    assert!(notes.contains("alembic revision 004"), "{notes}");
}

#[test]
fn a_missing_database_is_an_error_that_names_it() {
    let out = bin()
        .args([
            "diagnose",
            "--db",
            "sqlite:/nonexistent/openhands.db",
            "/tmp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/openhands.db"), "{err}");
    assert!(!Path::new("/nonexistent/openhands.db").exists());
}

// ---- diagnose with no PATH -------------------------------------------------------

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A conversation folder of the agent-server fixtures (with meta.json).
fn agent_server_folder(to: &Path) -> String {
    let m = manifest();
    let id = m["conversations"]["clean"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    copy_dir(&fixture("conversations").join(&id), &to.join(&id));
    id
}

/// An SDK-layout folder (no meta.json), as the OpenHands CLI writes.
fn sdk_folder(to: &Path) -> String {
    let m = manifest();
    let id = m["conversations"]["clean-paused"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    copy_dir(&fixture("conversations").join(&id), &to.join(&id));
    std::fs::remove_file(to.join(&id).join("meta.json")).unwrap();
    id
}

fn no_path(home: &Path, cwd: &Path, envs: &[(&str, &str)]) -> (i32, Value, String) {
    let out = bin()
        .args(["diagnose", "--format", "json"])
        .env_clear()
        .env("HOME", home)
        .env("TMPDIR", home.join("tmp"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(envs.iter().copied())
        .current_dir(cwd)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ids(doc: &Value) -> Vec<String> {
    doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().replace('-', ""))
        .collect()
}

#[test]
fn no_path_on_a_cli_users_home() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join(".openhands/conversations");
    let a = sdk_folder(&store);
    // a trajectory download and the trash sit among them
    std::fs::write(store.join(format!("{a}.zip")), b"PK\x03\x04").unwrap();
    sdk_folder(&store.join(".trash"));
    let (code, doc, err) = no_path(home.path(), home.path(), &[]);
    assert_eq!(ids(&doc), vec![a.clone()], "{err}");
    let c = &doc["conversations"][0];
    assert!(
        c["listed"].is_null(),
        "an SDK store is never judged for listing"
    );
    assert!(
        !c["findings"].to_string().contains("meta.json"),
        "no missing meta.json where none is expected: {}",
        c["findings"]
    );
    let notes = doc["summary"]["notes"].to_string();
    assert!(notes.contains(".openhands/conversations for OpenHands CLI (default): 1 conversation (an SDK-layout store"), "{notes}");
    assert!(
        notes.contains("agent-canvas/conversations for Agent Canvas (default): not there"),
        "{notes}"
    );
    assert!(
        notes.contains(".trash` holds deleted conversations"),
        "{notes}"
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn no_path_on_a_canvas_users_home() {
    let home = tempfile::tempdir().unwrap();
    let id = agent_server_folder(&home.path().join(".openhands/agent-canvas/conversations"));
    let (_, doc, err) = no_path(home.path(), home.path(), &[]);
    assert_eq!(ids(&doc), vec![id], "{err}");
    let notes = doc["summary"]["notes"].to_string();
    assert!(
        notes.contains(
            "for Agent Canvas (default): 1 conversation (an agent-server store, 1 with meta.json)"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("OpenHands CLI (default): not there"),
        "{notes}"
    );
}

#[test]
fn no_path_on_an_agent_server_host() {
    // OH_CONVERSATIONS_PATH first; the relative default below the working
    // directory; the process sandboxes the app server starts under TMPDIR;
    // and the app server's own database and copy under OH_PERSISTENCE_DIR
    let home = tempfile::tempdir().unwrap();
    let env_store = home.path().join("srv/convs");
    let a = agent_server_folder(&env_store);
    let work = home.path().join("work");
    let b = sdk_folder(&work.join("workspace/conversations"));
    let sandbox = home
        .path()
        .join("tmp/openhands-sandboxes/sbx-1/workspace/conversations");
    let m = manifest();
    let c = m["conversations"]["renamed-on-agent-server"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    copy_dir(&fixture("conversations").join(&c), &sandbox.join(&c));
    let persist = home.path().join("oh");
    copy_dir(&fixture("persist"), &persist);
    let (code, doc, err) = no_path(
        home.path(),
        &work,
        &[
            ("OH_CONVERSATIONS_PATH", env_store.to_str().unwrap()),
            ("OH_PERSISTENCE_DIR", persist.to_str().unwrap()),
        ],
    );
    assert_eq!(code, 1, "{err}");
    let found = ids(&doc);
    for x in [&a, &b, &c] {
        assert!(found.contains(x), "{x} not found: {found:?}");
    }
    let notes: Vec<String> = doc["summary"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let first = notes
        .iter()
        .position(|n| n.contains("$OH_CONVERSATIONS_PATH"))
        .unwrap();
    let default = notes
        .iter()
        .position(|n| n.contains("OpenHands CLI (default)"))
        .unwrap();
    assert!(first < default, "environment variables first: {notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("process sandbox") && n.contains("1 conversation")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("$OH_PERSISTENCE_DIR") && n.contains("openhands.db")),
        "{notes:?}"
    );
    // the app server's side is related too: the renamed conversation's titles
    assert!(app_findings(&doc)[&c].contains("row-title-divergence"));
}

#[test]
fn no_path_and_nothing_anywhere_is_an_error_that_says_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let (code, doc, err) = no_path(home.path(), home.path(), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("no conversation found"), "{err}");
    assert!(doc["summary"]["notes"].to_string().contains("not there"));
}
