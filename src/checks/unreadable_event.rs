//! `unreadable-event`: an event file the SDK cannot read (empty, truncated,
//! not UTF-8, not a JSON object, no `kind`, a mistyped field, not a file).

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::{LoadError, ReadError};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "unreadable-event";

pub struct UnreadableEvent;

impl Check for UnreadableEvent {
    fn id(&self) -> &'static str {
        ID
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
  Unsafe (only with `repair --unsafe-fixes`): set it aside. The file keeps
  its name; its bytes go into the run's backup (never deleted) and a small
  placeholder event with the same id and the same parent takes its slot, so
  nothing is renumbered, no child or HEAD is re-linked, and a process that
  has the log open appends where it expects to. The placeholder is the
  AgentErrorEvent the agent-server writes after a crash when the event was a
  tool call's result nothing else answers (so the call is not run again on
  resume), otherwise a ConversationErrorEvent, which the SDK never sends to
  the LLM and the UI shows where the event was. The content of a broken event cannot
  be invented: restore the file from a backup instead if there is one."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "set the event aside: its file goes into the run's backup and a placeholder with the same id and parent takes its slot (the agent-server's AgentErrorEvent when it was a tool call's result nothing else answers, otherwise a ConversationErrorEvent the LLM never sees); nothing is renumbered or re-linked",
            guards: "an event of the contiguous log (one beyond a gap is planned once the gap is closed, in the same run); its parent kept, or recovered from what the cut-off file still names whole, or (a tree-era log) the event before it; unsafe because the agent loses sight of that event",
            planner: Some(plan),
            phase: crate::edit::Phase::Readable,
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

/// Set aside every event of the log that cannot be read at all.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    super::set_aside::plan(ctx, p, super::set_aside::Class::Unreadable);
}
