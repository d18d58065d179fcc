//! Unsafe repairs that choose a link the disk no longer records: a
//! `parent_id` that names no event (`dangling-parent`) and a HEAD that names
//! no event (`stale-leaf`). Each takes the choice the SDK's own tolerant
//! paths make (the previous event in index order, #4114; the last real event
//! as the HEAD, the ≥1.35 leaf fallback), so only `--unsafe-fixes` makes it.

use serde_json::Value;

use super::{Edits, Op, Plan, RepairOptions};
use crate::checks::{ix, Ctx};
use crate::store::ParentRef;

/// The nearest readable event before `idx`.
fn readable_before(ctx: &Ctx, idx: usize) -> Option<usize> {
    (0..idx).rev().find(|&j| ctx.reader.read(j).is_ok())
}

/// Planner of `dangling-parent`: re-link the event to the readable event
/// before it.
pub fn plan_dangling(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    const CHECK: &str = "dangling-parent";
    let files = &ctx.conv.events.files;
    for i in 0..ctx.reader.len() {
        let Some(rec) = ctx.reader.record(i) else {
            continue;
        };
        let ParentRef::Id(p) = &rec.parent else {
            continue;
        };
        if ctx.index.id_to_idx.contains_key(p) {
            continue;
        }
        let rel = ctx.event_path(i);
        if files.iter().any(|f| &f.name_id == p) {
            // beyond a gap or a lost duplicate: those repairs bring it back
            plan.leave(
                CHECK,
                rel,
                "its parent's file exists but the SDK does not index it: close the gap or decide the duplicate first",
            );
            continue;
        }
        let Some(t) = readable_before(ctx, i) else {
            plan.leave(CHECK, rel, "no readable event before it");
            continue;
        };
        let tid = ctx.reader.id(t).to_string();
        let what = format!(
            "re-link event {} (its parent is in no file) to the event before it, {} ({tid})",
            ix(i),
            ix(t)
        );
        if opts.unsafe_fixes {
            super::relink(edits, plan, CHECK, rel, &tid, what);
        } else {
            plan.leave_unsafe(CHECK, rel, what);
        }
    }
}

/// Planner of `stale-leaf`: point the HEAD at the last real event of the
/// log (not a state update), what the SDK falls back to without a HEAD.
pub fn plan_stale_leaf(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    const CHECK: &str = "stale-leaf";
    const REL: &str = "base_state.json";
    let Some(crate::view::LoadError::UnknownLeaf { id }) = ctx.load_error() else {
        return;
    };
    if ctx.conv.events.files.iter().any(|f| &f.name_id == id) {
        plan.leave(
            CHECK,
            REL,
            "the HEAD's file exists but the SDK does not index it: close the gap or decide the duplicate first",
        );
        return;
    }
    let Some(t) = (0..ctx.reader.len())
        .rev()
        .find(|&j| ctx.reader.read(j).is_ok_and(|r| !r.is_artifact()))
    else {
        plan.leave(CHECK, REL, "no readable event to point the HEAD at");
        return;
    };
    let tid = ctx.reader.id(t).to_string();
    let what = format!("point the HEAD at the last real event, {} ({tid})", ix(t));
    if !opts.unsafe_fixes {
        plan.leave_unsafe(CHECK, REL, what);
        return;
    }
    if let Err(why) = edits.patch(
        REL,
        "/leaf_event_id",
        Op::Set(Value::from(tid)),
        CHECK,
        what,
    ) {
        plan.leave(CHECK, REL, why);
    }
}
