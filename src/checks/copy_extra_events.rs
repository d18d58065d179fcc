//! `copy-extra-events` (warning): events of the app server's copy that the
//! agent-server folder does not have.

use super::{plural, Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct CopyExtraEvents;

impl Check for CopyExtraEvents {
    fn id(&self) -> &'static str {
        "copy-extra-events"
    }

    fn summary(&self) -> &'static str {
        "Events in the app server's copy that the agent-server folder does not have: the UI shows what the agent no longer has"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--events-store` and the conversation's agent-server folder among the
  PATHs: events of the copy whose ids are not in the folder's `events/`.
  The agent-server publishes a few events to its webhook that it never
  writes to the folder (`ConversationStateUpdateEvent`, the state snapshots
  its event service sends on start and on every status change); those are
  read from the copy and not counted. What is left comes from a folder
  restored from an older backup, emptied or pruned by hand, or events set
  aside by a repair.

What the user sees
  The UI (reading the copy once the sandbox is gone) shows events the agent
  does not have: after a resume, the agent continues as if they never
  happened, and the history in the UI and the agent's memory disagree.

What to do
  If the folder lost them, copy them back from the copy into `events/`
  with the SDK's name (`event-<index>-<id>.json`, next index): then run
  `convo-doctor diagnose` on the folder. If they were set aside on purpose,
  remove them from the copy so the UI matches the agent."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        if rel.store.is_none() || !rel.agent_server_folder() || rel.copies.is_empty() {
            return;
        }
        let extras = rel.copy_extras();
        if extras.is_empty() {
            return;
        }
        let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
        for (_, k) in &extras {
            *kinds
                .entry(k.as_deref().unwrap_or("unknown kind"))
                .or_default() += 1;
        }
        let kinds = kinds
            .iter()
            .map(|(k, n)| format!("{n} {}", crate::text::clip(k, crate::text::QUOTE_MAX)))
            .collect::<Vec<_>>()
            .join(", ");
        let first: Vec<&str> = extras.iter().take(3).map(|(id, _)| id.as_str()).collect();
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            "events/",
            format!(
                "{} of the app server's copy {} not in the folder ({kinds}; e.g. {}): the UI shows them, the agent no longer has them",
                plural(extras.len(), "event", "events"),
                if extras.len() == 1 { "is" } else { "are" },
                first.join(", ")
            ),
        ));
    }
}
