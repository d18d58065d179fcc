//! Re-link a false root: set that one event's `parent_id` to the last real
//! event before it. Every other byte of the file stays as it is.

use serde_json::Value;

use super::{patch, Edits, Left, Plan, RepairOptions};
use crate::checks::{false_root, ix, Ctx};

pub fn plan(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    for fr in false_root::find(ctx) {
        let rel = ctx.event_path(fr.root);
        if !fr.confirmed && !opts.accept_ambiguous {
            plan.left.push(Left {
                check: "false-root",
                file: rel,
                why: format!(
                    "probable, not certain ({}): a deliberate navigate_to(None) can look the same; \
                     repair it only if you know it was not deliberate, with \
                     `--only false-root --accept-ambiguous`",
                    fr.doubts.join("; ")
                ),
            });
            continue;
        }
        let path = ctx.conv.dir.join(&rel);
        let original = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                plan.left.push(Left {
                    check: "false-root",
                    file: rel,
                    why: format!("cannot read it again: {e}"),
                });
                continue;
            }
        };
        let text = String::from_utf8_lossy(edits.current(&rel, &original)).into_owned();
        let target = ctx.reader.id(fr.relink_to).to_string();
        match patch::set(&text, "/parent_id", &Value::from(target.clone())) {
            Ok(after) => edits.record(
                &rel,
                &original,
                after,
                "false-root",
                format!(
                    "re-link event {} to event {} ({target}): {} events return to the agent's view",
                    ix(fr.root),
                    ix(fr.relink_to),
                    fr.stranded
                ),
            ),
            Err(e) => plan.left.push(Left {
                check: "false-root",
                file: rel,
                why: format!("the file cannot be patched safely: {e}"),
            }),
        }
    }
}
