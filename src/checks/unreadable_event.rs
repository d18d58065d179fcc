//! `unreadable-event`: an event file the SDK cannot read (empty, truncated,
//! not UTF-8, not a JSON object, no `kind`, a mistyped field, not a file).

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::{LoadError, ReadError};

pub struct UnreadableEvent;

impl Check for UnreadableEvent {
    fn id(&self) -> &'static str {
        "unreadable-event"
    }

    fn summary(&self) -> &'static str {
        "An event file is empty, truncated or not a valid event"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event file whose bytes the SDK cannot turn into an event: 0 bytes (a crash
  or power loss between truncate and write: servers up to 1.43 did not write
  atomically), JSON cut off mid-way, invalid UTF-8, not a JSON object, no
  `kind`, or a field of the wrong type (a numeric `parent_id`). Also an entry
  named like an event that is a directory, FIFO, socket or symbolic link.

Why it matters
  The SDK reads events strictly. An unreadable event on the agent's active
  branch (or in the tail the SDK scans to find the HEAD) makes the whole
  conversation fail to load: the server logs an error and the conversation
  disappears or returns 500 (OpenHands#16727). Off the active branch, the web
  UI skips it and its content is simply not shown (warning).

Repair
  Unsafe (only with `repair --unsafe-fixes`): quarantine. The file is moved
  into the run's backup (never deleted), the files after it are renumbered
  (renames only), the event whose parent it was is re-linked to the nearest
  readable event before it, and the HEAD moves off it if it was the HEAD.
  An observation whose tool call nothing else answers is replaced, in its
  slot, by the AgentErrorEvent the agent-server writes after a crash, so the
  call is not run again on resume. The content of a broken event cannot be
  invented: restore the file from a backup instead if there is one."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "quarantine: move the event file into the run's backup, renumber the files after it (renames only), re-link the event whose parent it was to the nearest kept event before it, move the HEAD off it if it was the HEAD; when it followed an ActionEvent that nothing else answers, put an AgentErrorEvent with that `tool_call_id` in its slot (as the agent-server does after a crash) so the call is not run again",
            guards: "an event file in the contiguous log (not beyond a gap), not index 0; unsafe because the agent loses sight of that event",
            planner: Some(crate::fix::quarantine::plan_unreadable),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let blocking = match ctx.load_error() {
            Some(LoadError::Read { idx, .. }) => Some(*idx),
            _ => None,
        };
        for i in 0..ctx.reader.len() {
            let err = match ctx.reader.read(i) {
                Err(ReadError::Unreadable(u)) => u.to_string(),
                Err(ReadError::TreeFieldTooNew) => ReadError::TreeFieldTooNew.to_string(),
                _ => continue,
            };
            let (sev, tail) = if blocking == Some(i) {
                (Severity::Error, "the SDK refuses to load the conversation")
            } else if ctx.views.in_agent.get(i) == Some(&true) {
                (Severity::Error, "it is on the agent's branch")
            } else {
                (
                    Severity::Warning,
                    "the UI skips it; the agent does not need it",
                )
            };
            out.push(Finding::new(
                self.id(),
                sev,
                ctx.event_path(i),
                format!("event {} cannot be read: {err}; {tail}", ix(i)),
            ));
        }
        for &pos in &ctx.index.beyond_gap {
            let f = &ctx.conv.events.files[pos];
            if let Err(u) = &f.record {
                out.push(Finding::new(
                    self.id(),
                    Severity::Warning,
                    format!("events/{}", f.name),
                    format!(
                        "event {} (beyond the index gap) cannot be read: {u}",
                        ix(f.idx as usize)
                    ),
                ));
            }
        }
    }
}
