//! `misparented-recovery-error` (#4487): after a crash with a lagging HEAD,
//! the server's crash-recovery error was stamped onto the stale HEAD instead
//! of the action it answers, so the action falls off the agent's branch. Its
//! repair (safe) re-parents the error onto its action.

use serde_json::json;

use super::common::{agent_branch_ids, agent_view, eid, run, Conv};
use super::{findings, fixture_conv, found, repaired, sdk_branch_after};

/// user message, an action, then (after a crash with a lagging HEAD) the
/// server's recovery error stamped onto the stale HEAD instead of the action.
fn recovery_error_log() -> Conv {
    let mut c = Conv::new(json!({}));
    let m = c.push("MessageEvent", None);
    let a = eid(1);
    c.push_raw(
        &json!({"id": a, "source": "agent", "parent_id": m, "tool_name": "terminal",
                "tool_call_id": "call_1", "kind": "ActionEvent",
                // the rest of a real 1.58.2 ActionEvent (fixtures/clean-tree act1)
                "thought": [], "llm_response_id": "resp_1",
                "tool_call": {"id": "call_1", "name": "terminal", "arguments": "{}", "origin": "completion"}})
        .to_string(),
    );
    let e = eid(2);
    c.push_raw(
        &json!({"id": e, "source": "agent", "parent_id": m, "tool_name": "terminal",
                "tool_call_id": "call_1",
                "error": "A restart occurred while this tool was in progress. This may indicate a fatal memory error or system crash.",
                "kind": "AgentErrorEvent"})
        .to_string(),
    );
    c.set_state(json!({"leaf_event_id": e, "execution_status": "error"}));
    c
}

#[test]
fn misparented_recovery_error_is_found_and_relinked() {
    let c = recovery_error_log();
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 2]);
    let found = findings(c.path(), "1.58.2");
    assert!(
        found.contains(&("misparented-recovery-error".into(), "error".into())),
        "{found:?}"
    );

    // outside the folder the conversation sits in (a backup there is refused)
    let bdir = tempfile::tempdir().unwrap();
    let backups = bdir.path().join("b");
    let (code, out, err) = run(
        &[
            "repair",
            "--backup-dir",
            backups.to_str().unwrap(),
            c.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("re-parent the recovery error 00002 onto its action 00001"),
        "{out}"
    );
    // the action is back on the agent's branch, the error answers it
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1, 2]);
    assert!(findings(c.path(), "1.58.2")
        .iter()
        .all(|(c, _)| c != "misparented-recovery-error"));
}

#[test]
fn a_second_result_for_the_call_blocks_the_relink() {
    let mut c = recovery_error_log();
    c.push_raw(
        &json!({"id": eid(3), "source": "environment", "parent_id": eid(1), "tool_name": "terminal",
                "tool_call_id": "call_1", "action_id": eid(1), "kind": "UserRejectObservation"})
        .to_string(),
    );
    let (code, out, _) = run(&["repair", "--dry-run", c.path().to_str().unwrap()], &[]);
    assert_eq!(code, 0, "nothing to change: {out}");
    assert!(out.contains("needs a human"), "{out}");
}

/// The fixture (written by the real server's recovery path), repaired: the
/// branch the real SDK loaded from the repaired copy; a clean log has none.
#[test]
fn the_repaired_fixture_loads_as_the_real_sdk_loaded_it() {
    let conv = fixture_conv("misparented-recovery-error");
    assert_eq!(found(&conv, "misparented-recovery-error"), ["error"]);
    assert!(found(&fixture_conv("clean-tree"), "misparented-recovery-error").is_empty());
    let (_tmp, conv, _) = repaired("misparented-recovery-error", &[]);
    assert!(found(&conv, "misparented-recovery-error").is_empty());
    assert_eq!(
        agent_branch_ids(&conv).unwrap(),
        sdk_branch_after("misparented-recovery-error", &[])
    );
}
