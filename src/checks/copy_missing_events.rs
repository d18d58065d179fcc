//! `copy-missing-events` (warning; info while they may still be in flight):
//! events of the agent-server folder that the app server's copy lacks.

use std::time::Duration;

use super::{plural, ranges, Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct CopyMissingEvents;

/// The webhook posts in batches (a buffer, a flush timer, retries): events
/// younger than this may still be on their way.
pub const IN_FLIGHT: Duration = Duration::from_secs(120);

impl Check for CopyMissingEvents {
    fn id(&self) -> &'static str {
        "copy-missing-events"
    }

    fn summary(&self) -> &'static str {
        "Events the agent-server folder has and the app server's copy lacks: the UI shows the conversation without them"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--events-store`: events of an agent-server folder (by event id)
  that are in no copy of the conversation in the events store. The
  agent-server's webhook posts each event to the app server, which saves it
  as `<event id>.json`; a batch that fails every retry is dropped, and the
  in-memory queue is lost when the agent-server stops
  (software-agent-sdk#3516, #4323). Only checked when the app server knows
  the conversation (a row or a copy), or when no `--db` was given. Events
  written in the last two minutes are reported at info: the webhook may
  still be sending them.

What the user sees
  While the sandbox runs, nothing. Once it is paused or gone, the UI reads
  the history from the copy: the conversation shows without these events
  (a gap, or an early end), and a trajectory download misses them. The
  agent still has them: resuming it works from the full history.

What to do
  Copy each missing event file into the copy under its id
  (`events/event-00012-<id>.json` to `<copy>/<id without dashes>.json`;
  the app server reads either spelling of the JSON). In a bucket, upload
  them with the same key layout."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let Some(store) = rel.store else { return };
        if !rel.agent_server_folder() {
            return;
        }
        let known = rel.row.is_some() || !rel.copies.is_empty() || !rel.legacy.is_empty();
        if !known && rel.rows.is_some() {
            // no row, no copy: `events-without-row` says it
            return;
        }
        let events = rel.folder_events();
        if events.is_empty() {
            return;
        }
        let have = rel.copy_ids();
        let mut missing: Vec<&crate::appserver::relate::FolderEvent> = events
            .iter()
            .filter(|e| !have.contains(e.id.as_str()))
            .collect();
        if missing.is_empty() {
            return;
        }
        missing.sort_by_key(|e| e.idx);
        let fresh = missing.iter().all(|e| {
            e.mtime
                .and_then(|t| rel.now.duration_since(t).ok())
                .is_some_and(|age| age < IN_FLIGHT)
        });
        let idx: Vec<usize> = missing.iter().map(|e| e.idx as usize).collect();
        let whole = missing.len() == events.len();
        let where_ = match rel.copies.first() {
            Some(c) if rel.copies.len() == 1 => c.location.clone(),
            Some(_) => format!("its {} copies", rel.copies.len()),
            None => format!("{} (no copy of this conversation)", store.spec.display()),
        };
        let what = if whole {
            format!(
                "none of the folder's {} is in the app server's copy",
                plural(events.len(), "event", "events")
            )
        } else {
            format!(
                "{} of the folder's {} are not in the app server's copy",
                missing.len(),
                plural(events.len(), "event", "events")
            )
        };
        let (sev, tail) = if fresh {
            (
                Severity::Info,
                "written in the last two minutes: the webhook may still be sending them",
            )
        } else {
            (
                Severity::Warning,
                "once the sandbox is gone the UI shows the conversation without them",
            )
        };
        out.push(Finding::new(
            self.id(),
            sev,
            "events/",
            format!("{what} at {where_} (events {}): {tail}", ranges(&idx)),
        ));
    }
}
