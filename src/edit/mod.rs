//! The vocabulary of a repair: what a check's planner may propose for the
//! files of one conversation, and what it leaves for a human, with why.
//!
//! It sits below `checks/` (each check's planner speaks it) and above
//! `fix/` (the engine applies the proposals to an in-memory overlay,
//! analyses the result, plans again until nothing is proposed, proves the
//! final state and writes it). A planner never reads `--unsafe-fixes`: it
//! tags each change safe or unsafe and the engine decides.

pub mod placeholder;
pub mod salvage;

use serde::Serialize;
use serde_json::Value;

/// How far one proposed change can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Safety {
    /// Nothing the agent saw is lost: made by every `repair`.
    Safe,
    /// The agent loses sight of something, or the change is a guess: made
    /// only with `--unsafe-fixes`.
    Unsafe,
}

/// A change to one JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Set(Value),
    Remove,
}

/// What happens to one file.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Change one value of the JSON document (every other byte stays).
    Patch { pointer: String, op: Op },
    /// Replace the whole file (a placeholder event in the slot of one the
    /// SDK cannot read; the original stays in the run's backup).
    Replace(Vec<u8>),
    /// Rename the file inside its folder (path relative to the
    /// conversation folder).
    Rename(String),
    /// Take the file out of the conversation, into the run's backup.
    Remove,
    /// A new file, owned and moded like the file `like`.
    Create { bytes: Vec<u8>, like: String },
}

impl Action {
    /// Whether it renames, adds or takes out an event file of the log
    /// (`file` the changed file, relative to the conversation folder).
    pub fn moves_the_index(&self, file: &str) -> bool {
        let event = |rel: &str| rel.starts_with("events/event-");
        match self {
            Action::Rename(to) => event(file) || event(to),
            Action::Remove | Action::Create { .. } => event(file),
            Action::Patch { .. } | Action::Replace(_) => false,
        }
    }
}

/// When a change runs. Each pass of a repair makes only the changes of the
/// earliest phase proposed, then plans again on the result, so a later
/// phase's planners see what the earlier ones made (e2fsck's passes).
/// Ordered: `Index < Readable < Links < State`.
///
/// A check declares the phase of its changes (`checks::Repair::phase`);
/// what a change does may put it earlier ([`Change::phase`]): a change that
/// moves the index runs in `Index`, a patch or placeholder for an event the
/// SDK cannot read in `Readable`, whatever its check declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// An event file of the log renamed, added or taken out: every other
    /// planner's guards read the index, so these go first, alone (all of
    /// the check's changes of the pass with them).
    Index,
    /// An event the SDK cannot read made readable again: a patch that keeps
    /// the event (an id put back, a key dropped) before a placeholder that
    /// replaces it, both before the links and the HEAD, which the other
    /// planners choose by which events read.
    Readable,
    /// The links between events (`parent_id`, `action_id`), before the HEAD
    /// and the state that point into the tree they make.
    Links,
    /// The HEAD, the state and meta.json.
    State,
}

/// One proposed change: the file as it is named in the state the planner
/// saw, what happens to it, the check that asks, how safe, and in words.
#[derive(Clone, Debug)]
pub struct Change {
    pub file: String,
    pub action: Action,
    pub check: &'static str,
    pub safety: Safety,
    pub what: String,
    /// The phase its check declares.
    pub declared: Phase,
}

impl Change {
    /// The phase it runs in: its check's declared phase, or earlier when
    /// what it does says so (see [`Phase`]). `unreadable`: whether the SDK
    /// cannot read the event file of that name in the state planned on.
    pub fn phase(&self, unreadable: &dyn Fn(&str) -> bool) -> Phase {
        let by_action = if self.action.moves_the_index(&self.file) {
            Phase::Index
        } else if matches!(self.action, Action::Patch { .. } | Action::Replace(_))
            && unreadable(&self.file)
        {
            Phase::Readable
        } else {
            Phase::State
        };
        by_action.min(self.declared)
    }
}

/// Why nothing may be written to a conversation, by kind (the human
/// summary counts refused conversations by it; [`Refused::why`] says the
/// rest in words). Ordered: when several hold, the first is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// A live `owner_lease.json`: a server holds the conversation.
    InUse,
    /// A repair (or undo) run stopped half-way through it.
    Interrupted,
    /// A writer was active, or files changed while they were read or proven.
    Busy,
    /// Some of it could not be read (permission, I/O).
    Unreadable,
    /// No repair could be proven safe.
    Proof,
}

impl Refusal {
    /// How the summary line says it ("17 conversations (16 in use by a server, ...)").
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::InUse => "in use by a server",
            Refusal::Interrupted => "half-repaired",
            Refusal::Busy => "being written",
            Refusal::Unreadable => "not wholly readable",
            Refusal::Proof => "no repair proven safe",
        }
    }
}

