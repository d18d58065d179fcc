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
                    "base_state.json is for conversation {}, but {} is {}; the SDK refuses to resume it",
                    ctx.quote(found),
                    id_source(ctx),
                    ctx.quote(expected)
                ),
            ));
        }
    }
}

/// Where the id the SDK is asked to resume comes from: the agent-server
/// passes meta.json's id; without meta.json, the folder name is the id.
pub fn id_source(ctx: &Ctx) -> &'static str {
    let meta_id = ctx
        .conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .is_some_and(|v| v.is_string());
    if meta_id {
        "meta.json's id"
    } else {
        "the folder's name"
    }
}
