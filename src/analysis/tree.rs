//! The event tree of one conversation, root first, like `git log --graph`:
//! the model `diagnose --tree` and the Markdown report draw
//! (`crate::render::tree` for the terminal, `crate::render::markdown` as a
//! Mermaid graph). The agent's active branch is the trunk; the events it
//! does not see are grouped by reason and place (how many, which indices,
//! why: the classification the verdict and `--events` use); long runs of
//! the trunk collapse, so any conversation fits in a screenful. A
//! conversation the SDK cannot load is the path of parent links on disk
//! (from its stored or last event), with the event where the load fails
//! marked.
//!
//! Long because: one model drawn two ways; its layout rules (trunk, branches,
//! folds) decide each other.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::checks::{self, false_root, ix, plural, ranges, Ctx};
use crate::store::ParentRef;
use crate::view::{LoadError, OrphanWhy};

/// Trunk events always shown at each end of the trunk.
pub const ENDS: usize = 3;
/// Groups of unseen events drawn one per line; the rest are summed in one.
pub const MAX_GROUPS: usize = 12;

/// Why a group of events is not on the trunk.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Before a `__root__` the false-root check flags.
    FalseRoot { root: usize, confirmed: bool },
    /// Before a deliberate new root (`navigate_to(None)`).
    NewRoot { root: usize },
    /// Written after the stored HEAD, which never moved to them.
    HeadLag,
    /// Cut off by a misplaced crash-recovery error.
    RecoveryCut,
    /// On a branch the agent left (`navigate_to` / fork).
    Abandoned,
    /// Never meets the agent's branch (dangling parent, unreadable ancestor,
    /// a separate tree).
    Detached,
    /// The conversation cannot load: on another branch than the path drawn.
    OtherBranch,
    /// The conversation cannot load: not linked to the path drawn.
    Unlinked,
    /// The SDK cannot read the file.
    Unreadable,
    /// `ConversationStateUpdateEvent`s off the branch (by design).
    StateSync,
    /// Files past a gap in the indices: invisible to the agent and the UI.
    BeyondGap,
}

impl Reason {
    /// What the counted things are called (one, many).
    pub fn noun(&self) -> (&'static str, &'static str) {
        match self {
            Reason::StateSync => ("state-sync artifact", "state-sync artifacts"),
            Reason::Unreadable => ("unreadable event", "unreadable events"),
            Reason::BeyondGap => ("event file", "event files"),
            _ => ("event", "events"),
        }
    }

    /// The words after "N events ".
    pub fn text(&self) -> String {
        match self {
            Reason::FalseRoot { root, confirmed } => format!(
                "cut off by a {}false root at {}",
                if *confirmed { "" } else { "probable " },
                ix(*root)
            ),
            Reason::NewRoot { root } => {
                format!("before a deliberate new root at {} (navigate_to(None))", ix(*root))
            }
            Reason::HeadLag => "written after the stored HEAD, which never moved to them".into(),
            Reason::RecoveryCut => "cut off by a misplaced crash-recovery error".into(),
            Reason::Abandoned => "on an abandoned branch (navigate_to/fork)".into(),
            Reason::Detached => {
                "detached from the agent's branch (dangling parent, unreadable ancestor or separate tree)"
                    .into()
            }
            Reason::OtherBranch => "on another branch".into(),
            Reason::Unlinked => "not linked to this path (dangling parent or separate tree)".into(),
            Reason::Unreadable => "(the SDK cannot read them)".into(),
            Reason::StateSync => "off the branch (by design)".into(),
            Reason::BeyondGap => "beyond the index gap: invisible to the agent and the UI".into(),
        }
    }

    /// The style class of the Mermaid graph.
    pub fn class(&self) -> &'static str {
        match self {
            Reason::FalseRoot { .. } | Reason::NewRoot { .. } => "cutoff",
            Reason::HeadLag | Reason::RecoveryCut | Reason::Abandoned | Reason::OtherBranch => {
                "abandoned"
            }
            Reason::Detached | Reason::Unlinked => "detached",
            Reason::Unreadable | Reason::BeyondGap => "unreadable",
            Reason::StateSync => "artifact",
        }
    }
}

