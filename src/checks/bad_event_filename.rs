//! `bad-event-filename`: an `event-*.json` whose name the SDK does not accept,
//! or does not read back under that name.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::{LoadError, ReadError};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "bad-event-filename";

pub struct BadEventFilename;

impl Check for BadEventFilename {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "A file named like an event does not follow the SDK's event-name rule"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A file in events/ whose name starts `event-` and ends `.json` but does not
  match `^event-(\\d{5,})-([0-9a-fA-F-]{8,})\\.json$` (a short index, a non-hex
  id, extra text), or one that matches but is not spelled the way the SDK
  rebuilds the path to read it (`event-{idx:05d}-{id}.json`, e.g. a 6-digit
  spelling of a small index).

Why it matters
  A non-matching file is invisible to the SDK, but its count-on-disk still
  counts it, so the next append writes at an inflated index: a gap, and the
  new event (and the HEAD) vanish on the next restart. A matching but
  non-canonical name is read as a path that does not exist
  (FileNotFoundError).

Repair
  Safe: an indexed file whose name is not the spelling the SDK rebuilds
  (`event-{idx:05d}-{id}.json`, e.g. a 6-digit index under 100000) is renamed
  to that spelling: its bytes stay, and the SDK reads it again. A file whose
  index is only spelled short (`event-0006-<id>.json`) is renamed to its
  canonical name when no file holds that index, its JSON id is the one in
  its name, and either the HEAD names it and that index is the log's next
  one (the conversation cannot load without it), or it is the one index
  missing in the log (the next one is held: renamed, the log is contiguous
  again, and no placeholder is needed). Any other file the name rule
  rejects (`event-x-1.json`, a non-hex id, a short index neither the HEAD
  nor a one-index gap points at) stays for a human: which index it belongs at, or whether it was
  hidden on purpose, cannot be known from its name."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "rename an indexed file to the name the SDK rebuilds for it (`event-{idx:05d}-{id}.json`): renames only, every byte stays",
            guards: "the file is in the SDK's index (its name matches the rule) and the canonical name is free; a file the rule rejects is left to a human (its index is unknown), but for a short-spelled index, unheld, matching its JSON id, that is the log's next one and the HEAD's event, or the one index missing in the log",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for s in &ctx.conv.events.stray {
            let content = match &s.record {
                Some(r) => format!(
                    " It holds a {} the SDK will never show.",
                    ctx.quote(&r.kind)
                ),
                None => String::new(),
            };
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                format!("events/{}", s.name),
                format!(
                    "`{}` does not match the SDK's event-name rule: it is invisible, and the next append will skip an index and leave a gap.{content}",
                    s.name
                ),
            ).fixable(restorable(ctx, s).is_some()));
        }
        let blocking = match ctx.load_error() {
            Some(LoadError::Read { idx, .. }) => Some(*idx),
            _ => None,
        };
        for i in 0..ctx.reader.len() {
            if let Err(ReadError::NonCanonicalName { expected }) = ctx.reader.read(i) {
                out.push(Finding::new(
                    self.id(),
                    if blocking == Some(i) { Severity::Error } else { Severity::Warning },
                    ctx.event_path(i),
                    format!(
                        "event {} is indexed, but the SDK reads it as `{expected}`, which does not exist",
                        ix(i)
                    ),
                ));
            }
        }
    }
}

/// What [`restorable`] asks of the whole folder, found once per context
/// (one pass over the files and the strays, not one per stray).
#[derive(Debug)]
pub(crate) struct Strays {
    /// The indices and the ids the event files hold.
    idx_held: std::collections::HashSet<u64>,
    ids_held: std::collections::HashSet<String>,
    /// For each id, how many strays' names end in `-<id>.json` (every
    /// `-` of a name starts one such ending).
    named: std::collections::HashMap<String, usize>,
    /// The index after the first gap is held by a file beyond it.
    next_after_gap_held: bool,
}

