//! The SDK's event index, rebuilt exactly as `EventLog._scan_and_build_index`
//! builds it: by index the *last* listed file wins, the log is the contiguous
//! run of indices from 0, and by id the *first* index wins.

use std::collections::{BTreeMap, HashMap};

use super::conversation::EventDir;

#[derive(Debug, Default)]
pub struct Index {
    /// `files` position of the event at each index `0..len`.
    pub by_idx: Vec<usize>,
    /// id (as spelled in the file name) → first index holding it.
    pub id_to_idx: HashMap<String, usize>,
    /// Indices held by two or more files → every file position, listing order.
    pub duplicate_idx: BTreeMap<u64, Vec<usize>>,
    /// Files at an index beyond the first gap: invisible to the SDK.
    pub beyond_gap: Vec<usize>,
    /// The first missing index, when files exist beyond it.
    pub gap_at: Option<u64>,
    /// Some id is held by two or more indices of the log (then the SDK's
    /// walk by id can jump from a second copy to the first).
    pub dup_ids: bool,
}

impl Index {
    pub fn build(dir: &EventDir) -> Index {
        let mut winner: BTreeMap<u64, usize> = BTreeMap::new();
        let mut all: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (pos, f) in dir.files.iter().enumerate() {
            winner.insert(f.idx, pos);
            all.entry(f.idx).or_default().push(pos);
        }
        let mut ix = Index::default();
        let mut n: u64 = 0;
        while let Some(&pos) = winner.get(&n) {
            let i = ix.by_idx.len();
            match ix.id_to_idx.entry(dir.files[pos].name_id.clone()) {
                std::collections::hash_map::Entry::Occupied(_) => ix.dup_ids = true,
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
            }
            ix.by_idx.push(pos);
            n += 1;
        }
        for (&idx, &pos) in winner.range(n..) {
            ix.gap_at.get_or_insert(n);
            let _ = idx;
            ix.beyond_gap.push(pos);
        }
        for (idx, mut files) in all {
            if files.len() > 1 {
                files.sort_by_key(|&p| dir.files[p].listing_pos);
                ix.duplicate_idx.insert(idx, files);
            }
        }
        ix
    }

    pub fn len(&self) -> usize {
        self.by_idx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_idx.is_empty()
    }
}
