//! `index-gap`: an index is missing, so every event file after it is invisible.

use super::{ix, ix_range, plural, Applicability, Check, Ctx, Finding, Repair, Severity};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "index-gap";

pub struct IndexGap;

impl Check for IndexGap {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event index is missing; the files after it are invisible to the SDK"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  The event files' indices do not run contiguously from 00000: one is missing.

Why it matters
  The SDK's log is the contiguous run of indices from 0 and stops at the first
  missing one (\"Event index gap detected\"). Every event after the gap is
  invisible to the agent, the UI, counts and search; a leaf beyond it makes the
  conversation fail to load (KeyError); the next append may overwrite an
  existing index.

Repair
  Safe. Each missing index gets a placeholder event, so nothing after it
  moves: a ConversationErrorEvent (which the SDK never sends to the LLM)
  saying an event is missing there, with the id the next event names as its
  parent when that id is in no file (so that link holds again) and the event
  before it as its parent; where the event before it is a tool call nothing
  answers (its result was the lost file), the agent-server's crash-recovery
  AgentErrorEvent answering that call instead, so the tool is not run again
  on resume. Only when more than 64 indices are missing (a file written at a
  far index) are the files after the gap renumbered down instead (renames
  only; every byte stays; the first event after the gap whose parent is in
  no file is re-linked to the event before the gap). Either way the count
  markers move into the backup, so a writer with the log open counts the
  files again before its next append."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "put a placeholder event in each missing index (the id the next event names as its parent, the event before as its parent; the crash-recovery AgentErrorEvent where the lost file answered an open tool call); over 64 missing indices, renumber the files after the gap down instead (renames only); count markers move into the backup, so a writer with the log open counts the files again",
            guards: "no file after the gap shares an index with another (a doubled index is decided first, by `duplicate-index`, in the same run)",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let Some(gap) = ctx.index.gap_at else { return };
        let files = &ctx.conv.events.files;
        let mut hidden: Vec<u64> = ctx.index.beyond_gap.iter().map(|&p| files[p].idx).collect();
        hidden.sort_unstable();
        let (lo, hi) = (hidden[0] as usize, hidden[hidden.len() - 1] as usize);
        let head_beyond = matches!(
            ctx.load_error(),
            Some(crate::view::LoadError::UnknownLeaf { id })
                if ctx.index.beyond_gap.iter().any(|&p| files[p].name_id() == *id)
        );
        let tail = if head_beyond {
            "; the stored HEAD (leaf_event_id) is one of them, so the SDK cannot load the conversation (KeyError)"
        } else {
            ""
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "events/",
            format!(
                "event index {} is missing: the log stops there and {} after it ({}) {} invisible to the agent and the UI{tail}",
                ix(gap as usize),
                plural(hidden.len(), "event file", "event files"),
                ix_range(lo, hi),
                if hidden.len() == 1 { "is" } else { "are" },
            ),
        ));
    }
}

/// Indices missing before a placeholder fills them is no longer sensible:
/// past this many, the files after the gap are renumbered down instead.
const MAX_FILL: u64 = 64;

/// Close the gap: placeholders in the missing indices, or (a far index)
/// the files after it renumbered down. One pass over the files.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    let Some(gap) = ctx.index.gap_at else {
        return;
    };
    let files = &ctx.conv.events.files;
    let mut beyond: Vec<usize> = ctx.index.beyond_gap.clone();
    beyond.sort_by_key(|&pos| files[pos].idx);
    let doubled = beyond
        .iter()
        .any(|&pos| ctx.index.duplicate_idx.contains_key(&files[pos].idx));
    if doubled {
        p.leave(
            "events/",
            "an index after the gap is held by two files: `duplicate-index` decides which one stays first (with --unsafe-fixes when they differ), then the gap is closed",
        );
        return;
    }
    // the event before the gap holds another's contents, which
    // `filename-id-mismatch` puts back in this pass (in this run, when it
    // may): whether the gap's placeholder answers a call is known after
    if p.selected(super::filename_id_mismatch::ID) {
        let last = ctx.reader.len().checked_sub(1);
        if super::filename_id_mismatch::crosses(ctx)
            .iter()
            .any(|c| c.reading.is_some() && last.is_some_and(|l| c.members.contains(&l)))
        {
            p.leave(
                "events/",
                "the event before the gap holds another event's contents: `filename-id-mismatch` puts them back first, then the gap is closed",
            );
            return;
        }
    }
    // the event before the gap holds its child's JSON, whose own file was
    // at the gap: `filename-id-mismatch` moves it there (in this run, when
    // it may), and the slot it leaves is the gap then
    if p.selected(super::filename_id_mismatch::ID) && super::displaced::goes_to_the_gap(ctx) {
        p.leave(
            "events/",
            "the event before the gap holds its child's JSON, whose own index is the gap: `filename-id-mismatch` moves it there first, then the slot it leaves is filled",
        );
        return;
    }
    // a stray under a short-spelled name that is the one missing event:
    // `bad-event-filename` renames it in this pass, closing the gap
    if p.selected(super::bad_event_filename::ID)
        && ctx
            .conv
            .events
            .stray
            .iter()
            .any(|s| super::bad_event_filename::restorable(ctx, s).is_some())
    {
        p.leave(
            "events/",
            "the one missing event is there under a short-spelled name: `bad-event-filename` renames it, which closes the gap",
        );
        return;
    }
    let last = beyond.last().map_or(gap, |&pos| files[pos].idx);
    let missing = last + 1 - gap - beyond.len() as u64;
    if missing <= MAX_FILL {
        fill(ctx, p, gap, &beyond);
    } else {
        renumber(ctx, p, &beyond);
    }
    super::drop_count_markers(ctx, p);
}

