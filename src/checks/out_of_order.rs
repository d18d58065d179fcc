//! `out-of-order`: two event files trade indexes (each keeps its name and
//! its JSON), so a parent comes after its child in the log, and the SDK's
//! walk may come back to where it started through the links a pre-tree log
//! leaves implicit.

use std::collections::{HashMap, HashSet};

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::store::event::Id;
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "out-of-order";

pub struct OutOfOrder;

/// Candidate positions beyond which no pair is tried (a log this scrambled
/// is not two files out of order).
const MAX_CANDIDATES: usize = 24;

/// How far from a traded slot a known timestamp is looked for.
const NEAR: usize = 16;

/// What the log shows.
#[derive(Clone, Debug)]
pub struct Disorder {
    /// Links (from, to) whose target lies later in the log: `parent_id` or
    /// `action_id`, which the SDK's writer always points back.
    pub forward: Vec<(usize, usize)>,
    /// The one pair of positions whose files, traded back, make every link
    /// point back and the timestamps run in order; `None` when no pair or
    /// several do.
    pub swap: Option<(usize, usize)>,
    /// How many pairs would do (0, 1, or more).
    pub fits: usize,
}

/// The analysis (computed on demand; cheap when no link points forward).
pub fn find(ctx: &Ctx) -> Option<Disorder> {
    let r = &ctx.reader;
    let n = r.len();
    let pos = |id: &str| r.index.id_to_idx.get(id).copied();
    let links = |i: usize| -> Vec<Id> {
        r.record(i)
            .map(|rec| rec.links().into_iter().flatten().collect())
            .unwrap_or_default()
    };
    let mut forward = Vec::new();
    for i in 0..n {
        for t in links(i) {
            if let Some(p) = pos(&t).filter(|&p| p > i) {
                forward.push((i, p));
            }
        }
    }
    // a loop of explicit links is parent-cycle's: its links are not ours
    let looped: HashSet<usize> = if forward.is_empty() {
        HashSet::new()
    } else {
        super::parent_cycle::loops(ctx)
            .into_iter()
            .flatten()
            .collect()
    };
    forward.retain(|(from, _)| !looped.contains(from));
    let cycle = matches!(ctx.load_error(), Some(LoadError::Cycle { .. })) && looped.is_empty();
    if forward.is_empty() && !cycle {
        return None;
    }
    let ts = |i: usize| r.record(i).and_then(|rec| rec.timestamp());
    // candidates: the ends of forward links, and both sides of every place
    // the timestamps run backwards (from one known timestamp to the next:
    // an event that cannot be read tells none)
    let mut cand: Vec<usize> = forward.iter().flat_map(|&(a, b)| [a, b]).collect();
    let mut prev: Option<(usize, Id)> = None;
    for i in 0..n {
        let Some(b) = ts(i) else { continue };
        if let Some((j, a)) = &prev {
            if *a > b {
                cand.extend([*j, i]);
            }
        }
        prev = Some((i, b));
    }
    cand.sort_unstable();
    cand.dedup();
    if cand.len() > MAX_CANDIDATES || cand.len() < 2 {
        return Some(Disorder {
            forward,
            swap: None,
            fits: 0,
        });
    }
    // events linking into each id, for the links that touch a moved file
    let mut into: HashMap<Id, Vec<usize>> = HashMap::new();
    for i in 0..n {
        for t in links(i) {
            into.entry(t).or_default().push(i);
        }
    }
    let mut fits = Vec::new();
    for (k, &x) in cand.iter().enumerate() {
        for &y in &cand[k + 1..] {
            if swap_fits(ctx, x, y, &forward, &into, &ts) {
                fits.push((x, y));
            }
        }
    }
    Some(Disorder {
        forward,
        swap: (fits.len() == 1).then(|| fits[0]),
        fits: fits.len(),
    })
}

/// Whether trading the files at `x` and `y` back makes every link that
/// touches them (and every link that pointed forward) point back, and the
/// timestamps around both slots run in order.
fn swap_fits<'a>(
    ctx: &Ctx<'a>,
    x: usize,
    y: usize,
    forward: &[(usize, usize)],
    into: &HashMap<Id, Vec<usize>>,
    ts: &dyn Fn(usize) -> Option<Id>,
) -> bool {
    let r = &ctx.reader;
    let moved = |i: usize| {
        if i == x {
            y
        } else if i == y {
            x
        } else {
            i
        }
    };
    // every forward link must touch a moved file
    if forward
        .iter()
        .any(|&(a, b)| ![a, b].iter().any(|&e| e == x || e == y))
    {
        return false;
    }
    let points_back = |from: usize| {
        let Some(rec) = r.record(from) else {
            return true;
        };
        rec.links().into_iter().flatten().all(|t| {
            r.index
                .id_to_idx
                .get(&t)
                .is_none_or(|&p| moved(p) < moved(from))
        })
    };
    let mut touched: HashSet<usize> = HashSet::from([x, y]);
    for &m in &[x, y] {
        if let Some(id) = r.record(m).and_then(|rec| rec.id.as_deref()) {
            touched.extend(into.get(id).into_iter().flatten().copied());
        }
    }
    if !touched.into_iter().all(points_back) {
        return false;
    }
    // the timestamps at each slot after the trade: no later than the next
    // known one, no earlier than the previous known one (a file that cannot
    // be read tells none; a few slots away at most)
    let at = |slot: usize| ts(moved(slot));
    let n = r.len();
    let near = |slots: &mut dyn Iterator<Item = usize>| slots.take(NEAR).find_map(at);
    [x, y].iter().all(|&slot| {
        let me = at(slot);
        let before = near(&mut (0..slot).rev());
        let after = near(&mut (slot + 1..n));
        me.is_some() && before.is_none_or(|b| Some(b) <= me) && after.is_none_or(|a| me <= Some(a))
    })
}

