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

/// One proposed change: the file as it is named in the state the planner
/// saw, what happens to it, the check that asks, how safe, and in words.
#[derive(Clone, Debug)]
pub struct Change {
    pub file: String,
    pub action: Action,
    pub check: &'static str,
    pub safety: Safety,
    pub what: String,
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
            selected,
            changes: Vec::new(),
            left: Vec::new(),
            notes: Vec::new(),
            left_seen: Default::default(),
        }
    }

    /// The engine: the planner of `check` runs next.
    pub fn begin(&mut self, check: &'static str) {
        self.check = check;
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
        });
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
