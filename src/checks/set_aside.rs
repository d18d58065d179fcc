//! Setting an event aside: the repair that `unreadable-event`,
//! `unknown-kind` and `invalid-event` share (each plans only its own
//! events). The file keeps its name; its bytes go into the run's backup and
//! a placeholder with the same id and parent takes the slot
//! ([`crate::edit::placeholder`]), so nothing is renumbered, no child or
//! HEAD is re-linked, and a writer with the log open appends where it
//! expects to.

use std::collections::HashSet;

use serde_json::Value;

use super::{ix, Ctx};
use crate::edit::placeholder::{self, Slot, ToolCall};
use crate::edit::{salvage, Action, Proposals, Safety};
use crate::store::ParentRef;
use crate::view::ReadError;

/// Which read errors a check sets aside.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Empty, cut off, not JSON, not UTF-8 (`unreadable-event`).
    Unreadable,
    /// A kind the release does not know (`unknown-kind`).
    UnknownKind,
    /// The release's model refuses it (`invalid-event`).
    Invalid,
}

fn class_of(err: &ReadError) -> Option<Class> {
    match err {
        ReadError::Unreadable(_) => Some(Class::Unreadable),
        ReadError::UnknownKind { .. } => Some(Class::UnknownKind),
        ReadError::Invalid { .. } => Some(Class::Invalid),
        // a newer reader, or a rename, reads these: never set aside
        ReadError::NonCanonicalName { .. }
        | ReadError::TreeFieldTooNew
        | ReadError::UnknownField { .. } => None,
    }
}

/// A timestamp the SDK's models accept for certain: `YYYY-MM-DDTHH:MM:SS`
/// with an optional fraction (what `datetime.isoformat()` writes).
fn plain_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() >= 19
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && (b.len() == 19
            || (b[19] == b'.' && b.len() > 20 && (20..b.len()).all(|i| b[i].is_ascii_digit())))
        && crate::clock::valid_date(
            s[0..4].parse().unwrap_or(0),
            s[5..7].parse().unwrap_or(0),
            s[8..10].parse().unwrap_or(0),
        )
}

/// Every tool call some other event of the log answers (parsed, readable
/// or not: a result set aside in the same pass still answers its call).
/// A copy that shares the id of the event at `except` does not count: the
/// SDK resolves that id to one file, so the branch holds at most one of
/// them, and the placeholder takes the slot of the one it holds.
fn answered<'a>(ctx: &Ctx<'a>, except: usize) -> (HashSet<&'a str>, HashSet<&'a str>) {
    let (mut calls, mut actions) = (HashSet::new(), HashSet::new());
    let own = ctx.reader.id(except);
    for i in (0..ctx.reader.len()).filter(|&i| i != except && ctx.reader.id(i) != own) {
        let Some(r) = ctx.reader.record(i) else {
            continue;
        };
        match super::tool_calls::answer(r) {
            Some(super::tool_calls::Answer::Action(a)) => actions.insert(a),
            Some(super::tool_calls::Answer::Call(tc)) => calls.insert(tc),
            None => false,
        };
    }
    (calls, actions)
}

/// Whether an event on the chain from `parent` up to its root answers
/// `tool_call_id` (by the SDK's rule; the action is the one that made that
/// call). The walk stops where it meets `own`, the event set aside (a
/// parent loop leads back to it).
fn answered_above(
    ctx: &Ctx,
    own: usize,
    parent: &ParentRef,
    tool_call_id: &str,
    acts: &std::collections::HashMap<&str, usize>,
) -> bool {
    use super::tool_calls::{answer, Answer};
    let action = acts.get(tool_call_id).map(|&a| ctx.reader.id(a));
    let mut at = match parent {
        ParentRef::Id(p) => ctx.index.id_to_idx.get(p).copied(),
        _ => None,
    };
    let mut steps = 0;
    while let Some(i) = at {
        steps += 1;
        if steps > ctx.reader.len() || i == own {
            break;
        }
        let Some(r) = ctx.reader.record(i) else { break };
        match answer(r) {
            Some(Answer::Call(tc)) if tc == tool_call_id => return true,
            Some(Answer::Action(a)) if Some(a) == action => return true,
            _ => {}
        }
        at = match &r.parent {
            ParentRef::Id(p) => ctx.index.id_to_idx.get(p).copied(),
            _ => None,
        };
    }
    false
}

