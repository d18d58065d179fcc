//! `head-lag`: events written after the stored HEAD, descending from it, that
//! the HEAD never advanced to: a crash between an event write and the
//! base_state.json save.

use std::collections::HashSet;

use super::{ix, plural, ranges, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::OrphanWhy;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "head-lag";

pub struct HeadLag;

/// Events hanging below the stored leaf, off the agent's branch.
#[derive(Debug, Clone)]
pub struct Lag {
    pub leaf: usize,
    /// The events below the leaf, in index order (state updates included).
    pub events: Vec<usize>,
    /// They form one chain (no sibling branches).
    pub single_chain: bool,
    /// Every one was modified after base_state.json (crash evidence; a
    /// deliberate `navigate_to` saves base_state.json after them).
    pub newer_than_state: bool,
    /// The HEAD is a tool call whose result is the first event below it
    /// (crash evidence that needs no modification time: the SDK moves the
    /// HEAD with every result it appends, and nobody navigates to a call
    /// to answer it again).
    pub answered_below: bool,
    /// The newest real (non state-update) event of the chain: the HEAD the
    /// SDK would have saved.
    pub new_leaf: Option<usize>,
}

impl Lag {
    /// One chain below the HEAD, and evidence of a crash (modification
    /// times, or a tool call's result right below it).
    pub fn confident(&self) -> bool {
        self.single_chain
            && (self.newer_than_state || self.answered_below)
            && self.new_leaf.is_some()
    }
}

/// The analysis, computed once per conversation (shared by the check, the
/// report and the repair).
pub fn find<'c>(ctx: &'c Ctx) -> Option<&'c Lag> {
    ctx.shared.head_lag.get_or_init(|| compute(ctx)).as_ref()
}

fn compute(ctx: &Ctx) -> Option<Lag> {
    let leaf_set = ctx
        .conv
        .base_state
        .value()
        .and_then(|b| b.get("leaf_event_id"))
        .is_some_and(|v| v.is_string());
    let chain = ctx.views.agent.as_ref().ok()?;
    let leaf = *chain.last()?;
    if !leaf_set {
        return None;
    }
    let r = &ctx.reader;
    // Orphans whose ancestry meets the branch at the leaf itself (but a
    // copy whose id the SDK resolves to another event: no HEAD can name it,
    // and `duplicate-event-id` reports it).
    let below: Vec<usize> = ctx
        .views
        .orphans
        .iter()
        .filter(|(_, why)| *why == OrphanWhy::OffBranch { at: leaf })
        .map(|(i, _)| *i)
        .filter(|&i| ctx.reader.owns_its_id(i))
        .collect();
    if below.is_empty() {
        return None;
    }
    let mut members: Vec<usize> = below.clone();
    let mut is_member: HashSet<usize> = below.iter().copied().collect();
    // state updates below the leaf belong to the lost tail too
    for i in leaf + 1..r.len() {
        if r.record(i).is_some_and(|x| x.is_state_update()) && !is_member.contains(&i) {
            let mut p = r.tolerant_parent(i);
            let mut seen = HashSet::new();
            while let Some(q) = p {
                if q == leaf || is_member.contains(&q) {
                    members.push(i);
                    is_member.insert(i);
                    break;
                }
                if !seen.insert(q) || ctx.views.in_agent[q] {
                    break;
                }
                p = r.tolerant_parent(q);
            }
        }
    }
    members.sort_unstable();
    // One chain: every real member has at most one real child among them.
    let real: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| r.record(i).is_some_and(|x| !x.is_state_update()))
        .collect();
    let mut children: std::collections::HashMap<usize, usize> = Default::default();
    for &c in &real {
        if let Some(p) = r.tolerant_parent(c) {
            *children.entry(p).or_insert(0) += 1;
        }
    }
    let single_chain = real
        .iter()
        .chain(std::iter::once(&leaf))
        .all(|p| children.get(p).is_none_or(|&k| k <= 1));
    let state_mtime = ctx.conv.base_state_mtime;
    let newer_than_state = state_mtime.is_some_and(|s| {
        members
            .iter()
            .all(|&i| r.file(i).mtime.is_some_and(|m| m > s))
    });
    let answered_below = r.read(leaf).is_ok_and(|head| {
        head.kind == crate::kinds::ACTION
            && real.first().is_some_and(|&first| {
                r.tolerant_parent(first) == Some(leaf)
                    && r.read(first).is_ok_and(|res| {
                        super::tool_calls::answers(res, r.id(leaf), head.tool_call_id())
                    })
            })
    });
    Some(Lag {
        leaf,
        new_leaf: real.last().copied(),
        events: members,
        single_chain,
        newer_than_state,
        answered_below,
    })
}