/// A conversation's repair refused: the kind, and why in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub kind: Refusal,
    pub why: String,
}

impl Refused {
    pub fn new(kind: Refusal, why: impl Into<String>) -> Refused {
        Refused {
            kind,
            why: why.into(),
        }
    }
}

/// Why a finding is left, as `repair --format json` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftReason {
    /// The check declares no automatic repair.
    Manual,
    /// The check has a repair, but it does not apply to this finding (a
    /// guard does not hold); `why` says which.
    NoRepair,
    /// An unsafe repair exists and `--unsafe-fixes` was not given.
    UnsafeNotRequested,
    /// The check has a repair, but `--only` left it out.
    NotSelected,
    /// The conversation's repair was refused.
    Refused,
}

impl LeftReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftReason::Manual => "manual",
            LeftReason::NoRepair => "no-repair",
            LeftReason::UnsafeNotRequested => "unsafe-not-requested",
            LeftReason::NotSelected => "not-selected",
            LeftReason::Refused => "refused",
        }
    }
}

/// A finding a planner does not repair, and why (words an operator can act
/// on).
#[derive(Clone, Debug)]
pub struct Leave {
    pub check: &'static str,
    pub file: String,
    pub why: String,
    pub reason: LeftReason,
}

/// What the planners of one pass propose. The engine sets the check whose
/// planner runs ([`Proposals::begin`]), so a planner never spells its own
/// id.
pub struct Proposals<'s> {
    check: &'static str,
    phase: Phase,
    selected: &'s dyn Fn(&str) -> bool,
    pub changes: Vec<Change>,
    pub left: Vec<Leave>,
    /// Notes for the operator (a secret kept, a mode available).
    pub notes: Vec<String>,
    /// (check, file) of every finding in `left`: one leave per finding.
    left_seen: std::collections::HashSet<(&'static str, String)>,
}

impl<'s> Proposals<'s> {
    pub fn new(selected: &'s dyn Fn(&str) -> bool) -> Self {
        Proposals {
            check: "",
            phase: Phase::State,
            selected,
            changes: Vec::new(),
            left: Vec::new(),
            notes: Vec::new(),
            left_seen: Default::default(),
        }
    }

    /// The engine: the planner of `check`, which declares `phase`, runs
    /// next.
    pub fn begin(&mut self, check: &'static str, phase: Phase) {
        self.check = check;
        self.phase = phase;
    }

    /// The check whose planner is running.
    pub fn check(&self) -> &'static str {
        self.check
    }

    /// Whether `--only`/`--skip` select check `id` (two checks sharing one
    /// repair run it once).
    pub fn selected(&self, id: &str) -> bool {
        (self.selected)(id)
    }

    pub fn push(&mut self, file: impl Into<String>, action: Action, safety: Safety, what: String) {
        self.changes.push(Change {
            file: file.into(),
            action,
            check: self.check,
            safety,
            what,
            declared: self.phase,
        });
    }

    /// [`Proposals::push`], in an earlier `phase` than the check declares
    /// (a change that moves events between indexes without renaming a
    /// file: contents put back into the files named for them).
    pub fn push_in(
        &mut self,
        phase: Phase,
        file: impl Into<String>,
        action: Action,
        safety: Safety,
        what: String,
    ) {
        self.push(file, action, safety, what);
        if let Some(c) = self.changes.last_mut() {
            c.declared = c.declared.min(phase);
        }
    }

    /// Set (or add) the value at `pointer` of `file`.
    pub fn set(
        &mut self,
        file: impl Into<String>,
        pointer: &str,
        value: Value,
        safety: Safety,
        what: String,
    ) {
        let action = Action::Patch {
            pointer: pointer.to_string(),
            op: Op::Set(value),
        };
        self.push(file, action, safety, what);
    }

    /// Drop the key at `pointer` of `file`.
    pub fn drop_key(
        &mut self,
        file: impl Into<String>,
        pointer: &str,
        safety: Safety,
        what: String,
    ) {
        let action = Action::Patch {
            pointer: pointer.to_string(),
            op: Op::Remove,
        };
        self.push(file, action, safety, what);
    }

    /// Set the `parent_id` of the event file `file` to `parent`.
    pub fn relink(&mut self, file: impl Into<String>, parent: &str, safety: Safety, what: String) {
        self.set(file, "/parent_id", Value::from(parent), safety, what);
    }

    pub fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// Leave a finding of this check on `file`, with the reason.
    pub fn leave(&mut self, file: impl Into<String>, why: impl Into<String>) {
        let (check, file) = (self.check, file.into());
        if !self.left_seen.insert((check, file.clone())) {
            return;
        }
        self.left.push(Leave {
            check,
            file,
            why: why.into(),
            reason: LeftReason::NoRepair,
        });
    }
}