/// What a placeholder needs of the event before a missing index.
struct Prev {
    id: String,
    tree_era: bool,
    timestamp: Option<String>,
    /// The open tool call it leaves when it is an ActionEvent.
    call: Option<(String, String)>,
    /// Its file, for the owner and mode of the new one.
    file: String,
}

fn fill(ctx: &Ctx, p: &mut crate::edit::Proposals, gap: u64, beyond: &[usize]) {
    use crate::edit::placeholder::{self, derived_id, Slot, ToolCall};
    use crate::edit::{Action, Safety};
    use crate::store::{EventRecord, ParentRef};
    let files = &ctx.conv.events.files;
    let held: std::collections::HashSet<&str> = files.iter().map(|f| f.name_id()).collect();
    // tool calls some event (in the log or after the gap) answers, by the
    // SDK's rule
    let mut answered_calls = std::collections::HashSet::new();
    let mut answered_actions = std::collections::HashSet::new();
    for f in files {
        if let Ok(r) = &f.record {
            match super::tool_calls::answer(r) {
                Some(super::tool_calls::Answer::Action(a)) => answered_actions.insert(a),
                Some(super::tool_calls::Answer::Call(tc)) => answered_calls.insert(tc),
                None => false,
            };
        }
    }
    let prev_of = |id: &str, rec: Option<&EventRecord>, file: &str| -> Prev {
        let call = rec
            .filter(|r| super::tool_calls::executable(r))
            .and_then(|r| r.tool_call_id().map(String::from))
            .filter(|tc| !answered_calls.contains(tc.as_str()) && !answered_actions.contains(id))
            .and_then(|tc| {
                let b = ctx.conv.bytes(&format!("events/{file}"))?;
                let v: serde_json::Value = serde_json::from_slice(&b).ok()?;
                Some((v.get("tool_name")?.as_str()?.to_string(), tc))
            });
        Prev {
            id: id.to_string(),
            tree_era: rec.is_some_and(|r| r.parent.is_present()),
            timestamp: rec.and_then(|r| r.timestamp().map(String::from)),
            call,
            file: format!("events/{file}"),
        }
    };
    let mut prev: Option<Prev> = gap.checked_sub(1).map(|i| {
        let i = i as usize;
        prev_of(
            ctx.reader.id(i),
            ctx.reader.record(i),
            &ctx.reader.file(i).name,
        )
    });
    let at: std::collections::BTreeMap<u64, usize> =
        beyond.iter().map(|&pos| (files[pos].idx, pos)).collect();
    let last = at.keys().next_back().copied().unwrap_or(gap);
    let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
    for m in gap..=last {
        if let Some(&pos) = at.get(&m) {
            let f = &files[pos];
            prev = Some(prev_of(f.name_id(), f.record.as_ref().ok(), &f.name));
            continue;
        }
        // the id the next event names as its parent, when no file holds it
        let next = at.get(&(m + 1)).map(|&pos| &files[pos]);
        let named = next
            .and_then(|f| f.record.as_ref().ok())
            .and_then(|r| r.parent.id())
            .filter(|id| {
                !held.contains(id.as_str())
                    && !used.contains(id.as_str())
                    && crate::store::event::parse_event_name(
                        &crate::store::event::canonical_name(m, id),
                        true,
                    )
                    .is_some_and(|n| n.id == *id)
            })
            .map(String::from);
        let id = named.clone().unwrap_or_else(|| {
            let mut seed = ctx.conv.folder.as_bytes().to_vec();
            seed.extend_from_slice(format!("/missing-index/{m}").as_bytes());
            derived_id(&seed)
        });
        used.insert(id.clone());
        // after a legacy event (no `parent_id`) the placeholder has none
        // either: the SDK's linear rule makes that event its parent all the
        // same, and it does not look like a tree-era event where the log was
        // still flat (the false-root fingerprint reads that)
        let tree_era = prev.as_ref().is_some_and(|q| q.tree_era);
        let parent = match &prev {
            Some(q) if tree_era => ParentRef::Id(q.id.as_str().into()),
            _ => ParentRef::Absent,
        };
        let call = prev
            .as_ref()
            .and_then(|q| q.call.clone())
            .map(|(tool_name, tool_call_id)| ToolCall {
                tool_name,
                tool_call_id,
            });
        let timestamp = prev
            .as_ref()
            .and_then(|q| q.timestamp.clone())
            .or_else(|| {
                next.and_then(|f| f.record.as_ref().ok())
                    .and_then(|r| r.timestamp().map(String::from))
            })
            .unwrap_or_else(|| "1970-01-01T00:00:00".into());
        let name = crate::store::event::canonical_name(m, &id);
        let why = format!("no file holds index {}", ix(m as usize));
        let bytes = placeholder::event(&Slot {
            id: &id,
            timestamp: &timestamp,
            parent: &parent,
            file: &name,
            cause: placeholder::Cause::Missing(&why),
            answers: call.as_ref(),
        });
        let like = prev
            .as_ref()
            .map(|q| q.file.clone())
            .or_else(|| next.map(|f| format!("events/{}", f.name)))
            .unwrap_or_else(|| "base_state.json".into());
        let what = match (&call, &named) {
            (Some(c), _) => format!(
                "fill the missing index {} with the crash-recovery AgentErrorEvent answering tool call `{}` (its result was the lost file)",
                ix(m as usize),
                ctx.quote(&c.tool_call_id)
            ),
            (None, Some(_)) => format!(
                "fill the missing index {} with a placeholder (a ConversationErrorEvent the LLM never sees) under the id its next event names as its parent",
                ix(m as usize)
            ),
            (None, None) => format!(
                "fill the missing index {} with a placeholder (a ConversationErrorEvent the LLM never sees)",
                ix(m as usize)
            ),
        };
        p.push(
            format!("events/{name}"),
            Action::Create { bytes, like },
            Safety::Safe,
            what,
        );
        prev = Some(Prev {
            id,
            tree_era,
            timestamp: Some(timestamp),
            call: None,
            file: prev.map(|q| q.file).unwrap_or_default(),
        });
    }
}