impl Check for OutOfOrder {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "Two event files trade indexes: a parent comes after its child in the log"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Links (`parent_id`, `action_id`) that point to a later index, which the
  SDK's writer never leaves (it appends, and refuses an unknown parent):
  event files that were written, copied or restored out of order. In a log
  that began before the tree era, a pre-tree event's parent is the file
  before it, so a tree event moved among them makes the SDK's walk come back
  to where it started (ValueError: Cycle in event tree) and the conversation
  fails to load.

Why it matters
  The web UI lists the events in the wrong order; the agent may lose its
  history or the conversation may not load at all.

Repair
  When exactly one pair of files, traded back, makes every link point back
  and the events' timestamps run in order, the two files are renamed to
  each other's index (their names keep their ids; no byte changes). When no
  pair or several do, nothing is changed and the finding says so: which
  order the events were written in needs a human."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            phase: crate::edit::Phase::Index,
            what: "rename the two files to each other's index (each keeps its id and every byte)",
            guards: "exactly one pair of files, traded back, makes every link point back and the timestamps run in order",
            planner: Some(plan),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(d) = find(ctx) else { return };
        let cycle = match ctx.load_error() {
            Some(LoadError::Cycle { idx }) => Some(*idx),
            _ => None,
        };
        // a loop of explicit links is parent-cycle's (find leaves it out)
        let explicit_loop = cycle.is_some() && !super::parent_cycle::loops(ctx).is_empty();
        let blocking = cycle.is_some() && !explicit_loop;
        if d.forward.is_empty() && !blocking {
            return;
        }
        let what = match d.forward.first() {
            Some(&(from, to)) => format!(
                "event {} links to event {}, later in the log{}",
                ix(from),
                ix(to),
                if d.forward.len() > 1 {
                    format!(" ({} such links)", d.forward.len())
                } else {
                    String::new()
                }
            ),
            None => "the SDK's walk comes back to an event through the links a pre-tree log leaves implicit".to_string(),
        };
        let load = match cycle {
            Some(idx) if blocking => format!(
                "; the SDK cannot load the conversation (ValueError: Cycle in event tree at event {})",
                ix(idx)
            ),
            _ => String::new(),
        };
        let verdict = match (d.swap, d.fits) {
            (Some((x, y)), _) => format!(
                "; events {} and {} were written out of order: trade their indexes back",
                ix(x),
                ix(y)
            ),
            (None, 0) => "; no pair of files traded back puts the log in order: which order the events were written in needs a human".to_string(),
            (None, k) => format!("; {k} pairs of files would put it in order: which one needs a human"),
        };
        let file = d
            .swap
            .map(|(x, _)| x)
            .or(d.forward.first().map(|&(f, _)| f))
            .or(cycle)
            .map(|i| ctx.event_path(i))
            .unwrap_or_else(|| "events/".to_string());
        out.push(
            Finding::new(
                self.id(),
                if blocking {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                file,
                format!("{what}{load}{verdict}"),
            )
            .fixable(d.swap.is_some()),
        );
    }
}

/// Trade the two files' indexes back.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
    let Some(d) = find(ctx) else { return };
    let Some((x, y)) = d.swap else {
        if let Some(&(from, _)) = d.forward.first() {
            p.leave(
                ctx.event_path(from),
                if d.fits == 0 {
                    "no pair of files traded back makes every link point back with the timestamps in order: which order the events were written in needs a human".to_string()
                } else {
                    format!("{} pairs of files traded back would each put the log in order: which one needs a human", d.fits)
                },
            );
        }
        return;
    };
    for (from, to) in [(x, y), (y, x)] {
        let id = ctx.reader.id(from);
        let name = crate::store::event::canonical_name(to as u64, id);
        p.push(
            ctx.event_path(from),
            Action::Rename(format!("events/{name}")),
            Safety::Safe,
            format!(
                "rename event {} to `{name}`: events {} and {} were written out of order (their links and timestamps say so); every byte stays",
                ix(from),
                ix(x),
                ix(y)
            ),
        );
    }
}
