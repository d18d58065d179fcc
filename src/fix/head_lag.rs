//! Move a lagging HEAD to the newest event of the chain below it.

use serde_json::Value;

use super::{Edits, Op, Plan, RepairOptions};
use crate::checks::{head_lag, ix, Ctx};

const CHECK: &str = "head-lag";
const REL: &str = "base_state.json";

pub fn plan(ctx: &Ctx, _opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    let Some(lag) = head_lag::find(ctx) else {
        return;
    };
    let (true, true, Some(new_leaf)) = (lag.single_chain, lag.newer_than_state, lag.new_leaf)
    else {
        plan.leave(
            CHECK,
            REL,
            "not certain it is a crash (branches below the HEAD, or base_state.json is not older than them): \
             navigate_to may have moved the HEAD on purpose",
        );
        return;
    };
    let id = ctx.reader.id(new_leaf).to_string();
    let what = format!(
        "move the HEAD from event {} to event {} ({id})",
        ix(lag.leaf),
        ix(new_leaf)
    );
    if let Err(why) = edits.patch(REL, "/leaf_event_id", Op::Set(Value::from(id)), CHECK, what) {
        plan.leave(CHECK, REL, why);
    }
}
