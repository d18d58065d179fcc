//! Fixes: turn findings into a plan of byte-level edits, prove the plan in
//! memory, then (only when asked) apply it safely.
//!
//! A plan is computed from disk without writing anything; `--dry-run` stops
//! there. Applying re-checks everything under the SDK's own lock (persist.rs).

pub mod false_root;
pub mod guess;
pub mod head_lag;
pub mod meta;
pub mod patch;
pub mod persist;
pub mod quarantine;
pub mod recovery_error;

use std::path::{Path, PathBuf};

use crate::checks::{self, Ctx, Finding, Severity};
use crate::report::{self, ConversationReport};
use crate::secrets::Redactor;
use crate::store::conversation::Overlay;
use crate::store::{Conversation, Index};
use crate::version::{Version, NEWEST};
use crate::view::Views;

/// One file's planned change.
#[derive(Debug, Clone)]
pub struct Edit {
    /// Path relative to the conversation folder.
    pub rel: String,
    pub before: Vec<u8>,
    pub after: Vec<u8>,
    /// Check ids this edit fixes.
    pub checks: Vec<&'static str>,
    /// What changes, in words.
    pub what: Vec<String>,
}

impl Edit {
    /// Whether this edit serves `check` on `file`.
    fn file_matches(&self, check: &str, file: &str) -> bool {
        self.rel == file && self.checks.contains(&check)
    }
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

/// Why a finding is left, as `repair --format json` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
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
    /// The conversation's repair was refused (`Plan::refused`).
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

/// A planned move of one file of `events/`: a rename inside `events/`
/// (renumbering; the bytes stay as they are, apart from a planned edit of
/// the same file), or a quarantine (the file leaves the conversation for the
/// run's backup).
#[derive(Debug, Clone)]
pub struct Move {
    /// Path relative to the conversation folder (the original name).
    pub rel: String,
    /// The new path (relative), or `None`: quarantined into the backup.
    pub to: Option<String>,
    /// The bytes read when planning (checked again under the locks).
    pub bytes: Vec<u8>,
    pub checks: Vec<&'static str>,
    pub what: String,
}

#[derive(Debug)]
pub struct Plan {
    pub dir: PathBuf,
    pub display: String,
    pub edits: Vec<Edit>,
    /// Renames and quarantines of event files (applied after the edits).
    pub moves: Vec<Move>,
    /// New event files (an AgentErrorEvent answering a tool call whose
    /// observation was quarantined), applied after the quarantines.
    pub creates: Vec<Create>,
    pub left: Vec<Left>,
    /// Set when nothing may be written to this conversation, with the reason.
    pub refused: Option<String>,
    /// Notes for the operator (kept secrets, available modes).
    pub notes: Vec<String>,
    pub before: ConversationReport,
    /// The diagnosis of the planned result (None when nothing changes).
    pub after: Option<ConversationReport>,
    pub redactor: Redactor,
    /// Files whose planned change is an unsafe repair although their check
    /// declares a safe one (a probable false root, with `--unsafe-fixes`).
    pub unsafe_made: Vec<String>,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.refused.is_none()
            && (!self.edits.is_empty() || !self.moves.is_empty() || !self.creates.is_empty())
    }

    /// Unsafe repairs left out because `--unsafe-fixes` was not given.
    pub fn unsafe_pending(&self) -> bool {
        self.left.iter().any(|l| l.needs_unsafe)
    }

    /// The final name of `rel` once the moves are made (`None`: quarantined).
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
    /// false roots.
    pub unsafe_fixes: bool,
}

impl RepairOptions<'_> {
    pub fn version(&self) -> Version {
        self.server_version.unwrap_or(NEWEST)
    }
}

/// A change to one JSON value.
pub enum Op {
    Set(serde_json::Value),
    Remove,
}

/// Builds up edits, merging several changes to one file.
pub struct Edits {
    dir: PathBuf,
    pub edits: Vec<Edit>,
    /// Event files to quarantine (positions in `conv.events.files`), with
    /// the check that asks and why.
    pub quarantine: Vec<(usize, &'static str, String)>,
    /// Close the index gap (the check that asks).
    pub close_gap: Option<&'static str>,
}

impl Edits {
    pub fn new(dir: &Path) -> Self {
        Edits {
            dir: dir.to_path_buf(),
            edits: Vec::new(),
            quarantine: Vec::new(),
            close_gap: None,
        }
    }

