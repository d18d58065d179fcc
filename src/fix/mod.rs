//! Fixes: the engine that turns the checks' proposals into one proven
//! change of a conversation folder, and (only when asked) makes it.
//!
//! Each check declares its repair and plans it in its own file
//! (`checks::Repair::planner`, speaking `crate::edit`); this module owns
//! what no single check can: applying one pass's proposals to an in-memory
//! overlay, analysing the result and planning again until nothing more is
//! proposed (`engine`), proving the final state against the original,
//! writing the whole run as one change from the original folder to the
//! final one (`persist`), and undoing it.

mod engine;
pub mod patch;
pub mod persist;
mod state;

use std::path::PathBuf;

use crate::checks::{self, Finding};
pub use crate::edit::{LeftReason, Op};
use crate::report::ConversationReport;
use crate::secrets::Redactor;
use crate::version::{Version, NEWEST};

pub use engine::plan;

/// One original file's change of content (it may also be renamed: see
/// [`Move`]).
#[derive(Debug, Clone)]
pub struct Edit {
    /// Path relative to the conversation folder (the original name).
    pub rel: String,
    pub before: Vec<u8>,
    /// The final bytes.
    pub after: Vec<u8>,
    /// Check ids whose repairs changed it.
    pub checks: Vec<&'static str>,
    /// What changed, in words (one line per change, in the order made).
    pub what: Vec<String>,
}

/// A finding the plan does not fix, and why.
#[derive(Debug, Clone)]
pub struct Left {
    pub check: &'static str,
    pub file: String,
    pub why: String,
    /// An unsafe repair exists and `--unsafe-fixes` would make it.
    pub needs_unsafe: bool,
    pub reason: LeftReason,
}

/// A new file: path relative to the conversation folder, its bytes, the
/// file whose owner, group and mode it takes, and what it is.
#[derive(Debug, Clone)]
pub struct Create {
    pub rel: String,
    pub bytes: Vec<u8>,
    pub like: String,
    pub checks: Vec<&'static str>,
    pub what: String,
}

/// An original file that ends the run under another name (`to`), or out of
/// the conversation (`None`: moved into the run's backup).
#[derive(Debug, Clone)]
pub struct Move {
    /// Path relative to the conversation folder (the original name).
    pub rel: String,
    /// The final path (relative), or `None`: taken out into the backup.
    pub to: Option<String>,
    /// The sha256 of the original bytes (checked again under the locks), for
    /// a file taken out; empty for a rename.
    pub sha256: String,
    /// For a rename: the size and modification time the proof's read saw
    /// (checked again under the locks; its bytes are hashed then).
    pub seen: Option<(u64, Option<std::time::SystemTime>)>,
    /// The original bytes, for a file taken out (its backup copy is its
    /// only copy); `None` for a rename (undo renames it back).
    pub bytes: Option<Vec<u8>>,
    pub checks: Vec<&'static str>,
    pub what: String,
}

/// Why nothing may be written to a conversation, by kind (the human
/// summary counts refused conversations by it; `Plan::refused` says the
/// rest in words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
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

