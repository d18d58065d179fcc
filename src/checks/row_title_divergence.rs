//! `row-title-divergence` (info): the app server's row and the folder's
//! meta.json carry different titles.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct RowTitleDivergence;

impl Check for RowTitleDivergence {
    fn id(&self) -> &'static str {
        "row-title-divergence"
    }

    fn summary(&self) -> &'static str {
        "The app server's row and the folder's meta.json carry different titles"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--db` and the conversation's agent-server folder: the row's `title`
  and meta.json's `title` differ (both set). The app server titles a
  conversation itself (`Conversation <hex>`, then the title callback) and
  the agent-server keeps its own; a rename on one side only, or a title
  callback that failed, leaves them apart.

What the user sees
  The web UI shows the row's title; clients of the agent-server (the SDK's
  remote conversations, Agent Canvas, the CLI's cloud view) show meta.json's.
  Searching by the other title finds nothing.

What to do
  Nothing is lost. Rename the conversation in the UI (it updates both), or
  align one side by hand."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let (Some(row), Some(meta)) = (rel.row, rel.folder_title()) else {
            return;
        };
        let Some(title) = row.title.as_deref() else {
            return;
        };
        if title == meta {
            return;
        }
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            "meta.json",
            format!(
                "the web UI shows the row's title `{}`, agent-server clients meta.json's `{}`",
                crate::text::clip(title, crate::text::QUOTE_MAX),
                crate::text::clip(meta, crate::text::QUOTE_MAX)
            ),
        ));
    }
}
