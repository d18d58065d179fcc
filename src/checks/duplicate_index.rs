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
  Keep the file the SDK reads at that index (beyond an index gap, the one
  it will read once the gap is closed: the last in directory order under a
  name it can open), unless nothing names it while
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
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let files = &ctx.conv.events.files;
        let survivors = survivors(ctx);
        for (&idx, positions) in &ctx.index.duplicate_idx {
            let names: Vec<String> = positions
                .iter()
                .map(|&p| format!("`{}`", files[p].name))
                .collect();
            let s = &survivors[&idx];
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                format!("events/{}", files[positions[0]].name),
                format!(
                    "{} files hold index {}: {}; {}; a repair keeps `{}`, {}",
                    positions.len(),
                    ix(idx as usize),
                    names.join(", "),
                    s.sdk,
                    files[s.pos].name,
                    s.why,
                ),
            ));
        }
    }
}

/// Which copy of a doubled index survives, and why: the one rule the
/// finding states and the repair follows.
pub struct Survivor {
    /// `files` position of the copy kept.
    pub pos: usize,
    /// What the SDK makes of the copies, naming the file it reads.
    pub sdk: String,
    /// Why `pos` is the copy kept (a phrase following its name).
    pub why: String,
}

/// The survivor of each doubled index (`Index::duplicate_idx`): the file
/// the SDK reads there (its index keeps the copy last in directory order,
/// and opens the name it rebuilds from that copy's id; when it cannot open
/// that spelling, or beyond a gap, the last under a name it can open),
/// unless nothing names that file while exactly one other copy, readable
/// and under its canonical name, is named (a child's `parent_id`, an
/// observation's `action_id`, the HEAD): the log went on from that one,
/// and keeping the other would orphan its children or leave its tool call
/// unanswered (to run again on resume).
pub fn survivors(ctx: &Ctx) -> std::collections::BTreeMap<u64, Survivor> {
    use crate::store::event::{canonical_name, is_canonical_name};
    let mut out = std::collections::BTreeMap::new();
    if ctx.index.duplicate_idx.is_empty() {
        // no doubled index: no table of every named id (issue 27)
        return out;
    }
    let files = &ctx.conv.events.files;
    let canonical = |p: usize, idx: u64| is_canonical_name(&files[p].name, idx, files[p].name_id());
    let referenced = references(ctx);
    for (&idx, positions) in &ctx.index.duplicate_idx {
        let last = *positions.last().unwrap_or(&positions[0]);
        let last_canonical = positions.iter().copied().rfind(|&p| canonical(p, idx));
        let quoted = |p: usize| format!("`{}`", files[p].name);
        let reads = |p: usize| {
            format!(
                "the SDK reads {} (last in directory order here) and cannot see the others",
                quoted(p)
            )
        };
        let (read, sdk, why) = match ctx.index.by_idx.get(idx as usize) {
            None => (
                last_canonical.unwrap_or(last),
                "they lie beyond the index gap, where the SDK reads none of them".to_string(),
                "the one the SDK will read once the gap is closed (the last in directory order here under a name it can open)",
            ),
            Some(&k) => {
                // the SDK opens the name it rebuilds from the id its index
                // keeps: that file, when it is one of them
                let name = canonical_name(idx, files[k].name_id());
                match positions.iter().copied().find(|&p| files[p].name == name) {
                    Some(p) if p == k => (p, reads(p), "the file the SDK reads"),
                    Some(p) => (
                        p,
                        format!(
                            "the SDK's index keeps {} (last in directory order here), opens {}, the name it spells from that id, and cannot see the others",
                            quoted(k),
                            quoted(p)
                        ),
                        "the file the SDK reads",
                    ),
                    // the index keeps a spelling whose path the SDK cannot
                    // open: the canonical one is the real event (the one
                    // whose id the others name)
                    None if last_canonical.is_some() && !canonical(k, idx) => (
                        last_canonical.unwrap_or(k),
                        format!(
                            "the SDK's index keeps {} (last in directory order here), a spelling it cannot open, and cannot see the others",
                            quoted(k)
                        ),
                        "the event under the name the SDK spells",
                    ),
                    None => {
                        let by_sdk = &ctx.reader.content(idx as usize).name;
                        let p = positions
                            .iter()
                            .copied()
                            .find(|&p| &files[p].name == by_sdk)
                            .unwrap_or(k);
                        (p, reads(p), "the file the SDK reads")
                    }
                }
            }
        };
        let named_others: Vec<usize> = positions
            .iter()
            .copied()
            .filter(|&q| q != read && referenced(files[q].name_id()))
            .collect();
        let survivor = match named_others[..] {
            [q] if !referenced(files[read].name_id())
                && files[q].record.is_ok()
                && canonical(q, idx) =>
            {
                Survivor {
                    pos: q,
                    sdk,
                    why: format!(
                        "the copy the log went on from (an event or the HEAD names it; nothing names {})",
                        quoted(read)
                    ),
                }
            }
            _ => Survivor {
                pos: read,
                sdk,
                why: why.to_string(),
            },
        };
        out.insert(idx, survivor);
    }
    out
}

