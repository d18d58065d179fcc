//! `unreadable-state`: base_state.json or meta.json missing, empty or invalid.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::store::{Doc, Unreadable};
use crate::view::LoadError;

pub struct UnreadableState;

impl Check for UnreadableState {
    fn id(&self) -> &'static str {
        "unreadable-state"
    }

    fn summary(&self) -> &'static str {
        "base_state.json or meta.json is missing, empty or not valid JSON"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json (the SDK's state, agent included) or meta.json (the
  agent-server's record) that is empty, truncated, not UTF-8 or not a JSON
  object, or a base_state.json that is missing while events exist.

Why it matters
  Without a readable base_state.json the SDK cannot resume: servers from 1.43
  refuse (\"no base_state.json to resume and no agent was provided\"), older
  ones rebuild it from meta.json's agent and lose stats, secrets and the HEAD.
  An unreadable meta.json drops the conversation from the agent-server's
  catalog. A missing meta.json is normal for SDK-only and sub-agent
  conversations and is not reported.

Repair
  None automatic. Never delete meta.json while base_state.json is broken: its
  `agent` may be the last copy."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "the state cannot be invented; never delete meta.json while base_state.json is broken",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let blocking = matches!(
            ctx.load_error(),
            Some(LoadError::NoBaseState | LoadError::BadBaseState(_))
        );
        match &ctx.conv.base_state {
            Doc::Missing if blocking => out.push(Finding::new(
                self.id(),
                Severity::Error,
                "base_state.json",
                "base_state.json is missing; the SDK cannot resume the conversation (no agent to rebuild it from)".into(),
            )),
            Doc::Missing if !ctx.conv.events.files.is_empty() => out.push(Finding::new(
                self.id(),
                Severity::Warning,
                "base_state.json",
                "base_state.json is missing; a server before 1.43 rebuilds it from meta.json's agent, losing stats, secrets and the HEAD".into(),
            )),
            Doc::Unreadable(u) => {
                let (sev, tail) = match (blocking, u) {
                    (true, _) => (Severity::Error, "the SDK cannot resume the conversation"),
                    (false, Unreadable::Empty) => (
                        Severity::Error,
                        "a server before 1.43 replaces it with a fresh state, losing stats, secrets and the HEAD",
                    ),
                    _ => (Severity::Error, "the SDK cannot resume the conversation"),
                };
                out.push(Finding::new(
                    self.id(),
                    sev,
                    "base_state.json",
                    format!("base_state.json cannot be read: {u}; {tail}"),
                ));
            }
            _ => {}
        }
        if let Some(LoadError::BadBaseState(why)) = ctx.load_error() {
            if matches!(ctx.conv.base_state, Doc::Present(_)) {
                out.push(Finding::new(
                    self.id(),
                    Severity::Error,
                    "base_state.json",
                    format!("base_state.json is not a valid state: {why}; the SDK cannot resume the conversation"),
                ));
            }
        }
        if let Doc::Unreadable(u) = &ctx.conv.meta {
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                "meta.json",
                format!("meta.json cannot be read: {u}; the agent-server drops the conversation from its list"),
            ));
        }
    }
}
