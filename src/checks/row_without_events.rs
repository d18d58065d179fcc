//! `row-without-events` (warning): the app server lists a conversation of
//! which no event exists anywhere given.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct RowWithoutEvents;

impl Check for RowWithoutEvents {
    fn id(&self) -> &'static str {
        "row-without-events"
    }

    fn summary(&self) -> &'static str {
        "An app server row with no event anywhere: listed in the UI, empty when opened"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A V1 row of `conversation_metadata` (`--db`) for which the events store
  (`--events-store`) has no event in its copy (`[<user>/]v1_conversations/
  <id>/`, nor the old `v1/events/` layout) and no agent-server folder among
  the PATHs holds an event either. Needs `--events-store`: without it the
  events may be anywhere.

What the user sees
  The conversation is in the list, with its title; opening it shows no
  messages (the app server reads the events from its copy once the sandbox
  is gone), and a trajectory download is empty.

What to do
  If the conversation's agent-server folder still exists (a sandbox volume,
  `/tmp/openhands-sandboxes/<sandbox>/workspace/conversations/`), pass it as
  a PATH: `copy-missing-events` then names what the copy lacks, and copying
  those files into the copy (`<event id>.json`) restores the history. A
  conversation that never started (the sandbox failed) has nothing to
  restore: delete it in the UI."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let (Some(row), Some(store)) = (rel.row, rel.store) else {
            return;
        };
        if !row.is_v1() || !rel.legacy.is_empty() {
            return;
        }
        if rel.copies.iter().any(|c| !c.ids().is_empty()) {
            return;
        }
        if rel.folder.is_some_and(|f| !f.events.files.is_empty()) {
            return;
        }
        let folder = if rel.folder.is_some() {
            "its agent-server folder has none either"
        } else {
            "no agent-server folder among the PATHs has it"
        };
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            "",
            format!(
                "the app server lists {} but the events store {} holds no event of it, and {folder}: the UI shows the conversation, empty",
                rel.row_name(),
                store.spec.display()
            ),
        ));
    }
}
