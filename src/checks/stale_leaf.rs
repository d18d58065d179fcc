//! `stale-leaf`: base_state.json's `leaf_event_id` names no event in the log.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

pub struct StaleLeaf;

impl Check for StaleLeaf {
    fn id(&self) -> &'static str {
        "stale-leaf"
    }

    fn summary(&self) -> &'static str {
        "The stored HEAD (leaf_event_id) names an event that is not in the log"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json's `leaf_event_id` (the HEAD: the parent of the next event)
  is not the id of any event in the SDK's index: its file was deleted, is
  beyond an index gap, or lost a duplicate-index race.

Why it matters
  The SDK resolves the active branch from the HEAD and raises KeyError: the
  conversation does not load at all.

Repair
  None automatic yet (pointing the HEAD at the newest real event is safe only
  when the log has a single branch)."
    }

    fn repair(&self) -> Repair {
        Repair::manual("pointing the HEAD at the newest real event is safe only when the log has a single branch")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(LoadError::UnknownLeaf { id }) = ctx.load_error() else {
            return;
        };
        let beyond = ctx
            .index
            .beyond_gap
            .iter()
            .any(|&p| ctx.conv.events.files[p].name_id == *id);
        let stray = ctx
            .conv
            .events
            .stray
            .iter()
            .any(|s| s.record.as_ref().and_then(|r| r.id.as_deref()) == Some(id.as_str()));
        if beyond {
            return; // index-gap reports it: the gap is the cause
        }
        let why = if stray {
            "its file has a name the SDK does not accept"
        } else {
            "no event file has that id"
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "base_state.json",
            format!("leaf_event_id names an event the SDK cannot find ({why}); the conversation fails to load (KeyError)"),
        ));
    }
}
