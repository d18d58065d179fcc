//! Setting an event aside: the repair that `unreadable-event`,
//! `unknown-kind` and `invalid-event` share (each plans only its own
//! events). The file keeps its name; its bytes go into the run's backup and
//! a placeholder with the same id and parent takes the slot
//! ([`crate::edit::placeholder`]), so nothing is renumbered, no child or
//! HEAD is re-linked, and a writer with the log open appends where it
//! expects to.
//!
//! Long because: the one placeholder repair three checks share: what replaces
//! an event, what it answers and how it is named.

use std::collections::HashMap;

use serde_json::Value;

use super::tool_calls::{answer, Answer};
use super::{ix, Ctx};
use crate::edit::placeholder::{self, Slot, ToolCall};
use crate::edit::{salvage, Action, Proposals, Safety};
use crate::kinds;
use crate::store::ParentRef;
use crate::view::read::{nearest_after, nearest_before};
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

/// Which events answer what, by the SDK's rule (parsed, readable or not: a
/// result set aside in the same pass still answers its call): for each
/// answer, the ids of up to two events that give it (two distinct ids are
/// enough to know whether one of them is not a given event's).
struct Answered<'a>(HashMap<Answer<'a>, Vec<&'a str>>);

impl<'a> Answered<'a> {
    fn of(ctx: &Ctx<'a>) -> Answered<'a> {
        let mut by: HashMap<Answer<'a>, Vec<&'a str>> = HashMap::new();
        for i in 0..ctx.reader.len() {
            let Some(a) = ctx.reader.record(i).and_then(answer) else {
                continue;
            };
            let ids = by.entry(a).or_default();
            let id = ctx.reader.id(i);
            if ids.len() < 2 && !ids.contains(&id) {
                ids.push(id);
            }
        }
        Answered(by)
    }

    /// Whether an event other than the one with id `own` gives `a`. A copy
    /// that shares `own` does not count: the SDK resolves that id to one
    /// file, so the branch holds at most one of them, and the placeholder
    /// takes the slot of the one it holds.
    fn by_another(&self, a: Answer, own: &str) -> bool {
        self.0
            .get(&a)
            .is_some_and(|ids| ids.iter().any(|&id| id != own))
    }
}

/// One placeholder's question: does an event on the chain from `start` up
/// to its root answer one of `keys` (the call, or the action that made
/// it)? The walk follows each event's `parent_id` as the SDK resolves it,
/// ends at an event without a parsed record, and stops where it meets
/// `own`, the event set aside (a parent loop leads back to it). `start` is
/// where `own`'s own `parent_id` leads when it has a parsed record (so
/// the walk can meet it only round a loop); anything, when it has none.
struct Above<'a> {
    start: Option<usize>,
    own: usize,
    keys: [Option<Answer<'a>>; 2],
}

/// [`Above`] for every placeholder at once: one walk down the forest the
/// parent links make (a loop counts as one node: a walk that enters it
/// goes all the way round), keeping how many events on the path from the
/// root give each answer. One pass over the log however long the chains.
fn answered_above<'k>(ctx: &'k Ctx, asks: &[Above<'k>]) -> Vec<bool> {
    let r = &ctx.reader;
    let n = r.len();
    if asks.iter().all(|q| q.start.is_none()) {
        return vec![false; asks.len()];
    }
    let up: Vec<Option<usize>> = (0..n)
        .map(|i| {
            r.record(i)
                .and_then(|rec| rec.parent.cid())
                .and_then(|p| r.index.id_to_idx.get_cid(p).copied())
        })
        .collect();
    let gives: Vec<Option<Answer<'k>>> = (0..n).map(|i| r.record(i).and_then(answer)).collect();
    let loops = super::parent_cycle::loops(ctx);
    let mut loop_of: Vec<Option<usize>> = vec![None; n];
    for (k, members) in loops.iter().enumerate() {
        for &m in members {
            loop_of[m] = Some(k);
        }
    }
    // the links of the forest (a loop's own links left out), as lists
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in (0..n).filter(|&i| loop_of[i].is_none()) {
        if let Some(p) = up[i] {
            children[p].push(i);
        }
    }
    let mut asked: HashMap<usize, Vec<usize>> = HashMap::new();
    for (q, ask) in asks.iter().enumerate() {
        if let Some(s) = ask.start {
            asked.entry(s).or_default().push(q);
        }
    }
    let mut out = vec![false; asks.len()];
    let mut on_path: HashMap<Answer<'k>, usize> = HashMap::new();
    let add = |on_path: &mut HashMap<Answer<'k>, usize>, a: Option<Answer<'k>>| {
        if let Some(a) = a {
            *on_path.entry(a).or_insert(0) += 1;
        }
    };
    let take = |on_path: &mut HashMap<Answer<'k>, usize>, a: Option<Answer<'k>>| {
        if let Some(c) = a.and_then(|a| on_path.get_mut(&a)) {
            *c = c.saturating_sub(1);
        }
    };
    // the roots: events whose walk ends with them, and each loop (all its
    // members at once)
    let tops: Vec<Vec<usize>> = (0..n)
        .filter(|&i| up[i].is_none() && loop_of[i].is_none())
        .map(|i| vec![i])
        .chain(loops.iter().cloned())
        .collect();
    for top in tops {
        let in_loop = loop_of[top[0]].is_some();
        for &m in &top {
            add(&mut on_path, gives[m]);
        }
        let mut stack: Vec<(usize, bool)> = Vec::new();
        // (event, whether its subtree is done): depth first, no recursion
        let mut visit = |i: usize, on_path: &mut HashMap<Answer<'k>, usize>| {
            for &q in asked.get(&i).map_or(&[][..], |v| v.as_slice()) {
                let ask = &asks[q];
                // the walk stops at the event set aside: round a loop it
                // is on, every other member is passed, not it
                let own_passed = in_loop && loop_of[i].is_some() && loop_of[ask.own] == loop_of[i];
                if own_passed {
                    take(on_path, gives[ask.own]);
                }
                out[q] = ask
                    .keys
                    .iter()
                    .flatten()
                    .any(|k| on_path.get(k).is_some_and(|&c| c > 0));
                if own_passed {
                    add(on_path, gives[ask.own]);
                }
            }
        };
        for &m in &top {
            visit(m, &mut on_path);
            stack.extend(children[m].iter().map(|&c| (c, false)));
        }
        while let Some((i, done)) = stack.pop() {
            if done {
                take(&mut on_path, gives[i]);
                continue;
            }
            add(&mut on_path, gives[i]);
            visit(i, &mut on_path);
            stack.push((i, true));
            stack.extend(children[i].iter().map(|&c| (c, false)));
        }
        for &m in &top {
            take(&mut on_path, gives[m]);
        }
    }
    out
}

