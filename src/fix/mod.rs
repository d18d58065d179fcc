//! Fixes: turn findings into a plan of byte-level edits, prove the plan in
//! memory, then (only when asked) apply it safely.
//!
//! A plan is computed from disk without writing anything; `--dry-run` stops
//! there. Applying re-checks everything under the SDK's own lock (persist.rs).

pub mod false_root;
pub mod head_lag;
pub mod meta;
pub mod patch;
pub mod persist;
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
}

#[derive(Debug)]
pub struct Plan {
    pub dir: PathBuf,
    pub display: String,
    pub edits: Vec<Edit>,
    pub left: Vec<Left>,
    /// Set when nothing may be written to this conversation, with the reason.
    pub refused: Option<String>,
    /// Notes for the operator (kept secrets, available modes).
    pub notes: Vec<String>,
    pub before: ConversationReport,
    /// The diagnosis of the planned result (None when nothing changes).
    pub after: Option<ConversationReport>,
    pub redactor: Redactor,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.refused.is_none() && !self.edits.is_empty()
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
    /// Repair false roots that are only probable (needs `--only false-root`).
    pub accept_ambiguous: bool,
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
}

impl Edits {
    pub fn new(dir: &Path) -> Self {
        Edits {
            dir: dir.to_path_buf(),
            edits: Vec::new(),
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
                let b = std::fs::read(self.dir.join(rel))
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
        selected: &all,
        event_list: false,
    };
    report::analyze_with(dir, display.to_string(), &opts, overlay)
}

/// Plan the repair of one conversation. Writes nothing.
pub fn plan(dir: &Path, display: String, opts: &RepairOptions) -> Plan {
    let version = opts.version();
    let conv = Conversation::load(dir, version);
    let index = Index::build(&conv.events);
    let views = Views::compute(&conv, &index, version);
    let ctx = Ctx::new(&conv, &index, &views, version);
    // One read of the folder serves both the plan and the "before" report.
    let all = |_: &str| true;
    let report_opts = report::Options {
        version,
        selected: &all,
        event_list: false,
    };
    let before = report::analyze_loaded(&conv, display.clone(), &report_opts);
    let mut plan = Plan {
        dir: dir.to_path_buf(),
        display,
        edits: Vec::new(),
        left: Vec::new(),
        refused: None,
        notes: Vec::new(),
        redactor: before.redactor.clone(),
        before,
        after: None,
    };
    if let checks::live_lease::Lease::Live { owner, .. } = checks::live_lease::lease_state(&ctx) {
        plan.refused = Some(format!(
            "in use by {} (owner_lease.json is live); stop the server or wait for the lease to expire",
            ctx.quote(&owner)
        ));
        plan.left = unfixed(&plan);
        return plan;
    }
    if conv.changed_during_read {
        plan.refused = Some(
            "the conversation is being written (another process holds events/.eventlog.lock, or files changed while they were read); run again when it is idle".into(),
        );
        plan.left = unfixed(&plan);
        return plan;
    }
    let mut edits = Edits::new(dir);
    if (opts.selected)("false-root") {
        false_root::plan(&ctx, opts, &mut edits, &mut plan);
    }
    if (opts.selected)("head-lag") {
        head_lag::plan(&ctx, &mut edits, &mut plan);
    }
    if (opts.selected)("misparented-recovery-error") {
        recovery_error::plan(&ctx, &mut edits, &mut plan);
    }
    if (opts.selected)("meta-divergence") || (opts.selected)("meta-duplicate") {
        meta::plan(&ctx, opts, &mut edits, &mut plan);
    }
    plan.edits = edits.edits;
    if !plan.edits.is_empty() {
        verify_in_memory(&mut plan, version);
    }
    plan.left.extend(unfixed(&plan));
    plan
}

/// Diagnose the planned result in memory: refuse the whole plan if it would
/// introduce an error, or if a finding it claims to fix is still there.
fn verify_in_memory(plan: &mut Plan, version: Version) {
    let overlay: Overlay = plan
        .edits
        .iter()
        .map(|e| (e.rel.clone(), e.after.clone()))
        .collect();
    let after = diagnose_with(&plan.dir, &plan.display, version, &overlay);
    for f in &after.findings {
        let new_error =
            f.severity == Severity::Error
                && !plan.before.findings.iter().any(|b| {
                    b.check == f.check && b.file == f.file && b.severity == Severity::Error
                });
        if new_error {
            plan.refused = Some(format!(
                "the repair would introduce a new error ({}: {}); nothing was changed",
                f.check, f.message
            ));
        }
    }
    // Each edit must clear findings of the checks it serves on its file,
    // and leave none that were not there before (some, like differing
    // secret names, are left to a human on purpose).
    for e in &plan.edits {
        for &c in &e.checks {
            let of = |r: &ConversationReport| -> Vec<String> {
                r.findings
                    .iter()
                    .filter(|f| f.check == c && f.file == e.rel)
                    .map(|f| f.message.clone())
                    .collect()
            };
            let (was, now) = (of(&plan.before), of(&after));
            if now.len() >= was.len() || now.iter().any(|m| !was.contains(m)) {
                plan.refused = Some(format!(
                    "the planned change to {} does not clear `{c}`; nothing was changed",
                    e.rel
                ));
            }
        }
    }
    if let (Some(b), Some(a)) = (plan.before.events.agent_view, after.events.agent_view) {
        if a < b {
            plan.refused = Some(format!(
                "the repair would shrink the agent's view from {b} to {a} events; nothing was changed"
            ));
        }
    }
    for e in &plan.edits {
        if let Ok(v) = serde_json::from_slice(&e.after) {
            plan.redactor.learn(&v);
        }
    }
    plan.after = Some(after);
}

/// Findings at warning or above that the plan leaves, with the reason.
fn unfixed(plan: &Plan) -> Vec<Left> {
    let already: Vec<(&str, &str)> = plan
        .left
        .iter()
        .map(|l| (l.check, l.file.as_str()))
        .collect();
    plan.remaining()
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .filter(|f| !already.contains(&(f.check, f.file.as_str())))
        .map(|f| Left {
            check: f.check,
            file: f.file.clone(),
            // A finding the refused plan would have fixed points at the
            // refusal above; any other simply has no automatic repair.
            why: if plan.refused.is_some()
                && (f.fixable || plan.edits.iter().any(|e| e.file_matches(f.check, &f.file)))
            {
                "its repair was refused (see above)".to_string()
            } else {
                format!(
                    "no safe automatic repair; needs a human (see `convo-doctor explain {}`)",
                    f.check
                )
            },
        })
        .collect()
}
