//! What Claude Code resends on `--resume`: its chain walk, as measured with
//! the real client (2.1.328, fixtures/claude/sessions, docs/claude-code.md).
//!
//! - A uuid written on several lines is the last line written.
//! - The leaf is the record of the main chain with the newest `timestamp`
//!   (even when a record names it as its parent, and wherever its line is);
//!   `last-prompt`'s `leafUuid` is not used.
//! - From the leaf the client walks `parentUuid` back. `null` is a root:
//!   the walk ends there, whatever was written before it (a compaction's
//!   boundary is such a root on purpose; any other is a cut).
//! - A parent that names no record (a phantom) is re-attached to the record
//!   with the newest `timestamp` no later than the record's own, not yet
//!   walked (the latest written of equal stamps); a parent already walked
//!   (a loop) to the nearest record before it in the file, not yet walked,
//!   stamped no later than it. When there is none the record is a root.
//! - A `tool_use` on the chain whose `tool_result` is not on it gets the
//!   record that holds that result anywhere in the file (the client fetches
//!   it); a `tool_use` whose result is nowhere, or a `tool_result` whose
//!   `tool_use` is not on the chain, is dropped with its message (measured
//!   on records holding only those blocks).
//! - After a compaction the client loads only the records from the file's
//!   last `compact_boundary` on, and the segment of earlier messages the
//!   boundary's `compactMetadata.preservedSegment` names (resent right after
//!   the summary record, its anchor); a link to any other earlier record is
//!   a phantom.
//! - Lines that are not JSON are skipped; sidechain records are not walked
//!   into from the main chain's leaf.
//!
//! Long because: the client's resume walk is one rule set, measured
//! together; splitting it would separate rules that decide each other.
//!

use std::collections::{HashMap, HashSet};

use super::session::{Parent, Session};

/// Why the walk did not follow a record's `parentUuid` as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// `parentUuid` is null on a record that is not the session's first
    /// and not a compaction's boundary.
    FalseRoot,
    /// `parentUuid` names no record.
    Phantom,
    /// `parentUuid` names a record the walk already passed (a loop).
    Loop,
    /// `parentUuid` is not a string or null.
    Odd,
}

impl Broken {
    pub fn words(self) -> &'static str {
        match self {
            Broken::FalseRoot => "`parentUuid` is null",
            Broken::Phantom => "`parentUuid` names no record",
            Broken::Loop => "`parentUuid` names a record after it in the chain (a loop)",
            Broken::Odd => "`parentUuid` is neither a uuid nor null",
        }
    }
}

/// A link of the walk that is not the written one.
#[derive(Clone, Debug)]
pub struct Link {
    /// Line index (into `Session::lines`) of the record whose link broke.
    pub at: usize,
    pub why: Broken,
    /// Where the client went instead: the line index it re-attached to, or
    /// `None` when the walk ended there.
    pub to: Option<usize>,
}

/// The client's view of a session.
#[derive(Debug, Default)]
pub struct View {
    /// Line indices of the walked records, root first.
    pub chain: Vec<usize>,
    /// The walk's broken links, in walk order (leaf first).
    pub broken: Vec<Link>,
    /// The final line of each uuid (a uuid written twice: the last).
    pub by_uuid: HashMap<String, usize>,
    /// Line indices of the messages of the flat transcript: every user and
    /// assistant record off the sidechain, each uuid once (its last line).
    pub messages: Vec<usize>,
    /// The messages the walk resends (line indices, file order).
    pub resent: Vec<usize>,
    /// Messages on the chain the client drops: a `tool_use` without its
    /// `tool_result` on the chain, or a `tool_result` without its `tool_use`.
    pub unpaired: Vec<usize>,
    /// A call the chain ends on (the chain's last record, an assistant
    /// message whose `tool_use` has no `tool_result` anywhere): the client
    /// answers it itself when it resumes (a `tool_result` "[Tool call
    /// interrupted: the session ended before this call's result was
    /// recorded …]", written to the file) and resends it; measured with
    /// 2.1.328 on a session whose client was killed during the call.
    pub interrupted: Vec<usize>,
    /// Tool results off the chain the client fetches for a call on it.
    pub fetched: Vec<usize>,
    /// Messages written before the chain's compaction boundary: compacted on
    /// purpose, not lost.
    pub compacted: Vec<usize>,
    /// Messages neither resent nor compacted: lost to a broken link.
    pub lost: Vec<usize>,
}

