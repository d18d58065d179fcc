//! A JSON displaced into another event's file, whose own file is lost.
//!
//! Two events' contents trade files (a copy tool, a restore by hand), then
//! one of the two files is lost: deleted, emptied or cut short. What is left
//! is a file named for event `Y` holding the JSON of event `X`, while the
//! file named for `X` cannot be read (or, `X` being the event right after
//! `Y`, its index is missing, or it was the last). `Y`'s own JSON is gone;
//! `X`'s is whole, in the wrong file. The SDK indexes by file name, so it reads `X`'s JSON
//! as event `Y`: where `X` is `Y`'s child, the event names itself as its
//! parent (`Cycle in event tree`); elsewhere its links point forward.
//!
//! The reading the SDK's writer could have produced puts `X`'s JSON back
//! into the slot named for it and leaves `Y` a placeholder: the one file
//! holding `X` whole, every link pointing back in index order. It is
//! `filename-id-mismatch`'s repair (unsafe: `Y`'s content is lost, and
//! which file `X` left is a reading), made only where the SDK refuses the
//! folder; `index-gap` waits for it when the slot is the gap.

use super::Ctx;
use crate::store::event::Id;
use crate::store::ParentRef;
use std::collections::HashMap;

/// Where a displaced JSON goes back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// The file named for it, at this index, which cannot be read: its
    /// bytes go into the backup and the JSON takes its place.
    Unreadable(usize),
    /// A free index: the log's gap right after `Y`, or the index after the
    /// log's last event (where its own file was lost): a new file there.
    Free(u64),
}

/// What [`home`] asks of every event, read once per plan: how many files
/// hold each JSON id, the first file that names each id as its parent, and
/// the files named for each id (so a folder of many moved JSONs stays
/// linear).
pub struct Tables<'a> {
    holders: HashMap<&'a str, u32>,
    first_child: HashMap<Id, usize>,
    named: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Tables<'a> {
    pub fn new(ctx: &Ctx<'a>) -> Tables<'a> {
        let r = &ctx.reader;
        let mut t = Tables {
            holders: HashMap::new(),
            first_child: HashMap::new(),
            named: HashMap::new(),
        };
        for j in 0..r.len() {
            if let Some(x) = r.record(j) {
                if let Some(id) = x.id.as_deref() {
                    *t.holders.entry(id).or_default() += 1;
                }
                if let Some(p) = x.parent.id() {
                    t.first_child.entry(p).or_insert(j);
                }
            }
            t.named.entry(r.id(j)).or_default().push(j);
        }
        t
    }
}

/// Where event `i`'s JSON (an id other than its file name's) goes back to,
/// if it was displaced: `json` is its JSON id.
pub fn home(ctx: &Ctx, t: &Tables, i: usize, json: &str) -> Option<Home> {
    // only where the SDK refuses the folder: moving a JSON is a reading,
    // and a folder that loads keeps the one it has
    ctx.load_error()?;
    let r = &ctx.reader;
    let rec = r.record(i)?;
    let name_id = r.id(i);
    // the JSON is held by this file alone (a second copy is another shape)
    if t.holders.get(json).copied() != Some(1) {
        return None;
    }
    // where its parent and children are: every link points back in index
    // order once it is home (a parent in no file constrains nothing:
    // `index-gap` or `dangling-parent` sees to it once the JSON is home)
    let parent_at = match &rec.parent {
        ParentRef::Id(p) => ctx.index.id_to_idx.get_cid(p).copied(),
        _ => None,
    };
    let first_child = t.first_child.get(json).copied();
    let fits = |at: usize| parent_at.is_none_or(|p| p < at) && first_child.is_none_or(|c| c > at);
    match t.named.get(json).map(Vec::as_slice).unwrap_or_default() {
        [j] if *j != i && r.record(*j).is_none() && fits(*j) => Some(Home::Unreadable(*j)),
        [] => {
            // no file is named for it: only where it names `Y` as its parent
            // (so it is no event renamed, whose JSON id is its own) and
            // nothing follows it, into the free index right after `Y`'s
            // when that is the log's gap, or after the log's last event
            let own_child = rec.parent.cid().is_some_and(|p| p.is(name_id));
            let free = match ctx.index.gap_at {
                Some(g) if g == i as u64 + 1 && i + 1 == r.len() => Some(g),
                Some(_) => None,
                None => Some(r.len() as u64),
            };
            free.filter(|_| own_child && first_child.is_none())
                .map(Home::Free)
        }
        _ => None,
    }
}

/// The placeholder left in event `i`'s slot, whose JSON goes home: `Y`'s
/// id, the event before as its parent (none in a pre-tree log), a
/// neighbour's timestamp.
pub fn placeholder(ctx: &Ctx, i: usize, json: &str, at: usize) -> Vec<u8> {
    use crate::edit::placeholder::{event, Cause, Slot};
    let r = &ctx.reader;
    let prev = i.checked_sub(1).and_then(|p| r.record(p).map(|x| (p, x)));
    // a tree-era slot (the event before it, or the JSON that was in it,
    // carries a `parent_id`) follows the event before it, as the SDK's
    // writer links a new event to its HEAD
    let tree_era = prev.is_some_and(|(_, x)| x.parent.is_present())
        || r.record(i).is_some_and(|x| x.parent.is_present());
    let parent = match prev {
        Some((p, _)) if tree_era => ParentRef::Id(r.id(p).into()),
        _ => ParentRef::Absent,
    };
    let ts = prev
        .and_then(|(_, x)| x.timestamp())
        .or_else(|| r.record(i).and_then(|x| x.timestamp()))
        .map_or_else(|| "1970-01-01T00:00:00".to_string(), String::from);
    let what = format!(
        "the JSON of event {json}, which goes back into its own file at index {}; this event's own JSON was lost",
        super::ix(at)
    );
    event(&Slot {
        id: r.id(i),
        timestamp: &ts,
        parent: &parent,
        file: &r.file(i).name,
        cause: Cause::Copy(&what),
        answers: None,
    })
}

/// Whether a JSON displaced into event `i`'s file goes home to the gap
/// right after it (`index-gap` then waits a pass).
pub fn goes_to_the_gap(ctx: &Ctx) -> bool {
    let Some(last) = ctx.reader.len().checked_sub(1) else {
        return false;
    };
    ctx.reader
        .record(last)
        .and_then(|x| x.id.as_deref())
        .filter(|&j| j != ctx.reader.id(last))
        .is_some_and(|j| {
            let t = Tables::new(ctx);
            matches!(home(ctx, &t, last, j), Some(Home::Free(m)) if ctx.index.gap_at == Some(m))
        })
}
