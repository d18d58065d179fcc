//! `filename-id-mismatch`: the id in the file name differs from the JSON `id`.

use super::{ix, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

pub struct FilenameIdMismatch;

impl Check for FilenameIdMismatch {
    fn id(&self) -> &'static str {
        "filename-id-mismatch"
    }

    fn summary(&self) -> &'static str {
        "An event file's name carries a different id than its JSON `id`"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event whose file name says one id and whose JSON `id` says another.

Why it matters
  The SDK indexes events by the id in the file name and never reads the JSON
  `id` during the scan. A child's `parent_id` or the HEAD that uses the JSON
  id then names an event the index does not know (KeyError at load).

Repair
  None automatic yet (renaming the file to the JSON id is safe only when the
  JSON id is the one its children and the HEAD use)."
    }

    fn repair(&self) -> Repair {
        Repair::manual("renaming to the JSON id is safe only when that id is the one its children and the HEAD use")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let json_ids_referenced = |id: &str| match ctx.load_error() {
            Some(LoadError::UnknownParent { parent, .. }) => parent == id,
            Some(LoadError::UnknownLeaf { id: leaf }) => leaf == id,
            _ => false,
        };
        for i in 0..ctx.reader.len() {
            let Some(rec) = ctx.reader.record(i) else {
                continue;
            };
            let Some(json_id) = &rec.id else { continue };
            let name_id = ctx.reader.id(i);
            if json_id == name_id {
                continue;
            }
            let breaks = json_ids_referenced(json_id);
            out.push(Finding::new(
                self.id(),
                if breaks { Severity::Error } else { Severity::Warning },
                ctx.event_path(i),
                format!(
                    "event {}'s JSON id differs from the id in its file name; the SDK knows it only by the file name{}",
                    ix(i),
                    if breaks { ", and the conversation refers to it by the JSON id, so it fails to load" } else { "" }
                ),
            ));
        }
    }
}
