//! `false-root`: the #4057 fingerprint. A resume by a 1.31–1.34 server over a
//! pre-tree (flat) log stamped the first new event `parent_id: "__root__"`,
//! cutting every older event out of the agent's view.

use super::{ix, plural, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::store::ParentRef;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "false-root";

pub struct FalseRootCheck;

/// One `__root__` event that matches the fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FalseRoot {
    /// Index of the event stamped `"__root__"`.
    pub root: usize,
    /// The artifacts directly before it (`first..root`).
    pub artifacts: std::ops::Range<usize>,
    /// The last real (non-artifact) event before it: the parent the SDK would
    /// have stamped without the bug (what ≥1.35's leaf fallback returns).
    pub relink_to: usize,
    /// Every guard holds (see [`find`]); otherwise the shape is only probable.
    pub confirmed: bool,
    /// Guards that failed, in words (empty when confirmed).
    pub doubts: Vec<String>,
    /// Readable events before the root that the agent does not see.
    pub stranded: usize,
}

/// Every `__root__` at index > 0 that matches the fingerprint:
/// 1. all readable real events before it carry no `parent_id` (a
///    genuinely flat log), and there is at least one event before the
///    artifacts (events that cannot be read count, and make it probable);
/// 2. it sits directly after one or more artifacts
///    (`ConversationStateUpdateEvent` / `ConversationErrorEvent`), at least one
///    of which carries a `parent_id` (an event there that cannot be read, or
///    its placeholder, may be that artifact: a doubt).
///
/// It is *confirmed* when, in addition (domain.md §4 guards):
/// 3. every artifact `parent_id` in that run names a legacy event (one before
///    the first event that carries a `parent_id`);
/// 4. it is the only `__root__` past index 0;
/// 5. it is the root of the active branch (its subtree holds the leaf);
/// 6. every event before it can be read.
///
/// A deliberate `navigate_to(None)` in a tree-era log fails guard 1 (its
/// earlier events carry `parent_id`s) and is never reported.
/// The analysis, computed once per conversation (shared by the check, the
/// report and the repair).
pub fn find<'c>(ctx: &'c Ctx) -> &'c [FalseRoot] {
    ctx.shared.false_roots.get_or_init(|| compute(ctx))
}

/// A state-sync artifact, for the fingerprint: a placeholder convo-doctor
/// left for an event it set aside stands for an event of unknown kind, so it
/// counts as a real one.
fn artifact(rec: &crate::store::EventRecord) -> bool {
    rec.is_artifact() && !rec.placeholder
}

