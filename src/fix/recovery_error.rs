//! Re-parent a crash-recovery error onto its ActionEvent (what #4488 does).

use serde_json::Value;

use super::{patch, Edits, Left, Plan};
use crate::checks::misparented_recovery_error::find;
use crate::checks::{ix, Ctx};

const CHECK: &str = "misparented-recovery-error";

pub fn plan(ctx: &Ctx, edits: &mut Edits, plan: &mut Plan) {
    for m in find(ctx) {
        let rel = ctx.event_path(m.error);
        if !m.safe {
            plan.left.push(Left {
                check: CHECK,
                file: rel,
                why: "that tool call has more than one action or result; which one the error answers needs a human".into(),
            });
            continue;
        }
        let Ok(original) = std::fs::read(ctx.conv.dir.join(&rel)) else {
            continue;
        };
        let text = String::from_utf8_lossy(edits.current(&rel, &original)).into_owned();
        let target = ctx.reader.id(m.action).to_string();
        match patch::set(&text, "/parent_id", &Value::from(target.clone())) {
            Ok(after) => edits.record(
                &rel,
                &original,
                after,
                CHECK,
                format!(
                    "re-parent the recovery error {} onto its action {} ({target})",
                    ix(m.error),
                    ix(m.action)
                ),
            ),
            Err(e) => plan.left.push(Left {
                check: CHECK,
                file: rel,
                why: format!("the file cannot be patched safely: {e}"),
            }),
        }
    }
}
