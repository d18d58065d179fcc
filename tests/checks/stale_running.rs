//! `stale-running`: base_state.json says `running` and nothing runs it; its
//! repair is the agent-server's own crash recovery (event_service.py).

use serde_json::Value;

use super::common;

const ACTION: &str = "7f932a5a-88e0-478f-8738-1f348ce8a079";
const CALL: &str = "call_ls_1";

/// clean-tree cut after its action (event 00002, tool call `call_ls_1`), or
/// after its observation with `action_id` set to `names`; `running`, the
/// HEAD at the last event, and a meta.json (an agent-server folder).
/// Returns (guard, store).
fn running(observation_names: Option<&str>) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, store, conv) = common::fixture_copy("clean-tree");
    let events = common::event_files(&conv);
    std::fs::remove_file(&events[4]).unwrap();
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let leaf = match observation_names {
        None => {
            std::fs::remove_file(&events[3]).unwrap();
            ACTION.to_string()
        }
        Some(a) => {
            let mut obs = read(&events[3]);
            assert_eq!(obs["tool_call_id"], CALL);
            obs["action_id"] = Value::from(a);
            std::fs::write(&events[3], obs.to_string()).unwrap();
            obs["id"].as_str().unwrap().to_string()
        }
    };
    let state_file = conv.join("base_state.json");
    let mut state = read(&state_file);
    state["execution_status"] = Value::from("running");
    state["leaf_event_id"] = Value::from(leaf);
    std::fs::write(&state_file, state.to_string()).unwrap();
    std::fs::write(conv.join("meta.json"), "{}").unwrap();
    (tmp, store)
}

fn planned(store: &std::path::Path) -> String {
    let (code, out, err) = common::run(
        &[
            "repair",
            "--dry-run",
            "--unsafe-fixes",
            "--only",
            "stale-running",
            common::s(store),
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    out
}

/// The first action nothing answers gets the server's restart error,
/// parented to it, as the new HEAD; the status becomes `error`.
#[test]
fn an_open_tool_call_is_answered_with_the_restart_error() {
    let (_tmp, store) = running(None);
    let out = planned(&store);
    assert!(out.contains("execution_status: running → error"), "{out}");
    assert!(
        out.contains(&format!(
            "answer tool call `{CALL}` of event 00002 with the agent-server's crash-recovery AgentErrorEvent"
        )),
        "{out}"
    );
}

/// An observation carrying the call's `tool_call_id` but naming another
/// action leaves the action unmatched for `get_unmatched_actions` (it
/// matches observations by `action_id`), yet the server appends no restart
/// error: its `already_observed` guard (#3063, 1.20.1+) looks for any
/// observation-like event with that `tool_call_id`. The repair does as the
/// server does: the status alone.
#[test]
fn an_observation_with_the_calls_id_keeps_the_server_from_answering_it() {
    let (_tmp, store) = running(Some("00000000-0000-4000-8000-000000000000"));
    let out = planned(&store);
    assert!(out.contains("execution_status: running → error"), "{out}");
    assert!(!out.contains("answer tool call"), "{out}");
}

/// A folder without meta.json: `running` with nothing running it is
/// information; `idle` is nothing.
#[test]
fn stale_running_is_info() {
    let mut c = common::Conv::new(serde_json::json!({"execution_status": "running"}));
    c.push("MessageEvent", None);
    assert!(super::findings(c.path(), "1.58.2").contains(&("stale-running".into(), "info".into())));
    c.set_state(serde_json::json!({"execution_status": "idle"}));
    assert!(super::findings(c.path(), "1.58.2").is_empty());
}