/// Where a group hangs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Anchor {
    /// Above the trunk's root: cut off by a new root.
    Above,
    /// Off the trunk event at this position of the trunk.
    At(usize),
    /// Apart from the trunk (drawn after it).
    Apart,
}

/// Events off the trunk that share a reason and a place.
#[derive(Clone, Debug)]
pub struct Group {
    pub reason: Reason,
    pub anchor: Anchor,
    /// Indices, ascending.
    pub events: Vec<usize>,
}

impl Group {
    /// "4 events cut off by …: 00000–00001, 00003–00004"
    pub fn line(&self) -> String {
        let (one, many) = self.reason.noun();
        let mut s = format!(
            "{} {}",
            plural(self.events.len(), one, many),
            self.reason.text()
        );
        let _ = write!(s, ": {}", ranges(&self.events));
        s
    }
}

/// One event of the trunk.
#[derive(Clone, Debug)]
pub struct Node {
    pub idx: usize,
    /// Kind and source as read (redacted and clipped, not yet escaped).
    pub kind: Option<String>,
    pub source: Option<String>,
    /// What is special about it ("root", "leaf (HEAD)", "false root: …").
    pub tags: Vec<String>,
    /// The SDK fails to load the conversation at this event.
    pub fails: bool,
    /// Its parent is not in the log (a dangling link drawn above it).
    pub dangling: bool,
}

/// The drawing of one conversation.
#[derive(Clone, Debug)]
pub struct Tree {
    /// The trunk is the agent's branch (false: the SDK cannot load it, and
    /// the trunk is the path on disk).
    pub loads: bool,
    /// Why the SDK cannot load it (exception), when it cannot.
    pub load_error: Option<String>,
    /// Root first.
    pub trunk: Vec<Node>,
    /// The `__root__` at the top of the trunk is a false root: the edge from
    /// the events above it is the one that was cut.
    pub false_root: Option<bool>,
    pub groups: Vec<Group>,
    /// Groups beyond [`MAX_GROUPS`]: (groups, events).
    pub more: Option<(usize, usize)>,
}

/// One line of the trunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// The trunk event at this position.
    Event(usize),
    /// Trunk positions `from..=to`, collapsed.
    Run { from: usize, to: usize },
}

impl Tree {
    /// The trunk's lines: both ends, the events groups hang off and the
    /// tagged events shown; runs of two or more others collapsed.
    pub fn items(&self) -> Vec<Item> {
        let n = self.trunk.len();
        let mut keep = vec![false; n];
        for (p, k) in keep.iter_mut().enumerate() {
            *k = p < ENDS || p + ENDS >= n;
        }
        for g in &self.groups {
            if let Anchor::At(p) = g.anchor {
                keep[p] = true;
            }
        }
        for (p, node) in self.trunk.iter().enumerate() {
            if node.fails || node.dangling || !node.tags.is_empty() {
                keep[p] = true;
            }
        }
        let mut out = Vec::new();
        let mut p = 0;
        while p < n {
            if keep[p] {
                out.push(Item::Event(p));
                p += 1;
                continue;
            }
            let from = p;
            while p < n && !keep[p] {
                p += 1;
            }
            if p - from == 1 {
                out.push(Item::Event(from));
            } else {
                out.push(Item::Run { from, to: p - 1 });
            }
        }
        out
    }

    /// The groups hanging at `anchor`, in order.
    pub fn at(&self, anchor: Anchor) -> impl Iterator<Item = &Group> {
        self.groups.iter().filter(move |g| g.anchor == anchor)
    }

    /// "… 120 events: 00010–00129 …" for a collapsed run.
    pub fn run_text(&self, from: usize, to: usize) -> String {
        format!(
            "… {}: {} …",
            plural(to - from + 1, "event", "events"),
            checks::ix_range(self.trunk[from].idx, self.trunk[to].idx)
        )
    }

    /// "00008  MessageEvent  user" (not escaped).
    pub fn node_text(&self, p: usize) -> String {
        let node = &self.trunk[p];
        let mut s = ix(node.idx);
        let _ = write!(s, "  {}", node.kind.as_deref().unwrap_or("?"));
        if let Some(src) = &node.source {
            let _ = write!(s, "  {src}");
        }
        s
    }
}

