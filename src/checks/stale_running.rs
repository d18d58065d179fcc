//! `stale-running` (info): execution_status is `running` but nothing runs it.

use serde_json::Value;

use super::live_lease::{lease_state, Lease};
use super::{Check, Ctx, Finding, Repair, Severity};

pub struct StaleRunning;

impl Check for StaleRunning {
    fn id(&self) -> &'static str {
        "stale-running"
    }

    fn summary(&self) -> &'static str {
        "base_state.json says `running` but no server holds the conversation: the last run crashed"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json `execution_status` is \"running\" while no live
  owner_lease.json says a server owns the folder.

Why it matters
  The process that ran the agent stopped without finishing the turn (a crash,
  an OOM kill, a power loss). At its next start the agent-server marks the
  conversation `error` and appends a recovery AgentErrorEvent for the first
  unfinished tool call; an SDK-only resume continues from `running`. Before
  #4488 that recovery error could be attached to the wrong event (see
  `misparented-recovery-error`).

Repair
  None needed: the server's own recovery handles it. Do not edit
  execution_status by hand."
    }

    fn repair(&self) -> Repair {
        Repair::manual("none needed: the server's own recovery handles it")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let running = ctx
            .conv
            .base_state
            .value()
            .and_then(|b| b.get("execution_status"))
            .and_then(Value::as_str)
            == Some("running");
        if running && !matches!(lease_state(ctx), Lease::Live { .. }) {
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                "base_state.json",
                "execution_status is `running` but no server holds the conversation: the last run ended in a crash; the agent-server recovers it at its next start".into(),
            ));
        }
    }
}