    /// Patch the value at `pointer` of `rel` (on top of the edits already
    /// planned for it) and record the change. The error says why not.
    pub fn patch(
        &mut self,
        rel: &str,
        pointer: &str,
        op: Op,
        check: &'static str,
        what: String,
    ) -> Result<(), String> {
        let (original, current) = match self.edits.iter().find(|e| e.rel == rel) {
            Some(e) => (e.before.clone(), e.after.clone()),
            None => {
                // O_NOFOLLOW|O_NONBLOCK, regular files only, bounded
                let (b, _) = crate::store::fsread::read_regular(&self.dir.join(rel))
                    .map_err(|e| format!("cannot read it again: {e}"))?;
                (b.clone(), b)
            }
        };
        let text = std::str::from_utf8(&current).map_err(|_| "it is not UTF-8".to_string())?;
        let after = match op {
            Op::Set(v) => patch::set(text, pointer, &v),
            Op::Remove => patch::remove(text, pointer),
        }
        .map_err(|e| format!("it cannot be patched safely: {e}"))?;
        match self.edits.iter_mut().find(|e| e.rel == rel) {
            Some(e) => {
                e.after = after.into_bytes();
                if !e.checks.contains(&check) {
                    e.checks.push(check);
                }
                e.what.push(what);
            }
            None => self.edits.push(Edit {
                rel: rel.to_string(),
                before: original,
                after: after.into_bytes(),
                checks: vec![check],
                what: vec![what],
            }),
        }
        Ok(())
    }

    /// The planned JSON value of `rel` (None if `rel` is untouched).
    pub fn planned(&self, rel: &str) -> Option<serde_json::Value> {
        let e = self.edits.iter().find(|e| e.rel == rel)?;
        serde_json::from_slice(&e.after).ok()
    }
}

/// Plan setting the `parent_id` of the event file `rel` to `parent`; a
/// file that cannot be patched safely is left, with the reason.
pub fn relink(
    edits: &mut Edits,
    plan: &mut Plan,
    check: &'static str,
    rel: String,
    parent: &str,
    what: String,
) {
    if let Err(why) = edits.patch(&rel, "/parent_id", Op::Set(parent.into()), check, what) {
        plan.leave(check, rel, why);
    }
}

impl Plan {
    /// Record a finding this plan does not fix, and why.
    pub fn leave(&mut self, check: &'static str, file: impl Into<String>, why: impl Into<String>) {
        self.left.push(Left {
            check,
            file: file.into(),
            why: why.into(),
            needs_unsafe: false,
            reason: LeftReason::NoRepair,
        });
    }

    /// Record that the change planned for `file` is an unsafe repair (made
    /// with `--unsafe-fixes`) although its check declares a safe one.
    pub fn made_unsafe(&mut self, file: impl Into<String>) {
        self.unsafe_made.push(file.into());
    }

