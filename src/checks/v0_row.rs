//! `v0-row` (info): a row of the old (V0) server: 1.x never shows it.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct V0Row;

impl Check for V0Row {
    fn id(&self) -> &'static str {
        "v0-row"
    }

    fn summary(&self) -> &'static str {
        "An app server row of a V0 conversation, which openhands-ai 1.x never lists or opens"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A row of `conversation_metadata` whose conversation_version is not `V1`
  (the model's default is `V0`: rows of the old, pre-1.0 server, kept in
  databases shared across the upgrade).

What the user sees
  Nothing: every query of openhands-ai 1.x (search, count, get, the event
  service's user lookup) filters `conversation_version == 'V1'`, so the
  conversation is not in the list and its URL answers 404. Its history was
  kept by the V0 server's file store (`sessions/<id>/events/`), which 1.x
  does not read.

What to do
  Nothing is broken in the row. To read the conversation, open it with a
  0.x release (0.62 was the last) or from the V0 file store; delete the
  row when it is no longer wanted."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let Some(row) = rel.row else { return };
        if row.is_v1() {
            return;
        }
        let v = row.conversation_version.as_deref().unwrap_or("NULL");
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            "",
            format!(
                "its app server row {} is a `{}` conversation: openhands-ai 1.x reads V1 rows only, so the UI never lists or opens it",
                rel.row_name(),
                crate::text::clip(v, crate::text::QUOTE_MAX)
            ),
        ));
    }
}