pub fn build(s: &Session) -> View {
    let mut v = View::default();
    // the final line of each uuid
    for (i, r) in s.records() {
        if let (true, Some(u)) = (r.in_tree(), &r.uuid) {
            v.by_uuid.insert(u.clone(), i);
        }
    }
    let finals: Vec<usize> = {
        let mut f: Vec<usize> = v.by_uuid.values().copied().collect();
        f.sort_unstable();
        f
    };
    let rec = |i: usize| s.lines[i].record().expect("a record line");
    let mut main: Vec<usize> = finals
        .iter()
        .copied()
        .filter(|&i| !rec(i).sidechain)
        .collect();
    // after a compaction the client loads the file from its last boundary
    // on, and the segment the boundary preserved: nothing else before it
    let boundary = main
        .iter()
        .rev()
        .copied()
        .find(|&i| rec(i).is_compact_boundary());
    let mut segment = Vec::new();
    if let Some(b) = boundary {
        if let Some(p) = &rec(b).preserved {
            segment = preserved_segment(p, &v.by_uuid, &|i| rec(i));
        }
        let kept: HashSet<usize> = segment.iter().copied().collect();
        main.retain(|i| *i >= b || kept.contains(i));
    }
    let loaded: HashMap<&str, usize> = main
        .iter()
        .filter_map(|&i| rec(i).uuid.as_deref().map(|u| (u, i)))
        .collect();
    // the leaf: the main-chain record with the newest timestamp (the latest
    // written of equal stamps; one without a stamp counts as oldest)
    let leaf = main
        .iter()
        .copied()
        .max_by(|&a, &b| rec(a).timestamp.cmp(&rec(b).timestamp).then(a.cmp(&b)));
    // re-attachment candidates, by (timestamp, line)
    // (the preserved segment is spliced in, never re-attached to)
    let segment_set: HashSet<usize> = segment.iter().copied().collect();
    let attachable: Vec<usize> = main
        .iter()
        .copied()
        .filter(|i| !segment_set.contains(i))
        .collect();
    let mut by_time: Vec<(&str, usize)> = attachable
        .iter()
        .filter_map(|&i| rec(i).timestamp.as_deref().map(|t| (t, i)))
        .collect();
    by_time.sort_unstable();
    // the candidates not walked yet, found in O(log n) each (a scan past
    // the walked ones was quadratic on a long chain of re-attachments)
    let ranks: HashMap<&str, u32> = {
        let mut stamps: Vec<&str> = by_time.iter().map(|&(t, _)| t).collect();
        stamps.dedup();
        stamps
            .iter()
            .enumerate()
            .map(|(k, &t)| (t, k as u32))
            .collect()
    };
    let rank = |t: &str| ranks.get(t).copied();
    let mut by_time_left = Rightmost::new(vec![0; by_time.len()]);
    let by_time_pos: HashMap<usize, usize> = by_time
        .iter()
        .enumerate()
        .map(|(k, &(_, i))| (i, k))
        .collect();
    let mut attachable_left = Rightmost::new(
        attachable
            .iter()
            .map(|&j| {
                rec(j)
                    .timestamp
                    .as_deref()
                    .and_then(rank)
                    .unwrap_or(NO_STAMP)
            })
            .collect(),
    );
    let first_tree = main.first().copied();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut cur = leaf;
    let mut walked = Vec::new();
    while let Some(i) = cur {
        if !seen.insert(i) {
            break;
        }
        if let Some(&k) = by_time_pos.get(&i) {
            by_time_left.remove(k);
        }
        if let Ok(k) = attachable.binary_search(&i) {
            attachable_left.remove(k);
        }
        walked.push(i);
        let r = rec(i);
        let written = match &r.parent {
            Parent::Absent | Parent::Null => {
                if !(r.is_compact_boundary() || Some(i) == first_tree) {
                    v.broken.push(Link {
                        at: i,
                        why: Broken::FalseRoot,
                        to: None,
                    });
                }
                cur = None;
                continue;
            }
            Parent::Id(p) => match loaded.get(p.as_str()) {
                Some(&j) if !seen.contains(&j) => {
                    cur = Some(j);
                    continue;
                }
                Some(_) => Broken::Loop,
                None => Broken::Phantom,
            },
            Parent::Odd => Broken::Odd,
        };
        let after_compaction = boundary.is_some_and(|b| i > b) && !segment_set.contains(&i);
        let to = r.timestamp.as_deref().and_then(|t| match written {
            // a loop: the nearest record before it in the file not walked
            // yet, stamped no later than it
            Broken::Loop => {
                let at = attachable.partition_point(|&j| j < i);
                // the newest stamp no later than `t` among those known
                let bound = by_time
                    .partition_point(|&(bt, _)| bt <= t)
                    .checked_sub(1)
                    .and_then(|k| rank(by_time[k].0))?;
                attachable_left.rightmost(at, bound).map(|k| attachable[k])
            }
            // a phantom: the record stamped last no later than it, not
            // walked yet (the latest written of equal stamps)
            _ => {
                let end = by_time.partition_point(|&(bt, _)| bt <= t);
                by_time_left.rightmost(end, 0).map(|k| by_time[k].1)
            }
        });
        // after a compaction, a phantom that finds no record stamped before
        // it goes to the record before it in the file
        let to = match to {
            None if written == Broken::Phantom && after_compaction => {
                let at = attachable.partition_point(|&j| j < i);
                attachable_left
                    .rightmost(at, NO_STAMP)
                    .map(|k| attachable[k])
            }
            to => to,
        };
        v.broken.push(Link {
            at: i,
            why: written,
            to,
        });
        cur = to;
    }
    walked.reverse();
    // the segment the last compaction preserved is resent right after the
    // summary record it names as its anchor, when that is on the chain
    // (after the boundary, when the anchor is gone)
    if let Some((b, p)) = boundary.and_then(|b| rec(b).preserved.as_ref().map(|p| (b, p))) {
        let anchor = loaded.get(p.anchor.as_str()).copied();
        let after = match anchor {
            Some(a) => walked.iter().position(|&i| i == a),
            None => walked.iter().position(|&i| i == b),
        };
        if let Some(at) = after {
            let rest = walked.split_off(at + 1);
            let later: HashSet<usize> = rest.iter().copied().collect();
            walked.extend(segment.iter().copied().filter(|i| !later.contains(i)));
            walked.extend(rest);
            let mut once = HashSet::new();
            walked.retain(|i| once.insert(*i));
        }
    }
    v.chain = walked;
    v.messages = main
        .iter()
        .copied()
        .filter(|&i| rec(i).is_message())
        .collect();
    let on_chain: HashSet<usize> = v.chain.iter().copied().collect();
    let on_chain_msgs: Vec<usize> = v
        .messages
        .iter()
        .copied()
        .filter(|i| on_chain.contains(i))
        .collect();
    // the results of the calls on the chain: on the chain, or else found
    // in the file by the call's id (the client fetches them)
    let mut result_at: HashMap<&str, usize> = HashMap::new();
    for &i in &v.messages {
        for t in &rec(i).tool_results {
            result_at.entry(t.as_str()).or_insert(i);
        }
    }
    let mut uses: HashSet<&str> = HashSet::new();
    let mut results: HashSet<&str> = HashSet::new();
    for &i in &on_chain_msgs {
        uses.extend(rec(i).tool_uses.iter().map(String::as_str));
        results.extend(rec(i).tool_results.iter().map(String::as_str));
    }
    let mut fetched: Vec<usize> = Vec::new();
    let mut fetched_set: HashSet<usize> = HashSet::new();
    for &i in &on_chain_msgs {
        for u in &rec(i).tool_uses {
            if results.contains(u.as_str()) {
                continue;
            }
            if let Some(&j) = result_at.get(u.as_str()) {
                if !on_chain.contains(&j) && fetched_set.insert(j) {
                    fetched.push(j);
                }
            }
        }
    }
    for &j in &fetched {
        results.extend(rec(j).tool_results.iter().map(String::as_str));
    }
    // the call the chain ends on, its result nowhere: the client answers it
    if let Some(&last) = v.chain.last() {
        let r = rec(last);
        if r.is_message()
            && r.kind == "assistant"
            && !r.tool_uses.is_empty()
            && r.tool_results.is_empty()
            && r.tool_uses
                .iter()
                .all(|u| !results.contains(u.as_str()) && !result_at.contains_key(u.as_str()))
        {
            v.interrupted.push(last);
            results.extend(r.tool_uses.iter().map(String::as_str));
        }
    }
    let mut candidates = on_chain_msgs;
    candidates.extend(fetched.iter().copied());
    candidates.sort_unstable();
    for i in candidates {
        let r = rec(i);
        let paired = r.tool_uses.iter().all(|u| results.contains(u.as_str()))
            && r.tool_results.iter().all(|t| uses.contains(t.as_str()));
        if paired {
            v.resent.push(i);
        } else {
            v.unpaired.push(i);
        }
    }
    v.fetched = fetched;
    let loaded_set: HashSet<usize> = main.iter().copied().collect();
    for &m in &v.messages {
        if on_chain.contains(&m) || fetched_set.contains(&m) {
            continue;
        }
        if !loaded_set.contains(&m) {
            v.compacted.push(m);
        } else {
            v.lost.push(m);
        }
    }
    v
}

