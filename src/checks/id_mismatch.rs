//! `id-mismatch`: base_state.json belongs to a different conversation id.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

pub struct IdMismatch;

impl Check for IdMismatch {
    fn id(&self) -> &'static str {
        "id-mismatch"
    }

    fn summary(&self) -> &'static str {
        "base_state.json's id differs from the folder's or meta.json's conversation id"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json's `id` (dashed UUID) differs, once dashes are removed, from
  meta.json's `id` (or, without meta.json, from the 32-hex folder name).

Why it matters
  The SDK refuses to resume (\"Conversation ID mismatch\"). A folder copied or
  renamed by hand is the usual cause; the agent-server keys its catalog by
  meta.json's id, so a renamed folder also splits into two.

Repair
  None automatic: which id is right depends on how the folder was made."
    }

    fn repair(&self) -> Repair {
        Repair::manual("which id is right depends on how the folder was made")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if let Some(LoadError::IdMismatch { expected, found }) = ctx.load_error() {
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                "base_state.json",
                format!(
                    "base_state.json is for conversation {}, but this folder is {}; the SDK refuses to resume it",
                    ctx.quote(found),
                    ctx.quote(expected)
                ),
            ));
        }
    }
}
