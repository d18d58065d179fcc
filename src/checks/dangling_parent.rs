//! `dangling-parent`: a `parent_id` that names no event in the log.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::store::ParentRef;
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "dangling-parent";

pub struct DanglingParent;

impl Check for DanglingParent {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event's parent_id names an event that is not in the log"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event whose `parent_id` is neither \"__root__\" nor the id of an event in
  the SDK's index (deleted, beyond a gap, in a lost duplicate, or misspelled).

Why it matters
  `path_to_root` raises KeyError when it reaches it: on the agent's branch the
  conversation fails to load (error); elsewhere that branch is cut (warning).
  Since 1.37.1 the SDK refuses to append such an event, so this points at a
  hand edit, an older server, or lost files.

Repair
  Unsafe (only with `repair --unsafe-fixes`): re-link it to the readable
  event before it in index order, the parent a tolerant reader assumes.
  Only when the parent is in no file at all. An observation names its
  action twice (`parent_id` and `action_id`): when both named the lost id
  and the event before it is the action that made its tool call, both are
  re-linked, or the SDK would find the call unanswered and run it again on
  resume. Any other event is re-linked past a tool call whose result is in
  no file (under it, the call would be left open on its branch, and the
  agent runs such a call again at its next step)."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "re-link the event to the readable event before it in index order (the parent a tolerant reader assumes, #4114); an observation's `action_id` too when it named the same lost id and that event is the action that made its tool call",
            guards: "its parent is in no file at all (one beyond a gap or in a lost duplicate comes back when those are repaired, in the same run); unsafe because the real parent cannot be known",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let blocking = match ctx.load_error() {
            Some(LoadError::UnknownParent { idx, .. }) => Some(*idx),
            _ => None,
        };
        let hidden_ids: std::collections::HashSet<&str> = ctx
            .index
            .beyond_gap
            .iter()
            .map(|&pos| ctx.conv.events.files[pos].name_id())
            .collect();
        for i in 0..ctx.reader.len() {
            let Some(rec) = ctx.reader.record(i) else {
                continue;
            };
            let ParentRef::Id(p) = &rec.parent else {
                continue;
            };
            if ctx.index.id_to_idx.contains_cid(p) {
                continue;
            }
            let hidden = hidden_ids.contains(p.spell().as_str());
            let why = if hidden {
                " (it is beyond the index gap)"
            } else {
                ""
            };
            let (sev, tail) = if blocking == Some(i) {
                (
                    Severity::Error,
                    "the SDK cannot load the conversation (KeyError)",
                )
            } else {
                (Severity::Warning, "its branch is cut there")
            };
            out.push(Finding::new(
                self.id(),
                sev,
                ctx.event_path(i),
                format!("event {}'s parent is not in the log{why}; {tail}", ix(i)),
            ));
        }
    }
}

/// Re-link an event whose parent is in no file to the readable event
/// before it.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    let files = &ctx.conv.events.files;
    let in_a_file: std::collections::HashSet<&str> = files.iter().map(|f| f.name_id()).collect();
    let mut answered: Option<super::tool_calls::Answered> = None;
    for i in 0..ctx.reader.len() {
        let Some(rec) = ctx.reader.record(i) else {
            continue;
        };
        let ParentRef::Id(parent) = &rec.parent else {
            continue;
        };
        if ctx.index.id_to_idx.contains_cid(parent) {
            continue;
        }
        let rel = ctx.event_path(i);
        if in_a_file.contains(parent.spell().as_str()) {
            p.leave(
                rel,
                "its parent's file exists but the SDK does not index it: it comes back when the gap is closed or the doubled index decided",
            );
            continue;
        }
        let Some(mut t) = ctx.reader.readable_before(i) else {
            p.leave(rel, "no readable event before it to re-link it to");
            continue;
        };
        // an observation names its action twice, as parent and as the
        // action it answers: re-linked to the action that made its tool
        // call, it answers that one too, or the SDK finds the call
        // unanswered and runs it again on resume
        let answers_it = super::tool_calls::answer(rec)
            == Some(super::tool_calls::Answer::Action(parent.spell().as_str()))
            && rec.tool_call_id().is_some()
            && ctx.reader.record(t).is_some_and(|a| {
                a.kind == crate::kinds::ACTION && a.tool_call_id() == rec.tool_call_id()
            });
        // the id it will name the action by is the action's JSON id, which
        // `filename-id-mismatch` may still change (in this run, when it
        // may): the re-link waits for it
        if answers_it
            && super::tool_calls::id_unsettled(ctx, t)
            && p.selected(super::filename_id_mismatch::ID)
        {
            p.leave(
                rel,
                format!(
                    "it answers the tool call of event {}, whose JSON id and file name disagree: it is re-linked once that id is settled",
                    ix(t)
                ),
            );
            continue;
        }
        // past a tool call whose result is in no readable file: under it,
        // the event would leave the call open on its branch, and the agent
        // runs such a call again at its next step
        let mut passed = Vec::new();
        if !answers_it {
            let answered = answered.get_or_insert_with(|| super::tool_calls::Answered::of(ctx));
            while ctx
                .reader
                .read(t)
                .is_ok_and(|a| super::tool_calls::executable(a) && !answered.answers(ctx, t))
            {
                passed.push(t);
                match ctx.reader.readable_before(t) {
                    Some(before) => t = before,
                    None => break,
                }
            }
            if passed.last() == Some(&t) {
                p.leave(
                    rel,
                    "every readable event before it is a tool call whose result is in no file: re-linked there, the agent would run that tool again",
                );
                continue;
            }
        }
        let tid = ctx.reader.id(t).to_string();
        let what = if passed.is_empty() {
            format!(
                "re-link event {} (its parent is in no file) to the event before it, {} ({tid})",
                ix(i),
                ix(t)
            )
        } else {
            let list = passed.iter().map(|&a| ix(a)).collect::<Vec<_>>().join(", ");
            format!(
                "re-link event {} (its parent is in no file) to {} ({tid}), the readable event before it that is no unanswered tool call (past {list}, whose result is in no file: the agent would run that tool again)",
                ix(i),
                ix(t)
            )
        };
        p.relink(rel.clone(), &tid, crate::edit::Safety::Unsafe, what);
        if answers_it {
            // the id the SDK matches an answer by: the action's JSON `id`
            // (settled above, or kept by choice)
            let named = ctx
                .reader
                .record(t)
                .and_then(super::tool_calls::action_id)
                .unwrap_or(&tid);
            p.set(
                rel,
                "/action_id",
                serde_json::Value::from(named),
                crate::edit::Safety::Unsafe,
                format!(
                    "and its `action_id` (it answers tool call `{}`, which {} made)",
                    ctx.quote(rec.tool_call_id().unwrap_or_default()),
                    ix(t)
                ),
            );
        }
    }
}
