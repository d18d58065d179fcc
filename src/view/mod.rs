//! The two views of a conversation, computed from the store model:
//! - the **agent view**: what the SDK's `active_branch()` returns
//!   (`path_to_root` of the resolved leaf), or the reason it cannot load;
//! - the **UI view**: every readable event of the log, in index order
//!   (the agent-server's `/events/search`).

pub mod read;
pub mod tree;

use std::collections::HashSet;

pub use read::{ReadError, Reader};
pub use tree::LoadError;

use crate::store::conversation::Overlay;
use crate::store::{Conversation, Index};
use crate::version::Version;

/// One conversation read, indexed and viewed for one release: the
/// load → index → views sequence, written once. `crate::analysis::Analysis`
/// is this, with the checks' context on top.
#[derive(Debug)]
pub struct Loaded {
    pub conv: Conversation,
    pub index: Index,
    pub views: Views,
    pub version: Version,
}

impl Loaded {
    /// Read `dir` (with `overlay`'s planned contents in place of some
    /// files), index its events and compute both views for `version`.
    pub fn load(dir: &std::path::Path, version: Version, overlay: &Overlay) -> Loaded {
        Loaded::of(Conversation::load_with(dir, version, overlay), version)
    }

    /// [`Loaded::load`] through the folder's directory handle (opened once,
    /// no link followed), taking the event files a repair did not change
    /// from an earlier read's `cache` (a repair's later passes).
    pub fn load_at(
        dir: &crate::store::fsread::DirFd,
        version: Version,
        overlay: &Overlay,
        cache: Option<&crate::store::conversation::RecordCache>,
    ) -> Loaded {
        Loaded::of(Conversation::load_at(dir, version, overlay, cache), version)
    }

    /// Index and view a conversation already read.
    pub fn of(conv: Conversation, version: Version) -> Loaded {
        let index = Index::build(&conv.events);
        let views = Views::compute(&conv, &index, version);
        Loaded {
            conv,
            index,
            views,
            version,
        }
    }
}

/// Why a readable event is not in the agent view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrphanWhy {
    /// Its ancestry joins the active branch at `at`: a branch left behind by
    /// `navigate_to` / a fork, or by a lagging HEAD.
    OffBranch { at: usize },
    /// It lies before the explicit `__root__` at `root` that starts the
    /// active branch (a deliberate `navigate_to(None)`, or a false root).
    BeforeRoot { root: usize },
    /// Its ancestry never meets the active branch (dangling parent,
    /// unreadable ancestor, or a separate tree).
    Detached,
    /// The conversation cannot load: the agent sees nothing.
    CannotLoad,
}

#[derive(Debug)]
pub struct Views {
    /// Indices `0..n` on the active branch, root-first, or why it fails.
    pub agent: Result<Vec<usize>, LoadError>,
    /// Readable indices `0..n`, in order.
    pub ui: Vec<usize>,
    /// Per index `0..n`: on the active branch.
    pub in_agent: Vec<bool>,
    /// UI events outside the agent view (state-sync artifacts left out).
    pub orphans: Vec<(usize, OrphanWhy)>,
}

impl Views {
    pub fn compute(conv: &Conversation, index: &Index, version: Version) -> Views {
        let reader = Reader::new(conv, index, version);
        let agent = tree::active_branch(&reader);
        let n = index.len();
        let ui: Vec<usize> = (0..n).filter(|&i| reader.read(i).is_ok()).collect();
        let mut in_agent = vec![false; n];
        if let Ok(chain) = &agent {
            for &i in chain {
                in_agent[i] = true;
            }
        }
        let orphans = classify_orphans(&reader, &agent, &ui, &in_agent);
        Views {
            agent,
            ui,
            in_agent,
            orphans,
        }
    }

    /// Length of the agent view, `None` when the SDK cannot load it.
    pub fn agent_len(&self) -> Option<usize> {
        self.agent.as_ref().ok().map(|c| c.len())
    }
}

fn classify_orphans(
    reader: &Reader,
    agent: &Result<Vec<usize>, LoadError>,
    ui: &[usize],
    in_agent: &[bool],
) -> Vec<(usize, OrphanWhy)> {
    let is_artifact = |i: usize| {
        reader
            .record(i)
            .map(|r| r.is_state_update())
            .unwrap_or(false)
    };
    let chain = match agent {
        Err(_) => {
            return ui
                .iter()
                .filter(|&&i| !is_artifact(i))
                .map(|&i| (i, OrphanWhy::CannotLoad))
                .collect()
        }
        Ok(c) => c,
    };
    let explicit_root = chain.first().copied().filter(|&r| {
        reader
            .record(r)
            .map(|rec| rec.parent == crate::store::ParentRef::Root)
            .unwrap_or(false)
    });
    // meet[p]: the first event on the active branch among p and its tolerant
    // ancestors (`Some(None)`: none). Memoised, so a long detached chain
    // costs O(n) in all rather than O(n) per orphan.
    let mut meet: Vec<Option<Option<usize>>> = vec![None; in_agent.len()];
    let mut out = Vec::new();
    for &i in ui {
        if in_agent[i] || is_artifact(i) {
            continue;
        }
        // Walk the tolerant ancestry until it meets the branch.
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = reader.tolerant_parent(i);
        let found = loop {
            let Some(p) = cur else { break None };
            if let Some(m) = meet[p] {
                break m;
            }
            if in_agent[p] {
                break Some(p);
            }
            if !seen.insert(p) {
                break None; // a loop that never meets the branch
            }
            path.push(p);
            cur = reader.tolerant_parent(p);
        };
        for p in path {
            meet[p] = Some(found);
        }
        let mut why = match found {
            Some(at) => OrphanWhy::OffBranch { at },
            None => OrphanWhy::Detached,
        };
        if why == OrphanWhy::Detached {
            if let Some(r) = explicit_root.filter(|&r| i < r) {
                why = OrphanWhy::BeforeRoot { root: r };
            }
        }
        out.push((i, why));
    }
    out
}