impl Check for HeadLag {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "Events were written after the stored HEAD, which never advanced to them (a crash?)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Events that descend from the stored HEAD (`leaf_event_id`) but are not on
  the agent's branch, because the HEAD was not moved to them. The SDK writes
  the event file first and saves base_state.json (with the new HEAD) after; a
  crash in between leaves the newest events below a stale HEAD.

Why it matters
  The agent does not see them, and the next event it appends becomes their
  sibling: the lost tail turns into an abandoned branch for good.

How it is told apart from navigate_to
  `navigate_to(event)` also leaves newer events below the HEAD, but it saves
  base_state.json after them. When they form a single chain and either every
  lagging file is newer than base_state.json, or the HEAD is a tool call
  whose result is the first event below it (the SDK moves the HEAD with each
  result it appends; nobody navigates to a call to have it run again), it is
  reported as a warning (crash evidence); otherwise as information (it may
  be deliberate). Copies that do not keep modification times (git checkouts,
  some backups) lose the first kind of evidence, not the second.

Repair
  With the evidence (warning), set `leaf_event_id` to the newest real event of
  the chain: what the SDK would have saved. Only that value changes."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "set base_state.json `leaf_event_id` to the newest real event of the single chain below the stored HEAD: what the SDK would have saved",
            guards: "the events below the HEAD form one chain, and every one is newer than base_state.json (a deliberate `navigate_to` saves base_state.json after them) or the HEAD is a tool call whose result is the first of them (the SDK moves the HEAD with every result)",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(lag) = find(ctx) else { return };
        let confident = lag.confident();
        let msg = format!(
            "{} below the stored HEAD (event {}) never became the HEAD ({}){}",
            plural(lag.events.len(), "event", "events"),
            ix(lag.leaf),
            ranges(&lag.events),
            if confident && lag.newer_than_state {
                "; they were written after base_state.json was last saved: the HEAD lags after a crash and the agent does not see them"
            } else if confident {
                "; the HEAD is a tool call whose result is the first of them: the HEAD lags after a crash, the agent does not see them and would run the call again"
            } else {
                "; either the HEAD lags after a crash, or navigate_to moved it back on purpose (modification times do not tell)"
            }
        );
        out.push(
            Finding::new(
                self.id(),
                if confident {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                "base_state.json",
                msg,
            )
            .fixable(confident),
        );
    }
}

/// Move a lagging HEAD to the newest event of the chain below it.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::Safety;
    const REL: &str = "base_state.json";
    let Some(lag) = find(ctx) else {
        return;
    };
    let (true, Some(new_leaf)) = (lag.confident(), lag.new_leaf) else {
        p.leave(
            REL,
            "not certain it is a crash (branches below the HEAD, or base_state.json is not older than them): \
             navigate_to may have moved the HEAD on purpose",
        );
        return;
    };
    let id = ctx.reader.id(new_leaf).to_string();
    let what = format!(
        "move the HEAD from event {} to event {} ({id})",
        super::ix(lag.leaf),
        super::ix(new_leaf)
    );
    p.set(
        REL,
        "/leaf_event_id",
        serde_json::Value::from(id),
        Safety::Safe,
        what,
    );
}