    /// Record an unsafe repair that `--unsafe-fixes` would make.
    pub fn leave_unsafe(
        &mut self,
        check: &'static str,
        file: impl Into<String>,
        would: impl Into<String>,
    ) {
        let file = file.into();
        if self.left.iter().any(|l| l.check == check && l.file == file) {
            return; // two checks share a planner (unreadable-event, unknown-kind)
        }
        self.left.push(Left {
            check,
            file,
            why: format!("with --unsafe-fixes: {}", would.into()),
            needs_unsafe: true,
            reason: LeftReason::UnsafeNotRequested,
        });
    }
}

fn diagnose_with(
    dir: &Path,
    display: &str,
    version: Version,
    overlay: &Overlay,
) -> ConversationReport {
    let all = |_: &str| true;
    let opts = report::Options {
        version,
        version_given: false,
        selected: &all,
        event_list: false,
    };
    report::analyze_with(dir, display.to_string(), &opts, overlay)
}

/// Plan the repair of one conversation. Writes nothing.
pub fn plan(dir: &Path, display: String, opts: &RepairOptions) -> Plan {
    let version = opts.version();
    let stamp_before = crate::store::conversation::stamp(dir);
    let conv = Conversation::load(dir, version);
    let index = Index::build(&conv.events);
    let views = Views::compute(&conv, &index, version);
    let mut ctx = Ctx::new(&conv, &index, &views, version);
    ctx.version_given = opts.server_version.is_some();
    // One read of the folder serves both the plan and the "before" report.
    let all = |_: &str| true;
    let report_opts = report::Options {
        version,
        version_given: opts.server_version.is_some(),
        selected: &all,
        event_list: false,
    };
    let before = report::analyze_ctx(&ctx, display.clone(), &report_opts);
    let mut plan = Plan {
        dir: dir.to_path_buf(),
        display,
        edits: Vec::new(),
        moves: Vec::new(),
        creates: Vec::new(),
        left: Vec::new(),
        refused: None,
        notes: Vec::new(),
        redactor: before.redactor.clone(),
        before,
        after: None,
        unsafe_made: Vec::new(),
    };
    if let checks::live_lease::Lease::Live { owner, .. } = checks::live_lease::lease_state(&ctx) {
        plan.refused = Some(format!(
            "in use by {} (owner_lease.json is live); stop the server or wait for the lease to expire",
            ctx.quote(&owner)
        ));
        plan.left = unfixed(&plan, opts.selected);
        return plan;
    }
    if conv.journal.exists() {
        plan.refused = Some(
            "a convo-doctor repair run stopped half-way through this conversation (see `interrupted-repair`): undo that run first, then repair again".into(),
        );
        plan.left = unfixed(&plan, opts.selected);
        return plan;
    }
    if conv.changed_during_read {
        plan.refused = Some(
            "the conversation is being written (another process holds events/.eventlog.lock, or files changed while they were read); run again when it is idle".into(),
        );
        plan.left = unfixed(&plan, opts.selected);
        return plan;
    }
    let mut edits = Edits::new(dir);
    // Each check declares its repair (checks::Repair); dispatch from that.
    for check in checks::REGISTRY {
        if let Some(planner) = check.repair().planner {
            if (opts.selected)(check.id()) {
                planner(&ctx, opts, &mut edits, &mut plan);
            }
        }
    }
    // Quarantines and gap closing become one renumbering of events/.
    quarantine::finish(&ctx, &mut edits, &mut plan);
    plan.edits = edits.edits;
    if plan.has_changes() {
        persist::pause_point("before-proof");
        verify_in_memory(&mut plan, version);
        // The proof read the folder again: if it saw a writer, or the folder
        // is no longer what the plan was made from, the proof is about a
        // moment that never existed as a whole.
        let moved = crate::store::conversation::stamp(dir) != stamp_before;
        let flagged = plan
            .after
            .as_ref()
            .is_some_and(|a| a.findings.iter().any(|f| f.check == "changed-during-read"));
        if moved || flagged {
            plan.refused = Some(
                "the conversation changed while the repair was being proven (a writer is active); nothing was changed; run again when it is idle".into(),
            );
        }
    }
    plan.left.extend(unfixed(&plan, opts.selected));
    plan
}

/// The planned result as an overlay: each edited file's new bytes under its
/// final name, every moved file gone from its old name.
fn overlay(plan: &Plan) -> Overlay {
    let mut o = Overlay::new();
    for m in &plan.moves {
        o.gone.insert(m.rel.clone());
        if let Some(to) = &m.to {
            o.files.insert(to.clone(), m.bytes.clone());
        }
    }
    for e in &plan.edits {
        if let Some(to) = plan.renamed(&e.rel) {
            o.files.insert(to, e.after.clone());
        }
    }
    for c in &plan.creates {
        o.files.insert(c.rel.clone(), c.bytes.clone());
    }
    o
}

/// Diagnose the planned result in memory: refuse the whole plan if it would
/// introduce an error, or if a finding it claims to fix is still there, or
/// if a view shrinks by more than the events it quarantines.
fn verify_in_memory(plan: &mut Plan, version: Version) {
    let overlay = overlay(plan);
    let after = diagnose_with(&plan.dir, &plan.display, version, &overlay);
    // Findings of the result name files by their new names: compare them
    // with the findings before under the original names.
    let original = |file: &str| -> String {
        plan.moves
            .iter()
            .find(|m| m.to.as_deref() == Some(file))
            .map(|m| m.rel.clone())
            .unwrap_or_else(|| file.to_string())
    };
    let after_orig: Vec<(&'static str, String, Severity, String)> = after
        .findings
        .iter()
        .map(|f| (f.check, original(&f.file), f.severity, f.message.clone()))
        .collect();
    for (check, file, sev, message) in &after_orig {
        let new_error = *sev == Severity::Error
            && !plan
                .before
                .findings
                .iter()
                .any(|b| b.check == *check && &b.file == file && b.severity == Severity::Error);
        if new_error {
            plan.refused = Some(format!(
                "the repair would introduce a new error ({check}: {message}); nothing was changed"
            ));
        }
    }
    // Each edit must clear findings of the checks it serves on its file,
    // and leave none that were not there before (some, like differing
    // secret names, are left to a human on purpose). A re-link made for a
    // quarantine serves a file that had no finding: it must just add none.
    // (Messages name indices, which renumbering changes: with moves, only
    // the counts are compared.)
    let renumbered = !plan.moves.is_empty();
    for e in &plan.edits {
        for &c in &e.checks {
            let was: Vec<String> = plan
                .before
                .findings
                .iter()
                .filter(|f| f.check == c && f.file == e.rel)
                .map(|f| f.message.clone())
                .collect();
            let now: Vec<String> = after_orig
                .iter()
                .filter(|(check, file, _, _)| *check == c && *file == e.rel)
                .map(|(_, _, _, m)| m.clone())
                .collect();
            let cleared = was.is_empty() || now.len() < was.len();
            let added = if renumbered {
                now.len() > was.len()
            } else {
                now.iter().any(|m| !was.contains(m))
            };
            if !cleared || added {
                plan.refused = Some(format!(
                    "the planned change to {} does not clear `{c}`; nothing was changed",
                    e.rel
                ));
            }
        }
    }
    // A quarantined file must leave no finding behind under its name.
    for m in plan.moves.iter().filter(|m| m.to.is_none()) {
        if after_orig.iter().any(|(_, file, _, _)| *file == m.rel) {
            plan.refused = Some(format!(
                "{} would still be reported after its quarantine; nothing was changed",
                m.rel
            ));
        }
    }
    // No view may shrink, except by exactly the quarantined events that
    // were in it.
    let allowed = plan
        .moves
        .iter()
        .filter(|m| m.to.is_none())
        .filter_map(|m| m.rel.strip_prefix("events/"))
        .filter(|n| crate::store::event::parse_event_name(n, true).is_some())
        .count();
    if let (Some(b), Some(a)) = (plan.before.events.agent_view, after.events.agent_view) {
        if a + allowed < b {
            plan.refused = Some(format!(
                "the repair would shrink the agent's view from {b} to {a} events; nothing was changed"
            ));
        }
    }
    let (b, a) = (plan.before.events.ui_view, after.events.ui_view);
    if a + allowed < b {
        plan.refused = Some(format!(
            "the repair would shrink the UI's view from {b} to {a} events; nothing was changed"
        ));
    }
    for e in &plan.edits {
        if let Ok(v) = serde_json::from_slice(&e.after) {
            plan.redactor.learn(&v);
        }
    }
    plan.after = Some(after);
}

/// Findings at warning or above that the plan leaves, with the reason.
fn unfixed(plan: &Plan, selected: &dyn Fn(&str) -> bool) -> Vec<Left> {
    let already: Vec<(&str, &str)> = plan
        .left
        .iter()
        .map(|l| (l.check, l.file.as_str()))
        .collect();
    plan.remaining()
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .filter(|f| !already.contains(&(f.check, f.file.as_str())))
        .map(|f| {
            let declared = checks::find(f.check).map(|c| c.repair());
            // A finding the refused plan would have fixed points at the
            // refusal above; any other has no automatic repair here.
            let (reason, why) = if plan.refused.is_some()
                && (f.fixable || plan.edits.iter().any(|e| e.file_matches(f.check, &f.file)))
            {
                (
                    LeftReason::Refused,
                    "its repair was refused (see above)".to_string(),
                )
            } else if declared.is_some_and(|r| r.planner.is_some()) && !selected(f.check) {
                (
                    LeftReason::NotSelected,
                    format!("not repaired: `{}` is not selected by --only", f.check),
                )
            } else {
                let manual =
                    declared.is_none_or(|r| r.applicability == checks::Applicability::Manual);
                (
                    if manual {
                        LeftReason::Manual
                    } else {
                        LeftReason::NoRepair
                    },
                    format!(
                        "no safe automatic repair; needs a human (see `convo-doctor explain {}`)",
                        f.check
                    ),
                )
            };
            Left {
                needs_unsafe: false,
                check: f.check,
                file: f.file.clone(),
                why,
                reason,
            }
        })
        .collect()
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
