//! `events-without-row` (warning for a folder, info for a copy alone):
//! events of a conversation the app server has no row for, so the UI never
//! shows it.

use super::{plural, Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct EventsWithoutRow;

impl Check for EventsWithoutRow {
    fn id(&self) -> &'static str {
        "events-without-row"
    }

    fn summary(&self) -> &'static str {
        "A folder or event copy with no app server row: invisible in the UI"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--db`: an agent-server folder (one with meta.json, not a nested
  sub-agent) or an event copy in the events store whose conversation id has
  no row in `conversation_metadata`.
  - A folder (warning): a conversation created directly on an agent-server
    (through its own API, an SDK client, an automation) that never told the
    app server, or whose row was deleted while its sandbox lived on
    (OpenHands#13272).
  - A copy alone (info): the usual leftover of a conversation deleted in
    the UI: `delete_app_conversation` removes the row and asks the sandbox
    to delete its folder, but never removes the event copy.

What the user sees
  Nothing: the UI lists rows only, and the conversation's URL answers 404.

What to do
  To make a folder visible: have its agent-server post a conversation
  update to the app server's webhook (pause and resume the conversation on
  an agent-server started with the app server's webhook settings): the
  webhook creates the missing row (`on_conversation_update` saves a stub).
  A copy left by a deletion can be removed to reclaim space; the app server
  never will."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let Some(rows) = rel.rows else { return };
        if rel.row.is_some() {
            return;
        }
        let copy_events: usize = rel.copies.iter().map(|c| c.ids().len()).sum();
        let copy = match (rel.copies.len(), copy_events) {
            (0, _) => "no event copy".to_string(),
            (_, n) => format!("{} in the app server's copy", plural(n, "event", "events")),
        };
        if rel.agent_server_folder() {
            let n = rel.folder.map_or(0, |f| f.events.files.len());
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                "",
                format!(
                    "{} database has no row for this conversation ({} in the folder, {copy}): the UI never lists it",
                    rows.display,
                    plural(n, "event", "events")
                ),
            ));
        } else if rel.folder.is_none() && !rel.copies.is_empty() {
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                "",
                format!(
                    "{} has no row for this copy ({copy}): the UI never shows it; a conversation deleted in the UI leaves its copy behind like this",
                    rows.display
                ),
            ));
        }
    }
}
