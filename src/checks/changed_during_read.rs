//! `changed-during-read`: a writer changed the conversation while it was read.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::edit::{Refusal, Refused};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "changed-during-read";

pub struct ChangedDuringRead;

impl Check for ChangedDuringRead {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "The conversation changed while convo-doctor read it (a live writer)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Another process held the SDK's event-log lock (`events/.eventlog.lock`,
  probed with a shared flock that is released at once, never created) when
  reading began or ended; or the events/ directory, base_state.json or
  meta.json changed in between; or an event file that read as broken no
  longer holds the bytes that were read (it was being written).

Why it matters
  The report describes a moment that may never have existed as a whole: an
  event caught mid-write looks truncated, a HEAD saved a moment later looks
  stale. Servers up to 1.43 write files in place (truncate, then write), so
  a reader can see a half-written event.

Repair
  None: run again once the conversation is idle. `repair` refuses a
  conversation that changed while it was read, and takes the SDK's own lock
  before writing."
    }

    fn repair(&self) -> Repair {
        Repair::manual("run again once the conversation is idle; `repair` refuses a conversation that is being written")
    }

    /// A writer at work blocks every repair: what was read is a moment that
    /// may never have existed as a whole.
    fn gate(&self, ctx: &Ctx) -> Option<Refused> {
        ctx.conv.changed_during_read.then(|| Refused::new(
            Refusal::Busy,
            "the conversation is being written (another process holds events/.eventlog.lock, or files changed while they were read); run again when it is idle",
        ))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if ctx.conv.changed_during_read {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                "events/",
                "the conversation changed while it was being read (a live writer): findings below may be transient; run again when it is idle".into(),
            ));
        }
    }
}