impl Strays {
    fn of(ctx: &Ctx) -> Strays {
        let files = &ctx.conv.events.files;
        let mut named = std::collections::HashMap::new();
        for o in &ctx.conv.events.stray {
            let Some(body) = o
                .name
                .strip_suffix(".json")
                .filter(|_| o.name.starts_with("event-"))
            else {
                continue;
            };
            for (at, _) in body.match_indices('-') {
                *named.entry(body[at + 1..].to_string()).or_insert(0) += 1;
            }
        }
        Strays {
            idx_held: files.iter().map(|f| f.idx).collect(),
            ids_held: files.iter().map(|f| f.name_id().to_string()).collect(),
            named,
            next_after_gap_held: ctx.index.gap_at.is_some_and(|gap| {
                ctx.index
                    .beyond_gap
                    .iter()
                    .any(|&p| files[p].idx == gap + 1)
            }),
        }
    }
}

/// A stray whose index is only spelled short (`event-0006-<id>.json`)
/// where the index it means is known to be the event's: no file holds it,
/// its JSON id is the one in its name, and either it is the log's next
/// index and the HEAD names it (the log's own tail, which the conversation
/// cannot load without), or it is the one index missing in the log (the
/// next index is held: renamed, the log is contiguous again). Its
/// canonical name.
pub(super) fn restorable(ctx: &Ctx, s: &crate::store::conversation::StrayFile) -> Option<String> {
    use crate::store::event::{canonical_name, parse_event_name, parse_short_index_name};
    let short = parse_short_index_name(&s.name)?;
    let (idx, id) = (short.idx, short.id.as_str());
    let to = canonical_name(idx, id);
    let n = ctx.reader.len() as u64;
    let folder = ctx.shared.strays.get_or_init(|| Strays::of(ctx));
    let only = || folder.named.get(id) == Some(&1);
    let tail = idx == n && ctx.index.gap_at.is_none() && ctx.index.beyond_gap.is_empty();
    let hole = ctx.index.gap_at == Some(idx) && folder.next_after_gap_held;
    let fits = (tail || hole)
        && !folder.idx_held.contains(&idx)
        && !folder.ids_held.contains(id)
        && parse_event_name(&to, true).is_some_and(|e| e.id == id)
        && s.record.as_ref().and_then(|r| r.id.as_deref()) == Some(id)
        && only();
    if !fits {
        return None;
    }
    if hole {
        return Some(to);
    }
    let head = ctx
        .conv
        .base_state
        .value()
        .and_then(|v| v.get("leaf_event_id"))
        .and_then(serde_json::Value::as_str)
        == Some(id);
    head.then_some(to)
}

/// Rename each indexed file to the spelling the SDK reads it by, and a
/// stray whose short index is the log's next one to its canonical name.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    for s in &ctx.conv.events.stray {
        let rel = format!("events/{}", s.name);
        match restorable(ctx, s) {
            Some(to) => p.push(
                rel,
                crate::edit::Action::Rename(format!("events/{to}")),
                crate::edit::Safety::Safe,
                format!(
                    "rename `{}` to `{to}`: {}, and no file holds it",
                    s.name,
                    if ctx.index.gap_at.is_some() {
                        "its short index is the one missing in the log"
                    } else {
                        "the HEAD names it, its short index is the log's next one"
                    }
                ),
            ),
            None => p.leave(
                rel,
                "the SDK's name rule rejects it, so which index it belongs at cannot be known from its name: a human decides (move it out, or rename it)",
            ),
        }
    }
    for i in 0..ctx.reader.len() {
        if let Err(ReadError::NonCanonicalName { expected }) = ctx.reader.read(i) {
            p.push(
                ctx.event_path(i),
                crate::edit::Action::Rename(format!("events/{expected}")),
                crate::edit::Safety::Safe,
                format!(
                    "rename `{}` to `{expected}`, the name the SDK reads event {} by",
                    ctx.reader.file(i).name,
                    ix(i)
                ),
            );
        }
    }
}