/// The ActionEvent at `idx`'s tool name, read from its file (as this pass
/// sees it).
fn tool_name(ctx: &Ctx, idx: usize) -> Option<String> {
    let bytes = ctx.conv.bytes(&ctx.event_path(idx))?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("tool_name")?.as_str().map(String::from)
}

/// A placeholder planned, waiting for the one question asked of all of
/// them at once ([`answered_above`]).
struct Slotted<'a> {
    idx: usize,
    rel: String,
    file: &'a str,
    id: &'a str,
    timestamp: String,
    parent: ParentRef,
    call: Option<ToolCall>,
    why: String,
}

/// For each index, the nearest index before and after it that a rule holds for.
type Nearest = (Vec<Option<usize>>, Vec<Option<usize>>);

/// Plan a placeholder for every event of the log the SDK cannot read for a
/// reason of `class`. Linear in the log whatever its shape: what one
/// event's placeholder needs of the others (the readable event before it,
/// a neighbour's timestamp, who answers which call, what its branch
/// already answers) is found for every event in one pass, on first need.
pub fn plan(ctx: &Ctx, p: &mut Proposals, class: Class) {
    let n = ctx.reader.len();
    // the action each open tool call id belongs to (readable ActionEvents)
    let mut actions: Option<HashMap<&str, usize>> = None;
    let mut answered: Option<Answered> = None;
    let mut owner_before: Option<Vec<Option<usize>>> = None;
    let mut stamped: Option<Nearest> = None;
    let mut slots: Vec<Slotted> = Vec::new();
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
                    "timestamp" => r.timestamp().map(String::from),
                    "tool_call_id" => r.tool_call_id().map(String::from),
                    "kind" => Some(r.kind.to_string()),
                    _ => None,
                },
                None => salvaged.get(k).cloned(),
            }
        };
        let parent = match rec {
            Some(r) => r.parent.clone(),
            None => match salvaged.get("parent_id") {
                Some(p) if p == "__root__" => ParentRef::Root,
                Some(p) => ParentRef::Id(p.as_str().into()),
                // cut before its parent: the SDK appends in order, so in a
                // tree-era log the event before it is the likeliest parent
                // (the nearest one a parent id can name: a copy whose id the
                // SDK resolves to another event would hang it there)
                None => match ctx
                    .reader
                    .readable_before(i)
                    .and_then(|j| ctx.reader.record(j))
                {
                    Some(b) if b.parent.is_present() && i > 0 => owner_before
                        .get_or_insert_with(|| nearest_before(n, |j| ctx.reader.owns_its_id(j)))[i]
                        .map_or(ParentRef::Absent, |j| {
                            ParentRef::Id(ctx.reader.id(j).into())
                        }),
                    _ => ParentRef::Absent,
                },
            },
        };
        let stamp = |j: usize| {
            ctx.reader
                .record(j)
                .and_then(|r| r.timestamp())
                .filter(|t| plain_timestamp(t))
        };
        let timestamp = match known("timestamp").filter(|t| plain_timestamp(t)) {
            Some(t) => t,
            // the nearest event before it with one, else after it
            None => {
                let (before, after) = stamped.get_or_insert_with(|| {
                    (
                        nearest_before(n, |j| stamp(j).is_some()),
                        nearest_after(n, |j| stamp(j).is_some()),
                    )
                });
                before[i]
                    .or(after[i])
                    .and_then(stamp)
                    .map_or_else(|| "1970-01-01T00:00:00".to_string(), String::from)
            }
        };
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
            let mut m = HashMap::new();
            for j in 0..n {
                let Some(r) = ctx.reader.record(j) else {
                    continue;
                };
                if r.kind != kinds::ACTION || !ctx.reader.owns_its_id(j) {
                    continue;
                }
                if let Some(tc) = r.tool_call_id() {
                    m.entry(tc).or_insert(j);
                }
            }
            m
        });
        let kind = known("kind");
        let result_kind = kind.as_deref().is_none_or(kinds::is_result);
        // an action that is itself set aside leaves no call to answer
        let stays = |a: usize| match ctx.reader.read(a) {
            Ok(_) => true,
            Err(e) => class_of(&e).is_none(),
        };
        let named_action = rec
            .and_then(|r| r.action_id())
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
                (r.kind == kinds::ACTION).then_some(())?;
                Some(ToolCall {
                    tool_name: tool_name(ctx, a)?,
                    tool_call_id: r.tool_call_id()?.to_string(),
                })
            }),
            None if result_kind && i > 0 => {
                let others = answered.get_or_insert_with(|| Answered::of(ctx));
                ctx.reader
                    .record(i - 1)
                    .filter(|r| r.kind == kinds::ACTION && stays(i - 1))
                    .and_then(|r| {
                        let tc = r.tool_call_id()?.to_string();
                        let open = !others.by_another(Answer::Call(&tc), id)
                            && !others.by_another(Answer::Action(ctx.reader.id(i - 1)), id);
                        open.then_some(())?;
                        Some(ToolCall {
                            tool_name: tool_name(ctx, i - 1)?,
                            tool_call_id: tc,
                        })
                    })
            }
            None => None,
        };
        slots.push(Slotted {
            idx: i,
            rel,
            file: &file.name,
            id,
            timestamp,
            parent,
            call,
            why: super::describe_read_error(&err, ctx),
        });
    }
    // an answer already on the branch it hangs from (a second crash
    // recovery error for the same call): a second one would be a tool
    // result twice
    let acts = actions.unwrap_or_default();
    let above = {
        let asks: Vec<Above> = slots
            .iter()
            .map(|s| Above {
                start: match (&s.call, &s.parent) {
                    (Some(_), ParentRef::Id(p)) => ctx.index.id_to_idx.get_cid(p).copied(),
                    _ => None,
                },
                own: s.idx,
                keys: match &s.call {
                    Some(c) => [
                        Some(Answer::Call(c.tool_call_id.as_str())),
                        // (an answer names the action by its JSON id)
                        acts.get(c.tool_call_id.as_str())
                            .and_then(|&a| ctx.reader.record(a))
                            .and_then(super::tool_calls::action_id)
                            .map(Answer::Action),
                    ],
                    None => [None, None],
                },
            })
            .collect();
        answered_above(ctx, &asks)
    };
    for (s, answered_above) in slots.into_iter().zip(above) {
        let call = s.call.filter(|_| !answered_above);
        let why = &s.why;
        let bytes = placeholder::event(&Slot {
            id: s.id,
            timestamp: &s.timestamp,
            parent: &s.parent,
            file: s.file,
            cause: placeholder::Cause::Unreadable(why),
            answers: call.as_ref(),
        });
        let what = match &call {
            Some(c) => format!(
                "set event {} aside ({why}): its file goes into the backup and an AgentErrorEvent answering tool call `{}` takes its slot (same id), so the tool is not run again",
                ix(s.idx),
                ctx.quote(&c.tool_call_id)
            ),
            None => format!(
                "set event {} aside ({why}): its file goes into the backup and a ConversationErrorEvent the LLM never sees takes its slot (same id and parent)",
                ix(s.idx)
            ),
        };
        p.push(s.rel, Action::Replace(bytes), Safety::Unsafe, what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Ctx;
    use crate::store::conversation::Overlay;
    use crate::view::Loaded;

    /// A small pseudo-random sequence (xorshift), so a failure replays.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn id(k: usize) -> String {
        format!("e0000000-0000-4000-8000-{k:012}")
    }

    /// A log of these events (JSON text each, or cut off), in a fresh
    /// folder.
    fn folder(events: &[(String, String)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let events_dir = tmp.path().join("events");
        std::fs::create_dir(&events_dir).unwrap();
        for (i, (id, text)) in events.iter().enumerate() {
            std::fs::write(events_dir.join(format!("event-{i:05}-{id}.json")), text).unwrap();
        }
        tmp
    }

    /// The walk up one branch, event by event, as the SDK's rule reads:
    /// what [`answered_above`] answers for every placeholder at once.
    fn walked(ctx: &Ctx, ask: &Above) -> bool {
        let r = &ctx.reader;
        let mut at = ask.start;
        for _ in 0..r.len() {
            let Some(i) = at.filter(|&i| i != ask.own) else {
                return false;
            };
            let Some(rec) = r.record(i) else {
                return false;
            };
            if answer(rec).is_some_and(|a| ask.keys.contains(&Some(a))) {
                return true;
            }
            at = rec
                .parent
                .cid()
                .and_then(|p| r.index.id_to_idx.get_cid(p).copied());
        }
        false
    }

    /// Random logs with loops, forward links, copies sharing an id, links
    /// to no event and cut-off files: every event's question, asked of
    /// all of them at once, gets the answer of its own walk.
    #[test]
    fn answered_above_is_the_walk_up_each_branch() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let calls = ["call_a", "call_b", "call_c"];
        let mut asked = 0;
        for _ in 0..300 {
            let n = 1 + rng.below(24);
            let mut events = Vec::new();
            for k in 0..n {
                let own = if k > 0 && rng.below(6) == 0 {
                    id(rng.below(k))
                } else {
                    id(k)
                };
                let other = id(rng.below(n + 2));
                let parent = match rng.below(5) {
                    0 => "\"parent_id\":\"__root__\",".to_string(),
                    1 => String::new(),
                    _ => format!("\"parent_id\":\"{other}\","),
                };
                let kind = [
                    "ObservationEvent",
                    "AgentErrorEvent",
                    "ActionEvent",
                    "MessageEvent",
                ][rng.below(4)];
                let text = format!(
                    "{{\"id\":\"{own}\",\"timestamp\":\"2026-01-01T00:00:00\",\"source\":\"agent\",{parent}\"action_id\":\"{}\",\"tool_call_id\":\"{}\",\"kind\":\"{kind}\"}}",
                    id(rng.below(n)),
                    calls[rng.below(3)]
                );
                let text = if rng.below(8) == 0 {
                    text[..text.len() / 2].to_string()
                } else {
                    text
                };
                events.push((own, text));
            }
            let tmp = folder(&events);
            let l = Loaded::load(tmp.path(), crate::version::NEWEST, &Overlay::new());
            let ctx = Ctx::new(&l.conv, &l.index, &l.views, crate::version::NEWEST);
            let len = ctx.reader.len();
            let ids: Vec<String> = (0..len).map(|i| ctx.reader.id(i).to_string()).collect();
            // (an event with a record asks from where its own link leads;
            // one cut off, from wherever its parent was salvaged)
            let asks: Vec<Above> = (0..len)
                .flat_map(|own| {
                    let start = match ctx.reader.record(own) {
                        Some(r) => r
                            .parent
                            .cid()
                            .and_then(|p| ctx.index.id_to_idx.get_cid(p).copied()),
                        None => Some(rng.below(len)),
                    };
                    let call = Answer::Call(calls[rng.below(3)]);
                    let action = Answer::Action(ids[rng.below(len)].as_str());
                    [
                        Above {
                            start,
                            own,
                            keys: [Some(call), Some(action)],
                        },
                        Above {
                            start,
                            own,
                            keys: [Some(call), None],
                        },
                    ]
                })
                .collect();
            let all = answered_above(&ctx, &asks);
            for (ask, got) in asks.iter().zip(&all) {
                assert_eq!(
                    *got,
                    walked(&ctx, ask),
                    "log {events:?}, own {}, start {:?}",
                    ask.own,
                    ask.start
                );
                asked += usize::from(*got);
            }
        }
        // the logs are not all trivially unanswered
        assert!(asked > 100, "{asked} answered");
    }

    /// Setting every event of a log aside asks each event's neighbours a
    /// bounded number of questions, not one per event before it: counted
    /// reads of the log, not timed.
    #[test]
    fn setting_every_event_aside_reads_the_log_a_bounded_number_of_times() {
        let n = 400;
        let events: Vec<(String, String)> = (0..n)
            .map(|k| {
                let parent = if k == 0 { "__root__".to_string() } else { id(k - 1) };
                let (kind, action) = match k % 2 {
                    0 => ("ActionEvent", String::new()),
                    _ => ("ObservationEvent", format!("\"action_id\":\"{}\",", id(k - 1))),
                };
                (
                    id(k),
                    format!(
                        "{{\"id\":\"{}\",\"timestamp\":\"not a time\",\"source\":\"nobody\",\"parent_id\":\"{parent}\",{action}\"tool_call_id\":\"call_{}\",\"tool_name\":\"terminal\",\"kind\":\"{kind}\"}}",
                        id(k),
                        k / 2
                    ),
                )
            })
            .collect();
        let tmp = folder(&events);
        let l = Loaded::load(tmp.path(), crate::version::NEWEST, &Overlay::new());
        let ctx = Ctx::new(&l.conv, &l.index, &l.views, crate::version::NEWEST);
        let all = |_: &str| true;
        let mut p = Proposals::new(&all);
        p.begin(
            crate::checks::invalid_event::ID,
            crate::edit::Phase::Readable,
        );
        crate::view::read::READS.with(|c| c.set(0));
        plan(&ctx, &mut p, Class::Invalid);
        let reads = crate::view::read::READS.with(|c| c.get());
        assert_eq!(p.changes.len(), n, "every event is set aside");
        assert!(
            reads <= 6 * n as u64,
            "{reads} reads of a log of {n} events"
        );
    }

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
