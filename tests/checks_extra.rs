//! Checks beyond the fixtures, on hand-built logs: the crash-recovery error
//! of #4487 (and its repair), the legacy-tail hazard, a stale `running`.

mod common;

use common::{agent_view, eid, run, Conv};
use convo_doctor::report::{analyze, Options};
use serde_json::json;

fn checks(dir: &std::path::Path, version: &str) -> Vec<(String, String)> {
    let all = |_: &str| true;
    let opts = Options {
        version: version.parse().unwrap(),
        selected: &all,
        event_list: false,
    };
    analyze(dir, "x".into(), &opts)
        .findings
        .into_iter()
        .map(|f| (f.check.to_string(), f.severity.as_str().to_string()))
        .collect()
}

/// user message, an action, then (after a crash with a lagging HEAD) the
/// server's recovery error stamped onto the stale HEAD instead of the action.
fn recovery_error_log() -> Conv {
    let mut c = Conv::new(json!({}));
    let m = c.push("MessageEvent", None);
    let a = eid(1);
    c.push_raw(
        &json!({"id": a, "source": "agent", "parent_id": m, "tool_name": "terminal",
                "tool_call_id": "call_1", "kind": "ActionEvent"})
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
    let found = checks(c.path(), "1.58.2");
    assert!(
        found.contains(&("misparented-recovery-error".into(), "error".into())),
        "{found:?}"
    );

    let backups = c.path().parent().unwrap().join("b");
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
    assert!(checks(c.path(), "1.58.2")
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

#[test]
fn legacy_tail_hazard_only_for_1_31_to_1_34() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let b = c.push("MessageEvent", None);
    c.push("ConversationStateUpdateEvent", Some(&b));
    let old = checks(c.path(), "1.33.0");
    assert!(
        old.contains(&("legacy-tail-hazard".into(), "warning".into())),
        "{old:?}"
    );
    assert!(checks(c.path(), "1.35.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    assert!(checks(c.path(), "1.29.3")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
    // a stored HEAD makes it safe
    c.set_state(json!({"leaf_event_id": b}));
    assert!(checks(c.path(), "1.33.0")
        .iter()
        .all(|(c, _)| c != "legacy-tail-hazard"));
}

#[test]
fn stale_running_is_info() {
    let mut c = Conv::new(json!({"execution_status": "running"}));
    c.push("MessageEvent", None);
    assert!(checks(c.path(), "1.58.2").contains(&("stale-running".into(), "info".into())));
    c.set_state(json!({"execution_status": "idle"}));
    assert!(checks(c.path(), "1.58.2").is_empty());
}
