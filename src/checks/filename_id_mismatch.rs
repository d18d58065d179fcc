//! `filename-id-mismatch`: the id in the file name differs from the JSON `id`.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
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
  are named, a human decides."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "rename the file to its JSON id when other events or the HEAD name that id and nothing names the file's (the conversation fails to load otherwise); else set the JSON `id` to the file's, the one the SDK knows the event by",
            guards: "the rename: only the JSON id is named, it fits the SDK's name rule and no other file holds it; both ids named: left to a human",
            planner: Some(plan),
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

/// Make name and JSON id agree on the one the conversation uses.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
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
    let mut named: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for f in &ctx.conv.events.files {
        if let Ok(r) = &f.record {
            named.extend(r.parent.id());
            named.extend(r.action_id.as_deref());
        }
    }
    let leaf = ctx
        .conv
        .base_state
        .value()
        .and_then(|v| v.get("leaf_event_id"))
        .and_then(serde_json::Value::as_str);
    named.extend(leaf);
    let held: std::collections::HashSet<&str> = ctx
        .conv
        .events
        .files
        .iter()
        .map(|f| f.name_id.as_str())
        .collect();
    let mut by_name_id: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for j in 0..ctx.reader.len() {
        *by_name_id.entry(ctx.reader.id(j)).or_default() += 1;
    }
    for (i, json) in mismatched {
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
