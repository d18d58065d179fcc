//! `filename-id-mismatch`: the id in the file name differs from the JSON `id`.
//!
//! Long because: the finding and its three repairs (rename, set the id, put a
//! round back) read the same ids and must agree.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::store::event::Id;
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "filename-id-mismatch";

pub struct FilenameIdMismatch;

impl Check for FilenameIdMismatch {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event file's name carries a different id than its JSON `id`"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event whose file name says one id and whose JSON `id` says another.

Why it matters
  The SDK indexes events by the id in the file name and never reads the JSON
  `id` during the scan. A child's `parent_id` or the HEAD that uses the JSON
  id then names an event the index does not know (KeyError at load).

Repair
  When other events (`parent_id`, `action_id`) or the HEAD name the JSON id
  and nothing names the file's, the conversation fails to load: the file is
  renamed to the JSON id (safe: every byte stays). When nothing names the
  JSON id, the SDK knows the event by its file name's id (its index,
  `get_event`, every link), while the UI shows and asks for the JSON one: the
  JSON `id` is set to the file's (safe; it also makes readable an event whose
  JSON id the SDK's model refuses, the reserved `__root__`). When both ids
  are named, a human decides.
  Files that hold each other's JSON (each JSON id is another file's name id:
  two contents swapped, or a longer round) are put back as the SDK's writer
  left them, whose every link points back in index order (it appends, and
  refuses an unknown parent): when only the contents trading places fits
  that, each JSON goes back into the file named for it (safe: every byte
  stays); when only the names trading places fits it, each file is renamed
  to its JSON id at its index; when both or neither fit, a human decides.
  Contents put back when one of them cannot be read are unsafe (only with
  `repair --unsafe-fixes`): that JSON is then set aside in the file named
  for it, at its own index, where its placeholder belongs.
  A JSON whose own file is lost (the file named for it cannot be read; or
  it is the child of the id in the name of the file holding it, and no
  file is named for it: two files traded contents, then one was lost) goes
  back into the slot named for it (or a free one: the gap right after, or
  after the log's last event), and the file it was in keeps
  its id under a placeholder (unsafe: that event's own JSON is lost; only
  where the SDK refuses the folder)."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "rename the file to its JSON id when other events or the HEAD name that id and nothing names the file's (the conversation fails to load otherwise); else set the JSON `id` to the file's, the one the SDK knows the event by; files holding each other's JSON are put back the one way that leaves every link pointing back in index order",
            guards: "the rename: only the JSON id is named, it fits the SDK's name rule and no other file holds it; both ids named: left to a human",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let json_ids_referenced = |id: &str| match ctx.load_error() {
            Some(LoadError::UnknownParent { parent, .. }) => parent == id,
            Some(LoadError::UnknownLeaf { id: leaf }) => leaf == id,
            _ => false,
        };
        for i in 0..ctx.reader.len() {
            let Some(rec) = ctx.reader.record(i) else {
                continue;
            };
            let Some(json_id) = &rec.id else { continue };
            let name_id = ctx.reader.id(i);
            if json_id == name_id {
                continue;
            }
            let breaks = json_ids_referenced(json_id);
            out.push(Finding::new(
                self.id(),
                if breaks { Severity::Error } else { Severity::Warning },
                ctx.event_path(i),
                format!(
                    "event {}'s JSON id differs from the id in its file name; the SDK knows it only by the file name{}",
                    ix(i),
                    if breaks { ", and the conversation refers to it by the JSON id, so it fails to load" } else { "" }
                ),
            ));
        }
    }
}

/// How the files of a [`Cross`] came apart from their JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Their contents trade places: each JSON goes back into the file named
    /// for its id (and so to that file's index).
    ContentsMoved,
    /// Their names trade places: each file is renamed to its JSON id at the
    /// index it has.
    NamesMoved,
}

/// Files whose name ids and JSON ids are the same set, each JSON id in the
/// name of another file of the set (a swap of two, or a longer round), with
/// the one reading under which every link touching them points back in
/// index order, as the SDK's writer always leaves them (it appends, and
/// refuses an unknown parent); `None` when both readings or neither do.
#[derive(Clone, Debug)]
pub struct Cross {
    /// File positions (reader indices), in the order the round goes.
    pub members: Vec<usize>,
    pub reading: Option<Reading>,
}

/// The crosses of this reading of the folder (computed once per context).
pub(crate) fn crosses<'c>(ctx: &'c Ctx) -> &'c [Cross] {
    ctx.shared.crosses.get_or_init(|| find_crosses(ctx))
}

