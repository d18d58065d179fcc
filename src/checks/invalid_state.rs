//! `invalid-state`: base_state.json is JSON, but `ConversationState` refuses it.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "invalid-state";

pub struct InvalidState;

impl Check for InvalidState {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "base_state.json does not fit the SDK's ConversationState model"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A base_state.json that parses as JSON but that the selected release's
  `ConversationState` model refuses: a required field missing or null
  (`agent: Input should be a valid dictionary or instance of AgentBase`), a
  value outside its enum (`execution_status`), a mistyped field
  (`max_iterations: Input should be a valid integer`, `head_is_empty: Input
  should be a valid boolean`). The model, with pydantic's lax coercions,
  comes from the real release (data/schemas/, see docs/format.md). The
  message gives pydantic's location and error, never the value. Parts of
  the agent's configuration (LLM, MCP servers, skills, hooks, secrets) go
  through SDK validator code that cannot be copied; convo-doctor does not
  judge those and never reports them (docs/format.md lists them).

Why it matters
  The SDK's resume path runs `ConversationState.model_validate` on it
  first: a refusal is a `ValidationError` and the conversation does not
  load at all (error).

Repair
  Unsafe (only with `repair --unsafe-fixes`): each refused field that the
  release's `ConversationState` declares with a default is dropped, so the
  SDK uses its default (`execution_status` idle, `head_is_empty` false,
  `max_iterations` 500, ...); the old value stays in the run's backup. A
  refused required field (`id`, `agent`, ...) has no value convo-doctor can
  know: fix it by hand (keep a copy), or restore base_state.json from a
  backup. The one exception: a refused `agent` is put back from meta.json
  when meta.json still carries its copy (agent-servers before 1.43 wrote
  one, and resumed with it); that copy may be older than the one lost."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "drop each refused top-level field that `ConversationState` of the release declares with a default (the SDK then uses its default: `execution_status` idle, `head_is_empty` false, `max_iterations` 500, ...), and put back a refused `agent` from meta.json's copy where one is kept; the old value stays in the run's backup",
            guards: "only fields with a default in that release's model, and `agent` when meta.json still carries its copy (servers before 1.43); any other refused required field (`id`, ...) is left to a human; unsafe because the value the conversation had is replaced by the SDK's default",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(LoadError::InvalidState(errors)) = ctx.load_error() else {
            return;
        };
        let what: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "base_state.json",
            format!(
                "base_state.json does not validate against SDK {}: {}; the SDK cannot resume the conversation",
                ctx.reader.version,
                what.join("; ")
            ),
        ));
    }
}

/// Drop each refused field that has a default.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    const REL: &str = "base_state.json";
    let Some(LoadError::InvalidState(errors)) = ctx.load_error() else {
        return;
    };
    let Some(state) = ctx.conv.base_state.value() else {
        return;
    };
    let defaults = crate::validate::state_keys_with_default(ctx.version);
    // the second copy of the agent that an agent-server before 1.43 kept in
    // meta.json (the one such a server itself resumes with)
    let meta_agent = ctx
        .conv
        .meta
        .value()
        .and_then(|m| m.get("agent"))
        .filter(|a| a.is_object());
    let mut keys: Vec<&str> = Vec::new();
    let mut agent_from_meta = None;
    for e in errors {
        let key = e.loc.split('.').next().unwrap_or("");
        if keys.contains(&key) || (key == "agent" && agent_from_meta.is_some()) {
            continue;
        }
        if key == "agent" && meta_agent.is_some() {
            agent_from_meta = meta_agent;
            continue;
        }
        if key.is_empty() || !defaults.iter().any(|d| d == key) || state.get(key).is_none() {
            p.leave(
                REL,
                format!(
                    "`{}` is required by the SDK's model and has no default: fix it by hand, keeping a copy, or restore the file from a backup",
                    ctx.quote(if key.is_empty() { &e.loc } else { key })
                ),
            );
            return;
        }
        keys.push(key);
    }
    if let Some(agent) = agent_from_meta {
        p.set(
            REL,
            "/agent",
            agent.clone(),
            crate::edit::Safety::Unsafe,
            "put back `agent` from meta.json's copy (the second copy an agent-server before 1.43 kept, and resumed with): it may be older than the one lost".into(),
        );
    }
    for key in keys {
        p.drop_key(
            REL,
            &format!("/{}", key.replace('~', "~0").replace('/', "~1")),
            crate::edit::Safety::Unsafe,
            format!(
                "drop `{}`, which SDK {} refuses: it then uses its default",
                ctx.quote(key),
                ctx.reader.version
            ),
        );
    }
}
