//! `duplicate-event-id`: one event id at two indices.

use std::collections::HashSet;

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "duplicate-event-id";

pub struct DuplicateEventId;

impl Check for DuplicateEventId {
    fn id(&self) -> &'static str {
        ID
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
  byte the first is set aside: its file goes into the run's backup and, in
  its slot (its index, so nothing is renumbered), a ConversationErrorEvent
  with a new id and the same parent says so; the LLM never sees it.
  Children and the HEAD keep resolving to the first copy. Copies that
  differ need a human."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "set a later copy that is byte for byte the first aside: its file goes into the run's backup and a ConversationErrorEvent with a new id (the LLM never sees it) takes its index; children and the HEAD keep resolving to the first copy",
            guards: "the copies are identical; copies that differ are left to a human (which one the children and the HEAD mean); unsafe because the UI's flat listing shows the placeholder instead of the copy",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        // the index already holds each id's first index (by the same
        // exact spelling, in index order): no second table of every id
        if !ctx.index.dup_ids {
            return;
        }
        for i in 0..ctx.reader.len() {
            let first = ctx.index.id_to_idx[ctx.reader.id(i)];
            if first != i {
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
            }
        }
    }
}

/// A later copy identical to the first: set aside, a placeholder with a
/// new id in its slot.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::placeholder::{self, Slot};
    use crate::edit::{Action, Safety};
    let read = |i: usize| ctx.conv.bytes(&ctx.event_path(i));
    // what the events that stay answer (a later copy of an id answers
    // nothing: the SDK resolves the id to its first copy), by the SDK's rule
    let mut answered: Option<(HashSet<&str>, HashSet<&str>)> = None;
    // the first copy's bytes, read once for the copies that follow it
    let mut first_read: Option<(usize, Option<Vec<u8>>)> = None;
    for i in 0..ctx.reader.len() {
        let first = ctx.index.id_to_idx[ctx.reader.id(i)];
        if first == i {
            continue;
        }
        let rel = ctx.event_path(i);
        if first_read.as_ref().is_none_or(|(f, _)| *f != first) {
            first_read = Some((first, read(first)));
        }
        let a = first_read.as_ref().and_then(|(_, a)| a.as_ref());
        let same = a.is_some_and(|a| read(i).is_some_and(|b| *a == b));
        let rec = ctx.reader.record(i);
        let (Some(rec), true) = (rec, same) else {
            p.leave(
                rel,
                format!(
                    "it differs from event {}, the copy the SDK resolves the id to; which one the children and the HEAD mean needs a human",
                    ix(first)
                ),
            );
            continue;
        };
        let mut seed = ctx.conv.folder.as_bytes().to_vec();
        seed.extend_from_slice(rel.as_bytes());
        let id = placeholder::derived_id(&seed);
        let why = format!("a byte-for-byte copy of event {}", ix(first));
        let ts = rec
            .timestamp()
            .unwrap_or_else(|| "1970-01-01T00:00:00".into());
        // A copy of a result answered its action's call: the placeholder
        // answers it in its place (an AgentErrorEvent), since the first
        // copy hangs beside it from that action, never above it, and a
        // branch through the placeholder would leave the call open. Else
        // the copy took the slot of what was written there before, often
        // the result of the call the event right before it made: when
        // nothing else answers that call, the placeholder does, or the
        // agent would run the tool again on resume.
        let own = match super::tool_calls::answer(rec) {
            Some(super::tool_calls::Answer::Action(a)) => ctx.index.id_to_idx.get(a).copied(),
            _ => None,
        }
        .filter(|&a| a < i && ctx.reader.owns_its_id(a))
        .filter(|&a| ctx.reader.read(a).is_ok_and(super::tool_calls::executable))
        .and_then(|a| super::tool_calls::call_of(ctx, a).map(|c| (a, c)));
        let (calls, actions) = answered.get_or_insert_with(|| {
            let (mut calls, mut actions) = (HashSet::new(), HashSet::new());
            for j in (0..ctx.reader.len()).filter(|&j| ctx.reader.owns_its_id(j)) {
                match ctx.reader.record(j).and_then(super::tool_calls::answer) {
                    Some(super::tool_calls::Answer::Action(a)) => actions.insert(a),
                    Some(super::tool_calls::Answer::Call(tc)) => calls.insert(tc),
                    None => false,
                };
            }
            (calls, actions)
        });
        // the event before it parses as an action the SDK cannot read yet
        // (a key it does not know, a value its model refuses): once it
        // reads, or its placeholder does, in this run's `Readable` phase,
        // whether this placeholder answers its call is known
        if own.is_none() {
            if let Some(a) = i.checked_sub(1).filter(|&a| {
                ctx.reader.read(a).is_err()
                    && ctx
                        .reader
                        .record(a)
                        .is_some_and(|r| r.kind == crate::kinds::ACTION)
            }) {
                p.leave(
                    rel,
                    format!(
                        "the event before it, {}, is an action the SDK cannot read yet: whether its placeholder answers that tool call is decided once it reads",
                        ix(a)
                    ),
                );
                continue;
            }
        }
        let (made_by, call) = match own {
            Some((a, c)) => (Some(a), Some(c)),
            None => {
                let a = i.checked_sub(1).filter(|&a| {
                    // (an answer names the action by its JSON id)
                    ctx.reader.owns_its_id(a)
                        && !ctx
                            .reader
                            .record(a)
                            .and_then(super::tool_calls::action_id)
                            .is_some_and(|j| actions.contains(j))
                });
                let c = a
                    .filter(|&a| ctx.reader.read(a).is_ok_and(super::tool_calls::executable))
                    .and_then(|a| super::tool_calls::call_of(ctx, a))
                    .filter(|(_, tc)| !calls.contains(tc.as_str()));
                (a, c)
            }
        };
        let call = call.map(|(tool_name, tool_call_id)| placeholder::ToolCall {
            tool_name,
            tool_call_id,
        });
        let bytes = placeholder::event(&Slot {
            id: &id,
            timestamp: &ts,
            parent: &rec.parent,
            file: &ctx.reader.file(i).name,
            cause: placeholder::Cause::Copy(&why),
            answers: call.as_ref(),
        });
        let what = match &call {
            Some(c) => format!(
                "set event {} aside ({why}): its file goes into the backup and an AgentErrorEvent with a new id ({id}) answering tool call `{}` of event {} takes its index, so the tool is not run again",
                ix(i),
                ctx.quote(&c.tool_call_id),
                ix(made_by.unwrap_or(i - 1))
            ),
            None => format!(
                "set event {} aside ({why}): its file goes into the backup and a ConversationErrorEvent with a new id ({id}) takes its index",
                ix(i)
            ),
        };
        let to = format!(
            "events/{}",
            crate::store::event::canonical_name(i as u64, &id)
        );
        p.push(rel.clone(), Action::Replace(bytes), Safety::Unsafe, what);
        let renamed = format!("name the file after the placeholder's id: `{to}`");
        p.push(rel, Action::Rename(to), Safety::Unsafe, renamed);
    }
}