#[derive(Debug)]
pub struct Plan {
    pub dir: PathBuf,
    /// The conversation folder as it was opened, held: the plan was read
    /// and proven through it, and `persist::apply` writes through it.
    pub root: crate::store::fsread::DirFd,
    pub display: String,
    pub edits: Vec<Edit>,
    /// Renames and removals of original files (applied after the edits).
    pub moves: Vec<Move>,
    /// New files, applied after the moves.
    pub creates: Vec<Create>,
    pub left: Vec<Left>,
    /// Set when nothing may be written to this conversation, with the reason.
    pub refused: Option<String>,
    /// The kind of that reason.
    pub refusal: Option<Refusal>,
    /// Notes for the operator (kept secrets, available modes, the passes).
    pub notes: Vec<String>,
    pub before: ConversationReport,
    /// The diagnosis of the planned result (None when nothing changes).
    pub after: Option<ConversationReport>,
    pub redactor: Redactor,
    /// Files whose planned change is an unsafe repair although their check
    /// declares a safe one (a probable false root, with `--unsafe-fixes`),
    /// sorted.
    pub unsafe_made: Vec<String>,
    /// How many passes changed something (0: nothing to do).
    pub passes: usize,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.refused.is_none()
            && (!self.edits.is_empty() || !self.moves.is_empty() || !self.creates.is_empty())
    }

    /// How many files of the conversation the plan changes: each original
    /// file once (edited, renamed, or both, or taken out), and each new
    /// file; as many as the run's manifest holds for the conversation and
    /// `undo --list` counts (the SDK lock file a run creates to take it is
    /// not a file of the conversation, and counted by neither).
    pub fn changed_files(&self) -> usize {
        let mut originals: Vec<&str> = self
            .edits
            .iter()
            .map(|e| e.rel.as_str())
            .chain(self.moves.iter().map(|m| m.rel.as_str()))
            .collect();
        originals.sort_unstable();
        originals.dedup();
        originals.len() + self.creates.len()
    }

    /// Unsafe repairs left out because `--unsafe-fixes` was not given.
    pub fn unsafe_pending(&self) -> bool {
        self.left.iter().any(|l| l.needs_unsafe)
    }

    /// The final name of `rel` once the moves are made (`None`: taken out).
    pub fn renamed(&self, rel: &str) -> Option<String> {
        match self.moves.iter().find(|m| m.rel == rel) {
            Some(m) => m.to.clone(),
            None => Some(rel.to_string()),
        }
    }

    /// Findings that remain once the plan is applied (or now, if refused).
    pub fn remaining(&self) -> &[Finding] {
        match (&self.refused, &self.after) {
            (None, Some(a)) => &a.findings,
            _ => &self.before.findings,
        }
    }
}

pub struct RepairOptions<'a> {
    /// The declared server version; `None` means "not declared" (rules of the
    /// newest release, and the mode that is safe for every server).
    pub server_version: Option<Version>,
    pub selected: &'a dyn Fn(&str) -> bool,
    /// Consent to unsafe repairs (`--unsafe-fixes`): quarantines, probable
    /// false roots, guesses.
    pub unsafe_fixes: bool,
}

impl RepairOptions<'_> {
    pub fn version(&self) -> Version {
        self.server_version.unwrap_or(NEWEST)
    }
}

/// Wrap `text` at `width` columns, every line after the first indented by
/// `indent` spaces.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for word in text.split_whitespace() {
        if col > indent && col + 1 + word.len() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out
}

/// The repairs as `repair --help` lists them, generated from each check's
/// declared [`checks::Repair`], followed by `tail`.
pub fn help_text(tail: &str) -> String {
    let mut out = String::from("Repairs (safe: always; unsafe: with --unsafe-fixes):\n");
    for want in [checks::Applicability::Safe, checks::Applicability::Unsafe] {
        for c in checks::REGISTRY {
            let r = c.repair();
            if r.applicability == want {
                let line = format!("  {:<7}{}: {}", want.as_str(), c.id(), r.what);
                out.push_str(&wrap(&line, 79, 9));
                out.push('\n');
            }
        }
    }
    let manual: Vec<&str> = checks::REGISTRY
        .iter()
        .filter(|c| c.repair().applicability == checks::Applicability::Manual)
        .map(|c| c.id())
        .collect();
    let line = format!(
        "  manual {} (`convo-doctor explain ID` says why)",
        manual.join(", ")
    );
    out.push_str(&wrap(&line, 79, 9));
    out.push_str("\n\n");
    out.push_str(tail);
    out
}

/// The repair tables of docs/repair.md, generated from each check's
/// declared [`checks::Repair`] (tests/docs.rs fails when they drift).
pub fn repair_markdown() -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "| check | applicability | repair | guards (all must hold) |\n|---|---|---|---|\n",
    );
    for want in [checks::Applicability::Safe, checks::Applicability::Unsafe] {
        for c in checks::REGISTRY {
            let r = c.repair();
            if r.applicability == want {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    c.id(),
                    want.as_str(),
                    esc(r.what),
                    esc(r.guards)
                ));
            }
        }
    }
    out.push_str("\nNo automatic repair (manual):\n\n| check | why |\n|---|---|\n");
    for c in checks::REGISTRY {
        let r = c.repair();
        if r.applicability == checks::Applicability::Manual {
            out.push_str(&format!("| `{}` | {} |\n", c.id(), esc(r.what)));
        }
    }
    out
}
