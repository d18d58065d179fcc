//! `parent-cycle`: following `parent_id`s comes back to where it started.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "parent-cycle";

pub struct ParentCycle;

impl Check for ParentCycle {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "The parent links of some events form a loop"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Events whose `parent_id` links form a loop (A's parent is B, B's parent A).

Why it matters
  `path_to_root` raises \"Cycle in event tree\" (ValueError) when the agent's
  branch runs into it, and the conversation fails to load (OpenHands#15247).
  Causes: an explicit forward `parent_id` from patched or custom code (#4089).

Repair
  Unsafe (only with `repair --unsafe-fixes`): a loop needs a link that
  points forward (to a later index), which the SDK never writes (#4089
  refuses an unknown parent on append). Each such link of the loop is
  re-linked to the readable event before it in index order, the parent a
  tolerant reader assumes; the SDK's walk then ends. Which link was wrong
  cannot be known for certain, hence unsafe."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "re-link each event of the loop whose `parent_id` points forward (to a later index, which the SDK never writes) to the readable event before it in index order",
            guards: "the event is on a loop and its parent is later in the log; unsafe because which link of the loop was wrong cannot be known for certain",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let blocking = matches!(ctx.load_error(), Some(LoadError::Cycle { .. }));
        for mut members in loops(ctx) {
            members.sort_unstable();
            let names: Vec<String> = members.iter().map(|&m| ix(m)).collect();
            out.push(Finding::new(
                self.id(),
                if blocking {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                ctx.event_path(members[0]),
                format!(
                    "events {} point at each other in a loop{}",
                    names.join(" → "),
                    if blocking {
                        "; the SDK cannot load the conversation (ValueError)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
}

/// Each loop of explicit links, its members in walk order (iteratively, so
/// a long chain costs no stack; each event is walked once).
pub(super) fn loops(ctx: &Ctx) -> Vec<Vec<usize>> {
    let r = &ctx.reader;
    let n = r.len();
    // 0 = unvisited, 1 = on the current walk, 2 = done
    let mut state = vec![0u8; n];
    let mut out = Vec::new();
    for start in 0..n {
        let mut walk = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                2 => break,
                1 => {
                    let from = walk.iter().position(|&w| w == i).unwrap_or(0);
                    out.push(walk[from..].to_vec());
                    break;
                }
                _ => {}
            }
            state[i] = 1;
            walk.push(i);
            // Only explicit links can loop; the linear fallback goes down.
            cur = r
                .record(i)
                .and_then(|rec| rec.parent.cid())
                .and_then(|p| r.index.id_to_idx.get_cid(p).copied());
        }
        for w in walk {
            state[w] = 2;
        }
    }
    out
}

/// Every event on a loop, in index order.
fn on_loops(ctx: &Ctx) -> Vec<usize> {
    let mut out: Vec<usize> = loops(ctx).into_iter().flatten().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Re-link each forward link of a loop to the readable event before it;
/// a loop through files that hold each other's JSON is
/// `filename-id-mismatch`'s to undo first (putting them back ends it).
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    let r = &ctx.reader;
    let crossed: std::collections::HashSet<usize> = super::filename_id_mismatch::crosses(ctx)
        .iter()
        .filter(|c| c.reading.is_some())
        .flat_map(|c| c.members.iter().copied())
        .collect();
    let mut through_cross = std::collections::HashSet::new();
    for l in loops(ctx) {
        if l.iter().any(|m| crossed.contains(m)) {
            through_cross.extend(l);
        }
    }
    for i in on_loops(ctx) {
        let Some(parent) = r
            .record(i)
            .and_then(|rec| rec.parent.cid())
            .and_then(|p| r.index.id_to_idx.get_cid(p).copied())
        else {
            continue;
        };
        if parent == i {
            p.leave(
                ctx.event_path(i),
                format!(
                    "event {} names itself as its parent (its `parent_id` is the id in its own file name), so its content was written for another file: a human decides which event it follows and sets its `parent_id` to that event's id",
                    ix(i)
                ),
            );
            continue;
        }
        if parent < i {
            continue;
        }
        if through_cross.contains(&i) {
            p.leave(
                ctx.event_path(i),
                "the loop runs through files that hold each other's JSON: `filename-id-mismatch` puts them back first",
            );
            continue;
        }
        let rel = ctx.event_path(i);
        let Some(t) = r.readable_before(i) else {
            p.leave(rel, "no readable event before it to re-link it to");
            continue;
        };
        let tid = r.id(t).to_string();
        p.relink(
            rel,
            &tid,
            crate::edit::Safety::Unsafe,
            format!(
                "re-link event {} (its parent, event {}, comes after it: a loop) to the event before it, {} ({tid})",
                ix(i),
                ix(parent),
                ix(t)
            ),
        );
    }
}
