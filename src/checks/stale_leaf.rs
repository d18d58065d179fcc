//! `stale-leaf`: base_state.json's `leaf_event_id` names no event in the log.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "stale-leaf";

pub struct StaleLeaf;

impl Check for StaleLeaf {
    fn id(&self) -> &'static str {
        ID
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
  Unsafe (only with `repair --unsafe-fixes`): point the HEAD at the last real
  event of the log. With several branches that may be another branch than
  the one the HEAD was on."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "point `leaf_event_id` at the last real (not state-update) event of the log, what the SDK falls back to without a HEAD",
            guards: "the HEAD's id is in no file at all (one beyond a gap or in a lost duplicate comes back when those are repaired, in the same run); unsafe because with several branches it may pick another one",
            planner: Some(plan),
        }
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

/// Point the HEAD at the last real event of the log (not a state update),
/// what the SDK falls back to without a HEAD.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    const REL: &str = "base_state.json";
    let Some(LoadError::UnknownLeaf { id }) = ctx.load_error() else {
        return;
    };
    if ctx.conv.events.files.iter().any(|f| &f.name_id == id) {
        p.leave(
            REL,
            "the HEAD's file exists but the SDK does not index it: it comes back when the gap is closed or the doubled index decided",
        );
        return;
    }
    let Some(t) = (0..ctx.reader.len())
        .rev()
        .find(|&j| ctx.reader.read(j).is_ok_and(|r| !r.is_artifact()))
    else {
        p.leave(REL, "no readable event to point the HEAD at");
        return;
    };
    let tid = ctx.reader.id(t).to_string();
    let what = format!(
        "point the HEAD at the last real event, {} ({tid})",
        super::ix(t)
    );
    p.set(
        REL,
        "/leaf_event_id",
        serde_json::Value::from(tid),
        crate::edit::Safety::Unsafe,
        what,
    );
}
