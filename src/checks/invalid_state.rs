//! `invalid-state`: base_state.json is JSON, but `ConversationState` refuses it.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

pub struct InvalidState;

impl Check for InvalidState {
    fn id(&self) -> &'static str {
        "invalid-state"
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
  None automatic. Fix the named field by hand (keep a copy), or restore
  base_state.json from a backup."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "no field of base_state.json has a value convo-doctor can know for certain (the SDK's defaults are not what the conversation had): fix the named field by hand, keeping a copy, or restore the file from a backup",
        )
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
