//! Quarantine and renumbering of event files: the repairs that make a log
//! the SDK cannot load loadable again without inventing a byte.
//!
//! - an event the SDK cannot read (`view::ReadError`: empty, truncated, not
//!   JSON, unknown kind, and any validation error added later) is moved into
//!   the run's backup (unsafe: the agent loses sight of it);
//! - a duplicated index keeps the file the SDK reads and quarantines the
//!   ones it cannot see (unsafe: which one is read follows directory order);
//! - a gap in the index is closed (safe: nothing the agent saw is lost).
//!
//! The planners only collect requests in [`Edits`]; [`finish`] turns them
//! into one renumbering: renames inside `events/` (the bytes of each event
//! stay as they are), one `parent_id` re-link per child of a quarantined
//! event, the HEAD moved off a quarantined event, and every count marker
//! (`events/.eventlog-len-N.marker`, SDK 1.47+) moved into the backup so
//! none is left stale.

use std::collections::HashSet;

use serde_json::Value;

use super::{Edits, Move, Op, Plan, RepairOptions};
use crate::checks::{ix, plural, Ctx};
use crate::store::event::canonical_name;
use crate::store::ParentRef;
use crate::view::ReadError;

/// The check that reports a read error, when quarantine is its repair.
/// Errors that depend on the reader's release (a field or `parent_id` too
/// new for it) or on the file's name are not quarantined: a newer server,
/// or a rename, reads them.
fn quarantine_check(err: &ReadError) -> Option<&'static str> {
    match err {
        ReadError::Unreadable(_) => Some("unreadable-event"),
        ReadError::UnknownKind { .. } => Some("unknown-kind"),
        ReadError::NonCanonicalName { .. }
        | ReadError::TreeFieldTooNew
        | ReadError::UnknownField { .. } => None,
        #[allow(unreachable_patterns)]
        _ => Some("invalid-event"),
    }
}

/// The nearest readable event before `idx` in the log that is not itself
/// quarantined.
fn kept_before(ctx: &Ctx, idx: usize, q: &HashSet<usize>) -> Option<usize> {
    (0..idx)
        .rev()
        .find(|&j| !q.contains(&ctx.index.by_idx[j]) && ctx.reader.read(j).is_ok())
}

/// Planner of `unreadable-event` and `unknown-kind` (and any check of an
/// event the SDK cannot read): quarantine each such event of the log.
pub fn plan_unreadable(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    for i in 0..ctx.reader.len() {
        let Err(err) = ctx.reader.read(i) else {
            continue;
        };
        let Some(check) = quarantine_check(&err) else {
            continue;
        };
        if !(opts.selected)(check) {
            continue;
        }
        let pos = ctx.index.by_idx[i];
        if edits.quarantine.iter().any(|(p, _, _)| *p == pos) {
            continue;
        }
        let rel = ctx.event_path(i);
        if kept_before(ctx, i, &HashSet::new()).is_none() {
            plan.leave(
                check,
                rel,
                "no readable event before it to re-link its child to; needs a human",
            );
            continue;
        }
        let after = ctx.reader.len() - i - 1;
        // the reason as diagnose words it: untrusted values redacted, clipped
        let why = crate::report::describe_read_error(&err, ctx);
        let alone: HashSet<usize> = [pos].into();
        let tail = if answer_for(ctx, pos, &alone).is_some() {
            ", put an AgentErrorEvent answering its tool call in its slot, re-link its child"
                .to_string()
        } else if after == 0 {
            ", re-link its child".to_string()
        } else {
            format!(
                ", renumber the {} after it, re-link its child",
                plural(after, "event", "events")
            )
        };
        let what = format!(
            "quarantine event {} ({why}): move it into the backup{tail}",
            ix(i)
        );
        if opts.unsafe_fixes {
            edits.quarantine.push((pos, check, what));
        } else {
            plan.leave_unsafe(check, rel, what);
        }
    }
}

