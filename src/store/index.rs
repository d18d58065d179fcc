//! The SDK's event index, rebuilt exactly as `EventLog._scan_and_build_index`
//! builds it: by index the *last* listed file wins, the log is the contiguous
//! run of indices from 0, and by id the *first* index wins.

use std::collections::{BTreeMap, HashMap};

use super::conversation::EventDir;
pub use super::event::uuid_bits;

#[derive(Debug, Default)]
pub struct Index {
    /// `files` position of the event at each index `0..len`.
    pub by_idx: Vec<usize>,
    /// id (as spelled in the file name) → first index holding it.
    pub id_to_idx: IdMap,
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
        // every file's (index, position), sorted by index then by position
        // (the listing order): the last of each run is the file the SDK's
        // index keeps. 16 bytes a file while the index is made.
        let mut order: Vec<(u64, usize)> = dir
            .files
            .iter()
            .enumerate()
            .map(|(pos, f)| (f.idx, pos))
            .collect();
        order.sort_unstable();
        let mut ix = Index {
            id_to_idx: IdMap::with_capacity(order.len()),
            ..Index::default()
        };
        let mut n: u64 = 0;
        let mut run_start = 0;
        while run_start < order.len() {
            let idx = order[run_start].0;
            let mut run_end = run_start + 1;
            while run_end < order.len() && order[run_end].0 == idx {
                run_end += 1;
            }
            let run = &order[run_start..run_end];
            let pos = run[run.len() - 1].1;
            if idx == n && ix.gap_at.is_none() {
                let i = ix.by_idx.len();
                if !ix.id_to_idx.insert_first(dir.files[pos].name_id(), i) {
                    ix.dup_ids = true;
                }
                ix.by_idx.push(pos);
                n += 1;
            } else {
                ix.gap_at.get_or_insert(n);
                ix.beyond_gap.push(pos);
            }
            if run.len() > 1 {
                let mut files: Vec<usize> = run.iter().map(|&(_, p)| p).collect();
                files.sort_by_key(|&p| dir.files[p].listing_pos);
                ix.duplicate_idx.insert(idx, files);
            }
            run_start = run_end;
        }
        ix.by_idx.shrink_to_fit();
        ix
    }

    pub fn len(&self) -> usize {
        self.by_idx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_idx.is_empty()
    }
}

/// Event ids → the first index holding each. An id spelled as the SDK
/// writes it (a lower-case UUID with dashes) is kept as its 128 bits, a
/// lossless spelling of the same text; any other id as its text. The
/// 128-bit ids sit in one vector (the bits, 16 bytes, beside the index, 8:
/// one cache line read per hit) found through an open-addressed table of 4-byte slots at most half
/// full: about 32 bytes an event at 1,000,000 events, where a hash map of
/// (bits, index) rounded up to a power of two buckets of 25 bytes took
/// about 52 (issue 27).
#[derive(Debug, Default)]
pub struct IdMap {
    /// Each slot 0 (empty) or an entry's position in `keys` plus one;
    /// a power of two long (or empty), at most half full.
    slots: Vec<u32>,
    /// (the id's bits, its first index), in insertion order.
    keys: Vec<([u64; 2], usize)>,
    hash: UuidHash,
    /// Every other spelling (and a UUID past `u32` entries).
    other: HashMap<Box<str>, usize>,
}

/// The hasher of the 128-bit ids: one folded multiply of the two halves,
/// each mixed with a key drawn per process (so ids chosen to collide
/// cannot be chosen in advance), where SipHash cost a few times more on
/// every lookup of a long log's walk.
#[derive(Clone, Debug)]
pub struct UuidHash([u64; 2]);

impl Default for UuidHash {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        static KEY: std::sync::OnceLock<[u64; 2]> = std::sync::OnceLock::new();
        UuidHash(*KEY.get_or_init(|| {
            let s = std::collections::hash_map::RandomState::new();
            let mut a = s.build_hasher();
            a.write_u64(1);
            let mut b = s.build_hasher();
            b.write_u64(2);
            [a.finish(), b.finish() | 1]
        }))
    }
}

impl std::hash::BuildHasher for UuidHash {
    type Hasher = UuidHasher;
    fn build_hasher(&self) -> UuidHasher {
        UuidHasher {
            key: self.0,
            words: [0; 2],
            n: 0,
        }
    }
}

/// See [`UuidHash`].
pub struct UuidHasher {
    key: [u64; 2],
    words: [u64; 2],
    n: usize,
}

impl std::hash::Hasher for UuidHasher {
    fn write(&mut self, bytes: &[u8]) {
        // a `[u64; 2]` hashes its 16 bytes in one call
        if let (0, Ok(b)) = (self.n, <[u8; 16]>::try_from(bytes)) {
            let (lo, hi) = b.split_at(8);
            self.words = [
                u64::from_ne_bytes(lo.try_into().unwrap_or_default()),
                u64::from_ne_bytes(hi.try_into().unwrap_or_default()),
            ];
            self.n = 16;
            return;
        }
        for &b in bytes {
            let w = &mut self.words[(self.n / 8) % 2];
            *w = w.rotate_left(8) ^ u64::from(b);
            self.n += 1;
        }
    }
    fn write_u64(&mut self, v: u64) {
        let w = &mut self.words[(self.n / 8) % 2];
        *w ^= v;
        self.n += 8;
    }
    fn write_usize(&mut self, _len: usize) {
        // the length prefix of a `[u64; 2]`: always 2
    }
    fn finish(&self) -> u64 {
        let p = u128::from(self.words[0] ^ self.key[0]) * u128::from(self.words[1] ^ self.key[1]);
        (p as u64) ^ ((p >> 64) as u64)
    }
}

