//! What Claude Code resends on `--resume`: its loader and chain walk, as
//! read in the client's own bundled JavaScript (2.1.328; excerpts in
//! fixtures/claude/gen/client-notes/) and checked against the real client
//! (fixtures/claude/sessions, fixtures/claude/fuzz, docs/claude-code.md).
//!
//! - **The map.** Records (user, assistant, attachment, system with a uuid)
//!   go into a map by uuid: a uuid written on several lines keeps the place
//!   of its first line and the content of its last.
//! - **A compaction.** When the last `compact_boundary` (in map order)
//!   carries `compactMetadata.preservedMessages` (else the
//!   `preservedSegment` walked tail to head), the preserved records are
//!   chained after the summary (`anchorUuid`), the anchor's other children
//!   re-parented to the tail, and every record placed before that boundary
//!   in map order, not preserved, is dropped; a message naming a dropped
//!   record is re-parented to the tail. A preserved uuid missing from the
//!   map, or a walk that never meets the head, drops nothing.
//! - **The leaf.** The checkpoint is the `leafUuid` of the last
//!   `last-prompt` (forgotten at a boundary); the last row written replaces
//!   it when it descends from it. Without a compaction's relink the last row
//!   stands in when there is no checkpoint (without any `last-prompt`, the
//!   newest-stamped record descending from the last row). From there the
//!   first user or assistant record up the links is the leaf. Else (after a
//!   compaction, or when that finds none) the leaves are the first messages
//!   above the records nothing names as parent, unless a message names
//!   them; several: the checkpoint when it is one of them, else the last
//!   row's; the newest-stamped of what is left is the leaf.
//! - **The walk** follows `parentUuid` from the leaf. `null` is a root. A
//!   parent that names no loaded record (a phantom) or one already walked
//!   (a loop) is replaced by the record stamped last no later than it, on
//!   its side (sidechain or not), not walked yet (of equal stamps the first
//!   in map order), if that one is at most 5 s older; otherwise the walk
//!   ends there.
//! - **The request** starts at the chain's last compaction boundary.
//! - **Tool calls.** A `tool_use` on the chain whose `tool_result` is not on
//!   it gets the record that holds that result anywhere in the file; a
//!   `tool_use` whose result is nowhere, or a `tool_result` whose `tool_use`
//!   is not on the chain, is dropped with its message (measured on records
//!   holding only those blocks).
//! - Lines that are not JSON are skipped.
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
    let rec = |i: usize| s.lines[i].record().expect("a record line");
    // the client's map of records: a uuid keeps the place of its first
    // line and the content of its last
    let mut order: Vec<String> = Vec::new();
    // what the loader notes while it reads, in file order
    let mut last_row: Option<String> = None;
    let mut newest: Option<(&str, String)> = None;
    let mut checkpoint: Option<String> = None;
    let (mut explicit, mut ever_checkpoint, mut cleared) = (false, false, false);
    for (i, r) in s.records() {
        if r.kind == "last-prompt" {
            match &r.leaf_uuid {
                Parent::Absent => {}
                Parent::Id(u) if !u.is_empty() => {
                    ever_checkpoint = true;
                    explicit = r.explicit || (explicit && checkpoint.as_ref() == Some(u));
                    checkpoint = Some(u.clone());
                    cleared = false;
                }
                Parent::Null if r.explicit => {
                    ever_checkpoint = true;
                    cleared = true;
                    checkpoint = None;
                    explicit = false;
                }
                _ => ever_checkpoint = true,
            }
            continue;
        }
        let (true, Some(u)) = (r.in_tree(), &r.uuid) else {
            continue;
        };
        if v.by_uuid.insert(u.clone(), i).is_none() {
            order.push(u.clone());
        }
        if !r.sidechain {
            last_row = Some(u.clone());
            if let Some(t) = r.timestamp.as_deref() {
                if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                    newest = Some((t, u.clone()));
                }
            }
            explicit = false;
            cleared = false;
        }
        if r.is_compact_boundary() {
            // a boundary forgets the checkpoint
            checkpoint = None;
            explicit = false;
        }
    }
    // parents as the client ends up with them (a compaction relinks some)
    let mut parent: HashMap<usize, Parent> = HashMap::new();
    let par = |parent: &HashMap<usize, Parent>, i: usize| -> Parent {
        parent
            .get(&i)
            .cloned()
            .unwrap_or_else(|| rec(i).parent.clone())
    };
    // after a compaction: the preserved messages relinked after the
    // summary, every other record before the boundary dropped
    let mut alive: Vec<bool> = vec![true; order.len()];
    let mut relinked_tail = None;
    {
        let at = |u: &String| v.by_uuid[u];
        let last_b = order.iter().rposition(|u| rec(at(u)).is_compact_boundary());
        let last_p = order
            .iter()
            .rposition(|u| rec(at(u)).is_compact_boundary() && rec(at(u)).preserved.is_some());
        if let (Some(h), Some(g)) = (last_b, last_p) {
            let p = rec(at(&order[g])).preserved.clone().expect("preserved");
            let list: Option<Vec<String>> = if g != h {
                Some(Vec::new())
            } else if let Some(l) = &p.uuids {
                Some(l.clone())
            } else {
                preserved_walk(&p, &v.by_uuid, &|i| rec(i))
            };
            let missing = list
                .as_ref()
                .is_some_and(|l| l.iter().any(|u| !v.by_uuid.contains_key(u)));
            if let (Some(list), false) = (list, missing) {
                let keep: HashSet<&str> = list.iter().map(String::as_str).collect();
                if !list.is_empty() {
                    let mut prev = p.anchor.clone();
                    for u in &list {
                        parent.insert(at(u), Parent::Id(prev.clone()));
                        prev = u.clone();
                    }
                    let tail = list.last().expect("a list").clone();
                    for u in &order {
                        let i = at(u);
                        if par(&parent, i) == Parent::Id(p.anchor.clone()) && *u != list[0] {
                            parent.insert(i, Parent::Id(tail.clone()));
                        }
                    }
                }
                let mut dropped = HashSet::new();
                for (k, u) in order.iter().enumerate() {
                    if k < h && !keep.contains(u.as_str()) {
                        alive[k] = false;
                        dropped.insert(u.as_str());
                    }
                }
                if let (Some(tail), false) = (list.last(), dropped.is_empty()) {
                    for u in &order {
                        let i = at(u);
                        if let (true, Parent::Id(q)) = (rec(i).is_message(), par(&parent, i)) {
                            if dropped.contains(q.as_str()) {
                                parent.insert(i, Parent::Id(tail.clone()));
                            }
                        }
                    }
                }
                relinked_tail = list.last().cloned();
            }
        }
    }
    // the loaded records, in map order (line indices)
    let loaded_order: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(k, _)| alive[*k])
        .map(|(_, u)| v.by_uuid[u])
        .collect();
    let loaded: HashMap<&str, usize> = loaded_order
        .iter()
        .filter_map(|&i| rec(i).uuid.as_deref().map(|u| (u, i)))
        .collect();
    let get = |p: &Parent| match p {
        Parent::Id(q) => loaded.get(q.as_str()).copied(),
        _ => None,
    };
    let is_msg_kind = |i: usize| matches!(rec(i).kind.as_str(), "user" | "assistant");
    // each record's parent as the client ends up with it (a line index)
    let up: HashMap<usize, usize> = loaded_order
        .iter()
        .filter_map(|&i| get(&par(&parent, i)).map(|j| (i, j)))
        .collect();
    // the first user or assistant record at or above each record (memoized:
    // the client's `non` caches it too, so many records stay linear)
    let mut first_memo: HashMap<usize, Option<usize>> = HashMap::new();
    let mut first_message = |from: usize| -> Option<usize> {
        let mut path = Vec::new();
        let mut on_path = HashSet::new();
        let mut cur = Some(from);
        let found = loop {
            let Some(i) = cur else { break None };
            if let Some(&m) = first_memo.get(&i) {
                break m;
            }
            if !on_path.insert(i) {
                break None;
            }
            path.push(i);
            if is_msg_kind(i) {
                break Some(i);
            }
            cur = up.get(&i).copied();
        };
        for i in path {
            first_memo.insert(i, found);
        }
        found
    };
    // whether walking up from a record reaches `to` (memoized per target)
    let up = &up;
    let reaches_from = move |to: usize| {
        let mut memo: HashMap<usize, bool> = HashMap::new();
        memo.insert(to, true);
        move |from: usize| -> bool {
            let mut path = Vec::new();
            let mut on_path = HashSet::new();
            let mut cur = Some(from);
            let found = loop {
                let Some(i) = cur else { break false };
                if let Some(&m) = memo.get(&i) {
                    break m;
                }
                if !on_path.insert(i) {
                    break false;
                }
                path.push(i);
                cur = up.get(&i).copied();
            };
            for i in path {
                memo.insert(i, found);
            }
            found
        }
    };
    let line_of = |u: &Option<String>| u.as_deref().and_then(|u| loaded.get(u).copied());
    let rn = line_of(&last_row);
    let vo = line_of(&checkpoint);
    // the leaves the loader hands over
    let mut leaves: Vec<usize> = Vec::new();
    if !cleared {
        let mut gl = rn;
        if let (false, Some(r), Some((_, n))) = (ever_checkpoint, rn, &newest) {
            if loaded.get(n.as_str()) != Some(&r) {
                // the newest record descending from the last row
                let mut best = r;
                let mut ba = "";
                let mut reaches = reaches_from(r);
                for &i in &loaded_order {
                    let ri = rec(i);
                    if ri.sidechain || i == r {
                        continue;
                    }
                    if let Some(t) = ri.timestamp.as_deref() {
                        if t >= ba && reaches(i) {
                            best = i;
                            ba = t;
                        }
                    }
                }
                gl = Some(best);
            }
        }
        let ao = explicit && vo.is_some_and(|i| !rec(i).sidechain);
        let mut decided = false;
        if relinked_tail.is_none() || ao {
            let mut as_ = vo;
            if let (Some(a), false, Some(r)) = (as_, explicit, rn) {
                if r != a && reaches_from(a)(r) {
                    as_ = Some(r);
                }
            }
            if relinked_tail.is_none() {
                as_ = as_.or(gl);
            }
            if let Some(m) = as_.and_then(&mut first_message) {
                leaves.push(m);
                decided = true;
            }
        }
        if !decided {
            // every record no record names as its parent, up to its
            // first message, unless a message names that one
            let mut named: HashSet<usize> = HashSet::new();
            let mut named_by_msg: HashSet<usize> = HashSet::new();
            for &i in &loaded_order {
                if let Some(&j) = up.get(&i) {
                    named.insert(j);
                    if is_msg_kind(i) {
                        named_by_msg.insert(j);
                    }
                }
            }
            let mut listed = HashSet::new();
            for &i in &loaded_order {
                if named.contains(&i) {
                    continue;
                }
                if let Some(m) = first_message(i) {
                    if !named_by_msg.contains(&m) && listed.insert(m) {
                        leaves.push(m);
                    }
                }
            }
            if leaves.len() > 1 {
                let ys = match vo {
                    Some(c) if leaves.contains(&c) => Some(c),
                    _ => rn,
                };
                if let Some(m) = ys.and_then(&mut first_message) {
                    leaves = vec![m];
                }
            }
        }
    }
    let stamp = |i: usize| rec(i).timestamp.as_deref().and_then(millis);
    // the newest (the first in map order of equal stamps)
    let newest_of = |c: &mut dyn Iterator<Item = usize>| {
        let mut best: Option<(i64, usize)> = None;
        for i in c {
            if let Some(t) = stamp(i) {
                if best.is_none_or(|(b, _)| t > b) {
                    best = Some((t, i));
                }
            }
        }
        best.map(|(_, i)| i)
    };
    let by_map: HashMap<usize, usize> = loaded_order
        .iter()
        .enumerate()
        .map(|(k, &i)| (i, k))
        .collect();
    leaves.sort_by_key(|i| by_map[i]);
    let mut leaf = newest_of(
        &mut leaves
            .iter()
            .copied()
            .filter(|&i| !rec(i).sidechain && is_msg_kind(i)),
    );
    if leaf.is_none() && leaves.is_empty() && !cleared {
        leaf = newest_of(&mut loaded_order.iter().copied().filter(|&i| !rec(i).sidechain))
            .or_else(|| newest_of(&mut loaded_order.iter().copied()));
    }
    // re-attachment candidates of each side: by stamp, the first in map
    // order last among equal stamps
    let mut cands: [Vec<(i64, usize)>; 2] = [Vec::new(), Vec::new()];
    for (k, &i) in loaded_order.iter().enumerate().rev() {
        if let Some(t) = stamp(i) {
            cands[rec(i).sidechain as usize].push((t, k));
        }
    }
    for c in cands.iter_mut() {
        c.sort_by_key(|&(t, _)| t);
    }
    let mut left: [Rightmost; 2] = [
        Rightmost::new(vec![0; cands[0].len()]),
        Rightmost::new(vec![0; cands[1].len()]),
    ];
    let cand_pos: HashMap<usize, (usize, usize)> = cands
        .iter()
        .enumerate()
        .flat_map(|(side, c)| c.iter().enumerate().map(move |(p, &(_, k))| (k, (side, p))))
        .collect();
    let first_tree = loaded_order.iter().copied().find(|&i| !rec(i).sidechain);
    let mut seen: HashSet<usize> = HashSet::new();
    let mut walked = Vec::new();
    let mut cur = leaf;
    while let Some(i) = cur {
        if !seen.insert(i) {
            break;
        }
        if let Some(&(side, p)) = cand_pos.get(&by_map[&i]) {
            left[side].remove(p);
        }
        walked.push(i);
        let r = rec(i);
        let written = match par(&parent, i) {
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
            Parent::Id(p) if p.is_empty() => {
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
        // the record stamped last no later than it, on its side, not
        // walked yet (the first in map order of equal stamps), when it is
        // at most 5 s older
        let to = stamp(i).and_then(|t| {
            let side = r.sidechain as usize;
            let c = &cands[side];
            let end = c.partition_point(|&(ct, _)| ct <= t);
            let p = left[side].rightmost(end, 0)?;
            let (ct, k) = c[p];
            (t - ct <= REATTACH_MS).then_some(loaded_order[k])
        });
        v.broken.push(Link {
            at: i,
            why: written,
            to,
        });
        cur = to;
    }
    walked.reverse();
    // what the client sends starts at the chain's last compaction boundary
    // (a boundary re-attached past its null leaves what it was attached to
    // out of the request)
    if let Some(b) = walked.iter().rposition(|&i| rec(i).is_compact_boundary()) {
        walked.drain(..b);
    }
    v.chain = walked;
    let main: Vec<usize> = {
        let mut m: Vec<usize> = loaded_order
            .iter()
            .copied()
            .filter(|&i| !rec(i).sidechain)
            .collect();
        m.sort_unstable();
        m
    };
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

/// The uuids of a compaction's preserved segment, `head` to `tail`,
/// walked back from `tail` by the written links (the client's walk when the
/// boundary has no `preservedMessages` list); `None` when it never meets
/// `head`.
fn preserved_walk<'a>(
    p: &super::session::Preserved,
    by_uuid: &HashMap<String, usize>,
    rec: &dyn Fn(usize) -> &'a super::session::Record,
) -> Option<Vec<String>> {
    let mut seg = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = Some(p.tail.clone());
    while let Some(u) = cur {
        let i = *by_uuid.get(&u)?;
        if !seen.insert(i) {
            return None;
        }
        seg.push(u.clone());
        if u == p.head {
            seg.reverse();
            return Some(seg);
        }
        cur = match &rec(i).parent {
            Parent::Id(q) => Some(q.clone()),
            _ => None,
        };
    }
    None
}

/// How much older than a record the one it is re-attached to may be
/// (2.1.328: 5,000 ms; an older one leaves the record a root).
const REATTACH_MS: i64 = 5_000;

/// A `timestamp` as milliseconds since 1970 (`Date.parse` of the ISO
/// forms the client writes: `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`);
/// `None` for anything else.
fn millis(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 24 || mi > 59 || sec > 59 {
        return None;
    }
    let mut k = 19;
    let mut ms = 0;
    if b.get(k) == Some(&b'.') {
        let s = k + 1;
        let mut e = s;
        while e < b.len() && b[e].is_ascii_digit() {
            e += 1;
        }
        if e == s {
            return None;
        }
        let frac = &t[s..e.min(s + 3)];
        ms = frac.parse::<i64>().ok()? * 10i64.pow(3 - frac.len() as u32);
        k = e;
    }
    let offset = match b.get(k) {
        Some(b'Z') if k + 1 == b.len() => 0,
        Some(&c @ (b'+' | b'-')) if b.len() == k + 6 && b[k + 3] == b':' => {
            let o = num(k + 1..k + 3)? * 60 + num(k + 4..k + 6)?;
            if c == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    // days from the civil date (Howard Hinnant's algorithm)
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + h) * 60 + mi - offset) * 60 + sec) * 1000 + ms)
}

/// A value no position has (used by the tests).
#[cfg(test)]
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