/// Whether an id is named by an event (as its parent, or as the action an
/// observation answers) or by the HEAD.
fn references<'a>(ctx: &'a Ctx) -> impl Fn(&str) -> bool + 'a {
    let (named, answered) = named_ids(ctx);
    move |id: &str| named.contains(id) || answered.contains(id)
}

/// The ids something names as its parent (events, and the HEAD), and the
/// ids an observation names as the action it answers.
fn named_ids<'a>(
    ctx: &'a Ctx,
) -> (
    std::collections::HashSet<crate::store::event::Id>,
    std::collections::HashSet<&'a str>,
) {
    let files = &ctx.conv.events.files;
    let mut named: std::collections::HashSet<crate::store::event::Id> = files
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
        named.insert(leaf.into());
    }
    let answered = files
        .iter()
        .filter_map(|f| f.record.as_ref().ok())
        .filter_map(|r| r.action_id())
        .collect();
    (named, answered)
}

/// Keep the file the SDK reads at each doubled index; the others go to the
/// end of the log (when something still needs them) or into the backup.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
    use crate::store::ParentRef;
    let files = &ctx.conv.events.files;
    let read = |pos: usize| ctx.conv.bytes(&format!("events/{}", files[pos].name));
    let (named, _) = named_ids(ctx);
    let survivors = survivors(ctx);
    let mut next = ctx.index.len() as u64;
    let first_new = next;
    for (&idx, positions) in &ctx.index.duplicate_idx {
        let survivor = &survivors[&idx];
        let kept = survivor.pos;
        let kept_bytes = read(kept);
        // one finding per index: its copies go in one run or none (a
        // byte-for-byte copy is taken out safely only when the others are
        // too; alone it would clear nothing)
        let mut mine: Vec<(String, Action, Safety, String)> = Vec::new();
        for &q in positions.iter().filter(|&&q| q != kept) {
            let f = &files[q];
            let rel = format!("events/{}", f.name);
            let same = kept_bytes.is_some() && read(q) == kept_bytes;
            if same && f.name_id() == files[kept].name_id() {
                mine.push((
                    rel,
                    Action::Remove,
                    Safety::Safe,
                    format!(
                        "move `{}` into the backup: it is byte for byte `{}`, which keeps index {}, {}",
                        f.name,
                        files[kept].name,
                        ix(idx as usize),
                        survivor.why
                    ),
                ));
                continue;
            }
            let explicit = f
                .record
                .as_ref()
                .is_ok_and(|r| matches!(r.parent, ParentRef::Id(_) | ParentRef::Root));
            let needed = named.contains(f.name_id());
            if explicit && needed && ctx.index.gap_at.is_none() {
                let to = crate::store::event::canonical_name(next, f.name_id());
                next += 1;
                mine.push((
                    rel,
                    Action::Rename(format!("events/{to}")),
                    Safety::Unsafe,
                    format!(
                        "move `{}` to the end of the log as `{to}`, so the events that name it as their parent find it: `{}` keeps index {}, {}",
                        f.name,
                        files[kept].name,
                        ix(idx as usize),
                        survivor.why
                    ),
                ));
            } else {
                mine.push((
                    rel,
                    Action::Remove,
                    Safety::Unsafe,
                    format!(
                        "move `{}` into the backup: `{}` keeps index {}, {}",
                        f.name,
                        files[kept].name,
                        ix(idx as usize),
                        survivor.why
                    ),
                ));
            }
        }
        let safety = mine.iter().map(|m| m.2).max().unwrap_or(Safety::Safe);
        for (rel, action, _, what) in mine {
            p.push(rel, action, safety, what);
        }
    }
    if next > first_new {
        super::drop_count_markers(ctx, p);
    }
}
