//! `stale-leaf`: base_state.json's `leaf_event_id` names no event in the log.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "stale-leaf";

pub struct StaleLeaf;

impl Check for StaleLeaf {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "The stored HEAD (leaf_event_id) names an event that is not in the log"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json's `leaf_event_id` (the HEAD: the parent of the next event)
  is not the id of any event in the SDK's index: its file was deleted, is
  beyond an index gap, or lost a duplicate-index race.

Why it matters
  The SDK resolves the active branch from the HEAD and raises KeyError: the
  conversation does not load at all.

Repair
  Unsafe (only with `repair --unsafe-fixes`): point the HEAD at the last real
  event of the log. With several branches that may be another branch than
  the one the HEAD was on. When that branch holds tool calls nothing
  answers (the lost HEAD may have been a result), each gets an
  AgentErrorEvent answering it, appended after that event, and the HEAD
  moves to the last of them: at its next step the agent runs every
  unanswered action on its branch again (`Agent._step`), and a tool whose
  result was lost may already have run.
  When no event can be read (a copy cut short after an unreadable first
  event) or every one only records state, the HEAD is cleared instead
  (`null`, the SDK's start without a HEAD): the conversation loads and the
  agent begins afresh, with nothing of the lost history to see."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "point `leaf_event_id` at the last real (not state-update) event of the log, what the SDK falls back to without a HEAD (the last outside a loop of parent links, which the SDK's walk could not leave); a tool call left unanswered on that branch gets an AgentErrorEvent answering it (the agent would run it again on resume), and the HEAD moves to it; with no real event to point at, the HEAD is cleared (null)",
            guards: "the HEAD's id is in no file at all (one beyond a gap or in a lost duplicate comes back when those are repaired, in the same run); unsafe because with several branches it may pick another one",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(LoadError::UnknownLeaf { id }) = ctx.load_error() else {
            return;
        };
        let beyond = ctx
            .index
            .beyond_gap
            .iter()
            .any(|&p| ctx.conv.events.files[p].name_id() == *id);
        let stray = ctx
            .conv
            .events
            .stray
            .iter()
            .any(|s| s.record.as_ref().and_then(|r| r.id.as_deref()) == Some(id.as_str()));
        if beyond {
            return; // index-gap reports it: the gap is the cause
        }
        let why = if stray {
            "its file has a name the SDK does not accept"
        } else {
            "no event file has that id"
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "base_state.json",
            format!("leaf_event_id names an event the SDK cannot find ({why}); the conversation fails to load (KeyError)"),
        ));
    }
}

