//! `stale-running` (info): execution_status is `running` but nothing runs it.

use serde_json::Value;

use super::live_lease::model_state;
use super::{Check, Ctx, Finding, Repair, Severity};
use crate::server::lease::Lease;

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
  owner_lease.json says a server owns the folder (no lease, an expired one,
  or one whose owner pid is gone on this host: the model of `live-lease`).

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
        if !running {
            return;
        }
        let lease = match model_state(ctx) {
            Lease::Live(..) => return,
            Lease::None => String::new(),
            Lease::Unparsable(_) => {
                " (owner_lease.json is unreadable, which the server treats as stale)".into()
            }
            Lease::Expired(p) => format!(
                " (the lease of instance `{}` expired at {})",
                ctx.quote(&p.owner),
                crate::server::lease::when(p.expires_at)
            ),
            Lease::DeadOwner(p) => format!(
                " (the lease names pid {} on this host, which is gone)",
                p.pid.unwrap_or(0)
            ),
        };
        let when = if crate::server::era(ctx.version) == crate::server::Era::Eager {
            "at its next start"
        } else {
            "at its next start (1.37+ hydrate every `running` conversation at startup)"
        };
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            "base_state.json",
            format!("execution_status is `running` but no server holds the conversation{lease}: the last run ended in a crash; the agent-server marks it `error` and recovers it {when}"),
        ));
    }
}
