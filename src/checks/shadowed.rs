//! `shadowed` (warning): another folder of the same conversations directory
//! carries the same id in its meta.json.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::server::{self, meta, Era};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "shadowed";

pub struct Shadowed;

impl Check for Shadowed {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "Another folder's meta.json carries the same conversation id: the server shows only one of them"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Two or more folders of one conversations directory whose meta.json carry the
  same `id` (a backup copied next to the original, a folder copied under a new
  name). Every agent-server release files conversations by that id and reads
  the state from the folder named after it, so at most one is shown, and it is
  the folder named after the id.

Why it matters
  The copies are invisible, and they are not inert: from 1.37 the catalog
  keeps the meta.json (title, dates, tags) of whichever folder the directory
  listing returns last, with the state of the folder named after the id;
  before 1.37 the server starts the conversation once per folder and saves the
  last one's meta.json over the original's. The message says which folder the
  listing order returns last on this machine (it can differ on another copy
  of the store).

Repair
  None automatic. Move the copies out of the conversations directory (a
  backup belongs outside it), or give a copy its own id."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "which copy is the real one is the operator's call: move the copy out of the conversations directory (never delete it)",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(id) = ctx.conv.meta.value().and_then(meta::id) else {
            return;
        };
        let parent = ctx.conv.dir.parent().unwrap_or(&ctx.conv.dir);
        let ids = server::store_ids(parent);
        let name = ctx.conv.folder.as_str();
        let others = ids.others_with(&id, name);
        if others.is_empty() {
            return;
        }
        let all = ids.all_with(&id);
        let last = all.last().map(|e| e.name.as_str()).unwrap_or(name);
        let list = others
            .iter()
            .map(|e| format!("`{}`", ctx.quote(&e.name)))
            .collect::<Vec<_>>()
            .join(", ");
        let owner_exists = all.iter().any(|e| e.name == id);
        let shown = if name == id {
            "the server shows this folder's state".to_string()
        } else if owner_exists {
            format!("the server shows folder `{id}`, never this one")
        } else {
            format!("neither is named `{id}`: the server reads that folder, so neither history is shown")
        };
        let meta_note = match server::era(ctx.version) {
            Era::Eager => format!(
                "agent-server {} starts it once per folder and saves the last one's meta.json into `{id}` (here `{}`, by this directory's listing order)",
                ctx.version,
                ctx.quote(last)
            ),
            _ => format!(
                "agent-server {} takes title and dates from the meta.json of the folder listed last (here `{}`, by this directory's listing order)",
                ctx.version,
                ctx.quote(last)
            ),
        };
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            "meta.json",
            format!(
                "{list} also carr{} id {id} in meta.json: {shown}; {meta_note}",
                if others.len() == 1 { "ies" } else { "y" }
            ),
        ));
    }
}