fn find_crosses(ctx: &Ctx) -> Vec<Cross> {
    use std::collections::{HashMap, HashSet};
    let r = &ctx.reader;
    let n = r.len();
    let json = |i: usize| r.record(i).and_then(|rec| rec.id.as_deref());
    let mismatched = |i: usize| json(i).is_some_and(|j| j != r.id(i));
    // among the files whose two ids differ, name ids held by one file only,
    // and JSON ids held by one file only (a file whose ids agree is no part
    // of a round; its id also held by a member is `duplicate-event-id`'s,
    // decided once the round is put back)
    let mut names: HashMap<&str, Option<usize>> = HashMap::new();
    let mut jsons: HashMap<&str, Option<usize>> = HashMap::new();
    for i in (0..n).filter(|&i| mismatched(i)) {
        names
            .entry(r.id(i))
            .and_modify(|e| *e = None)
            .or_insert(Some(i));
        if let Some(j) = json(i) {
            jsons.entry(j).and_modify(|e| *e = None).or_insert(Some(i));
        }
    }
    let named = |id: &str| names.get(id).copied().flatten();
    let held = |id: &str| jsons.get(id).copied().flatten();
    let mut done: HashSet<usize> = HashSet::new();
    let mut out = Vec::new();
    let mut into: Option<LinksInto> = None;
    for start in (0..n).filter(|&i| mismatched(i)) {
        if done.contains(&start) {
            continue;
        }
        // follow JSON id -> the file named so, back to the start
        let mut members = vec![start];
        let mut on_walk = HashSet::from([start]);
        let mut cur = start;
        let closed = loop {
            let Some(j) = json(cur) else { break false };
            let Some(next) = named(j).filter(|_| held(j) == Some(cur)) else {
                break false;
            };
            if next == start {
                break true;
            }
            if !mismatched(next) || done.contains(&next) || !on_walk.insert(next) {
                break false;
            }
            members.push(next);
            cur = next;
        };
        done.extend(members.iter().copied());
        if closed {
            let into = into.get_or_insert_with(|| links_into(ctx));
            let reading = reading(ctx, &members, into);
            out.push(Cross { members, reading });
        }
    }
    out
}

/// The member of a round named for the JSON id of its `k`-th member: the
/// next one, as [`Cross::members`] go (each holds the JSON the next is named
/// for).
fn home(members: &[usize], k: usize) -> usize {
    members[(k + 1) % members.len()]
}

/// Events by the ids they link to (`parent_id`, `action_id`).
type LinksInto = std::collections::HashMap<Id, Vec<usize>>;

fn links_into(ctx: &Ctx) -> LinksInto {
    let r = &ctx.reader;
    let mut into: LinksInto = std::collections::HashMap::new();
    for i in 0..r.len() {
        if let Some(rec) = r.record(i) {
            for to in rec.links().into_iter().flatten() {
                into.entry(to).or_default().push(i);
            }
        }
    }
    into
}

/// The one reading of a cross under which every link from or into its
/// events points back in index order.
fn reading(ctx: &Ctx, members: &[usize], into: &LinksInto) -> Option<Reading> {
    use std::collections::HashMap;
    let r = &ctx.reader;
    let json = |i: usize| r.record(i).and_then(|rec| rec.id.as_deref());
    // the events to look at: the cross's own, and those linking into it
    let mut looked: Vec<usize> = members.to_vec();
    for &m in members {
        if let Some(j) = json(m) {
            looked.extend(into.get(j).into_iter().flatten().copied());
        }
    }
    let causal = |how: Reading| {
        // the index each JSON id of the cross ends at
        let at: HashMap<&str, usize> = members
            .iter()
            .enumerate()
            .filter_map(|(k, &m)| {
                let j = json(m)?;
                Some(match how {
                    Reading::NamesMoved => (j, m),
                    Reading::ContentsMoved => (j, home(members, k)),
                })
            })
            .collect();
        let pos = |id: &str| {
            at.get(id)
                .copied()
                .or_else(|| r.index.id_to_idx.get(id).copied())
        };
        looked.iter().all(|&i| {
            let Some(rec) = r.record(i) else { return true };
            let me = rec
                .id
                .as_deref()
                .and_then(|j| at.get(j).copied())
                .unwrap_or(i);
            let mine = rec.id.as_deref().is_some_and(|j| at.contains_key(j));
            rec.links()
                .into_iter()
                .flatten()
                .filter(|t| mine || at.contains_key(t.as_str()))
                .all(|t| pos(&t).is_none_or(|p| p < me))
        })
    };
    match (causal(Reading::ContentsMoved), causal(Reading::NamesMoved)) {
        (true, false) => Some(Reading::ContentsMoved),
        (false, true) => Some(Reading::NamesMoved),
        _ => None,
    }
}