/// Planner of `duplicate-index`: keep the file the SDK reads, quarantine the
/// others.
pub fn plan_duplicate(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    const CHECK: &str = "duplicate-index";
    let files = &ctx.conv.events.files;
    for (&idx, positions) in &ctx.index.duplicate_idx {
        let kept = match ctx.index.by_idx.get(idx as usize) {
            Some(&p) => p,
            None => *positions.last().unwrap_or(&positions[0]),
        };
        for &p in positions.iter().filter(|&&p| p != kept) {
            let rel = format!("events/{}", files[p].name);
            let what = format!(
                "quarantine `{}`: the SDK reads `{}` at index {} and cannot see it",
                files[p].name,
                files[kept].name,
                ix(idx as usize)
            );
            if opts.unsafe_fixes {
                edits.quarantine.push((p, CHECK, what));
            } else {
                plan.leave_unsafe(CHECK, rel, what);
            }
        }
    }
}

/// Planner of `duplicate-event-id`: a later copy of an id, byte for byte
/// the same as the first (the one the SDK resolves the id to), is
/// quarantined; copies that differ are left to a human.
pub fn plan_duplicate_id(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    const CHECK: &str = "duplicate-event-id";
    let read = |i: usize| {
        crate::store::fsread::read_regular(
            &ctx.conv.dir.join("events").join(&ctx.reader.file(i).name),
        )
        .ok()
        .map(|(b, _)| b)
    };
    for i in 0..ctx.reader.len() {
        let first = ctx.index.id_to_idx[ctx.reader.id(i)];
        if first == i {
            continue;
        }
        let rel = ctx.event_path(i);
        let (a, b) = (read(first), read(i));
        if a.is_none() || a != b {
            plan.leave(
                CHECK,
                rel,
                format!(
                    "it differs from event {}, the copy the SDK resolves the id to; which one the children and the HEAD mean needs a human",
                    ix(first)
                ),
            );
            continue;
        }
        let pos = ctx.index.by_idx[i];
        if edits.quarantine.iter().any(|(p, _, _)| *p == pos) {
            continue;
        }
        let what = format!(
            "quarantine event {}, a byte-for-byte copy of event {} (the one the SDK resolves the id to)",
            ix(i),
            ix(first)
        );
        if opts.unsafe_fixes {
            edits.quarantine.push((pos, CHECK, what));
        } else {
            plan.leave_unsafe(CHECK, rel, what);
        }
    }
}

/// Planner of `index-gap`: close it (the renumbering is made by [`finish`]).
pub fn plan_gap(ctx: &Ctx, _opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    if ctx.index.gap_at.is_none() {
        return;
    }
    let files = &ctx.conv.events.files;
    let beyond: HashSet<u64> = ctx.index.beyond_gap.iter().map(|&p| files[p].idx).collect();
    if ctx.index.duplicate_idx.keys().any(|k| beyond.contains(k)) {
        plan.leave(
            "index-gap",
            "events/",
            "an index after the gap is held by two files; decide which one first (duplicate-index)",
        );
        return;
    }
    edits.close_gap = Some("index-gap");
}