/// Point the HEAD at the last real event of the log (not a state update),
/// what the SDK falls back to without a HEAD.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    const REL: &str = "base_state.json";
    let Some(LoadError::UnknownLeaf { id }) = ctx.load_error() else {
        return;
    };
    if ctx.conv.events.files.iter().any(|f| f.name_id() == id) {
        p.leave(
            REL,
            "the HEAD's file exists but the SDK does not index it: it comes back when the gap is closed or the doubled index decided",
        );
        return;
    }
    // the log's end is not known until its gap is closed (in this run,
    // when `index-gap` may): the HEAD is chosen then
    if ctx.index.gap_at.is_some() && p.selected(super::index_gap::ID) {
        p.leave(
            REL,
            "the log has an index gap: the HEAD is chosen once it is closed",
        );
        return;
    }
    // the last real event whose walk back reaches a root: a HEAD in a loop
    // of parent links fails the load (`Cycle in event tree`)
    let mut loops = LoopMemo::new(ctx.reader.len());
    let Some(t) = (0..ctx.reader.len()).rev().find(|&j| {
        ctx.reader.read(j).is_ok_and(|r| !r.is_artifact()) && !loops.reaches_a_loop(ctx, j)
    }) else {
        let any = (0..ctx.reader.len()).any(|j| ctx.reader.read(j).is_ok_and(|r| !r.is_artifact()));
        if any {
            p.leave(
                REL,
                "every readable event is in a loop of parent links or leads into one: which event the conversation ends at needs a human",
            );
            return;
        }
        // nothing real to point at (what is left cannot be read, or only
        // records state): no HEAD, the SDK's own start without one; its
        // fallback then finds no real event and the branch is empty (from
        // 1.35 it skips state artifacts; 1.33 takes a last event without a
        // parent, a placeholder root, alone)
        p.set(
            REL,
            "/leaf_event_id",
            serde_json::Value::Null,
            crate::edit::Safety::Unsafe,
            "clear the HEAD (`leaf_event_id` null): no event of the log can be read, or every one only records state, so there is nothing to point it at; the SDK starts without a HEAD and the agent begins afresh (what could not be read stays in the backup)"
                .to_string(),
        );
        return;
    };
    let tid = ctx.reader.id(t).to_string();
    // the branch the HEAD would end: an action on it nothing answers would
    // be run again at the agent's next step (its result may have been the
    // lost HEAD), so each gets an error answering it, appended after `t`
    let mut branch = vec![t];
    let mut at = t;
    while branch.len() <= ctx.reader.len() {
        let Ok(rec) = ctx.reader.read(at) else { break };
        match ctx.reader.effective_parent(at, rec) {
            Ok(Some(q)) => {
                branch.push(q);
                at = q;
            }
            _ => break,
        }
    }
    branch.reverse();
    let open = super::tool_calls::unmatched(ctx, &branch);
    // an open call whose JSON id and file name disagree may be answered
    // once `filename-id-mismatch` settles its id (in this run, when it may)
    if let Some(&a) = open
        .iter()
        .find(|&&a| super::tool_calls::id_unsettled(ctx, a))
        .filter(|_| p.selected(super::filename_id_mismatch::ID))
    {
        p.leave(
            REL,
            format!(
                "the tool call of event {} looks unanswered, but its JSON id and file name disagree: the HEAD is chosen once its id is settled",
                super::ix(a)
            ),
        );
        return;
    }
    let mut answers = Vec::new();
    for &a in &open {
        let Some(call) = super::tool_calls::call_of(ctx, a) else {
            p.leave(
                REL,
                format!(
                    "the HEAD would end a branch where the tool call of event {} is unanswered (the agent would run it again on resume) and it has no `tool_name` to answer it with",
                    super::ix(a)
                ),
            );
            return;
        };
        answers.push((a, call));
    }
    // (an event after it skipped: in a loop of parent links)
    let outside =
        if (t + 1..ctx.reader.len()).any(|j| ctx.reader.read(j).is_ok_and(|r| !r.is_artifact())) {
            " outside a loop of parent links"
        } else {
            ""
        };
    let what = format!(
        "point the HEAD at the last real event{outside}, {} ({tid})",
        super::ix(t)
    );
    if answers.is_empty() {
        p.set(
            REL,
            "/leaf_event_id",
            serde_json::Value::from(tid),
            crate::edit::Safety::Unsafe,
            what,
        );
        return;
    }
    let n = ctx.reader.len();
    let ts = super::tool_calls::newest_timestamp(ctx);
    let like = ctx.event_path(n - 1);
    let mut parent = tid.clone();
    for (k, (a, (tool_name, tc))) in answers.iter().enumerate() {
        let mut seed = ctx.conv.folder.as_bytes().to_vec();
        seed.extend_from_slice(b"/lost-head/");
        seed.extend_from_slice(ctx.reader.id(*a).as_bytes());
        let eid = crate::edit::placeholder::derived_id(&seed);
        let error = format!(
            "{LOST_ANSWER}: base_state.json named event {id} as the HEAD, which no file holds. The tool may or may not have run; its output is not in the log, and it is not run again."
        );
        let bytes = super::tool_calls::error_event(&eid, &ts, &parent, (tool_name, tc), &error);
        let name = crate::store::event::canonical_name((n + k) as u64, &eid);
        p.push(
            format!("events/{name}"),
            crate::edit::Action::Create {
                bytes,
                like: like.clone(),
            },
            crate::edit::Safety::Unsafe,
            format!(
                "answer tool call `{}` of event {} with an AgentErrorEvent ({eid}): its result is not in the log, and the agent would run it again on resume",
                ctx.quote(tc),
                super::ix(*a)
            ),
        );
        parent = eid;
    }
    p.set(
        REL,
        "/leaf_event_id",
        serde_json::Value::from(parent),
        crate::edit::Safety::Unsafe,
        format!("{what}, then at the errors answering its open tool calls"),
    );
    super::drop_count_markers(ctx, p);
}

/// How the error answering a call whose result went with the HEAD begins.
pub const LOST_ANSWER: &str = "convo-doctor: the result of this tool call is lost";

/// Whether walking back from an event enters a loop of parent links,
/// remembered for every event passed, so that trying candidates from the
/// log's end costs one walk over the log in all.
struct LoopMemo(Vec<u8>);

impl LoopMemo {
    const UNKNOWN: u8 = 0;
    const ROOTED: u8 = 1;
    const LOOPS: u8 = 2;
    const WALKING: u8 = 3;

    fn new(n: usize) -> LoopMemo {
        LoopMemo(vec![Self::UNKNOWN; n])
    }

    fn reaches_a_loop(&mut self, ctx: &Ctx, from: usize) -> bool {
        let mut path = Vec::new();
        let mut at = Some(from);
        let verdict = loop {
            let Some(i) = at else { break Self::ROOTED };
            match self.0[i] {
                Self::UNKNOWN => {}
                Self::WALKING => break Self::LOOPS,
                known => break known,
            }
            self.0[i] = Self::WALKING;
            path.push(i);
            // a walk that stops (a root, an unreadable event, a parent in
            // no file) is no loop
            at = ctx
                .reader
                .read(i)
                .ok()
                .and_then(|r| ctx.reader.effective_parent(i, r).ok().flatten());
        };
        for i in path {
            self.0[i] = verdict;
        }
        verdict == Self::LOOPS
    }
}
