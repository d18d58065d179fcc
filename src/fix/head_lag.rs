//! Move a lagging HEAD to the newest event of the chain below it.

use serde_json::Value;

use super::{patch, Edits, Left, Plan};
use crate::checks::{head_lag, ix, Ctx};

const REL: &str = "base_state.json";

pub fn plan(ctx: &Ctx, edits: &mut Edits, plan: &mut Plan) {
    let Some(lag) = head_lag::find(ctx) else {
        return;
    };
    let (true, true, Some(new_leaf)) = (lag.single_chain, lag.newer_than_state, lag.new_leaf)
    else {
        plan.left.push(Left {
            check: "head-lag",
            file: REL.into(),
            why: "not certain it is a crash (branches below the HEAD, or base_state.json is not older than them): \
                  navigate_to may have moved the HEAD on purpose"
                .into(),
        });
        return;
    };
    let Ok(original) = std::fs::read(ctx.conv.dir.join(REL)) else {
        return;
    };
    let text = String::from_utf8_lossy(edits.current(REL, &original)).into_owned();
    let id = ctx.reader.id(new_leaf).to_string();
    match patch::set(&text, "/leaf_event_id", &Value::from(id.clone())) {
        Ok(after) => edits.record(
            REL,
            &original,
            after,
            "head-lag",
            format!(
                "move the HEAD from event {} to event {} ({id})",
                ix(lag.leaf),
                ix(new_leaf)
            ),
        ),
        Err(e) => plan.left.push(Left {
            check: "head-lag",
            file: REL.into(),
            why: format!("base_state.json cannot be patched safely: {e}"),
        }),
    }
}