/// Turn the requests into moves and re-links.
pub fn finish(ctx: &Ctx, edits: &mut Edits, plan: &mut Plan) {
    if edits.quarantine.is_empty() && edits.close_gap.is_none() {
        return;
    }
    let files = &ctx.conv.events.files;
    let q: HashSet<usize> = edits.quarantine.iter().map(|(p, _, _)| *p).collect();
    let read = |pos: usize| -> Option<Vec<u8>> {
        crate::store::fsread::read_regular(&ctx.conv.dir.join("events").join(&files[pos].name))
            .ok()
            .map(|(b, _)| b)
    };
    let mut moves = Vec::new();
    // 1. quarantines
    for (pos, check, what) in edits.quarantine.clone() {
        let rel = format!("events/{}", files[pos].name);
        let Some(bytes) = read(pos) else {
            plan.refused = Some(format!(
                "{rel} cannot be read again to back it up; nothing was changed"
            ));
            return;
        };
        moves.push(Move {
            rel,
            to: None,
            bytes,
            checks: vec![check],
            what,
        });
    }
    // 2. an observation quarantined right after its ActionEvent leaves that
    //    tool call unanswered: the next step would run the tool again. Answer
    //    it as the agent-server does after a crash (#4488): an AgentErrorEvent
    //    with the same tool_call_id, in the quarantined event's slot.
    let mut answers: std::collections::HashMap<usize, (String, Vec<u8>)> = Default::default();
    // an id another kept file still holds (a duplicated id) keeps its
    // children, its HEAD and its answers where they are
    let still_held = |pos: usize| {
        files
            .iter()
            .enumerate()
            .any(|(p, f)| p != pos && !q.contains(&p) && f.name_id == files[pos].name_id)
    };
    for (pos, _, _) in &edits.quarantine {
        if still_held(*pos) {
            continue;
        }
        if let Some(ans) = answer_for(ctx, *pos, &q) {
            answers.insert(*pos, ans);
        }
    }
    // 3. re-link the children of each quarantined event of the log, and the
    //    HEAD, to its answer or the nearest kept event before it
    let leaf = ctx
        .conv
        .base_state
        .value()
        .and_then(|v| v.get("leaf_event_id"))
        .and_then(Value::as_str);
    for (pos, check, _) in edits.quarantine.clone() {
        let Some(i) = (0..ctx.index.len()).find(|&i| ctx.index.by_idx[i] == pos) else {
            continue; // not in the log (a duplicate the SDK cannot see)
        };
        let qid = &files[pos].name_id;
        if still_held(pos) {
            continue;
        }
        let Some(t) = kept_before(ctx, i, &q) else {
            plan.refused = Some(format!(
                "{}: no kept event before it to re-link its child to; nothing was changed",
                ctx.event_path(i)
            ));
            return;
        };
        let (tid, shown) = match answers.get(&pos) {
            Some((id, _)) => (
                id.clone(),
                format!("its answer, a new AgentErrorEvent ({id})"),
            ),
            None => {
                let id = ctx.reader.id(t).to_string();
                let shown = format!("event {} ({id})", ix(t));
                (id, shown)
            }
        };
        for (cp, f) in files.iter().enumerate() {
            if q.contains(&cp) {
                continue;
            }
            let Ok(rec) = &f.record else { continue };
            if rec.parent == ParentRef::Id(qid.clone()) {
                let what = format!(
                    "re-link `{}` from the quarantined event {} to {shown}",
                    f.name,
                    ix(i),
                );
                super::relink(edits, plan, check, format!("events/{}", f.name), &tid, what);
            }
        }
        if leaf == Some(qid.as_str()) {
            let what = format!(
                "move the HEAD from the quarantined event {} to {shown}",
                ix(i)
            );
            if let Err(why) = edits.patch(
                "base_state.json",
                "/leaf_event_id",
                Op::Set(Value::from(tid.clone())),
                check,
                what,
            ) {
                plan.leave(check, "base_state.json", why);
            }
        }
    }
    // 4. the new order: the log without the quarantined files (an answer
    //    takes its observation's slot), then (when closing the gap) the files
    //    after it in index order
    let mut order: Vec<Slot> = ctx
        .index
        .by_idx
        .iter()
        .filter_map(|p| match answers.get(p) {
            Some((id, bytes)) => Some(Slot::New(*p, id.clone(), bytes.clone())),
            None if q.contains(p) => None,
            None => Some(Slot::File(*p)),
        })
        .collect();
    let gap_check = edits.close_gap;
    if let Some(check) = gap_check {
        let mut beyond: Vec<usize> = ctx
            .index
            .beyond_gap
            .iter()
            .copied()
            .filter(|p| !q.contains(p))
            .collect();
        beyond.sort_by_key(|&p| files[p].idx);
        let known: HashSet<&str> = files.iter().map(|f| f.name_id.as_str()).collect();
        let mut prev_idx = ctx.index.len() as u64; // the first missing index
        for &p in &beyond {
            // the first event after each gap whose parent is a missing event
            if files[p].idx != prev_idx {
                if let Ok(rec) = &files[p].record {
                    if let ParentRef::Id(parent) = &rec.parent {
                        if !known.contains(parent.as_str()) {
                            if let Some(before) = order.last() {
                                let (tid, tname) = match before {
                                    Slot::File(b) => {
                                        (files[*b].name_id.clone(), files[*b].name.clone())
                                    }
                                    Slot::New(_, id, _) => (id.clone(), id.clone()),
                                };
                                let what = format!(
                                    "re-link `{}` (first after the gap; its parent is missing) to `{tname}`",
                                    files[p].name
                                );
                                super::relink(
                                    edits,
                                    plan,
                                    check,
                                    format!("events/{}", files[p].name),
                                    &tid,
                                    what,
                                );
                            }
                        }
                    }
                }
            }
            prev_idx = files[p].idx + 1;
            order.push(Slot::File(p));
        }
    }
    // 5. renames, in ascending new index; answers created in their slots
    for (k, slot) in order.iter().enumerate() {
        let p = match slot {
            Slot::File(p) => *p,
            Slot::New(qpos, id, bytes) => {
                let (_, check, _) = edits
                    .quarantine
                    .iter()
                    .find(|(p, _, _)| p == qpos)
                    .expect("answers are for quarantined files");
                let tc = serde_json::from_slice::<Value>(bytes)
                    .ok()
                    .and_then(|v| {
                        v.get("tool_call_id")
                            .and_then(Value::as_str)
                            .map(String::from)
                    })
                    .unwrap_or_default();
                plan.creates.push(super::Create {
                    rel: format!("events/{}", canonical_name(k as u64, id)),
                    bytes: bytes.clone(),
                    like: format!("events/{}", files[*qpos].name),
                    checks: vec![check],
                    what: format!(
                        "answer tool call `{}` with an AgentErrorEvent (as the agent-server does after a crash, #4488): its observation was quarantined, and an unanswered call would be run again on resume",
                        ctx.quote(&tc)
                    ),
                });
                continue;
            }
        };
        let new = canonical_name(k as u64, &files[p].name_id);
        if new == files[p].name {
            continue;
        }
        let Some(bytes) = read(p) else {
            plan.refused = Some(format!(
                "events/{} cannot be read again to check it before its rename; nothing was changed",
                files[p].name
            ));
            return;
        };
        let check = if ctx.index.beyond_gap.contains(&p) {
            gap_check.unwrap_or("index-gap")
        } else {
            edits
                .quarantine
                .first()
                .map(|(_, c, _)| *c)
                .unwrap_or("index-gap")
        };
        moves.push(Move {
            rel: format!("events/{}", files[p].name),
            to: Some(format!("events/{new}")),
            bytes,
            checks: vec![check],
            what: format!("renumber {} -> {}", files[p].name, new),
        });
    }
    // 6. no stale count marker: every `.eventlog-len-N.marker` goes to the
    //    backup (the SDK re-syncs with disk when none matches)
    let changes_files = moves.iter().any(|m| m.to.is_none() || m.to.is_some());
    if changes_files {
        for name in &ctx.conv.events.other {
            if name.starts_with(".eventlog-len-") && name.ends_with(".marker") {
                let path = ctx.conv.dir.join("events").join(name);
                let Ok((bytes, _)) = crate::store::fsread::read_regular(&path) else {
                    continue;
                };
                moves.push(Move {
                    rel: format!("events/{name}"),
                    to: None,
                    bytes,
                    checks: vec![],
                    what: format!(
                        "move the count marker `{name}` into the backup (it would be stale; the SDK re-syncs with disk without one)"
                    ),
                });
            }
        }
    }
    plan.moves = moves;
}