/// The records of a compaction's preserved segment, `head` to `tail`
/// (walked back from `tail` by the written links, at most as many steps as
/// the file has records); empty when the walk never meets `head`.
fn preserved_segment<'a>(
    p: &super::session::Preserved,
    by_uuid: &HashMap<String, usize>,
    rec: &dyn Fn(usize) -> &'a super::session::Record,
) -> Vec<usize> {
    let mut seg = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = by_uuid.get(&p.tail).copied();
    while let Some(i) = cur {
        if seg.len() > by_uuid.len() || !seen.insert(i) {
            return Vec::new();
        }
        seg.push(i);
        if rec(i).uuid.as_deref() == Some(p.head.as_str()) {
            seg.reverse();
            return seg;
        }
        cur = match &rec(i).parent {
            Parent::Id(q) => by_uuid.get(q).copied(),
            _ => None,
        };
    }
    Vec::new()
}

/// A stamp rank no stamp has: a record without a timestamp (never "no later
/// than" a stamp, yet a record all the same).
const NO_STAMP: u32 = u32::MAX - 1;
/// A position taken out (walked).
const GONE: u32 = u32::MAX;

/// Positions with a value each, some taken out: the rightmost position
/// before `end` whose value is at most `bound`, in O(log n) (a tree of
/// minimums), so that a walk asking "the nearest record before this one not
/// walked yet" once per record stays linear up to a logarithm.
struct Rightmost {
    size: usize,
    min: Vec<u32>,
}