fn compute(ctx: &Ctx) -> Vec<FalseRoot> {
    let r = &ctx.reader;
    let n = r.len();
    let roots: Vec<usize> = (1..n)
        .filter(|&i| r.record(i).is_some_and(|rec| rec.parent == ParentRef::Root))
        .collect();
    if roots.is_empty() {
        // nothing to fingerprint: none of the per-event tables below
        // (40 bytes an event) is needed
        return Vec::new();
    }
    let active_root = ctx
        .views
        .agent
        .as_ref()
        .ok()
        .and_then(|c| c.first().copied());
    // run_start[i]: where the run of artifacts ending just before i starts
    // (i itself when i-1 is not an artifact). Computed once, so a log of
    // thousands of roots stays linear.
    // An event that cannot be read, or a placeholder set aside for one, may
    // have been an artifact (the one with the `parent_id`, cut by the same
    // crash): it extends the run, as a doubt.
    // Only when the readable artifacts there show no `parent_id`, and never
    // a placeholder that answers a tool call (a result, not an artifact).
    let unknown = |i: usize| {
        r.record(i)
            .is_none_or(|rec| rec.placeholder && rec.kind == crate::kinds::CONVERSATION_ERROR)
    };
    let mut run_start = vec![0usize; n];
    let mut ext_start = vec![0usize; n];
    for i in 1..n {
        let prev_artifact = r.record(i - 1).is_some_and(artifact);
        run_start[i] = if prev_artifact { run_start[i - 1] } else { i };
        ext_start[i] = if prev_artifact || unknown(i - 1) {
            ext_start[i - 1]
        } else {
            i
        };
    }
    let parented = |run: std::ops::Range<usize>| {
        run.into_iter()
            .any(|i| !unknown(i) && r.record(i).is_some_and(|rec| rec.parent.is_present()))
    };
    // The legacy log: the events before the first one with a `parent_id`.
    let first_parented = (0..n)
        .find(|&i| r.record(i).is_some_and(|rec| rec.parent.is_present()))
        .unwrap_or(n);
    // For guard 1, once: the first real event that has a `parent_id`, and
    // for each k the last event before k that is not a readable artifact
    // (an event that cannot be read may be a real one: it is a candidate,
    // and a doubt), and how many cannot be read.
    let not_flat_at = (0..n)
        .find(|&i| {
            r.record(i)
                .is_some_and(|rec| !artifact(rec) && rec.parent.is_present())
        })
        .unwrap_or(n);
    let mut last_real: Vec<Option<usize>> = vec![None; n + 1];
    let mut unreadable_before: Vec<usize> = vec![0; n + 1];
    for i in 0..n {
        let rec = r.record(i);
        // a placeholder stands for an event of unknown kind: a real one;
        // a copy whose id the SDK resolves to another event cannot be a
        // parent (a re-link to its id lands on that other event)
        let real = rec.is_none_or(|rec| !artifact(rec));
        let own_id = r.owns_its_id(i);
        last_real[i + 1] = if real && own_id {
            Some(i)
        } else {
            last_real[i]
        };
        unreadable_before[i + 1] = unreadable_before[i] + usize::from(r.read(i).is_err());
    }
    let mut out = Vec::new();
    for &root in &roots {
        // The run of artifacts directly before the root (through events
        // that may have been artifacts when the readable ones show none
        // with a `parent_id`).
        let first = if parented(run_start[root]..root) {
            run_start[root]
        } else {
            ext_start[root]
        };
        if first == root {
            continue;
        }
        let run = first..root;
        let any_parented = parented(run.clone());
        let unknowns: Vec<usize> = run.clone().filter(|&i| unknown(i)).collect();
        if !any_parented && unknowns.is_empty() {
            continue;
        }
        // Guard 1: real events before the run: all parent-less, at least
        // one. Events that cannot be read there are a doubt, not a veto:
        // the shape is still this bug's, only not proven.
        let flat = not_flat_at >= first;
        let relink_to = last_real[first];
        let (true, Some(relink_to)) = (flat, relink_to) else {
            continue;
        };
        // The legacy log: the events before the first one with a `parent_id`.
        let legacy_end = first_parented.min(root);
        let mut doubts = Vec::new();
        for i in run.clone() {
            if let Some(ParentRef::Id(p)) = r.record(i).map(|rec| &rec.parent) {
                match r.index.id_to_idx.get_cid(p) {
                    Some(&pi) if pi < legacy_end => {}
                    _ => doubts.push(format!(
                        "the artifact at {} points outside the legacy log",
                        ix(i)
                    )),
                }
            }
        }
        if !unknowns.is_empty() {
            doubts.push(format!(
                "{} directly before it cannot be read (or was set aside), so the artifact with a `parent_id` the fingerprint needs is {}",
                match unknowns[..] {
                    [i] => format!("event {}", ix(i)),
                    _ => format!("{} events", unknowns.len()),
                },
                if any_parented { "not the only sign of a resume" } else { "assumed, not seen" }
            ));
        }
        let unread = unreadable_before[first];
        if unread > 0 {
            doubts.push(format!(
                "{} before it cannot be read, so the log cannot be vouched for as flat",
                plural(unread, "event", "events")
            ));
        }
        if roots.len() > 1 {
            doubts.push(format!(
                "the log has {} `__root__` events, not one",
                roots.len()
            ));
        }
        if active_root != Some(root) {
            doubts.push("the agent's current branch does not start at it".into());
        }
        // orphans are in index order
        let stranded = ctx.views.orphans.partition_point(|(i, _)| *i < root);
        out.push(FalseRoot {
            root,
            artifacts: run,
            relink_to,
            confirmed: doubts.is_empty(),
            doubts,
            stranded,
        });
    }
    out
}