/// Renumber the files after the gap down into a contiguous log, in index
/// order; the first event after each gap whose parent is in no file is
/// re-linked to the event before it. One pass over the files.
fn renumber(ctx: &Ctx, p: &mut crate::edit::Proposals, beyond: &[usize]) {
    use crate::edit::{Action, Safety};
    use crate::store::event::canonical_name;
    use crate::store::ParentRef;
    let files = &ctx.conv.events.files;
    let known: std::collections::HashSet<&str> = files.iter().map(|f| f.name_id()).collect();
    let start = ctx.index.len() as u64;
    let mut prev_idx = start;
    let mut last: Option<&str> = start.checked_sub(1).map(|i| ctx.reader.id(i as usize));
    for (k, &pos) in (start..).zip(beyond.iter()) {
        let f = &files[pos];
        let rel = format!("events/{}", f.name);
        let first_after_gap = f.idx != prev_idx;
        if first_after_gap {
            if let (Ok(rec), Some(to)) = (&f.record, last) {
                if let ParentRef::Id(parent) = &rec.parent {
                    if !known.contains(parent.spell().as_str()) {
                        p.relink(
                            rel.clone(),
                            to,
                            Safety::Safe,
                            format!(
                                "re-link `{}` (first after the gap; its parent is in no file) to the event before the gap ({to})",
                                f.name
                            ),
                        );
                    }
                }
            }
        }
        let new = canonical_name(k, f.name_id());
        if new != f.name {
            p.push(
                rel,
                Action::Rename(format!("events/{new}")),
                Safety::Safe,
                format!("renumber {} -> {new}", f.name),
            );
        }
        prev_idx = f.idx + 1;
        last = Some(f.name_id());
    }
}
