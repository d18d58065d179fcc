//! Reading one event the way the SDK reads it (`EventLog[idx]`): the file at
//! the rebuilt canonical path, parsed strictly, every kind resolvable.
//!
//! Long because: every rule of the SDK's `EventLog[idx]` read is decided
//! here, once.

use std::collections::HashSet;

use crate::kinds::Kinds;
use crate::store::event::{canonical_name, is_canonical_name, Cid, ParentRef};
use crate::store::{Conversation, EventFile, EventRecord, Index, Unreadable};
use crate::version::Version;

/// Why the SDK would fail to read an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    Unreadable(Unreadable),
    /// `kind` (or `action.kind` / `observation.kind`) not registered.
    UnknownKind {
        kind: String,
        field: &'static str,
    },
    /// The name is not `event-{idx:05d}-{id}.json`, the path the SDK rebuilds
    /// to read it, so the read finds no file.
    NonCanonicalName {
        expected: String,
    },
    /// A pre-tree reader (< 1.31) rejects `parent_id` (`extra_forbidden`).
    TreeFieldTooNew,
    /// A top-level key this release's model of the kind does not have
    /// (`extra_forbidden`), e.g. a field added by a newer release.
    UnknownField {
        kind: String,
        field: String,
    },
    /// The release's pydantic model refuses the event (`ValidationError`):
    /// a missing or mistyped field at any depth (see [`crate::validate`]).
    Invalid {
        kind: String,
        errors: Vec<crate::validate::VError>,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Unreadable(u) => write!(f, "{u}"),
            ReadError::UnknownKind { kind, field } => {
                let kind = crate::text::clip(kind, crate::text::QUOTE_MAX);
                write!(f, "its {field} `{kind}` is not a kind this SDK knows")
            }
            ReadError::NonCanonicalName { expected } => {
                write!(f, "the SDK reads it as `{expected}`, which does not exist")
            }
            ReadError::TreeFieldTooNew => {
                write!(f, "it has a `parent_id`, which readers before 1.31 reject")
            }
            ReadError::UnknownField { kind, field } => write!(
                f,
                "its key `{field}` is not a field of {kind} in this SDK, which forbids extra keys"
            ),
            ReadError::Invalid { kind, errors } => {
                let kind = crate::text::clip(kind, crate::text::QUOTE_MAX);
                write!(f, "the SDK's model of {kind} refuses it: ")?;
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

/// For each index `i` of `0..=n`, the nearest index before it that `pred`
/// holds for: one pass, so a planner asks it of every event of a log
/// without a scan back from each.
pub fn nearest_before(n: usize, mut pred: impl FnMut(usize) -> bool) -> Vec<Option<usize>> {
    let mut last = None;
    (0..=n)
        .map(|i| {
            let before = last;
            if i < n && pred(i) {
                last = Some(i);
            }
            before
        })
        .collect()
}

/// For each index `i` of `0..n`, the nearest index after it that `pred`
/// holds for (one pass, from the end).
pub fn nearest_after(n: usize, mut pred: impl FnMut(usize) -> bool) -> Vec<Option<usize>> {
    let mut out = vec![None; n];
    let mut next = None;
    for i in (0..n).rev() {
        out[i] = next;
        if pred(i) {
            next = Some(i);
        }
    }
    out
}

#[cfg(test)]
thread_local! {
    /// Events read through a [`Reader`] on this thread (tests prove a
    /// planner reads the log a bounded number of times).
    pub static READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One event's read verdict, decided once.
type Verdict = std::sync::OnceLock<Result<(), Box<ReadError>>>;

/// From how many events a [`Reader`] decides every verdict up front, in
/// parallel (below it, a store's conversations keep the threads busy).
const JUDGE_AHEAD_FROM: usize = 4096;

pub struct Reader<'a> {
    pub conv: &'a Conversation,
    pub index: &'a Index,
    pub version: Version,
    pub kinds: &'static Kinds,
    /// Client tool names whose `ClientAction_<name>` kinds get registered.
    client_tools: HashSet<String>,
    /// Each event's verdict, decided on its first read: checks and repair
    /// planners ask the same question of every event many times.
    /// (The error is boxed: most events read, and a cell stays 16 bytes.)
    verdicts: Box<[Verdict]>,
    /// Indices whose indexed file is not spelled as the SDK rebuilds the
    /// path, while another file has that very name (a 5- and a 6-digit
    /// spelling of one event): the SDK reads that other file's bytes.
    redirect: std::collections::HashMap<usize, usize>,
    /// For each index, the nearest readable index before it (made on first
    /// use: one pass over the log).
    readable_before: std::sync::OnceLock<Vec<Option<usize>>>,
    /// Per index, where its record's `parent_id` resolves in the index
    /// (`NO_PARENT`: not an id, or no indexed event holds it), looked up
    /// once for every event, on the pool (`-j`): the walks and the
    /// orphans' classification ask it again and again (issue 27). Empty
    /// for a log too long for `u32` indices (then each ask looks it up).
    parent_at: Box<[u32]>,
}

/// [`Reader::parent_at`]'s "no indexed parent".
const NO_PARENT: u32 = u32::MAX;

impl<'a> Reader<'a> {
    /// Every top-level key of `rec` this release does not know for its kind
    /// (the first is the one the SDK names): empty for a kind it does not
    /// know at all.
    pub fn unknown_fields(&self, rec: &EventRecord) -> Vec<String> {
        let Some(&allowed) = self.kinds.fields.get(rec.kind.as_str()) else {
            return Vec::new();
        };
        let mut extra = rec.keys & !allowed;
        let mut out = Vec::new();
        while extra != 0 {
            out.push(crate::kinds::key_name(extra.trailing_zeros()).to_string());
            extra &= extra - 1;
        }
        out.extend(rec.odd_keys().iter().cloned());
        out
    }

    pub fn new(conv: &'a Conversation, index: &'a Index, version: Version) -> Reader<'a> {
        let mut client_tools = HashSet::new();
        if let Some(tools) = conv
            .meta
            .value()
            .and_then(|m| m.get("client_tools"))
            .and_then(|t| t.as_array())
        {
            for t in tools {
                if let Some(name) = t.get("name").and_then(|n| n.as_str()) {
                    client_tools.insert(name.to_string());
                }
            }
        }
        let files = &conv.events.files;
        let odd: Vec<usize> = (0..index.len())
            .filter(|&i| {
                let f = &files[index.by_idx[i]];
                !is_canonical_name(&f.name, i as u64, f.name_id())
            })
            .collect();
        let mut redirect = std::collections::HashMap::new();
        if !odd.is_empty() {
            let by_name: std::collections::HashMap<&str, usize> = files
                .iter()
                .enumerate()
                .map(|(p, f)| (f.name.as_str(), p))
                .collect();
            for i in odd {
                let f = &files[index.by_idx[i]];
                if let Some(&p) = by_name.get(canonical_name(i as u64, f.name_id()).as_str()) {
                    redirect.insert(i, p);
                }
            }
        }
        let mut reader = Reader {
            conv,
            index,
            version,
            kinds: Kinds::for_version(version),
            client_tools,
            verdicts: (0..index.len())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            redirect,
            readable_before: std::sync::OnceLock::new(),
            parent_at: Box::new([]),
        };
        if index.len() < NO_PARENT as usize {
            use rayon::prelude::*;
            let lookup = |i: usize| match reader.record(i).map(|r| &r.parent) {
                Some(ParentRef::Id(p)) => index
                    .id_to_idx
                    .get_cid(p)
                    .map_or(NO_PARENT, |&at| at as u32),
                _ => NO_PARENT,
            };
            let parent_at: Vec<u32> = if index.len() >= JUDGE_AHEAD_FROM {
                (0..index.len()).into_par_iter().map(lookup).collect()
            } else {
                (0..index.len()).map(lookup).collect()
            };
            reader.parent_at = parent_at.into_boxed_slice();
        }
        if reader.len() >= JUDGE_AHEAD_FROM && rayon::current_num_threads() > 1 {
            // a long log: every event's verdict is decided now, on every
            // thread of the pool (`-j`); each is what its first read
            // would decide
            use rayon::prelude::*;
            reader
                .verdicts
                .par_iter()
                .enumerate()
                .for_each(|(i, cell)| {
                    cell.get_or_init(|| reader.judge(i).map(|_| ()).map_err(Box::new));
                });
        }
        reader
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn file(&self, idx: usize) -> &'a EventFile {
        &self.conv.events.files[self.index.by_idx[idx]]
    }

    /// The id at `idx` (the SDK's `get_id`: the id in the file name).
    pub fn id(&self, idx: usize) -> &'a str {
        self.file(idx).name_id()
    }

    /// Whether the SDK resolves event `idx`'s id to `idx` itself: false for
    /// a copy that shares its id with an event it resolves to instead, which
    /// no `parent_id` or HEAD can therefore name.
    pub fn owns_its_id(&self, idx: usize) -> bool {
        self.index.id_to_idx.get(self.id(idx)) == Some(&idx)
    }

    /// The id of event `idx` as the SDK hands the event back once read:
    /// its JSON `id` (the walk follows the ids in the file names; the
    /// events it returns carry their own), the file's when it has none.
    pub fn returned_id(&self, idx: usize) -> &'a str {
        self.record(idx)
            .and_then(|r| r.id.as_deref())
            .unwrap_or_else(|| self.id(idx))
    }

    /// The file whose bytes the SDK reads for `idx`: the indexed one, or
    /// the file with the name the SDK rebuilds when that is another file.
    pub fn content(&self, idx: usize) -> &'a EventFile {
        match self.redirect.get(&idx) {
            Some(&p) => &self.conv.events.files[p],
            None => self.file(idx),
        }
    }

    /// The parsed record, if the JSON parsed (kinds not checked).
    pub fn record(&self, idx: usize) -> Option<&'a EventRecord> {
        self.content(idx).record.as_ref().ok()
    }

    fn known(&self, set: &HashSet<String>, kind: &str) -> bool {
        set.contains(kind)
            || kind
                .strip_prefix("ClientAction_")
                .is_some_and(|n| self.client_tools.contains(n))
    }

    /// Check a parsed record's kinds against this version's lists.
    pub fn check_kinds(&self, rec: &EventRecord) -> Result<(), ReadError> {
        if !self.kinds.event.contains(rec.kind.as_str()) {
            return Err(ReadError::UnknownKind {
                kind: rec.kind.to_string(),
                field: "kind",
            });
        }
        if let Some(k) = rec.action_kind() {
            if !self.known(&self.kinds.action, k) {
                return Err(ReadError::UnknownKind {
                    kind: k.to_string(),
                    field: "action.kind",
                });
            }
        }
        if let Some(k) = rec.observation_kind() {
            if !self.known(&self.kinds.observation, k) {
                return Err(ReadError::UnknownKind {
                    kind: k.to_string(),
                    field: "observation.kind",
                });
            }
        }
        Ok(())
    }

    /// `EventLog[idx]` as the SDK of `self.version` would do it.
    pub fn read(&self, idx: usize) -> Result<&'a EventRecord, ReadError> {
        #[cfg(test)]
        READS.with(|c| c.set(c.get() + 1));
        let verdict = match self.verdicts.get(idx) {
            Some(cell) => cell.get_or_init(|| self.judge(idx).map(|_| ()).map_err(Box::new)),
            None => return self.judge(idx),
        };
        match verdict {
            Ok(()) => Ok(self
                .content(idx)
                .record
                .as_ref()
                .expect("a readable event has a record")),
            Err(e) => Err(ReadError::clone(e)),
        }
    }

    /// Whether [`Reader::read`] of `idx` succeeds (without a copy of the
    /// error).
    pub fn readable(&self, idx: usize) -> bool {
        #[cfg(test)]
        READS.with(|c| c.set(c.get() + 1));
        match self.verdicts.get(idx) {
            Some(cell) => cell
                .get_or_init(|| self.judge(idx).map(|_| ()).map_err(Box::new))
                .is_ok(),
            None => self.judge(idx).is_ok(),
        }
    }

    /// The nearest index before `idx` that the SDK reads (the parent a
    /// tolerant reader assumes for an event whose own is lost). Every
    /// index's answer is found in one pass over the log, on the first ask.
    pub fn readable_before(&self, idx: usize) -> Option<usize> {
        let n = self.len();
        let before = self
            .readable_before
            .get_or_init(|| nearest_before(n, |i| self.readable(i)));
        before[idx.min(n)]
    }

    /// [`Reader::read`], decided afresh.
    fn judge(&self, idx: usize) -> Result<&'a EventRecord, ReadError> {
        let f = self.content(idx);
        if !is_canonical_name(&f.name, idx as u64, f.name_id()) {
            return Err(ReadError::NonCanonicalName {
                expected: canonical_name(idx as u64, f.name_id()),
            });
        }
        let rec = f
            .record
            .as_ref()
            .map_err(|u| ReadError::Unreadable(u.clone()))?;
        // An SDK validator that crashes (the old `_validate_subtype` on a
        // non-object) aborts the validation: its exception wins over every
        // error pydantic would have collected, once the kind is dispatched.
        if let Some(crash) = rec
            .invalid()
            .iter()
            .find(|e| e.exception() != "ValidationError")
        {
            if self.kinds.event.contains(rec.kind.as_str()) {
                return Err(ReadError::Invalid {
                    kind: rec.kind.to_string(),
                    errors: vec![crash.clone()],
                });
            }
        }
        self.check_kinds(rec)?;
        if !self.version.tree_era() && rec.parent.is_present() {
            return Err(ReadError::TreeFieldTooNew);
        }
        if let Some(field) = self.unknown_fields(rec).into_iter().next() {
            return Err(ReadError::UnknownField {
                kind: rec.kind.to_string(),
                field,
            });
        }
        // Whole-model validation; an unknown `ClientAction_<tool>` kind is
        // registered from meta.json's client tools at run time.
        let client_ok = |e: &crate::validate::VError| {
            e.client_kind
                .as_deref()
                .and_then(|k| k.strip_prefix("ClientAction_"))
                .is_some_and(|n| self.client_tools.contains(n))
        };
        if !rec.invalid().is_empty() && !rec.invalid().iter().all(client_ok) {
            return Err(ReadError::Invalid {
                kind: rec.kind.to_string(),
                errors: rec
                    .invalid()
                    .iter()
                    .filter(|e| !client_ok(e))
                    .cloned()
                    .collect(),
            });
        }
        Ok(rec)
    }

    /// `get_index(get_id(idx))`: the SDK walks by id, and an id resolves to
    /// the FIRST index holding it, so a second copy of an id stands for its
    /// first copy.
    pub fn first_of(&self, idx: usize) -> usize {
        if !self.index.dup_ids {
            return idx; // every id is held once: no lookup on the hot path
        }
        self.index
            .id_to_idx
            .get(self.id(idx))
            .copied()
            .unwrap_or(idx)
    }

    /// `get_index(_effective_parent_id(idx, event))`, for a readable event.
    /// `Err(id)` when the parent id is not in the index. A legacy event's
    /// parent is `get_id(idx - 1)`, looked up again by id: the first copy
    /// of that id, which is not `idx - 1` when `idx - 1` is a second copy.
    pub fn effective_parent(&self, idx: usize, rec: &EventRecord) -> Result<Option<usize>, String> {
        match &rec.parent {
            ParentRef::Root => Ok(None),
            ParentRef::Id(p) => match self.parent_of(idx, rec, p) {
                Some(i) => Ok(Some(i)),
                None => Err(p.to_string()),
            },
            ParentRef::Absent if idx == 0 => Ok(None),
            ParentRef::Absent => Ok(Some(self.first_of(idx - 1))),
        }
    }

    /// Where `rec`'s parent id `p` resolves in the index: looked up once
    /// ([`Reader::parent_at`]) when `rec` is the record read at `idx`.
    fn parent_of(&self, idx: usize, rec: &EventRecord, p: &Cid) -> Option<usize> {
        match self.parent_at.get(idx) {
            Some(&at) if self.record(idx).is_some_and(|r| std::ptr::eq(r, rec)) => {
                (at != NO_PARENT).then_some(at as usize)
            }
            _ => self.index.id_to_idx.get_cid(p).copied(),
        }
    }

    /// The parent a tolerant reader would follow: the recorded `parent_id`
    /// when it names an indexed event, the previous index otherwise (the
    /// #4114 semantics), for classifying events off the active branch.
    pub fn tolerant_parent(&self, idx: usize) -> Option<usize> {
        match self.record(idx) {
            Some(rec) => match &rec.parent {
                ParentRef::Root => None,
                ParentRef::Id(p) => self.parent_of(idx, rec, p),
                ParentRef::Absent => idx.checked_sub(1).map(|p| self.first_of(p)),
            },
            None => idx.checked_sub(1).map(|p| self.first_of(p)),
        }
    }
}
