//! The load verdict: one sentence on whether the SDK would load the
//! conversation and what its agent would see, with the counts that add up
//! across a repair.

use super::{EventCounts, LoadFailure};
use crate::checks::{self, false_root, ix, plural, Ctx};
use crate::view::OrphanWhy;

/// What the SDK would do with this conversation, in one sentence.
pub(super) fn verdict(
    ctx: &Ctx,
    ev: &EventCounts,
    load_error: &Option<LoadFailure>,
    false_roots: &[false_root::FalseRoot],
) -> String {
    let hidden = ctx.index.beyond_gap.len();
    let gap_note = if hidden > 0 {
        format!(
            "; {} beyond the index gap {} invisible to both",
            plural(hidden, "event file", "event files"),
            if hidden == 1 { "is" } else { "are" }
        )
    } else {
        String::new()
    };
    if let Some(e) = load_error {
        return format!(
            "the SDK cannot load this conversation ({}: {}); the agent sees none of its {}{gap_note}",
            e.exception,
            e.message,
            plural(ev.ui_view, "readable event", "readable events"),
        );
    }
    let seen = ev.agent_view.unwrap_or(0);
    let total = seen + ev.orphaned;
    let counted = format!(
        "{}{}",
        plural(total, "event", "events"),
        not_its_own(ctx, total)
    );
    if ev.orphaned == 0 {
        return format!("agent sees all {counted}{gap_note}");
    }
    let lagging: std::collections::HashSet<usize> = checks::head_lag::find(ctx)
        .map(|l| l.events.iter().copied().collect())
        .unwrap_or_default();
    let cut_actions: std::collections::HashSet<usize> =
        checks::misparented_recovery_error::find(ctx)
            .iter()
            .map(|m| m.action)
            .collect();
    let roots: std::collections::HashSet<usize> = false_roots.iter().map(|f| f.root).collect();
    let (mut cut_false, mut before_root, mut off) = (0, 0, 0);
    let (mut lag, mut cut_by_error, mut detached) = (0, 0, 0);
    for &(i, why) in &ctx.views.orphans {
        match why {
            _ if lagging.contains(&i) => lag += 1,
            _ if cut_actions.contains(&i) => cut_by_error += 1,
            OrphanWhy::BeforeRoot { root } if roots.contains(&root) => cut_false += 1,
            OrphanWhy::BeforeRoot { .. } => before_root += 1,
            OrphanWhy::OffBranch { .. } => off += 1,
            OrphanWhy::Detached | OrphanWhy::CannotLoad => detached += 1,
        }
    }
    let mut parts = Vec::new();
    if cut_false > 0 {
        let fr = &false_roots[0];
        parts.push(format!(
            "{cut_false} cut off by a {}false root at event {}",
            if fr.confirmed { "" } else { "probable " },
            ix(fr.root)
        ));
    }
    if before_root > 0 {
        parts.push(format!(
            "{before_root} before a deliberate new root (navigate_to(None))"
        ));
    }
    if lag > 0 {
        parts.push(format!(
            "{lag} written after the stored HEAD, which never moved to them"
        ));
    }
    if cut_by_error > 0 {
        parts.push(format!(
            "{cut_by_error} cut off by a misplaced crash-recovery error"
        ));
    }
    if off > 0 {
        parts.push(format!("{off} on abandoned branches (navigate_to/fork)"));
    }
    if detached > 0 {
        parts.push(format!("{detached} detached from the agent's branch"));
    }
    format!(
        "agent sees {seen} of {counted}: {}{gap_note}",
        parts.join(", ")
    )
}

/// The events of the agent's branch that are not the conversation's own,
/// named so that counts add up across a repair (a set-aside event's
/// placeholder, state-sync records a re-link brings back, which the
/// events cut off never count): " (42 + 1 placeholder … + 9 state-sync
/// records)" of `total`, or nothing.
fn not_its_own(ctx: &Ctx, total: usize) -> String {
    let Ok(branch) = &ctx.views.agent else {
        return String::new();
    };
    let (mut placeholders, mut syncs) = (0, 0);
    for rec in branch.iter().filter_map(|&i| ctx.reader.record(i)) {
        placeholders += usize::from(rec.placeholder);
        syncs += usize::from(rec.is_state_update());
    }
    if placeholders + syncs == 0 {
        return String::new();
    }
    let mut parts = vec![total.saturating_sub(placeholders + syncs).to_string()];
    if placeholders > 0 {
        parts.push(plural(
            placeholders,
            "placeholder for a set-aside or missing event",
            "placeholders for set-aside or missing events",
        ));
    }
    if syncs > 0 {
        parts.push(plural(syncs, "state-sync record", "state-sync records"));
    }
    format!(" ({})", parts.join(" + "))
}