/// Make name and JSON id agree on the one the conversation uses.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
    let mut in_cross = std::collections::HashSet::new();
    for c in crosses(ctx) {
        in_cross.extend(c.members.iter().copied());
        let list = c
            .members
            .iter()
            .map(|&m| ix(m))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(reading) = c.reading else {
            for &m in &c.members {
                p.leave(
                    ctx.event_path(m),
                    format!("events {list} each hold the JSON another of them is named for, and their links fit both their contents and their names having traded places; which index each event belongs at needs a human"),
                );
            }
            continue;
        };
        // A content this release cannot read is put back with the others
        // (all the cross's files or none), before anything makes it readable:
        // its placeholder then goes into the file named for it, at its index.
        // That placeholder is an unsafe repair: without it the put-back
        // would only move an unreadable JSON, so it is unsafe too.
        let bad = c.members.iter().find(|&&m| ctx.reader.read(m).is_err());
        let (safety, after) = match bad {
            Some(&b) => (
                Safety::Unsafe,
                format!(
                    "; event {}'s JSON cannot be read by SDK {}, and is made readable in the file named for it",
                    ix(b),
                    ctx.reader.kinds.source
                ),
            ),
            None => (Safety::Safe, String::new()),
        };
        for (k, &m) in c.members.iter().enumerate() {
            let Some(j) = ctx.reader.record(m).and_then(|rec| rec.id.as_deref()) else {
                continue;
            };
            match reading {
                Reading::ContentsMoved => {
                    let home = home(&c.members, k);
                    let Some(bytes) = ctx.conv.bytes(&ctx.event_path(m)) else {
                        continue;
                    };
                    p.push_in(
                        crate::edit::Phase::Index,
                        ctx.event_path(home),
                        Action::Replace(bytes),
                        safety,
                        format!(
                            "put event {j}'s JSON back into event {}'s file, the one named for it (events {list} had each other's contents; every byte stays, the links then point back in order{after})",
                            ix(home)
                        ),
                    );
                }
                Reading::NamesMoved => {
                    let to = crate::store::event::canonical_name(m as u64, j);
                    p.push(
                        ctx.event_path(m),
                        Action::Rename(format!("events/{to}")),
                        Safety::Safe,
                        format!(
                            "rename event {} to `{to}`, after its JSON id (events {list} had each other's names; the links then point back in order)",
                            ix(m)
                        ),
                    );
                }
            }
        }
    }
    let mismatched: Vec<(usize, &str)> = (0..ctx.reader.len())
        .filter_map(|i| {
            let json = ctx.reader.record(i)?.id.as_deref()?;
            (json != ctx.reader.id(i)).then_some((i, json))
        })
        .collect();
    if mismatched.is_empty() {
        return;
    }
    // every id something names: parents, action ids, the HEAD
    let mut named: std::collections::HashSet<Id> = std::collections::HashSet::new();
    for f in &ctx.conv.events.files {
        if let Ok(r) = &f.record {
            named.extend(r.links().into_iter().flatten());
        }
    }
    let leaf = ctx
        .conv
        .base_state
        .value()
        .and_then(|v| v.get("leaf_event_id"))
        .and_then(serde_json::Value::as_str);
    named.extend(leaf.map(Id::new));
    let held: std::collections::HashSet<&str> =
        ctx.conv.events.files.iter().map(|f| f.name_id()).collect();
    let mut by_name_id: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for j in 0..ctx.reader.len() {
        *by_name_id.entry(ctx.reader.id(j)).or_default() += 1;
    }
    // read once, on the first file that asks
    let mut tables: Option<super::displaced::Tables> = None;
    for (i, json) in mismatched {
        if in_cross.contains(&i) {
            continue;
        }
        let rel = ctx.event_path(i);
        let name_id = ctx.reader.id(i);
        if by_name_id.get(name_id).copied().unwrap_or(0) > 1 {
            // which of the files is the event is `duplicate-event-id`'s to
            // decide (it may set this one aside): patching first would make
            // a third claimant of the id
            p.leave(
                rel,
                "another file has the same id in its name: `duplicate-event-id` decides first",
            );
            continue;
        }
        let (by_json, by_name) = (named.contains(json), named.contains(name_id));
        // the JSON of another event whose own file is lost: it goes back
        // there and this slot keeps its id under a placeholder
        // (both ids keep their slots then, so every link that names either
        // still finds it)
        let t = tables.get_or_insert_with(|| super::displaced::Tables::new(ctx));
        if let Some(home) = super::displaced::home(ctx, t, i, json) {
            plan_displaced(ctx, p, i, json, home);
            continue;
        }
        let fits = crate::store::event::parse_event_name(
            &crate::store::event::canonical_name(i as u64, json),
            true,
        )
        .is_some_and(|n| n.id == json)
            && json != "__root__"
            && !held.contains(json);
        match (by_json, by_name) {
            (true, true) => p.leave(
                rel,
                "other events or the HEAD name both its ids; which one is the event's needs a human",
            ),
            // its own parent names the file's id: an event is never its own
            // parent, so that id is not the event's (set, it would make a
            // loop of one)
            (false, _)
                if ctx
                    .reader
                    .record(i)
                    .is_some_and(|r| r.parent.cid().is_some_and(|p| p.is(name_id))) =>
            {
                p.leave(
                    rel,
                    "its `parent_id` names the id in its file name, so that id is not the event's own; which file it belongs in needs a human",
                )
            }
            // Nothing names the JSON id: the SDK (its index, `get_event`,
            // every link) knows the event by its file name's id, so the JSON
            // `id` is set to it: the UI then shows, and asks for, the id the
            // server can find.
            (false, _) => p.set(
                rel,
                "/id",
                serde_json::Value::from(name_id),
                Safety::Safe,
                format!(
                    "set event {}'s JSON id to the id in its file name, the one the SDK knows it by",
                    ix(i)
                ),
            ),
            (true, false) if fits => {
                let to = crate::store::event::canonical_name(i as u64, json);
                p.push(
                    rel,
                    Action::Rename(format!("events/{to}")),
                    Safety::Safe,
                    format!(
                        "rename event {} to `{to}`, after its JSON id, the one the conversation names",
                        ix(i),
                    ),
                );
            }
            (true, false) => p.leave(
                rel,
                "its JSON id does not fit the SDK's name rule, or another file holds it; a human decides",
            ),
        }
    }
}