/// The ActionEvent at `idx`'s tool name, read from its file (as this pass
/// sees it).
fn tool_name(ctx: &Ctx, idx: usize) -> Option<String> {
    let bytes = ctx.conv.bytes(&ctx.event_path(idx))?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("tool_name")?.as_str().map(String::from)
}

/// Plan a placeholder for every event of the log the SDK cannot read for a
/// reason of `class`.
pub fn plan(ctx: &Ctx, p: &mut Proposals, class: Class) {
    let n = ctx.reader.len();
    // the action each open tool call id belongs to (readable ActionEvents)
    let mut actions: Option<std::collections::HashMap<&str, usize>> = None;
    for i in 0..n {
        let Err(err) = ctx.reader.read(i) else {
            continue;
        };
        if class_of(&err) != Some(class) {
            continue;
        }
        // the file the SDK reads for that index
        let file = ctx.reader.content(i);
        let rel = format!("events/{}", file.name);
        let id = ctx.reader.id(i);
        // What is still known of it: the parsed record, or what a cut-off
        // file still names whole.
        let salvaged = match &file.record {
            Ok(_) => Default::default(),
            Err(_) => ctx
                .conv
                .bytes(&rel)
                .map(|b| salvage::top_level_strings(&b))
                .unwrap_or_default(),
        };
        let rec = file.record.as_ref().ok();
        let known = |k: &str| -> Option<String> {
            match rec {
                Some(r) => match k {
                    "timestamp" => r.timestamp.clone(),
                    "tool_call_id" => r.tool_call_id.clone(),
                    "kind" => Some(r.kind.clone()),
                    _ => None,
                },
                None => salvaged.get(k).cloned(),
            }
        };
        let before = (0..i).rev().find(|&j| ctx.reader.read(j).is_ok());
        let parent = match rec {
            Some(r) => r.parent.clone(),
            None => match salvaged.get("parent_id") {
                Some(p) if p == "__root__" => ParentRef::Root,
                Some(p) => ParentRef::Id(p.clone()),
                // cut before its parent: the SDK appends in order, so in a
                // tree-era log the event before it is the likeliest parent
                // (the nearest one a parent id can name: a copy whose id the
                // SDK resolves to another event would hang it there)
                None => match before.and_then(|j| ctx.reader.record(j)) {
                    Some(b) if b.parent.is_present() && i > 0 => (0..i)
                        .rev()
                        .find(|&j| ctx.reader.owns_its_id(j))
                        .map_or(ParentRef::Absent, |j| {
                            ParentRef::Id(ctx.reader.id(j).to_string())
                        }),
                    _ => ParentRef::Absent,
                },
            },
        };
        let neighbour_ts = || {
            (0..i)
                .rev()
                .chain(i + 1..n)
                .filter_map(|j| ctx.reader.record(j))
                .filter_map(|r| r.timestamp.clone())
                .find(|t| plain_timestamp(t))
        };
        let timestamp = known("timestamp")
            .filter(|t| plain_timestamp(t))
            .or_else(neighbour_ts)
            .unwrap_or_else(|| "1970-01-01T00:00:00".to_string());
        // The tool call its result would have answered: its own
        // `tool_call_id` when an action before it made that call (it was
        // the answer: the placeholder answers in its place, whatever else
        // answers elsewhere); nothing known of it, the call the event right
        // before it made, when no other event answers it. Actions are
        // recognised parsed, readable or not (one may be repaired in the
        // same pass).
        // (the first action that made each call, not a later copy of it
        // whose id the SDK resolves to that first one)
        let acts = actions.get_or_insert_with(|| {
            let mut m = std::collections::HashMap::new();
            for j in 0..n {
                let Some(r) = ctx.reader.record(j) else {
                    continue;
                };
                if r.kind != "ActionEvent" || !ctx.reader.owns_its_id(j) {
                    continue;
                }
                if let Some(tc) = r.tool_call_id.as_deref() {
                    m.entry(tc).or_insert(j);
                }
            }
            m
        });
        let kind = known("kind");
        let result_kind = matches!(
            kind.as_deref(),
            Some("ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation") | None
        );
        // an action that is itself set aside leaves no call to answer
        let stays = |a: usize| match ctx.reader.read(a) {
            Ok(_) => true,
            Err(e) => class_of(&e).is_none(),
        };
        let named_action = rec
            .and_then(|r| r.action_id.as_deref())
            .and_then(|a| ctx.index.id_to_idx.get(a).copied())
            .filter(|&a| a < i && stays(a));
        let call = match known("tool_call_id") {
            Some(tc) if result_kind => acts
                .get(tc.as_str())
                .filter(|&&a| a < i && stays(a))
                .and_then(|&a| tool_name(ctx, a))
                .map(|tool_name| ToolCall {
                    tool_name,
                    tool_call_id: tc.clone(),
                }),
            Some(_) => None,
            // an observation whose `tool_call_id` is lost still names its
            // action: the call that action made
            None if named_action.is_some() => named_action.and_then(|a| {
                let r = ctx.reader.record(a)?;
                (r.kind == "ActionEvent").then_some(())?;
                Some(ToolCall {
                    tool_name: tool_name(ctx, a)?,
                    tool_call_id: r.tool_call_id.clone()?,
                })
            }),
            None if result_kind && i > 0 => {
                let (calls, by_action) = answered(ctx, i);
                ctx.reader
                    .record(i - 1)
                    .filter(|r| r.kind == "ActionEvent" && stays(i - 1))
                    .and_then(|r| {
                        let tc = r.tool_call_id.clone()?;
                        let open = !calls.contains(tc.as_str())
                            && !by_action.contains(ctx.reader.id(i - 1));
                        open.then_some(())?;
                        Some(ToolCall {
                            tool_name: tool_name(ctx, i - 1)?,
                            tool_call_id: tc,
                        })
                    })
            }
            None => None,
        };
        // an answer already on the branch it hangs from (a second crash
        // recovery error for the same call): a second one would be a tool
        // result twice
        let call = call.filter(|c| !answered_above(ctx, i, &parent, &c.tool_call_id, acts));
        let why = super::describe_read_error(&err, ctx);
        let bytes = placeholder::event(&Slot {
            id,
            timestamp: &timestamp,
            parent: &parent,
            file: &file.name,
            why: &why,
            answers: call.as_ref(),
        });
        let what = match &call {
            Some(c) => format!(
                "set event {} aside ({why}): its file goes into the backup and an AgentErrorEvent answering tool call `{}` takes its slot (same id), so the tool is not run again",
                ix(i),
                ctx.quote(&c.tool_call_id)
            ),
            None => format!(
                "set event {} aside ({why}): its file goes into the backup and a ConversationErrorEvent the LLM never sees takes its slot (same id and parent)",
                ix(i)
            ),
        };
        p.push(rel, Action::Replace(bytes), Safety::Unsafe, what);
    }
}

#[cfg(test)]
mod tests {
    use super::plain_timestamp;

    #[test]
    fn only_plain_iso_timestamps() {
        assert!(plain_timestamp("2026-11-30T06:03:32.738456"));
        assert!(plain_timestamp("2026-11-30T06:03:32"));
        assert!(!plain_timestamp("2026-02-30T06:03:32"));
        assert!(!plain_timestamp("2026-11-30 06:03:32"));
        assert!(!plain_timestamp("2026-11-30T06:03:32."));
        assert!(!plain_timestamp("x"));
    }
}
