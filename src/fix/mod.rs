//! Fixes: the engine that turns the checks' proposals into one proven
//! change of a conversation folder, and (only when asked) makes it.
//!
//! Each check declares its repair and plans it in its own file
//! (`checks::Repair`: its planner, speaking `crate::edit`, and the phase its
//! changes run in), and whether its state blocks every repair
//! (`checks::Check::gate`); this module owns what no single check can, and
//! names none: asking the gates, applying one pass's proposals to an
//! in-memory overlay by phase, analysing the result and planning again
//! until nothing more is proposed (`engine`), proving the final state
//! against the original, writing the whole run as one change from the
//! original folder to the final one (`persist`), and undoing it.

mod engine;
pub mod patch;
pub mod persist;
mod state;

use std::collections::HashMap;
use std::path::PathBuf;

use crate::checks::{self, Finding};
pub use crate::edit::{LeftReason, Op, Refusal, Refused};
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
    /// Set when nothing may be written to this conversation: the kind of
    /// reason, and the reason.
    pub refused: Option<Refused>,
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

    /// The findings before the repair that its result no longer has
    /// (compared by check and file, a renamed file under its original name,
    /// as many times as each occurs), each with whether one of the plan's
    /// changes serves its check (`true`: fixed) or it was cleared as a side
    /// effect of the others (`false`). Empty when nothing changes. `repair`
    /// counts fixes from it and `diagnose`'s fixable marks come from it
    /// ([`fixable`]): one computation for both.
    pub fn cleared(&self) -> Vec<(&Finding, bool)> {
        let Some(after) = self.after.as_ref().filter(|_| self.has_changes()) else {
            return Vec::new();
        };
        let served: std::collections::BTreeSet<&str> = self
            .edits
            .iter()
            .flat_map(|e| e.checks.iter())
            .chain(self.moves.iter().flat_map(|m| m.checks.iter()))
            .chain(self.creates.iter().flat_map(|c| c.checks.iter()))
            .copied()
            .collect();
        let renamed_from: std::collections::HashMap<&str, &str> = self
            .moves
            .iter()
            .rev() // the first move to a name wins, as a search from the start finds it
            .filter_map(|m| Some((m.to.as_deref()?, m.rel.as_str())))
            .collect();
        let original =
            |file: &str| -> String { renamed_from.get(file).unwrap_or(&file).to_string() };
        let mut still: std::collections::HashMap<(&str, String), usize> = Default::default();
        for f in &after.findings {
            *still.entry((f.check, original(&f.file))).or_default() += 1;
        }
        self.before
            .findings
            .iter()
            .filter(|f| match still.get_mut(&(f.check, f.file.clone())) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .map(|f| (f, served.contains(f.check)))
            .collect()
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

/// docs/repair.md's tables, generated from the checks' declarations
/// (where they are made, with `repair --help`'s list).
pub use crate::checks::repairs::repair_markdown;

/// Event bytes above which [`fixable`] plans a folder once (safe), not
/// twice: an unsafe plan can cost many times a safe one (a million unknown
/// keys dropped one by one), and `diagnose` must not hang on one folder.
pub const UNSAFE_PLAN_MAX_BYTES: u64 = 8 << 20;

/// The bytes of the event files of the folder (0 when it cannot be listed).
fn event_bytes(dir: &crate::store::fsread::DirFd) -> u64 {
    let Ok(names) = dir.list("events") else {
        return 0;
    };
    names
        .iter()
        .filter(|(n, _)| n.starts_with("event-"))
        .filter_map(|(n, _)| dir.lstat(&format!("events/{n}")).ok())
        .map(|m| m.len)
        .sum()
}

/// What `repair` would clear of one conversation's findings, as its
/// planner decides: the findings a `repair` clears (`safe`), and those only
/// `repair --unsafe-fixes` clears besides (`unsafe_more`), each as (check,
/// file) once per finding. Plans (reads the folder again, writes nothing);
/// the unsafe plan only when the safe one leaves a finding some repair
/// could address, and the folder holds at most [`UNSAFE_PLAN_MAX_BYTES`]
/// of events (above, the findings the safe plan leaves to `--unsafe-fixes`
/// are those).
#[derive(Debug, Default)]
pub struct Fixable {
    pub safe: Vec<(&'static str, String)>,
    pub unsafe_more: Vec<(&'static str, String)>,
}

pub fn fixable(
    dir: &crate::store::fsread::DirFd,
    display: &str,
    server_version: Option<Version>,
    selected: &dyn Fn(&str) -> bool,
) -> Fixable {
    let key = |f: &Finding| (f.check, f.file.clone());
    let plan_with = |unsafe_fixes| {
        plan(
            dir,
            display.to_string(),
            &RepairOptions {
                server_version,
                selected,
                unsafe_fixes,
            },
        )
    };
    let safe = plan_with(false);
    let cleared: Vec<_> = safe.cleared().into_iter().map(|(f, _)| key(f)).collect();
    // (check, file) -> how many of its findings: multisets, so a folder of
    // 100,000 findings is marked in one pass, not one search per finding
    let mut rest: HashMap<(&'static str, String), usize> = HashMap::new();
    for k in &cleared {
        *rest.entry(k.clone()).or_default() += 1;
    }
    let more_possible = safe.unsafe_pending()
        || (safe.refused.is_none() && selected_repairable(safe.remaining(), selected));
    let mut unsafe_more = Vec::new();
    if more_possible && event_bytes(dir) > UNSAFE_PLAN_MAX_BYTES {
        // a second plan of a big folder may cost minutes: what the safe
        // plan leaves for --unsafe-fixes stands for it
        let mut by_key: HashMap<(&'static str, &str), usize> = HashMap::new();
        for f in &safe.before.findings {
            *by_key.entry((f.check, f.file.as_str())).or_default() += 1;
        }
        let mut told = std::collections::HashSet::new();
        for l in safe.left.iter().filter(|l| l.needs_unsafe) {
            if !told.insert((l.check, l.file.as_str())) {
                continue;
            }
            let n = by_key
                .get(&(l.check, l.file.as_str()))
                .copied()
                .unwrap_or(0);
            unsafe_more.extend(std::iter::repeat_n((l.check, l.file.clone()), n));
        }
    } else if more_possible {
        for k in plan_with(true).cleared().into_iter().map(|(f, _)| key(f)) {
            match rest.get_mut(&k) {
                Some(n) if *n > 0 => *n -= 1,
                _ => unsafe_more.push(k),
            }
        }
    }
    Fixable {
        safe: cleared,
        unsafe_more,
    }
}

impl Fixable {
    /// Mark `findings` (a report of the same folder) with it: `fixable` on
    /// each that `repair` clears, `fixable_unsafe` on each that only
    /// `repair --unsafe-fixes` clears (as many of each (check, file) as
    /// the plans clear).
    pub fn mark(&self, findings: &mut [Finding]) {
        let count = |v: &[(&'static str, String)]| {
            let mut m: HashMap<(&'static str, String), usize> = HashMap::new();
            for k in v {
                *m.entry(k.clone()).or_default() += 1;
            }
            m
        };
        let (mut safe, mut more) = (count(&self.safe), count(&self.unsafe_more));
        let take = |from: &mut HashMap<(&'static str, String), usize>, f: &Finding| match from
            .get_mut(&(f.check, f.file.clone()))
        {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        for f in findings {
            f.fixable = take(&mut safe, f);
            f.fixable_unsafe = !f.fixable && take(&mut more, f);
        }
    }
}

/// Whether any of `findings` is of a selected check whose repair has a
/// planner: otherwise no plan can clear anything, and none is made.
pub fn selected_repairable(findings: &[Finding], selected: &dyn Fn(&str) -> bool) -> bool {
    findings.iter().any(|f| {
        selected(f.check) && checks::find(f.check).is_some_and(|c| c.repair().planner.is_some())
    })
}
