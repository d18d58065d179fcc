//! `legacy-tail-hazard`: a pre-tree log that a 1.31–1.34 server would cut off
//! at its next resume (the cause of `false-root`).

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::version::LeafRule;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "legacy-tail-hazard";

pub struct LegacyTailHazard;

impl Check for LegacyTailHazard {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "A 1.31–1.34 server would stamp a false root on this legacy log at the next resume"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A conversation written before 1.31 (no `parent_id` on its first events, no
  `leaf_event_id`) whose last event carries a `parent_id`: an artifact (state
  update, error) a tree-era server wrote during an interrupted startup. Only
  reported with `--server-version` 1.31 to 1.34, whose leaf rule takes such a
  tail for an empty HEAD.

Why it matters
  Under those servers the agent already sees nothing, and the next event
  appended is stamped `parent_id: \"__root__\"`, which strands the whole
  history for good (a `false-root`, #4057). Servers from 1.35 skip the
  artifacts and chain onto the last real event.

Repair
  Upgrade the server to 1.35 or newer before resuming the conversation."
    }

    fn repair(&self) -> Repair {
        Repair::manual("upgrade the server to 1.35 or newer before resuming the conversation")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if ctx.version.leaf_rule() != LeafRule::LastUnlessParented || !ctx.version.tree_era() {
            return;
        }
        let r = &ctx.reader;
        let n = r.len();
        if n == 0 {
            return;
        }
        let base = ctx.conv.base_state.value();
        let leaf_set = base
            .and_then(|b| b.get("leaf_event_id"))
            .is_some_and(|v| !v.is_null());
        let head_empty = base
            .and_then(|b| b.get("head_is_empty"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        if leaf_set || head_empty {
            return;
        }
        let last_parented = r.record(n - 1).is_some_and(|rec| rec.parent.is_present());
        let legacy_start = r.record(0).is_some_and(|rec| !rec.parent.is_present())
            && (1..n).any(|i| r.record(i).is_some_and(|rec| !rec.parent.is_present()));
        if last_parented && legacy_start {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                ctx.event_path(n - 1),
                format!(
                    "this legacy log ends in an event with a parent_id and no HEAD is stored: server {} shows the agent nothing and will stamp the next event `__root__`, cutting off all history; resume it with 1.35 or newer",
                    ctx.version
                ),
            ));
        }
    }
}
