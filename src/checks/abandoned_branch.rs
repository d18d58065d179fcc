//! `abandoned-branch` (info): events off the active branch for a legitimate
//! reason: `navigate_to`, a fork, or a deliberate `navigate_to(None)` root.

use super::{false_root, plural, ranges, Check, Ctx, Finding, Repair, Severity};
use crate::view::OrphanWhy;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "abandoned-branch";

pub struct AbandonedBranch;

impl Check for AbandonedBranch {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "Events sit on branches the agent left (navigate_to / fork); nothing is wrong"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Readable events that are not on the agent's active branch because the
  conversation branched on purpose: `navigate_to(event)` moved the HEAD back
  and new events grew a sibling branch, or `navigate_to(None)` started a new
  root. The UI lists them; the agent does not see them, by design.

Why it matters
  It does not: this is information, so an operator can tell a deliberate
  branch from lost history. State-sync artifacts (ConversationStateUpdateEvent)
  hang off every branch and are not counted.

Repair
  None, and none needed."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "none needed: a branch left by `navigate_to` or a fork is the SDK's own design",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let false_roots: std::collections::HashSet<usize> =
            false_root::find(ctx).iter().map(|f| f.root).collect();
        // Events below the HEAD itself are head-lag's to report.
        let mut lagging: std::collections::HashSet<usize> = super::head_lag::find(ctx)
            .map(|l| l.events.iter().copied().collect())
            .unwrap_or_default();
        // ...and actions cut off by a misplaced recovery error, that check's.
        lagging.extend(
            super::misparented_recovery_error::find(ctx)
                .iter()
                .map(|m| m.action),
        );
        let mut off: Vec<usize> = Vec::new();
        let mut before_root: Vec<usize> = Vec::new();
        for &(i, why) in &ctx.views.orphans {
            match why {
                OrphanWhy::OffBranch { .. } if !lagging.contains(&i) => off.push(i),
                OrphanWhy::BeforeRoot { root } if !false_roots.contains(&root) => {
                    before_root.push(i)
                }
                _ => {}
            }
        }
        if !off.is_empty() {
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                "events/",
                format!(
                    "{} on branches the agent left (navigate_to or fork): {}",
                    plural(off.len(), "event", "events"),
                    ranges(&off)
                ),
            ));
        }
        if !before_root.is_empty() {
            let root = ctx
                .views
                .agent
                .as_ref()
                .ok()
                .and_then(|c| c.first().copied())
                .unwrap_or(0);
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                "events/",
                format!(
                    "{} before the deliberate new root at event {} (navigate_to(None)): {}",
                    plural(before_root.len(), "event", "events"),
                    super::ix(root),
                    ranges(&before_root)
                ),
            ));
        }
    }
}