/// The path on disk when the SDK cannot load: from the stored leaf (when it
/// is in the index) or the last event, up the parent links a tolerant reader
/// follows, root first.
fn disk_path(ctx: &Ctx) -> Vec<usize> {
    let r = &ctx.reader;
    let n = r.len();
    if n == 0 {
        return Vec::new();
    }
    let stored = ctx
        .conv
        .base_state
        .value()
        .and_then(|s| s.get("leaf_event_id"))
        .and_then(|v| v.as_str())
        .and_then(|id| r.index.id_to_idx.get(id).copied());
    let mut cur = Some(stored.unwrap_or(n - 1));
    let mut seen = HashSet::new();
    let mut path = Vec::new();
    while let Some(i) = cur {
        if !seen.insert(i) {
            break;
        }
        path.push(i);
        cur = r.tolerant_parent(i);
    }
    path.reverse();
    path
}

/// Whether the recorded parent of `i` names an id not in the index.
fn dangling(ctx: &Ctx, i: usize) -> bool {
    matches!(
        ctx.reader.record(i).map(|rec| &rec.parent),
        Some(ParentRef::Id(p)) if !ctx.index.id_to_idx.contains_cid(p)
    )
}

/// Build the model of one conversation from its views (nothing is read again).
pub fn build(ctx: &Ctx) -> Tree {
    let r = &ctx.reader;
    let n = r.len();
    let views = ctx.views;
    let loads = views.agent.is_ok();
    let trunk_idx: Vec<usize> = match &views.agent {
        Ok(chain) => chain.clone(),
        Err(_) => disk_path(ctx),
    };
    let mut pos: Vec<Option<usize>> = vec![None; n];
    for (p, &i) in trunk_idx.iter().enumerate() {
        pos[i] = Some(p);
    }
    let fails_at = match ctx.load_error() {
        Some(LoadError::Read { idx, .. })
        | Some(LoadError::UnknownParent { idx, .. })
        | Some(LoadError::Cycle { idx }) => Some(*idx),
        _ => None,
    };
    let false_roots = if loads { false_root::find(ctx) } else { &[] };
    let lagging: HashSet<usize> = if loads {
        checks::head_lag::find(ctx)
            .map(|l| l.events.iter().copied().collect())
            .unwrap_or_default()
    } else {
        HashSet::new()
    };
    let cut: HashSet<usize> = if loads {
        checks::misparented_recovery_error::find(ctx)
            .iter()
            .map(|m| m.action)
            .collect()
    } else {
        HashSet::new()
    };
    let orphan: HashMap<usize, OrphanWhy> = views.orphans.iter().copied().collect();
    let false_root_at: HashMap<usize, &false_root::FalseRoot> =
        false_roots.iter().rev().map(|f| (f.root, f)).collect();

    // meet[i]: the trunk position a tolerant ancestry of i reaches first.
    let mut meet: Vec<Option<Option<usize>>> = vec![None; n];
    let mut meet_of = |i: usize| -> Option<usize> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = r.tolerant_parent(i);
        let found = loop {
            let Some(p) = cur else { break None };
            if let Some(m) = meet[p] {
                break m;
            }
            if let Some(at) = pos[p] {
                break Some(at);
            }
            if !seen.insert(p) {
                break None;
            }
            path.push(p);
            cur = r.tolerant_parent(p);
        };
        for p in path {
            meet[p] = Some(found);
        }
        found
    };

    let mut order: Vec<(Reason, Anchor)> = Vec::new();
    let mut members: HashMap<(Reason, Anchor), Vec<usize>> = HashMap::new();
    let mut add = |reason: Reason, anchor: Anchor, i: usize| {
        let key = (reason, anchor);
        members
            .entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(i);
    };
    for i in 0..n {
        if pos[i].is_some() {
            continue;
        }
        let rec = match r.read(i) {
            Err(_) => {
                let anchor = meet_of(i).map_or(Anchor::Apart, Anchor::At);
                add(Reason::Unreadable, anchor, i);
                continue;
            }
            Ok(rec) => rec,
        };
        if rec.is_state_update() {
            add(Reason::StateSync, Anchor::Apart, i);
            continue;
        }
        if !loads {
            match meet_of(i) {
                Some(at) => add(Reason::OtherBranch, Anchor::At(at), i),
                None => add(Reason::Unlinked, Anchor::Apart, i),
            }
            continue;
        }
        let why = orphan.get(&i).copied().unwrap_or(OrphanWhy::Detached);
        let at = match why {
            OrphanWhy::OffBranch { at } => pos[at].map_or(Anchor::Apart, Anchor::At),
            _ => Anchor::Apart,
        };
        let (reason, anchor) = match why {
            _ if lagging.contains(&i) => (Reason::HeadLag, at),
            _ if cut.contains(&i) => (Reason::RecoveryCut, at),
            OrphanWhy::BeforeRoot { root } => match false_root_at.get(&root) {
                Some(f) => (
                    Reason::FalseRoot {
                        root,
                        confirmed: f.confirmed,
                    },
                    Anchor::Above,
                ),
                None => (Reason::NewRoot { root }, Anchor::Above),
            },
            OrphanWhy::OffBranch { .. } => (Reason::Abandoned, at),
            OrphanWhy::Detached | OrphanWhy::CannotLoad => (Reason::Detached, Anchor::Apart),
        };
        add(reason, anchor, i);
    }
    let mut groups: Vec<Group> = order
        .into_iter()
        .map(|key| {
            let events = members.remove(&key).unwrap_or_default();
            Group {
                reason: key.0,
                anchor: key.1,
                events,
            }
        })
        .collect();
    let gap: Vec<usize> = ctx
        .index
        .beyond_gap
        .iter()
        .map(|&p| ctx.conv.events.files[p].idx as usize)
        .collect();
    if !gap.is_empty() {
        let mut gap = gap;
        gap.sort_unstable();
        groups.push(Group {
            reason: Reason::BeyondGap,
            anchor: Anchor::Apart,
            events: gap,
        });
    }
    // Bound the drawing: the biggest groups, then in place order.
    let mut more = None;
    if groups.len() > MAX_GROUPS {
        groups.sort_by(|a, b| {
            b.events
                .len()
                .cmp(&a.events.len())
                .then(a.events[0].cmp(&b.events[0]))
        });
        let rest = groups.split_off(MAX_GROUPS);
        more = Some((rest.len(), rest.iter().map(|g| g.events.len()).sum()));
    }
    groups.sort_by(|a, b| a.anchor.cmp(&b.anchor).then(a.events[0].cmp(&b.events[0])));

    let root_rec = trunk_idx.first().and_then(|&i| r.record(i));
    let explicit_root = root_rec.is_some_and(|rec| rec.parent == ParentRef::Root);
    let first = trunk_idx.first().copied();
    let false_root = first.and_then(|f| {
        false_roots
            .iter()
            .find(|x| x.root == f)
            .map(|x| x.confirmed)
    });
    let last = trunk_idx.len().checked_sub(1);
    let trunk = trunk_idx
        .iter()
        .enumerate()
        .map(|(p, &i)| {
            let rec = r.record(i);
            let mut tags = Vec::new();
            let dangling = p == 0 && dangling(ctx, i);
            if p == 0 && !dangling {
                tags.push(match false_root {
                    Some(true) => "root: a false root (parent __root__)".to_string(),
                    Some(false) => "root: a probable false root (parent __root__)".to_string(),
                    None if explicit_root && i > 0 => {
                        "root: a new root (parent __root__)".to_string()
                    }
                    // the walk on disk stopped where it came back on itself
                    None if !loads && r.tolerant_parent(i).is_some() => format!(
                        "its parent {} closes a cycle",
                        ix(r.tolerant_parent(i).unwrap_or(0))
                    ),
                    None => "root".to_string(),
                });
            }
            if Some(p) == last {
                tags.push(if loads { "leaf (HEAD)" } else { "last event" }.to_string());
                if let Some(LoadError::UnknownLeaf { .. }) = ctx.load_error() {
                    tags.push("the stored HEAD (leaf_event_id) is not in the log".to_string());
                }
            }
            let fails = fails_at == Some(i);
            Node {
                idx: i,
                kind: rec.map(|x| ctx.quote(&x.kind)),
                source: rec.and_then(|x| x.source.as_deref()).map(|s| ctx.quote(s)),
                tags,
                fails,
                dangling,
            }
        })
        .collect();
    Tree {
        loads,
        load_error: ctx.load_error().map(|e| e.exception().to_string()),
        trunk,
        false_root,
        groups,
        more,
    }
}
