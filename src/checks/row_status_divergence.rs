//! `row-status-divergence` (warning): the app server's row and the agent's
//! own state disagree on the execution status.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct RowStatusDivergence;

impl Check for RowStatusDivergence {
    fn id(&self) -> &'static str {
        "row-status-divergence"
    }

    fn summary(&self) -> &'static str {
        "The app server's row says one execution status, the folder's base_state.json another"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--db` (a database at alembic revision 013 or later, openhands-ai
  1.10+) and the conversation's agent-server folder: the row's
  `execution_status` differs from `execution_status` in base_state.json.
  The app server updates the row only from the status events the webhook
  delivers (`update_execution_status`); a dropped batch, or an agent-server
  that stopped before posting its last status, leaves the row behind
  (OpenHands#12684).

What the user sees
  Whatever reads the row (the conversation list's status filters, the
  organisation dashboard) shows the stale status: a conversation still
  `running` that finished long ago, one stuck at starting, one `error`
  that was resumed.

What to do
  The folder is the agent's truth. Resuming the conversation posts a fresh
  status; or set the row's execution_status to the folder's value (back the
  database up first; convo-doctor never writes to it)."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let (Some(row), Some(folder)) = (rel.row, rel.folder_status()) else {
            return;
        };
        let Some(stored) = row.execution_status.as_deref() else {
            return;
        };
        if stored.eq_ignore_ascii_case(folder) {
            return;
        }
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            "base_state.json",
            format!(
                "the app server's row says `{}`, base_state.json says `{}`: the conversation list and dashboard show a stale status",
                crate::text::clip(stored, crate::text::QUOTE_MAX),
                crate::text::clip(folder, crate::text::QUOTE_MAX)
            ),
        ));
    }
}
