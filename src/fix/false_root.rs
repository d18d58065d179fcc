//! Re-link a false root: set that one event's `parent_id` to the last real
//! event before it. Every other byte of the file stays as it is.

use super::{Edits, Plan, RepairOptions};
use crate::checks::{false_root, ix, Ctx};

const CHECK: &str = "false-root";

pub fn plan(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    for fr in false_root::find(ctx) {
        let rel = ctx.event_path(fr.root);
        if !fr.confirmed && !opts.accept_ambiguous {
            plan.leave(
                CHECK,
                rel,
                format!(
                    "probable, not certain ({}): a deliberate navigate_to(None) can look the same; \
                     repair it only if you know it was not deliberate, with \
                     `--only false-root --accept-ambiguous`",
                    fr.doubts.join("; ")
                ),
            );
            continue;
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
