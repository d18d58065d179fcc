//! `duplicate-index`: two files hold the same index; the SDK sees only one.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "duplicate-index";

pub struct DuplicateIndex;

impl Check for DuplicateIndex {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "Two event files have the same index; the SDK keeps one and loses the other"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Two or more files in events/ whose names carry the same index (including a
  5-digit and a 6-digit spelling of it).

Why it matters
  The SDK's index keeps, for each index, the file listed last by the directory
  listing (os.listdir order, which depends on the filesystem). The other file
  is invisible, and any event whose parent it is fails with KeyError. Causes:
  concurrent writers before 1.8.2 (no lock), an append after a gap.

Repair
  Keep the file the SDK reads at that index, unless nothing names it while
  exactly one other copy is named (by a child's `parent_id`, an
  observation's `action_id` or the HEAD): the SDK's pick follows the
  directory order, and the named copy is the one the log went on from
  (keeping the other would leave its tool call unanswered, to run again on
  resume). Another file that is byte for
  byte the same (a 5- and a 6-digit spelling of one event) is moved into
  the run's backup: nothing is lost (safe). One that differs is unsafe
  (only with `repair --unsafe-fixes`), because another machine's directory
  order could have shown it instead: when it is a tree-era event that
  another event or the HEAD names as its parent, it is moved to the end of
  the log under a new index (its bytes and links kept, so its children find
  it again); otherwise it is moved into the run's backup."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "keep the file the SDK reads at that index (or the one copy that an event or the HEAD names, when nothing names that file); move an identical copy into the run's backup (safe); move one that differs to the end of the log when it carries a `parent_id` and something names it as a parent, else into the run's backup (unsafe)",
            guards: "moving to the end needs a log without an index gap (closed first in the same run) and an explicit `parent_id` on the moved event; unsafe (unless identical) because which copy the SDK keeps follows this machine's directory order",
            planner: Some(plan),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let files = &ctx.conv.events.files;
        for (&idx, positions) in &ctx.index.duplicate_idx {
            let names: Vec<String> = positions
                .iter()
                .map(|&p| format!("`{}`", files[p].name))
                .collect();
            let kept = &files[*positions.last().unwrap_or(&positions[0])].name;
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                format!("events/{}", files[positions[0]].name),
                format!(
                    "{} files hold index {}: {}; the SDK keeps `{kept}` (last in directory order here) and cannot see the others",
                    positions.len(),
                    ix(idx as usize),
                    names.join(", "),
                ),
            ));
        }
    }
}

