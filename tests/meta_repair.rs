//! meta.json repairs on a real-SDK conversation given a hand-made fat
//! meta.json: sync (--server-version before 1.43), slim (1.43+, the default), secrets kept,
//! nothing secret in any output.

mod common;

use std::fs;
use std::path::Path;

use common::{fixture_copy, run};
use serde_json::{json, Value};

const FERNET: &str = "gAAAAABnCANARYfernetTOKENxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx==";
const PLAIN: &str = "sk-fixture-NOT-A-REAL-KEY-0001";

fn read(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
}

/// A meta.json as agent-server 1.33 writes it (`agent` included, nulls kept),
/// whose agent is stale: another model and timeout than base_state.json.
fn fat_meta(conv: &Path, meta_key: &str, base_key: &str) {
    let mut base = read(&conv.join("base_state.json"));
    base["agent"]["llm"]["api_key"] = json!(base_key);
    fs::write(
        conv.join("base_state.json"),
        serde_json::to_string(&base).unwrap(),
    )
    .unwrap();
    let mut agent = base["agent"].clone();
    agent["llm"]["model"] = json!("openai/gpt-4.1");
    agent["llm"]["timeout"] = json!(600);
    agent["llm"]["api_key"] = json!(meta_key);
    agent["llm"]["base_url"] = base["agent"]["llm"]["base_url"].clone();
    let meta = json!({
        "id": conv.file_name().unwrap().to_str().unwrap(),
        "agent": agent,
        "workspace": base["workspace"],
        "confirmation_policy": base["confirmation_policy"],
        "initial_message": null,
        "max_iterations": base["max_iterations"],
        "stuck_detection": base["stuck_detection"],
        "secrets": {},
        "title": "t",
        "metrics": null,
        "created_at": "2026-11-30T00:00:00Z",
        "updated_at": "2026-11-30T00:00:00Z",
        "tags": {}
    });
    fs::write(
        conv.join("meta.json"),
        serde_json::to_string(&meta).unwrap(),
    )
    .unwrap();
}

#[test]
fn sync_rewrites_the_stale_llm_and_keeps_a_secret_only_meta_holds() {
    let (tmp, store, conv) = fixture_copy("plaintext-secret");
    fat_meta(&conv, FERNET, "**********");
    // newest rules: meta.json's agent is ignored, the divergence is info only
    let (code, out, _) = run(&["diagnose", store.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("info[meta-divergence]") && out.contains("agent.llm.model"),
        "{out}"
    );
    // an older server takes meta.json's stale agent: a warning
    let (code, out, err) = run(
        &[
            "diagnose",
            "--server-version",
            "1.33.0",
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("warning[meta-divergence]"), "{out}");
    for text in [&out, &err] {
        assert!(
            !text.contains(FERNET) && !text.contains("gAAAAAB"),
            "secret leaked: {text}"
        );
    }

    // Sync is for servers before 1.43 (the default is the newest release,
    // as for diagnose): say which server will open the folder.
    let (code, out, err) = run(
        &[
            "repair",
            "--dry-run",
            "--server-version",
            "1.42.0",
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("+      \"model\": \"openai/gpt-4o-mini\","),
        "{out}"
    );
    assert!(out.contains("only real copy of agent.llm.api_key"), "{out}");
    assert!(
        out.contains("--server-version 1.43.0"),
        "slimming is offered: {out}"
    );
    assert!(
        !out.contains(FERNET) && !out.contains("gAAAAAB"),
        "secret in the diff: {out}"
    );

    let b = tmp.path().join("b");
    let (code, out, err) = run(
        &[
            "repair",
            "--server-version",
            "1.42.0",
            "--backup-dir",
            b.to_str().unwrap(),
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let meta = read(&conv.join("meta.json"));
    let base = read(&conv.join("base_state.json"));
    assert_eq!(meta["agent"]["llm"]["model"], base["agent"]["llm"]["model"]);
    assert_eq!(
        meta["agent"]["llm"]["timeout"],
        base["agent"]["llm"]["timeout"]
    );
    assert_eq!(
        meta["agent"]["llm"]["api_key"], FERNET,
        "the only real key is kept"
    );
    assert!(meta.get("workspace").is_some());
    // nothing else moved: same keys, in the same order
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&meta),
        [
            "id",
            "agent",
            "workspace",
            "confirmation_policy",
            "initial_message",
            "max_iterations",
            "stuck_detection",
            "secrets",
            "title",
            "metrics",
            "created_at",
            "updated_at",
            "tags"
        ]
    );
    let (code, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--server-version",
            "1.42.0",
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "idempotent: {out}");
}

#[test]
fn slim_drops_the_agent_for_new_servers_unless_it_holds_the_only_key() {
    let (tmp, store, conv) = fixture_copy("plaintext-secret");
    fat_meta(&conv, FERNET, "**********");
    let (code, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--server-version",
            "1.43.0",
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        out.contains(
            "not slimmed: meta.json's agent holds the only real copy of agent.llm.api_key"
        ),
        "{out}"
    );
    assert_eq!(
        code, 0,
        "nothing to change for 1.43+ (it ignores meta's agent): {out}"
    );

    // when base_state.json holds a real key too, the copy goes
    fat_meta(&conv, FERNET, PLAIN);
    let b = tmp.path().join("b");
    let (code, out, err) = run(
        &[
            "repair",
            "--server-version",
            "1.58.2",
            "--backup-dir",
            b.to_str().unwrap(),
            store.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        !out.contains(PLAIN) && !err.contains(PLAIN),
        "secret leaked: {out}{err}"
    );
    let meta = read(&conv.join("meta.json"));
    assert!(meta.get("agent").is_none(), "{out}");
    assert!(
        meta.get("workspace").is_some(),
        "workspace is still required"
    );
    assert_eq!(
        code, 1,
        "the plaintext key in base_state.json is still a warning: {out}"
    );
    assert!(out.contains("plaintext-secret"), "{out}");
}

#[test]
fn no_base_state_means_no_meta_repair() {
    let (_t, store, conv) = fixture_copy("plaintext-secret");
    fat_meta(&conv, FERNET, "**********");
    fs::remove_file(conv.join("base_state.json")).unwrap();
    let before = fs::read(conv.join("meta.json")).unwrap();
    let (_, out, _) = run(&["repair", "--dry-run", store.to_str().unwrap()], &[]);
    assert!(
        out.contains("meta.json's agent may be the only copy"),
        "{out}"
    );
    assert_eq!(fs::read(conv.join("meta.json")).unwrap(), before);
}
