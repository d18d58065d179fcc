//! `meta-duplicate` (info): meta.json still carries a copy of the agent.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};

pub struct MetaDuplicate;

impl Check for MetaDuplicate {
    fn id(&self) -> &'static str {
        "meta-duplicate"
    }

    fn summary(&self) -> &'static str {
        "meta.json still carries the agent, which base_state.json owns (pre-1.43 layout)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A meta.json written by an agent-server before 1.43, which stored a second
  copy of the whole agent (LLM settings and credentials included) next to the
  SDK's own in base_state.json.

Why it matters
  Servers before 1.43 rebuild the agent from this copy at the next use and
  overwrite base_state.json with it, so any change that reached only
  base_state.json (an LLM switch) is reverted (#4032). It also doubles where
  API keys sit on disk. Servers from 1.43 ignore it and drop it at the next
  hydration.

Repair
  With `--server-version 1.43.0` or newer, `repair` removes `agent` from
  meta.json (what those servers do themselves). Older servers require it."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "only with `--server-version 1.43.0` or newer: remove `agent` from meta.json (what those servers do at their next hydration); `workspace` and every other key stay, since they are still required",
            guards: "meta.json's agent holds no real secret (Fernet token or value) that base_state.json lacks",
            planner: Some(crate::fix::meta::plan_duplicate),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(meta) = ctx.conv.meta.value() else {
            return;
        };
        if meta.get("agent").is_none_or(|a| a.is_null()) {
            return;
        }
        let tail = if ctx.version.meta_owns_agent() {
            "servers before 1.43 use it and overwrite base_state.json's agent at the next use"
        } else {
            "this server version ignores it; it is a stale second copy, credentials included"
        };
        out.push(
            Finding::new(
                self.id(),
                Severity::Info,
                "meta.json",
                format!("meta.json still carries a copy of the agent; {tail}"),
            )
            .fixable(!ctx.version.meta_owns_agent()),
        );
    }
}
