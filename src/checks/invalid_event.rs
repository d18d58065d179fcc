//! `invalid-event`: an event whose JSON is fine but which the selected
//! release's pydantic model refuses (a missing or mistyped field, a value
//! outside its Literal or enum, a nested action/observation that does not fit
//! its kind).

use super::{ix, Applicability, Check, Ctx, Finding, Repair};
use crate::view::ReadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "invalid-event";

pub struct InvalidEvent;

impl Check for InvalidEvent {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event does not fit the SDK's model of its kind (missing or mistyped field)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event file that is valid JSON with a known kind, but that the selected
  release's pydantic model of that kind refuses: a required field missing
  (`llm_message: Field required`), a value of the wrong type or outside its
  Literal or enum (`source: Input should be 'agent', 'user', 'environment'
  or 'hook'`), a nested action, observation, message or content part that
  does not fit the kind it names. The models, with pydantic's lax coercions
  (`1` and `\"yes\"` are true, `\"5\"` is an int, a number is a datetime),
  come from the real releases (data/schemas/, see docs/format.md). The
  message gives pydantic's location and error, never the value.

Why it matters
  The SDK validates every event it reads with that model
  (`Event.model_validate_json`). On the agent's branch, or in the tail
  scanned to find the HEAD, a refused event stops the conversation from
  loading (error); elsewhere the UI skips it (warning).

Repair
  With `--unsafe-fixes`, set it aside as for an unreadable event: its file
  goes into the run's backup and a placeholder with the same id and parent
  takes its slot (an unanswered tool call gets the agent-server's
  AgentErrorEvent). Unsafe: the agent loses sight of that event. The missing
  content cannot be invented: restoring the file from a backup keeps it."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "set the event aside, as for `unreadable-event`: a placeholder with the same id and parent takes its slot, the file goes into the run's backup",
            guards: "as for `unreadable-event`; unsafe because the agent loses sight of that event",
            planner: Some(plan),
            phase: crate::edit::Phase::Readable,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        ctx.read_failures(self.id(), out, |i, e| {
            matches!(e, ReadError::Invalid { .. }).then(|| {
                format!(
                    "event {} does not validate against SDK {}: {e}",
                    ix(i),
                    ctx.reader.version,
                )
            })
        });
    }
}

/// Set aside every event of the log the release's model refuses.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    super::set_aside::plan(ctx, p, super::set_aside::Class::Invalid);
}