impl Rightmost {
    fn new(values: Vec<u32>) -> Rightmost {
        let size = values.len().next_power_of_two().max(1);
        let mut min = vec![GONE; 2 * size];
        min[size..size + values.len()].copy_from_slice(&values);
        for k in (1..size).rev() {
            min[k] = min[2 * k].min(min[2 * k + 1]);
        }
        Rightmost { size, min }
    }

    fn remove(&mut self, pos: usize) {
        let mut k = self.size + pos;
        self.min[k] = GONE;
        while k > 1 {
            k /= 2;
            self.min[k] = self.min[2 * k].min(self.min[2 * k + 1]);
        }
    }

    /// The rightmost position `< end` whose value is `<= bound`.
    fn rightmost(&self, end: usize, bound: u32) -> Option<usize> {
        self.find(1, 0, self.size, end.min(self.size), bound)
    }

    fn find(&self, node: usize, lo: usize, hi: usize, end: usize, bound: u32) -> Option<usize> {
        if lo >= end || self.min[node] > bound {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find(2 * node + 1, mid, hi, end, bound)
            .or_else(|| self.find(2 * node, lo, mid, end, bound))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rightmost_skips_what_was_taken_out_and_what_is_over_the_bound() {
        let mut r = Rightmost::new(vec![3, 1, NO_STAMP, 2, 0]);
        assert_eq!(r.rightmost(5, 0), Some(4));
        assert_eq!(r.rightmost(4, 2), Some(3));
        assert_eq!(r.rightmost(3, 2), Some(1));
        assert_eq!(r.rightmost(3, NO_STAMP), Some(2));
        r.remove(1);
        assert_eq!(r.rightmost(3, 2), None);
        assert_eq!(r.rightmost(3, 3), Some(0));
        r.remove(4);
        assert_eq!(r.rightmost(5, 0), None);
        assert_eq!(Rightmost::new(Vec::new()).rightmost(0, NO_STAMP), None);
    }
}