impl Check for FalseRootCheck {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "A resume over a pre-tree log stamped `__root__` and cut older history off (#4057)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event whose `parent_id` is \"__root__\" although it is not a deliberate new
  root. A server of 1.31–1.34 resuming a conversation written before 1.31 (no
  `parent_id` anywhere) found an artifact with a `parent_id` at the end of the
  log (a state update or error written during the interrupted startup), took
  the HEAD for empty, and stamped the next event `\"__root__\"`. The agent walks
  from the leaf back to a root, so it stops there and sees none of the older
  history; the web UI, which lists files, still shows all of it.

How it is told apart from a deliberate root
  `navigate_to(None)` also writes `\"__root__\"`, but in a tree-era log the
  events before it carry `parent_id`s. The fingerprint requires: every real
  event before it has no `parent_id`; it sits directly after artifact(s), one
  of which has a `parent_id`. It is reported as an error (confirmed) when, in
  addition, the artifacts point into the legacy log, it is the only such root,
  and the agent's current branch starts at it; otherwise as a warning
  (probable), because a deliberate `navigate_to(None)` right after resuming a
  legacy log leaves the same bytes. An event between that cannot be read
  (the crash that interrupted the startup often cuts one), or its
  placeholder, may be the artifact with the `parent_id`: the root is then
  probable, never confirmed. A `__root__` in the files past an index gap,
  after a log without `parent_id`s, is reported as probable too: the SDK
  does not read that far until the gap is closed, and the repair judges it
  then, in the same run.

Repair
  Set that one event's `parent_id` to the id of the last real event before it
  (what a 1.35+ server would have chosen). Only that value changes. Probable
  cases are repaired only with `--unsafe-fixes`."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "set the false root's `parent_id` to the id of the last real (non-artifact) event before it: the parent a 1.35+ server would have chosen",
            guards: "every real event before it has no `parent_id`; it sits directly after artifact(s) one of which has a `parent_id`, all pointing into the legacy log; it is the only `__root__` past index 0; the agent's current branch starts at it; every event before it can be read. If any of the last four fails the root is only *probable*: that repair is unsafe (a deliberate `navigate_to(None)` can look the same) and is made only with `--unsafe-fixes`. A deliberate root (tree-era events before it) never matches.",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for fr in find(ctx) {
            let (sev, lead) = if fr.confirmed {
                (Severity::Error, "false root")
            } else {
                (Severity::Warning, "probable false root")
            };
            let mut msg = format!(
                "{lead}: event {} starts a new root right after {} over a pre-tree log; \
                 {} before it {} cut off from the agent; re-link it to event {}",
                ix(fr.root),
                plural(fr.artifacts.len(), "artifact", "artifacts"),
                plural(fr.stranded, "event", "events"),
                if fr.stranded == 1 { "is" } else { "are" },
                ix(fr.relink_to),
            );
            if !fr.confirmed {
                msg.push_str(&format!(
                    " (not certain: {}; a deliberate navigate_to(None) can look the same)",
                    fr.doubts.join("; ")
                ));
            }
            out.push(
                Finding::new(self.id(), sev, ctx.event_path(fr.root), msg).fixable(fr.confirmed),
            );
        }
        if let Some((name, idx)) = beyond_the_gap(ctx) {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                format!("events/{name}"),
                format!(
                    "probable false root beyond the index gap: event {} starts a new root right after a pre-tree log; \
                     the SDK stops at the gap and does not see it yet; `repair` closes the gap, then judges it \
                     (not certain until then: a deliberate navigate_to(None) can look the same)",
                    ix(idx as usize)
                ),
            ));
        }
    }
}

/// A `__root__` among the files beyond an index gap, over a log whose real
/// events before it all lack a `parent_id` (at least one of them): the
/// fingerprint's shape where the SDK does not read, so the diagnosis does
/// not wait for the repair that closes the gap. Its file name and index.
fn beyond_the_gap<'a>(ctx: &Ctx<'a>) -> Option<(&'a str, u64)> {
    ctx.index.gap_at?;
    let files = &ctx.conv.events.files;
    let r = &ctx.reader;
    let mut legacy = false;
    for i in 0..r.len() {
        match r.record(i) {
            Some(rec) if !artifact(rec) && rec.parent.is_present() => return None,
            Some(rec) if !artifact(rec) => legacy = true,
            _ => {}
        }
    }
    let mut beyond: Vec<usize> = ctx.index.beyond_gap.clone();
    beyond.sort_by_key(|&p| files[p].idx);
    for p in beyond {
        let Ok(rec) = &files[p].record else { continue };
        if rec.parent == ParentRef::Root {
            return legacy.then_some((files[p].name.as_str(), files[p].idx));
        }
        if !artifact(rec) && rec.parent.is_present() {
            return None;
        }
        legacy |= !artifact(rec);
    }
    None
}

/// Re-link each false root to the last real event before it: safe when
/// confirmed, unsafe when only probable.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::Safety;
    for fr in find(ctx) {
        let rel = ctx.event_path(fr.root);
        let target = ctx.reader.id(fr.relink_to).to_string();
        let (safety, what) = if fr.confirmed {
            (
                Safety::Safe,
                format!(
                    "re-link event {} to event {} ({target}): {} events return to the agent's view",
                    ix(fr.root),
                    ix(fr.relink_to),
                    fr.stranded
                ),
            )
        } else {
            (
                Safety::Unsafe,
                format!(
                    "re-link event {} to event {} ({target}); it is probable, not certain ({}): a deliberate \
                     navigate_to(None) can look the same, so use the flag only if you know it was not deliberate",
                    ix(fr.root),
                    ix(fr.relink_to),
                    fr.doubts.join("; ")
                ),
            )
        };
        p.relink(rel, &target, safety, what);
    }
}