/// Put a displaced JSON back where it belongs ([`super::displaced`]).
fn plan_displaced(
    ctx: &Ctx,
    p: &mut crate::edit::Proposals,
    i: usize,
    json: &str,
    home: super::displaced::Home,
) {
    use super::displaced::Home;
    use crate::edit::{Action, Phase, Safety};
    let rel = ctx.event_path(i);
    let Some(bytes) = ctx.conv.bytes(&rel) else {
        return;
    };
    // the JSON goes into its own slot (over the unreadable file there, or a
    // new file at the missing index), and this slot keeps its id under a
    // placeholder: no rename, so every file keeps its name
    let (home_rel, action, at, put) = match home {
        Home::Unreadable(j) => (
            ctx.event_path(j),
            Action::Replace(bytes),
            j,
            format!(
                "put event {json}'s JSON back into its own file, event {} (which cannot be read: its bytes go into the backup); event {}'s file held it, and event {}'s own JSON is lost",
                ix(j),
                ix(i),
                ix(i)
            ),
        ),
        Home::Free(m) => (
            format!("events/{}", crate::store::event::canonical_name(m, json)),
            Action::Create {
                bytes,
                like: rel.clone(),
            },
            m as usize,
            format!(
                "put event {json}'s JSON into a slot of its own, the free index {}: its parent is the id in the name of the file holding it, event {} (the two events' files had traded places, and its own is lost)",
                ix(m as usize),
                ix(i)
            ),
        ),
    };
    p.push_in(Phase::Index, home_rel, action, Safety::Unsafe, put);
    p.push_in(
        Phase::Index,
        rel,
        Action::Replace(super::displaced::placeholder(ctx, i, json, at)),
        Safety::Unsafe,
        format!(
            "leave a placeholder under event {}'s id (a ConversationErrorEvent the LLM never sees, after event {}): its file held event {json}'s JSON, and its own is lost",
            ix(i),
            i.checked_sub(1).map(ix).unwrap_or_else(|| "none".into())
        ),
    );
}
