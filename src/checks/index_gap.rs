//! `index-gap`: an index is missing, so every event file after it is invisible.

use super::{ix, ix_range, plural, Applicability, Check, Ctx, Finding, Repair, Severity};

pub struct IndexGap;

impl Check for IndexGap {
    fn id(&self) -> &'static str {
        "index-gap"
    }

    fn summary(&self) -> &'static str {
        "An event index is missing; the files after it are invisible to the SDK"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  The event files' indices do not run contiguously from 00000: one is missing.

Why it matters
  The SDK's log is the contiguous run of indices from 0 and stops at the first
  missing one (\"Event index gap detected\"). Every event after the gap is
  invisible to the agent, the UI, counts and search; a leaf beyond it makes the
  conversation fail to load (KeyError); the next append may overwrite an
  existing index.

Repair
  Safe: renumber the files after the gap so the index is contiguous again
  (renames only; every byte stays). The first event after the gap whose
  parent is the missing event is re-linked to the event before the gap."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "renumber the files after the gap so the index is contiguous again (renames only: every byte stays); the first event after the gap whose parent is the missing event is re-linked to the event before the gap",
            guards: "no file after the gap shares an index with another",
            planner: Some(crate::fix::quarantine::plan_gap),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(gap) = ctx.index.gap_at else { return };
        let files = &ctx.conv.events.files;
        let mut hidden: Vec<u64> = ctx.index.beyond_gap.iter().map(|&p| files[p].idx).collect();
        hidden.sort_unstable();
        let (lo, hi) = (hidden[0] as usize, hidden[hidden.len() - 1] as usize);
        let head_beyond = matches!(
            ctx.load_error(),
            Some(crate::view::LoadError::UnknownLeaf { id })
                if ctx.index.beyond_gap.iter().any(|&p| files[p].name_id == *id)
        );
        let tail = if head_beyond {
            "; the stored HEAD (leaf_event_id) is one of them, so the SDK cannot load the conversation (KeyError)"
        } else {
            ""
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "events/",
            format!(
                "event index {} is missing: the log stops there and {} after it ({}) {} invisible to the agent and the UI{tail}",
                ix(gap as usize),
                plural(hidden.len(), "event file", "event files"),
                ix_range(lo, hi),
                if hidden.len() == 1 { "is" } else { "are" },
            ),
        ));
    }
}
