//! Re-parent a crash-recovery error onto its ActionEvent (what #4488 does).

use super::{Edits, Plan, RepairOptions};
use crate::checks::misparented_recovery_error::find;
use crate::checks::{ix, Ctx};

const CHECK: &str = "misparented-recovery-error";

pub fn plan(ctx: &Ctx, _opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    for m in find(ctx) {
        let rel = ctx.event_path(m.error);
        if !m.safe {
            plan.leave(
                CHECK,
                rel,
                "that tool call has more than one action or result; which one the error answers needs a human",
            );
            continue;
        }
        let target = ctx.reader.id(m.action).to_string();
        let what = format!(
            "re-parent the recovery error {} onto its action {} ({target})",
            ix(m.error),
            ix(m.action)
        );
        super::relink(edits, plan, CHECK, rel, &target, what);
    }
}
