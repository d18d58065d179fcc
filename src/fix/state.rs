//! The folder as a repair is changing it, in memory: the original on disk
//! plus an [`Overlay`] of what the applied passes changed, and where every
//! current file came from, so the whole run can be written as one change
//! from the original folder to the final one ([`Virtual::composite`]).
//!
//! Long because: the overlay, the rename planning and the composite change
//! are one model of the folder being changed.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::edit::{Action, Change, Op, Safety};
use crate::store::conversation::Overlay;

use super::{patch, Create, Edit, Move};

/// What the applied changes did to one original file (or one created
/// file), for the descriptions of the composite.
#[derive(Clone, Debug, Default)]
pub struct Touch {
    pub checks: Vec<&'static str>,
    /// What changed in its content, in words.
    pub what: Vec<String>,
    /// What happened to its name (a rename, a removal), in words.
    pub moved: Vec<String>,
    /// Some change to it was unsafe.
    pub unsafe_change: bool,
    /// Its content was replaced wholesale (a placeholder).
    pub replaced: bool,
    /// The file whose owner and mode a created file takes.
    pub like: Option<String>,
    /// Some change gave it its parent: a `parent_id` set, or its content
    /// written whole (a placeholder, a JSON put back, a new event).
    pub linked: bool,
}

impl Touch {
    fn add(&mut self, c: &Change) {
        if !self.checks.contains(&c.check) {
            self.checks.push(c.check);
        }
        let list = match c.action {
            Action::Rename(_) | Action::Remove => &mut self.moved,
            _ => &mut self.what,
        };
        if !list.contains(&c.what) {
            list.push(c.what.clone());
        }
        self.unsafe_change |= c.safety == Safety::Unsafe;
        self.linked |= match &c.action {
            Action::Patch { pointer, .. } => pointer == "/parent_id",
            Action::Replace(_) | Action::Create { .. } => true,
            Action::Rename(_) | Action::Remove => false,
        };
    }
}

#[cfg(test)]
thread_local! {
    /// Files this thread's [`Virtual`]s looked up or read on disk (tests
    /// prove a repair asks the disk a bounded number of times per change).
    pub static DISK_ASKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The size and modification time a read saw.
pub type Seen = (u64, Option<std::time::SystemTime>);

/// The whole run as one change: edits, moves, new files.
pub type Composite = (Vec<Edit>, Vec<Move>, Vec<Create>);

/// Where a file of the current state comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The original file of this name on disk (relative path).
    Disk(String),
    /// Created by this run.
    Created,
}

#[derive(Clone, Debug)]
pub struct Virtual {
    /// The conversation folder, held open: every original is read through it.
    pub dir: crate::store::fsread::DirFd,
    /// Its `events/` folder, held once (no link followed): the log's files
    /// are looked up and read through it.
    events: Option<crate::store::fsread::DirFd>,
    pub overlay: Overlay,
    /// Files this run created (current names).
    created: HashSet<String>,
    /// The original bytes of every file read to change it, by original name.
    originals: HashMap<String, Vec<u8>>,
    /// Per original name (or created name): what was done.
    pub touched: BTreeMap<String, Touch>,
    /// What each overlay key the pass being applied changes held before
    /// it, so whether the pass changed anything is known without a copy of
    /// the whole overlay.
    before_pass: HashMap<String, Held>,
}

/// What the overlay holds for one key: new bytes, the original it was
/// renamed from, whether it is left out of the listing.
type Held = (Option<Vec<u8>>, Option<String>, bool);

/// A change the state could not take, and why (it is dropped; the next pass
/// plans again on the state as it is).
#[derive(Debug)]
pub struct Dropped {
    pub change: Change,
    #[allow(dead_code)] // said in a debug trace; the next pass plans again
    pub why: String,
}

