//! `duplicate-event-id`: one event id at two indices.

use std::collections::HashMap;

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};

pub struct DuplicateEventId;

impl Check for DuplicateEventId {
    fn id(&self) -> &'static str {
        "duplicate-event-id"
    }

    fn summary(&self) -> &'static str {
        "The same event id appears at two indices"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Two indices of the log whose file names carry the same event id.

Why it matters
  The SDK maps an id to its first index only (\"Duplicate event ID ... Keeping
  first occurrence\"). Children and a HEAD that point at the id attach to the
  first copy; the second copy is reachable only in the flat UI listing, and
  appending an event with that id again raises ValueError.

Repair
  Unsafe (only with `repair --unsafe-fixes`): a later copy that is byte for
  byte the first is quarantined into the run's backup and the files after it
  renumbered. Copies that differ need a human."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "quarantine a later copy that is byte for byte the same as the first (the one the SDK resolves the id to), renumbering the files after it; children and the HEAD keep resolving to the first",
            guards: "the copies are identical; copies that differ are left to a human (which one the children and the HEAD mean); unsafe because the UI's flat listing loses a row",
            planner: Some(crate::fix::quarantine::plan_duplicate_id),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for i in 0..ctx.reader.len() {
            let id = ctx.reader.id(i);
            if let Some(&first) = seen.get(id) {
                out.push(Finding::new(
                    self.id(),
                    Severity::Warning,
                    ctx.event_path(i),
                    format!(
                        "event {} reuses the id of event {}; the SDK resolves the id to {} only",
                        ix(i),
                        ix(first),
                        ix(first)
                    ),
                ));
            } else {
                seen.insert(id, i);
            }
        }
    }
}