/// Keep the file the SDK reads at each doubled index; the others go to the
/// end of the log (when something still needs them) or into the backup.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
    use crate::store::ParentRef;
    let files = &ctx.conv.events.files;
    let read = |pos: usize| ctx.conv.bytes(&format!("events/{}", files[pos].name));
    // ids something names as its parent (events, and the HEAD)
    let mut named: std::collections::HashSet<&str> = files
        .iter()
        .filter_map(|f| f.record.as_ref().ok())
        .filter_map(|r| r.parent.id())
        .collect();
    if let Some(leaf) = ctx
        .conv
        .base_state
        .value()
        .and_then(|v| v.get("leaf_event_id"))
        .and_then(|v| v.as_str())
    {
        named.insert(leaf);
    }
    // ids an observation names as the action it answers
    let answered: std::collections::HashSet<&str> = files
        .iter()
        .filter_map(|f| f.record.as_ref().ok())
        .filter_map(|r| r.action_id.as_deref())
        .collect();
    let referenced = |id: &str| named.contains(id) || answered.contains(id);
    let mut next = ctx.index.len() as u64;
    let first_new = next;
    for (&idx, positions) in &ctx.index.duplicate_idx {
        // the file the SDK reads at that index: the one the index keeps,
        // or the one with the name it rebuilds when that is another
        // (beyond a gap: the one the SDK will read once the gap is closed,
        // the canonical spelling first)
        let canonical = positions.iter().copied().find(|&p| {
            crate::store::event::is_canonical_name(&files[p].name, idx, &files[p].name_id)
        });
        // the SDK opens the name it rebuilds from the id the index keeps:
        // that file, when it is one of them
        let opened = ctx.index.by_idx.get(idx as usize).and_then(|&k| {
            let name = crate::store::event::canonical_name(idx, &files[k].name_id);
            positions.iter().copied().find(|&p| files[p].name == name)
        });
        let kept = match ctx.index.by_idx.get(idx as usize) {
            _ if opened.is_some() => opened.unwrap_or(positions[0]),
            // the index keeps a file under another spelling whose path the
            // SDK cannot open: the canonical one is the real event (the one
            // whose id the others name)
            Some(&k)
                if canonical.is_some()
                    && !crate::store::event::is_canonical_name(
                        &files[k].name,
                        idx,
                        &files[k].name_id,
                    ) =>
            {
                canonical.unwrap_or(k)
            }
            Some(&k) => {
                let read_by_sdk = &ctx.reader.content(idx as usize).name;
                positions
                    .iter()
                    .copied()
                    .find(|&p| &files[p].name == read_by_sdk)
                    .unwrap_or(k)
            }
            None => canonical.unwrap_or(*positions.last().unwrap_or(&positions[0])),
        };
        // The SDK's pick follows this machine's directory order; when
        // nothing names it while exactly one other copy, readable and under
        // its canonical name, is named (a child's parent, an observation's
        // action, the HEAD), that one is the event the log goes on from:
        // keeping the other would orphan its children or leave its tool
        // call unanswered (and run again on resume).
        let kept = {
            let named_others: Vec<usize> = positions
                .iter()
                .copied()
                .filter(|&q| q != kept && referenced(&files[q].name_id))
                .collect();
            match named_others[..] {
                [q] if !referenced(&files[kept].name_id)
                    && files[q].record.is_ok()
                    && crate::store::event::is_canonical_name(
                        &files[q].name,
                        idx,
                        &files[q].name_id,
                    ) =>
                {
                    q
                }
                _ => kept,
            }
        };
        let kept_bytes = read(kept);
        for &q in positions.iter().filter(|&&q| q != kept) {
            let f = &files[q];
            let rel = format!("events/{}", f.name);
            let same = kept_bytes.is_some() && read(q) == kept_bytes;
            if same && f.name_id == files[kept].name_id {
                p.push(
                    rel,
                    Action::Remove,
                    Safety::Safe,
                    format!(
                        "move `{}` into the backup: it is byte for byte `{}`, the file the SDK reads at index {}",
                        f.name,
                        files[kept].name,
                        ix(idx as usize)
                    ),
                );
                continue;
            }
            let explicit = f
                .record
                .as_ref()
                .is_ok_and(|r| matches!(r.parent, ParentRef::Id(_) | ParentRef::Root));
            let needed = named.contains(f.name_id.as_str());
            if explicit && needed && ctx.index.gap_at.is_none() {
                let to = crate::store::event::canonical_name(next, &f.name_id);
                next += 1;
                p.push(
                    rel,
                    Action::Rename(format!("events/{to}")),
                    Safety::Unsafe,
                    format!(
                        "move `{}` (invisible: the SDK reads `{}` at index {}) to the end of the log as `{to}`, so the events that name it as their parent find it",
                        f.name,
                        files[kept].name,
                        ix(idx as usize)
                    ),
                );
            } else {
                p.push(
                    rel,
                    Action::Remove,
                    Safety::Unsafe,
                    format!(
                        "move `{}` into the backup: the SDK reads `{}` at index {} and cannot see it",
                        f.name,
                        files[kept].name,
                        ix(idx as usize)
                    ),
                );
            }
        }
    }
    if next > first_new {
        super::drop_count_markers(ctx, p);
    }
}