impl Virtual {
    /// Every check whose changes this state holds, sorted.
    pub fn checks_that_ran(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> = self
            .touched
            .values()
            .flat_map(|t| t.checks.iter().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    pub fn new(dir: &crate::store::fsread::DirFd) -> Virtual {
        // what is written is written now: event files first, the state
        // files after them (persist::apply writes in that order)
        let now = std::time::SystemTime::now();
        let overlay = Overlay {
            written_at: Some((now, now + std::time::Duration::from_millis(1))),
            ..Overlay::new()
        };
        let events = dir
            .open_below(std::path::Path::new("events"), &dir.path().join("events"))
            .ok();
        Virtual {
            dir: dir.clone(),
            events,
            overlay,
            created: HashSet::new(),
            originals: HashMap::new(),
            touched: BTreeMap::new(),
            before_pass: HashMap::new(),
        }
    }

    /// Where the current file `rel` comes from; `None` if there is no such
    /// file in the current state.
    pub fn origin(&self, rel: &str) -> Option<Origin> {
        if self.created.contains(rel) {
            return Some(Origin::Created);
        }
        if let Some(o) = self.overlay.renamed.get(rel) {
            return Some(Origin::Disk(o.clone()));
        }
        if self.overlay.gone.contains(rel) && !self.overlay.files.contains_key(rel) {
            return None;
        }
        if self.overlay.files.contains_key(rel) || self.on_disk(rel) {
            return Some(Origin::Disk(rel.to_string()));
        }
        None
    }

    /// The files this run created, by their current names.
    pub fn created(&self) -> impl Iterator<Item = &String> {
        self.created.iter()
    }

    /// The original name of the current file `rel` (itself when it was not
    /// renamed or is new). Asks nothing of the disk: a name this run did not
    /// rename is its own original whether or not a file holds it.
    pub fn original_name(&self, rel: &str) -> String {
        match self.overlay.renamed.get(rel) {
            Some(o) if !self.created.contains(rel) => o.clone(),
            _ => rel.to_string(),
        }
    }

    fn on_disk(&self, rel: &str) -> bool {
        #[cfg(test)]
        DISK_ASKS.with(|c| c.set(c.get() + 1));
        let (dir, name) = self.dir.route(self.events.as_ref(), rel);
        dir.lstat(name).is_ok()
    }

    fn exists(&self, rel: &str) -> bool {
        self.origin(rel).is_some()
    }

    /// The current bytes of `rel`.
    fn read(&mut self, rel: &str) -> Result<Vec<u8>, String> {
        if let Some(b) = self.overlay.files.get(rel) {
            return Ok(b.clone());
        }
        let taken_out = self.overlay.gone.contains(rel) && !self.overlay.renamed.contains_key(rel);
        if self.created.contains(rel) || taken_out {
            return Err(format!("{rel} is not in the folder"));
        }
        // an original, under its name or renamed: reading it is what tells
        // whether it is there (no `stat` first)
        self.original(&self.original_name(rel))
    }

    /// The original bytes of the file `orig` on disk (read once, kept).
    pub fn original(&mut self, orig: &str) -> Result<Vec<u8>, String> {
        if let Some(b) = self.originals.get(orig) {
            return Ok(b.clone());
        }
        #[cfg(test)]
        DISK_ASKS.with(|c| c.set(c.get() + 1));
        let (dir, name) = self.dir.route(self.events.as_ref(), orig);
        let (b, _) = dir.read_regular(name, false).map_err(|e| {
            format!(
                "cannot read {orig} again: {}",
                crate::store::Unreadable::from(e)
            )
        })?;
        self.originals.insert(orig.to_string(), b.clone());
        Ok(b)
    }

    fn held(&self, key: &str) -> Held {
        (
            self.overlay.files.get(key).cloned(),
            self.overlay.renamed.get(key).cloned(),
            self.overlay.gone.contains(key),
        )
    }

    /// Remember what the overlay held for `key` before this pass changes it
    /// (once per pass: the first change made is the one that counts).
    fn mark(&mut self, key: &str) {
        if !self.before_pass.contains_key(key) {
            let held = self.held(key);
            self.before_pass.insert(key.to_string(), held);
        }
    }

    fn touch(&mut self, rel: &str, c: &Change) -> &mut Touch {
        let key = self.original_name(rel);
        let t = self.touched.entry(key).or_default();
        t.add(c);
        t
    }

    /// Apply one pass's changes. Changes to one file are applied content
    /// first (in order), then its rename, and a removal wins over both. A
    /// change that cannot be applied (its file is gone, a rename target is
    /// taken, a patch does not fit) is dropped with the reason. Also says
    /// whether the overlay is now any different from before the pass (the
    /// keys the pass changed compared, not the whole overlay).
    pub fn apply(&mut self, changes: &[Change]) -> (Vec<Dropped>, bool) {
        self.before_pass.clear();
        let dropped = self.apply_each(changes);
        let before = std::mem::take(&mut self.before_pass);
        let changed = before.iter().any(|(key, held)| *held != self.held(key));
        (dropped, changed)
    }

    fn apply_each(&mut self, changes: &[Change]) -> Vec<Dropped> {
        let mut dropped = Vec::new();
        let rank = |a: &Action| match a {
            Action::Create { .. } => 0,
            Action::Patch { .. } | Action::Replace(_) => 1,
            Action::Rename(_) => 2,
            Action::Remove => 3,
        };
        // stable: keeps each planner's order within a rank
        let mut order: Vec<&Change> = changes.iter().collect();
        order.sort_by_key(|c| rank(&c.action));
        let removed: HashSet<&str> = changes
            .iter()
            .filter(|c| c.action == Action::Remove)
            .map(|c| c.file.as_str())
            .collect();
        // each file is renamed at most once per pass; later renames of a
        // file already renamed are dropped (the next pass sees the result)
        let mut renamed_now: HashMap<String, String> = HashMap::new();
        for c in order {
            let res = match &c.action {
                Action::Create { bytes, like } => self.create(&c.file, bytes, like, c),
                Action::Patch { .. } | Action::Replace(_) if removed.contains(c.file.as_str()) => {
                    Err("the file is taken out by another repair of this pass".into())
                }
                Action::Patch { pointer, op } => self.patch(&c.file, pointer, op, c),
                Action::Replace(bytes) => {
                    if self.exists(&c.file) {
                        let _ = self.read(&c.file); // keep the original bytes
                        self.mark(&c.file);
                        self.overlay.files.insert(c.file.clone(), bytes.clone());
                        self.touch(&c.file, c).replaced = true;
                        Ok(())
                    } else {
                        Err(format!("{} is not in the folder", c.file))
                    }
                }
                Action::Rename(to) if removed.contains(c.file.as_str()) => {
                    let _ = to;
                    Err("the file is taken out by another repair of this pass".into())
                }
                Action::Rename(to) => match renamed_now.get(&c.file) {
                    Some(t) if t == to => Ok(()),
                    Some(t) => Err(format!("it is already renamed to {t} in this pass")),
                    None => {
                        let r = self.rename(&c.file, to, c);
                        if r.is_ok() {
                            renamed_now.insert(c.file.clone(), to.clone());
                        }
                        r
                    }
                },
                Action::Remove => {
                    let current = renamed_now.get(&c.file).cloned().unwrap_or(c.file.clone());
                    self.remove(&current, c)
                }
            };
            if let Err(why) = res {
                dropped.push(Dropped {
                    change: c.clone(),
                    why,
                });
            }
        }
        dropped
    }

    fn patch(&mut self, rel: &str, pointer: &str, op: &Op, c: &Change) -> Result<(), String> {
        let current = self.read(rel)?;
        let text = std::str::from_utf8(&current).map_err(|_| "it is not UTF-8".to_string())?;
        let after = match op {
            Op::Set(v) => patch::set(text, pointer, v),
            Op::Remove => patch::remove(text, pointer),
        }
        .map_err(|e| format!("it cannot be patched safely: {e}"))?;
        if after.as_bytes() != current.as_slice() {
            self.mark(rel);
            self.overlay
                .files
                .insert(rel.to_string(), after.into_bytes());
        }
        self.touch(rel, c);
        Ok(())
    }

    fn rename(&mut self, rel: &str, to: &str, c: &Change) -> Result<(), String> {
        let dir_of = |p: &str| p.rsplit_once('/').map(|x| x.0.to_string());
        if dir_of(rel) != dir_of(to) {
            return Err(format!("{to} is not in the folder of {rel}"));
        }
        if rel == to {
            return Ok(());
        }
        if self.exists(to) {
            return Err(format!("{to} is taken"));
        }
        let Some(origin) = self.origin(rel) else {
            return Err(format!("{rel} is not in the folder"));
        };
        self.touch(rel, c);
        self.mark(rel);
        self.mark(to);
        let bytes = self.overlay.files.remove(rel);
        match &origin {
            Origin::Created => {
                self.created.remove(rel);
                self.created.insert(to.to_string());
                if let Some(t) = self.touched.remove(rel) {
                    self.touched.insert(to.to_string(), t);
                }
            }
            Origin::Disk(orig) => {
                self.overlay.renamed.remove(rel);
                if orig == rel {
                    self.overlay.gone.insert(rel.to_string());
                }
                if orig == to {
                    // back under its own name
                    self.overlay.gone.remove(to);
                } else {
                    self.overlay.renamed.insert(to.to_string(), orig.clone());
                }
            }
        }
        if let Some(b) = bytes {
            self.overlay.files.insert(to.to_string(), b);
        }
        Ok(())
    }

    fn remove(&mut self, rel: &str, c: &Change) -> Result<(), String> {
        let Some(origin) = self.origin(rel) else {
            return Err(format!("{rel} is not in the folder"));
        };
        if let Origin::Disk(orig) = &origin {
            self.original(orig)?; // its backup copy is made from these bytes
        }
        self.touch(rel, c);
        self.mark(rel);
        if let Origin::Disk(orig) = &origin {
            self.mark(orig);
        }
        self.overlay.files.remove(rel);
        match origin {
            Origin::Created => {
                self.created.remove(rel);
                self.touched.remove(rel);
            }
            Origin::Disk(orig) => {
                self.overlay.renamed.remove(rel);
                self.overlay.gone.insert(orig);
            }
        }
        Ok(())
    }

    fn create(&mut self, rel: &str, bytes: &[u8], like: &str, c: &Change) -> Result<(), String> {
        if self.exists(rel) {
            return Err(format!("{rel} already exists"));
        }
        let like = self.original_name(like);
        self.mark(rel);
        self.overlay.files.insert(rel.to_string(), bytes.to_vec());
        self.created.insert(rel.to_string());
        let t = self.touch(rel, c);
        t.like = Some(like);
        Ok(())
    }

    /// The whole run as one change from the original folder: an edit of
    /// every original whose bytes differ, a move of every original that is
    /// renamed or taken out (with its original bytes), and every new file.
    /// Files changed and changed back are left alone.
    pub fn composite(&mut self, seen: &dyn Fn(&str) -> Option<Seen>) -> Result<Composite, String> {
        // An original renamed away or taken out, and a new file made under
        // its name by a later pass: the composition below keys both by that
        // name and would keep only the new file (written onto the original,
        // which apply refuses). Refused here, by name, before anything is
        // composed.
        let mut reused: Vec<&String> = self
            .created
            .iter()
            .filter(|n| self.overlay.gone.contains(*n))
            .collect();
        reused.sort();
        if let Some(first) = reused.first() {
            return Err(format!(
                "{first} is moved away and a new file is made under its name in the same run, which this repair cannot write as one change"
            ));
        }
        // where each original ended up
        let mut now_at: HashMap<String, String> = HashMap::new();
        for (to, orig) in &self.overlay.renamed {
            now_at.insert(orig.clone(), to.clone());
        }
        let (mut edits, mut moves, mut creates) = (Vec::new(), Vec::new(), Vec::new());
        let touched: Vec<(String, Touch)> = self
            .touched
            .iter()
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        for (name, t) in touched {
            if self.created.contains(&name) {
                continue;
            }
            let gone = self.overlay.gone.contains(&name);
            let final_name = if gone {
                now_at.get(&name).cloned()
            } else {
                Some(name.clone())
            };
            let edited = final_name
                .as_ref()
                .and_then(|f| self.overlay.files.get(f))
                .is_some();
            // a file only renamed is not read again here: its size and
            // modification time as the proof saw them stand for its bytes
            let before = if final_name.is_none() || edited || seen(&name).is_none() {
                Some(self.original(&name)?)
            } else {
                None
            };
            match (final_name, before) {
                (None, Some(before)) => moves.push(Move {
                    rel: name.clone(),
                    to: None,
                    sha256: super::persist::sha256(&before),
                    seen: None,
                    bytes: Some(before),
                    checks: t.checks.clone(),
                    what: t.moved.join("; "),
                }),
                (Some(f), before) => {
                    if let Some(before) = &before {
                        let after = self.overlay.files.get(&f).unwrap_or(before);
                        if after != before {
                            edits.push(Edit {
                                rel: name.clone(),
                                before: before.clone(),
                                after: after.clone(),
                                checks: t.checks.clone(),
                                what: t.what.clone(),
                            });
                        }
                    }
                    if f != name {
                        moves.push(Move {
                            rel: name.clone(),
                            to: Some(f),
                            sha256: before
                                .as_ref()
                                .map(|b| super::persist::sha256(b))
                                .unwrap_or_default(),
                            seen: if before.is_none() { seen(&name) } else { None },
                            bytes: None,
                            checks: t.checks.clone(),
                            what: t.moved.join("; "),
                        });
                    }
                }
                (None, None) => unreachable!("a file taken out is always read"),
            }
        }
        let mut new: Vec<&String> = self.created.iter().collect();
        new.sort();
        for rel in new {
            let t = self.touched.get(rel).cloned().unwrap_or_default();
            creates.push(Create {
                rel: rel.clone(),
                bytes: self.overlay.files.get(rel).cloned().unwrap_or_default(),
                like: t.like.clone().unwrap_or_default(),
                checks: t.checks.clone(),
                what: t.what.join("; "),
            });
        }
        self.untie_cycles(&mut edits, &mut moves)?;
        // renames in ascending new name: a renumbering moves files down
        // into names the earlier ones left; then each rename after the one
        // that frees its new name (a chain a → b, b → c goes b first)
        moves.sort_by(|a, b| (a.to.is_some(), &a.to).cmp(&(b.to.is_some(), &b.to)));
        order_chains(&mut moves);
        Ok((edits, moves, creates))
    }

    /// Renames that end where they began (a → b, b → a: two checks'
    /// renames in one run can trade two names) cannot be made one by one
    /// without a name outside the plan: each becomes an edit of the file
    /// that ends under that name, to the bytes that end there (its
    /// original bytes in the backup, undone like any edit).
    fn untie_cycles(&mut self, edits: &mut Vec<Edit>, moves: &mut Vec<Move>) -> Result<(), String> {
        let to_of: HashMap<String, String> = moves
            .iter()
            .filter_map(|m| m.to.clone().map(|t| (m.rel.clone(), t)))
            .collect();
        // each name is the source of one rename and the target of at most
        // one: the renames make paths and cycles, each walked once
        let mut in_cycle: std::collections::HashSet<String> = Default::default();
        let mut seen: std::collections::HashSet<&String> = Default::default();
        for start in to_of.keys() {
            if !seen.insert(start) {
                continue;
            }
            let mut walk = vec![start];
            let mut at = start;
            while let Some(next) = to_of.get(at) {
                if next == start {
                    in_cycle.extend(walk.iter().map(|s| (*s).clone()));
                    break;
                }
                if !seen.insert(next) {
                    break; // a path met before (no cycle runs through it)
                }
                walk.push(next);
                at = next;
            }
        }
        if in_cycle.is_empty() {
            return Ok(());
        }
        let mut new_edits = Vec::new();
        for m in moves.iter().filter(|m| in_cycle.contains(&m.rel)) {
            let to = m.to.clone().expect("a rename");
            let after = match self.overlay.files.get(&to) {
                Some(b) => b.clone(),
                None => self.original(&m.rel)?,
            };
            let before = self.original(&to)?;
            let t = self.touched.get(&m.rel).cloned().unwrap_or_default();
            let mut what = t.what.clone();
            what.extend(t.moved.iter().cloned());
            new_edits.push(Edit {
                rel: to,
                before,
                after,
                checks: t.checks.clone(),
                what,
            });
        }
        edits.retain(|e| !in_cycle.contains(&e.rel));
        moves.retain(|m| !in_cycle.contains(&m.rel));
        edits.extend(new_edits.into_iter().filter(|e| e.before != e.after));
        edits.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(())
    }
}

/// Each rename after the one that moves away the file under its new name
/// (no cycles: [`Virtual::untie_cycles`] took them out); otherwise the
/// order given.
fn order_chains(moves: &mut [Move]) {
    let to_of: HashMap<&str, &str> = moves
        .iter()
        .filter_map(|m| Some((m.rel.as_str(), m.to.as_deref()?)))
        .collect();
    // how many renames must go before it: its new name's own rename, and
    // so on down the chain (memoised: each link counted once)
    let mut depth: HashMap<&str, usize> = HashMap::new();
    for &start in to_of.keys() {
        let mut chain = Vec::new();
        let mut at = start;
        let base = loop {
            if let Some(&d) = depth.get(at) {
                break d + 1;
            }
            chain.push(at);
            if chain.len() > to_of.len() {
                break 0; // a cycle ([`Virtual::untie_cycles`] takes them out first)
            }
            match to_of.get(at) {
                Some(next) if to_of.contains_key(next) => at = next,
                _ => break 0,
            }
        };
        for (k, name) in chain.iter().rev().enumerate() {
            depth.insert(name, base + k);
        }
    }
    let depth: HashMap<String, usize> =
        depth.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    // stable: among equals, the order given
    moves.sort_by_key(|m| {
        m.to.as_ref()
            .map_or(0, |_| 1 + depth.get(&m.rel).copied().unwrap_or(0))
    });
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    fn rename(from: &str, to: &str) -> Move {
        Move {
            rel: from.into(),
            to: Some(to.into()),
            sha256: String::new(),
            seen: None,
            bytes: None,
            checks: Vec::new(),
            what: String::new(),
        }
    }

    fn change(file: &str, action: crate::edit::Action) -> Change {
        Change {
            file: file.into(),
            action,
            check: "test",
            safety: crate::edit::Safety::Safe,
            what: format!("{file}: test"),
            declared: crate::edit::Phase::Index,
        }
    }

    /// A file renamed away (or taken out) in one pass and a new file made
    /// under its name in a later pass: the run is refused by name when it is
    /// composed (it once kept only the new file, which apply refused as a
    /// file written onto an existing name), and each alone composes.
    #[test]
    fn a_name_left_and_taken_again_in_one_run_is_refused_when_composed() {
        use crate::edit::Action;
        for away in [Action::Rename("events/b.json".into()), Action::Remove] {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(tmp.path().join("events")).unwrap();
            std::fs::write(tmp.path().join("events/a.json"), b"{\"a\": 1}").unwrap();
            let dir = crate::store::fsread::DirFd::open(tmp.path()).unwrap();
            let seen = |_: &str| None;

            let mut alone = Virtual::new(&dir);
            let (dropped, changed) = alone.apply(&[change("events/a.json", away.clone())]);
            assert!(dropped.is_empty() && changed);
            let (_, moves, creates) = alone.composite(&seen).unwrap();
            assert_eq!((moves.len(), creates.len()), (1, 0));

            let mut v = Virtual::new(&dir);
            v.apply(&[change("events/a.json", away.clone())]);
            let create = Action::Create {
                bytes: b"{\"new\": 1}".to_vec(),
                like: "events/a.json".into(),
            };
            let (dropped, changed) = v.apply(&[change("events/a.json", create)]);
            assert!(
                dropped.is_empty() && changed,
                "the later pass takes the free name"
            );
            let why = v.composite(&seen).unwrap_err();
            assert!(why.contains("events/a.json is moved away"), "{why}");
            // nothing was written: the original is as it was
            assert_eq!(
                std::fs::read(tmp.path().join("events/a.json")).unwrap(),
                b"{\"a\": 1}"
            );
        }
    }

    /// A renumbering of 100,000 files each into the name the next one
    /// leaves (given in the worst order) goes tail first, every new name
    /// free when its rename runs; one walk per link.
    #[test]
    fn a_long_chain_goes_tail_first() {
        let n = 100_000;
        let name = |i: usize| format!("events/e{i:06}");
        let mut moves: Vec<Move> = (1..=n)
            .rev()
            .map(|i| rename(&name(i), &name(i - 1)))
            .collect();
        moves.push(Move {
            to: None,
            ..rename("events/gone", "x")
        });
        order_chains(&mut moves);
        assert!(moves[0].to.is_none(), "a file taken out goes first");
        let mut present: std::collections::HashSet<String> = (1..=n).map(name).collect();
        for m in &moves[1..] {
            let to = m.to.clone().unwrap();
            assert!(
                !present.contains(&to),
                "{to} still taken when {} moves",
                m.rel
            );
            present.remove(&m.rel);
            present.insert(to);
        }
    }
}