impl IdMap {
    pub fn with_capacity(n: usize) -> IdMap {
        IdMap {
            slots: vec![0; Self::slots_for(n)],
            keys: Vec::with_capacity(n),
            ..IdMap::default()
        }
    }

    /// A power of two at least twice `n` (the table stays at most half full).
    fn slots_for(n: usize) -> usize {
        n.saturating_mul(2).max(8).next_power_of_two()
    }

    fn slot_hash(&self, k: [u64; 2]) -> usize {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.hash.build_hasher();
        h.write_u64(k[0]);
        h.write_u64(k[1]);
        h.finish() as usize
    }

    /// The slot holding `k`, or the empty slot where it would go.
    fn probe(&self, k: [u64; 2]) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = self.slot_hash(k) & mask;
        loop {
            match self.slots[at] {
                0 => return at,
                e if self.keys[e as usize - 1].0 == k => return at,
                _ => at = (at + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; Self::slots_for(self.keys.len() + 1)];
        let mask = slots.len() - 1;
        for (e, &(k, _)) in self.keys.iter().enumerate() {
            let mut at = self.slot_hash(k) & mask;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = e as u32 + 1;
        }
        self.slots = slots;
    }

    /// Record `id` at `idx` unless it is already held: false if it was.
    pub fn insert_first(&mut self, id: &str, idx: usize) -> bool {
        use std::collections::hash_map::Entry;
        if let Some(k) = uuid_bits(id) {
            if self.get_uuid(k).is_some() {
                return false;
            }
            if self.keys.len() < (u32::MAX - 1) as usize {
                if (self.keys.len() + 1) * 2 > self.slots.len() {
                    self.grow();
                }
                let at = self.probe(k);
                self.keys.push((k, idx));
                self.slots[at] = self.keys.len() as u32;
                return true;
            }
        }
        match self.other.entry(id.into()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(idx);
                true
            }
        }
    }

    fn get_uuid(&self, k: [u64; 2]) -> Option<&usize> {
        if self.slots.is_empty() {
            return None;
        }
        match self.slots[self.probe(k)] {
            0 => None,
            e => self.keys.get(e as usize - 1).map(|(_, v)| v),
        }
    }

    pub fn get<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<&usize> {
        let id = id.as_ref();
        match uuid_bits(id) {
            Some(k) => self.get_uuid(k).or_else(|| {
                // a UUID past u32 entries is held as text
                (!self.other.is_empty())
                    .then(|| self.other.get(id))
                    .flatten()
            }),
            None => self.other.get(id),
        }
    }

    /// [`IdMap::get`] of a compact id: a UUID's bits are looked up as
    /// they are, with no text made or parsed.
    pub fn get_cid(&self, id: &super::event::Cid) -> Option<&usize> {
        match (id.bits(), id.text()) {
            (Some(k), _) => self.get_uuid(k).or_else(|| {
                (!self.other.is_empty())
                    .then(|| self.other.get(id.spell().as_str()))
                    .flatten()
            }),
            (None, t) => self.other.get(t.unwrap_or_default()),
        }
    }

    pub fn contains_cid(&self, id: &super::event::Cid) -> bool {
        self.get_cid(id).is_some()
    }

    pub fn contains_key<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> bool {
        self.get(id).is_some()
    }

    pub fn len(&self) -> usize {
        self.keys.len() + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::ops::Index<&str> for IdMap {
    type Output = usize;
    fn index(&self, id: &str) -> &usize {
        self.get(id).expect("an id held by the index")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_found_by_its_exact_spelling_only() {
        let mut m = IdMap::default();
        let u = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
        assert!(m.insert_first(u, 3));
        assert!(!m.insert_first(u, 5));
        assert!(m.insert_first("x", 7));
        assert!(m.insert_first(&u.to_uppercase(), 8));
        assert!(m.insert_first(&u.replace('-', ""), 9));
        assert_eq!(m.get(u), Some(&3));
        assert_eq!(m.get("x"), Some(&7));
        assert_eq!(m.get(&u.to_uppercase()), Some(&8));
        assert_eq!(m.get(&u.replace('-', "")), Some(&9));
        assert_eq!(m.get("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4e"), None);
        assert_eq!(m.len(), 4);
        assert_eq!(uuid_bits("0a1b2c3d_4e5f-4a6b-8c7d-9e0f1a2b3c4d"), None);
    }

    #[test]
    fn the_table_grows_and_keeps_every_first_index() {
        // from no capacity at all, through several doublings
        let mut m = IdMap::default();
        let id = |i: u32| format!("{i:08x}-0000-4000-8000-{:012x}", i.wrapping_mul(2654435761));
        for i in 0..5000u32 {
            assert!(m.insert_first(&id(i), i as usize));
        }
        for i in 0..5000u32 {
            assert!(!m.insert_first(&id(i), 9));
            assert_eq!(m.get(&id(i)), Some(&(i as usize)));
        }
        assert_eq!(m.get(&id(5000)), None);
        assert_eq!(m.len(), 5000);
        assert!(m.slots.len() >= 2 * m.len());
        // sized up front: never grows
        let mut m = IdMap::with_capacity(100);
        let before = m.slots.len();
        for i in 0..100u32 {
            assert!(m.insert_first(&id(i), i as usize));
        }
        assert_eq!(m.slots.len(), before);
    }
}
