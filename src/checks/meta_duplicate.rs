//! `meta-duplicate` (info): meta.json still carries a copy of the agent.

use super::{meta_repair, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::edit::{Proposals, Safety};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "meta-duplicate";

pub struct MetaDuplicate;

impl Check for MetaDuplicate {
    fn id(&self) -> &'static str {
        ID
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
  With `--server-version 1.43.0` or newer given explicitly, `repair` removes
  `agent` from meta.json (what those servers do themselves). Without the
  flag it is kept: older servers require it, and a meta.json without it
  drops the conversation from their list."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "only when `--server-version 1.43.0` or newer is given (the rules default to the newest known, 1.58.2, as for `diagnose`, but dropping the agent is never a default: servers before 1.43 would stop listing the conversation): remove `agent` from meta.json (what those servers do at their next hydration); `workspace` and every other key stay, since they are still required",
            guards: "meta.json's agent holds no real secret (Fernet token or value) that base_state.json lacks",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
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
            // Dropping it makes servers before 1.43 refuse the folder, so
            // `repair` does it only when told which server opens it.
            .fixable(ctx.version_given && !ctx.version.meta_owns_agent()),
        );
    }
}

/// `meta-duplicate`'s planner: drop meta.json's agent when the declared
/// server no longer reads it and no secret has its only copy there.
fn plan(ctx: &Ctx, p: &mut Proposals) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let has_agent = meta.get("agent").is_some_and(|a| !a.is_null());
    let Some(base) = meta_repair::source(ctx, p, meta) else {
        return;
    };
    if !has_agent {
        return;
    }
    if !meta_repair::slim(ctx) {
        p.note(
            "meta.json's copy of the agent is kept and synced (servers before 1.43 require it); \
             with `--server-version 1.43.0` or newer, repair drops it instead"
                .into(),
        );
        return;
    }
    let kept = meta_repair::only_copies(meta, base);
    if kept.is_empty() {
        let what =
            "drop meta.json's copy of the agent (servers from 1.43 read it from base_state.json)";
        p.drop_key(meta_repair::REL, "/agent", Safety::Safe, what.into());
    } else {
        p.leave(
            meta_repair::REL,
            format!(
                "not slimmed: meta.json's agent holds the only real copy of {}",
                kept.join(", ")
            ),
        );
    }
}
