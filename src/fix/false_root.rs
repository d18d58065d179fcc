//! Re-link a false root: set that one event's `parent_id` to the last real
//! event before it. Every other byte of the file stays as it is.

use super::{Edits, Plan, RepairOptions};
use crate::checks::{false_root, ix, Ctx};

const CHECK: &str = "false-root";

pub fn plan(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    for fr in false_root::find(ctx) {
        let rel = ctx.event_path(fr.root);
        if !fr.confirmed && !opts.unsafe_fixes {
            plan.leave_unsafe(
                CHECK,
                rel,
                format!(
                    "re-link event {} to event {}; it is probable, not certain ({}): a deliberate \
                     navigate_to(None) can look the same, so use the flag only if you know it was not deliberate",
                    ix(fr.root),
                    ix(fr.relink_to),
                    fr.doubts.join("; ")
                ),
            );
            continue;
        }
        if !fr.confirmed {
            plan.made_unsafe(rel.clone());
        }
        let target = ctx.reader.id(fr.relink_to).to_string();
        let what = format!(
            "re-link event {} to event {} ({target}): {} events return to the agent's view",
            ix(fr.root),
            ix(fr.relink_to),
            fr.stranded
        );
        super::relink(edits, plan, CHECK, rel, &target, what);
    }
}