/// A slot of the renumbered log: an existing file, or a new answer (in the
/// slot of the quarantined file at that position) with its id and bytes.
enum Slot {
    File(usize),
    New(usize, String, Vec<u8>),
}

/// A UUID (version 4 layout) derived from `seed`, so a plan is the same
/// every time it is made (and a proof can check its bytes).
fn uuid_from(seed: &[u8]) -> String {
    let h = crate::fix::persist::sha256(seed);
    let mut b: Vec<char> = h[..32].chars().collect();
    b[12] = '4';
    b[16] = match b[16] {
        '0' | '4' | '8' | 'c' => '8',
        '1' | '5' | '9' | 'd' => '9',
        '2' | '6' | 'a' | 'e' => 'a',
        _ => 'b',
    };
    let s: String = b.into_iter().collect();
    format!(
        "{}-{}-{}-{}-{}",
        &s[..8],
        &s[8..12],
        &s[12..16],
        &s[16..20],
        &s[20..32]
    )
}

/// The AgentErrorEvent that answers the tool call left open when the event
/// at file position `pos` is quarantined: only when the nearest kept event
/// before it is an ActionEvent with a `tool_call_id` that no kept event
/// answers (by `tool_call_id` or `action_id`). Its fields are the ones the
/// agent-server's crash recovery writes (event_service.py: `parent_id`,
/// `tool_name`, `tool_call_id`, `error`), which every tree-era release
/// reads; its timestamp is the action's, its id derived from the
/// quarantined file, so the plan is deterministic.
fn answer_for(ctx: &Ctx, pos: usize, q: &HashSet<usize>) -> Option<(String, Vec<u8>)> {
    let files = &ctx.conv.events.files;
    let i = (0..ctx.index.len()).find(|&i| ctx.index.by_idx[i] == pos)?;
    let t = kept_before(ctx, i, q)?;
    let rec = ctx.reader.read(t).ok()?;
    if rec.kind != "ActionEvent" {
        return None;
    }
    let tc = rec.tool_call_id.as_deref()?;
    let aid = ctx.reader.id(t);
    let answered = (0..ctx.index.len()).any(|j| {
        !q.contains(&ctx.index.by_idx[j])
            && ctx.reader.record(j).is_some_and(|r| {
                matches!(
                    r.kind.as_str(),
                    "ObservationEvent" | "AgentErrorEvent" | "UserRejectObservation"
                ) && (r.tool_call_id.as_deref() == Some(tc) || r.action_id.as_deref() == Some(aid))
            })
    });
    if answered {
        return None;
    }
    let (bytes, _) = crate::store::fsread::read_regular(
        &ctx.conv.dir.join("events").join(&ctx.reader.file(t).name),
    )
    .ok()?;
    let action: Value = serde_json::from_slice(&bytes).ok()?;
    let tool_name = action.get("tool_name")?.as_str()?;
    let timestamp = action.get("timestamp")?.as_str()?;
    let mut seed = ctx.conv.folder.as_bytes().to_vec();
    seed.extend_from_slice(files[pos].name.as_bytes());
    let id = uuid_from(&seed);
    let error = format!(
        "convo-doctor quarantined the result of this tool call: its event file (events/{}) could not be read. The tool may or may not have run; its output is lost.",
        files[pos].name
    );
    let j = |v: &str| serde_json::to_string(v).unwrap_or_default();
    let text = format!(
        "{{\"id\":{},\"timestamp\":{},\"source\":\"agent\",\"parent_id\":{},\"tool_name\":{},\"tool_call_id\":{},\"error\":{},\"kind\":\"AgentErrorEvent\"}}",
        j(&id),
        j(timestamp),
        j(aid),
        j(tool_name),
        j(tc),
        j(&error)
    );
    Some((id, text.into_bytes()))
}
