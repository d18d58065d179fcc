//! `unmigrated-event-layout` (warning; info when every event was copied
//! anyway): events in the pre-1.2.0 `v1/events/` layout.

use super::{plural, Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct UnmigratedEventLayout;

impl Check for UnmigratedEventLayout {
    fn id(&self) -> &'static str {
        "unmigrated-event-layout"
    }

    fn summary(&self) -> &'static str {
        "Events left in the pre-1.2.0 layout v1/events/, which openhands-ai 1.2.0+ never reads"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--events-store PATH`: a conversation's events in the layout of
  openhands-ai 1.0 and 1.1, `<persistence_dir>/v1/events/<dashed uuid>/
  <YYYYMMDDHHMMSS>_<Kind>_<event hex>` (no .json). From 1.2.0 on the app
  server reads and writes `<persistence_dir>/[<user>/]v1_conversations/
  <hex>/<event hex>.json` only, and no migration moved the old files.

What the user sees
  After the upgrade, conversations of the 1.0/1.1 days open empty, or
  start where the upgrade happened.

What to do
  Copy each old file into the new layout: `v1/events/<uuid>/<ts>_<Kind>_
  <hex>` to `v1_conversations/<uuid without dashes>/<hex>.json` (the content
  is the same JSON). Reported at info when every old event is in the new
  copy already: the old folder is then only dead weight."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        for old in &rel.legacy {
            let new: std::collections::HashSet<&str> = rel
                .copies
                .iter()
                .flat_map(|c| c.ids().iter().map(String::as_str))
                .collect();
            let n = old.ids().len();
            let only_old = old
                .ids()
                .iter()
                .filter(|id| !new.contains(id.as_str()))
                .count();
            let (sev, msg) = if only_old == 0 {
                (
                    Severity::Info,
                    format!(
                        "{} in the pre-1.2.0 layout at {}, all of them also in the new copy: the old folder is dead weight",
                        plural(n, "event", "events"),
                        old.location
                    ),
                )
            } else {
                (
                    Severity::Warning,
                    format!(
                        "{} in the pre-1.2.0 layout at {} ({only_old} of them nowhere else): openhands-ai 1.2.0+ reads v1_conversations/{}/ only and never migrated them, so the UI shows the conversation without them",
                        plural(n, "event", "events"),
                        old.location,
                        rel.id
                    ),
                )
            };
            out.push(Finding::new(self.id(), sev, "", msg));
        }
    }
}
