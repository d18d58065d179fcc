//! Repair to a fixpoint: plan on the folder, apply the plan to an in-memory
//! overlay, analyse the result and plan again, until no planner proposes a
//! change it may make (as `ruff --fix` re-lints, and e2fsck's passes each
//! see what the one before left). Guards are evaluated on the state of the
//! current pass, so "close the gap first" and "decide the duplicate first"
//! resolve within one run.
//!
//! Each pass must clear the findings its changes claim; the final state is
//! proven once against the original folder: no new error, no event of the
//! agent's branch lost (but those taken out), no view shrinking beyond
//! what was taken out, every placeholder readable. A check whose repair
//! fails a proof is held back and the run starts again without it; what is
//! then left says why.

use std::collections::{BTreeMap, HashSet};

use super::state::{Touch, Virtual};
use super::{Left, LeftReason, Plan, Refusal, RepairOptions};
use crate::analysis::Analysis;
use crate::checks::{self, Applicability, Finding, Severity};
use crate::edit::{Change, Leave, Proposals, Safety};
use crate::report::{self, ConversationReport};
use crate::store::conversation::{stamp_at, Overlay, RecordCache};
use crate::store::fsread::DirFd;
use crate::version::Version;

/// Passes after which the engine stops and says so (a fixpoint is normally
/// reached in one to three).
pub const MAX_PASSES: usize = 8;
/// Fresh starts, each with one more check's repair held back.
const MAX_RESTARTS: usize = 6;

/// What one pass saw and proposed.
struct Pass {
    report: ConversationReport,
    /// Ids on the agent's branch, when the conversation loads.
    branch: Option<Vec<String>>,
    /// Current names of the log's events the SDK cannot read.
    unreadable: HashSet<String>,
    changes: Vec<Change>,
    left: Vec<Leave>,
    notes: Vec<String>,
}

struct Setup<'a> {
    dir: &'a DirFd,
    /// The first read's parsed event files: later passes re-read only what
    /// they changed.
    cache: RecordCache,
    display: &'a str,
    opts: &'a RepairOptions<'a>,
    version: Version,
    given: bool,
}

fn run_pass(a: &Analysis, s: &Setup, blocked: &BTreeMap<&'static str, String>) -> Pass {
    let ctx = a.ctx(s.given);
    let all = |_: &str| true;
    let report_opts = report::Options {
        version: s.version,
        version_given: s.given,
        selected: &all,
        event_list: false,
    };
    let report = report::analyze_ctx(&ctx, s.display.to_string(), &report_opts);
    let branch = ctx.views.agent.as_ref().ok().map(|b| {
        b.iter()
            .map(|&i| ctx.reader.id(i).to_string())
            .collect::<Vec<_>>()
    });
    let unreadable = (0..ctx.reader.len())
        .filter(|&i| ctx.reader.read(i).is_err())
        .map(|i| ctx.event_path(i))
        .collect();
    let mut p = Proposals::new(s.opts.selected);
    for check in checks::REGISTRY {
        let Some(planner) = check.repair().planner else {
            continue;
        };
        if (s.opts.selected)(check.id()) && !blocked.contains_key(check.id()) {
            p.begin(check.id());
            planner(&ctx, &mut p);
        }
    }
    Pass {
        report,
        branch,
        unreadable,
        changes: p.changes,
        left: p.left,
        notes: p.notes,
    }
}

/// A fixpoint reached (or the pass bound hit).
struct Reached {
    v: Virtual,
    /// The last pass, when any change was made (else the first pass is the
    /// last).
    last: Option<Pass>,
    passes: usize,
    bound_hit: bool,
}

impl Reached {
    fn last<'a>(&'a self, first: &'a Pass) -> &'a Pass {
        self.last.as_ref().unwrap_or(first)
    }
}

/// A check whose repair failed a proof, and why.
struct Offence {
    checks: Vec<&'static str>,
    why: String,
}

/// Whether a change renames, adds or takes out an event file of the log.
fn moves_the_index(c: &Change) -> bool {
    use crate::edit::Action;
    let event = |rel: &str| rel.starts_with("events/event-");
    match &c.action {
        Action::Rename(to) => event(&c.file) || event(to),
        Action::Remove | Action::Create { .. } => event(&c.file),
        Action::Patch { .. } | Action::Replace(_) => false,
    }
}

fn may_take(c: &Change, opts: &RepairOptions) -> bool {
    c.safety == Safety::Safe || opts.unsafe_fixes
}

/// How many findings of a report each check has on each file, the file
/// mapped to its original name: counted once per report, looked up per
/// change.
struct Tally(std::collections::HashMap<(&'static str, String), usize>);

impl Tally {
    fn of(report: &ConversationReport, orig: &dyn Fn(&str) -> String) -> Tally {
        let mut t = std::collections::HashMap::new();
        for f in &report.findings {
            *t.entry((f.check, orig(&f.file))).or_insert(0) += 1;
        }
        Tally(t)
    }

    /// Findings of `check` on the file whose original name is `file`.
    fn count(&self, check: &'static str, file: &str) -> usize {
        self.0.get(&(check, file.to_string())).copied().unwrap_or(0)
    }
}

fn fixpoint(
    s: &Setup,
    p0: &Pass,
    blocked: &BTreeMap<&'static str, String>,
) -> Result<Reached, Offence> {
    let mut v = Virtual::new(s.dir);
    let mut last: Option<Pass> = None;
    let mut passes = 0;
    loop {
        let pass = last.as_ref().unwrap_or(p0);
        // (the first pass was planned with nothing held back)
        let mut take: Vec<Change> = pass
            .changes
            .iter()
            .filter(|c| may_take(c, s.opts) && !blocked.contains_key(c.check))
            .cloned()
            .collect();
        // Repairs that move the index (a file of the log renamed, added or
        // taken out) go first, alone: every other planner's guards read the
        // index, so they plan again on the repaired one (e2fsck's passes).
        let reindexing: HashSet<&str> = take
            .iter()
            .filter(|c| moves_the_index(c))
            .map(|c| c.check)
            .collect();
        if !reindexing.is_empty() {
            take.retain(|c| reindexing.contains(c.check));
        }
        // Then what makes an event the SDK cannot read readable again: a
        // patch that keeps the event (an id put back, a key dropped) before
        // setting it aside, and both before the HEAD and the links the other
        // planners choose by which events read.
        if reindexing.is_empty() {
            let unread = &pass.unreadable;
            let patched: HashSet<&str> = take
                .iter()
                .filter(|c| unread.contains(&c.file))
                .filter(|c| matches!(c.action, crate::edit::Action::Patch { .. }))
                .map(|c| c.file.as_str())
                .collect();
            let readable_again: Vec<Change> = take
                .iter()
                .filter(|c| unread.contains(&c.file))
                .filter(|c| match c.action {
                    crate::edit::Action::Patch { .. } => true,
                    crate::edit::Action::Replace(_) => !patched.contains(c.file.as_str()),
                    _ => false,
                })
                .cloned()
                .collect();
            if !readable_again.is_empty() {
                take = readable_again;
            } else {
                // Then the links between events, before the HEAD and the
                // state that point into the tree they make.
                let on_events: HashSet<&str> = take
                    .iter()
                    .filter(|c| c.file.starts_with("events/"))
                    .map(|c| c.check)
                    .collect();
                if !on_events.is_empty() {
                    take.retain(|c| on_events.contains(c.check));
                }
            }
        }
        let done = |v, last, bound_hit| {
            Ok(Reached {
                v,
                last,
                passes,
                bound_hit,
            })
        };
        if take.is_empty() {
            return done(v, last, false);
        }
        if passes == MAX_PASSES {
            return done(v, last, true);
        }
        // What each check's changes claim to clear, by original file name
        // (read before the state moves on).
        let mut claims: Vec<(&'static str, String, usize, String)> = Vec::new();
        let mut seen: HashSet<(&str, String)> = HashSet::new();
        let with_findings: HashSet<&str> = pass.report.findings.iter().map(|f| f.check).collect();
        let was = Tally::of(&pass.report, &|f| v.original_name(f));
        for c in take.iter().filter(|c| with_findings.contains(c.check)) {
            let mut files = vec![v.original_name(&c.file)];
            if c.file.starts_with("events/") {
                files.push("events/".to_string());
            }
            for file in files {
                if !seen.insert((c.check, file.clone())) {
                    continue;
                }
                let was = was.count(c.check, &file);
                if was > 0 {
                    claims.push((c.check, file, was, c.what.clone()));
                }
            }
        }
        let (dropped, changed) = v.apply(&take);
        if !changed {
            // nothing took effect: as far as this run can go
            return done(v, last, false);
        }
        let dropped_checks: HashSet<&str> = dropped.iter().map(|d| d.change.check).collect();
        passes += 1;
        let a = Analysis::load_at(s.dir, s.version, &v.overlay, Some(&s.cache));
        let next = run_pass(&a, s, blocked);
        let tally = Tally::of(&next.report, &|f| v.original_name(f));
        for (check, file, was, what) in claims {
            if dropped_checks.contains(check) {
                continue; // part of it waits for the next pass
            }
            let now = tally.count(check, &file);
            if now >= was {
                return Err(Offence {
                    checks: vec![check],
                    why: format!("its change ({what}) did not clear the finding on {file}"),
                });
            }
        }
        last = Some(next);
    }
}

/// The final state against the original folder.
fn prove(before: &Pass, r: &Reached) -> Result<(), Offence> {
    let after = r.last(before);
    let orig = |f: &str| r.v.original_name(f);
    let touching = |file: &str| -> Vec<&'static str> {
        if file == "events/" {
            let mut all: Vec<&'static str> =
                r.v.touched
                    .iter()
                    .filter(|(k, _)| k.starts_with("events/"))
                    .flat_map(|(_, t)| t.checks.iter().copied())
                    .collect();
            all.sort_unstable();
            all.dedup();
            return all;
        }
        r.v.touched
            .get(file)
            .map(|t| t.checks.clone())
            .unwrap_or_default()
    };
    let all_checks = || -> Vec<&'static str> {
        let mut all: Vec<&'static str> =
            r.v.touched
                .values()
                .flat_map(|t| t.checks.iter().copied())
                .collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    // 1. no new error
    let errors_before: HashSet<(&str, &str)> = before
        .report
        .findings
        .iter()
        .filter(|b| b.severity == Severity::Error)
        .map(|b| (b.check, b.file.as_str()))
        .collect();
    for f in after
        .report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
    {
        let file = orig(&f.file);
        if !errors_before.contains(&(f.check, file.as_str())) {
            let mut checks = touching(&file);
            if checks.is_empty() {
                checks = all_checks();
            }
            return Err(Offence {
                checks,
                why: format!(
                    "the repair would introduce a new error ({}: {})",
                    f.check, f.message
                ),
            });
        }
    }
    // 2. nothing of the agent's branch lost but what was taken out
    let renamed_from: HashSet<&String> = r.v.overlay.renamed.values().collect();
    let removed: HashSet<String> =
        r.v.overlay
            .gone
            .iter()
            .filter(|g| !renamed_from.contains(g))
            .filter_map(|g| g.strip_prefix("events/"))
            .filter_map(|n| crate::store::event::parse_event_name(n, true))
            .map(|n| n.id)
            .collect();
    if let Some(b) = &before.branch {
        let Some(a) = &after.branch else {
            return Err(Offence {
                checks: all_checks(),
                why: "the repair would leave a conversation that loads unable to load".into(),
            });
        };
        let kept: HashSet<&str> = a.iter().map(String::as_str).collect();
        if let Some(lost) = b
            .iter()
            .find(|id| !kept.contains(id.as_str()) && !removed.contains(id.as_str()))
        {
            return Err(Offence {
                checks: all_checks(),
                why: format!("the repair would take event {lost} off the agent's branch"),
            });
        }
    }
    let (b, a) = (before.report.events.ui_view, after.report.events.ui_view);
    if a + removed.len() < b {
        return Err(Offence {
            checks: all_checks(),
            why: format!("the repair would shrink the UI's view from {b} to {a} events"),
        });
    }
    // 3. every placeholder is an event the release reads
    let now_at: std::collections::HashMap<&String, &String> =
        r.v.overlay.renamed.iter().map(|(n, o)| (o, n)).collect();
    for (file, t) in &r.v.touched {
        if !t.replaced {
            continue;
        }
        let now = now_at.get(file).copied().unwrap_or(file);
        if after.unreadable.contains(now) {
            return Err(Offence {
                checks: t.checks.clone(),
                why: format!("the placeholder written in place of {file} would not read"),
            });
        }
    }
    for name in r.v.created() {
        if after.unreadable.contains(name) {
            return Err(Offence {
                checks: r
                    .v
                    .touched
                    .get(name)
                    .map(|t| t.checks.clone())
                    .unwrap_or_else(all_checks),
                why: format!("the event written as {name} would not read"),
            });
        }
    }
    Ok(())
}

/// Plan the repair of one conversation, held open as `dir` (every read and
/// the proof go through it; `persist::apply` writes through it). Writes
/// nothing.
pub fn plan(dir: &DirFd, display: String, opts: &RepairOptions) -> Plan {
    let version = opts.version();
    let stamp_before = stamp_at(dir);
    let first = Analysis::load_at(dir, version, &Overlay::new(), None);
    let s = Setup {
        dir,
        cache: RecordCache::of(&first.conv),
        display: &display,
        opts,
        version,
        given: opts.server_version.is_some(),
    };
    let none = BTreeMap::new();
    // pass 0 is planned once; a fresh start holds checks back from it
    let p0 = run_pass(&first, &s, &none);
    let mut plan = Plan {
        dir: dir.path().to_path_buf(),
        root: dir.clone(),
        display: display.clone(),
        edits: Vec::new(),
        moves: Vec::new(),
        creates: Vec::new(),
        left: Vec::new(),
        refused: None,
        refusal: None,
        notes: Vec::new(),
        redactor: p0.report.redactor.clone(),
        before: empty_report(),
        after: None,
        unsafe_made: Vec::new(),
        passes: 0,
    };
    let ctx = first.ctx(s.given);
    let refusal = if let Some(first) = first.conv.access_errors.first() {
        Some((
            Refusal::Unreadable,
            format!("{first}; a folder not wholly read is never repaired"),
        ))
    } else if let checks::live_lease::Lease::Live { owner, .. } =
        checks::live_lease::lease_state(&ctx)
    {
        Some((Refusal::InUse, format!(
            "in use by {} (owner_lease.json is live); stop the server or wait for the lease to expire",
            ctx.quote(&owner)
        )))
    } else if first.conv.journal.exists() {
        Some((Refusal::Interrupted, "a convo-doctor repair run stopped half-way through this conversation (see `interrupted-repair`): undo that run first, then repair again".into()))
    } else if first.conv.changed_during_read {
        Some((Refusal::Busy, "the conversation is being written (another process holds events/.eventlog.lock, or files changed while they were read); run again when it is idle".into()))
    } else {
        None
    };
    drop(ctx);
    if let Some((kind, why)) = refusal {
        plan.refused = Some(why);
        plan.refusal = Some(kind);
        plan.before = p0.report;
        plan.left = unfixed(&plan, opts.selected, &[]);
        return plan;
    }
    let mut blocked: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut restarts = 0;
    let reached = loop {
        let attempt = fixpoint(&s, &p0, &blocked).and_then(|r| prove(&p0, &r).map(|()| r));
        match attempt {
            Ok(r) => break Some(r),
            Err(off) => {
                let fresh: Vec<&'static str> = off
                    .checks
                    .iter()
                    .copied()
                    .filter(|c| !blocked.contains_key(c))
                    .collect();
                if fresh.is_empty() || restarts == MAX_RESTARTS {
                    plan.refused = Some(format!("{}; nothing was changed", off.why));
                    plan.refusal = Some(Refusal::Proof);
                    break None;
                }
                for c in fresh {
                    blocked.insert(c, off.why.clone());
                }
                restarts += 1;
            }
        }
    };
    plan.notes = p0.notes.clone();
    let Some(mut r) = reached else {
        plan.before = p0.report;
        plan.left = unfixed(&plan, opts.selected, &[]);
        return plan;
    };
    let last = r.last.take();
    let fin = last.as_ref().unwrap_or(&p0);
    for n in &fin.notes {
        if !plan.notes.contains(n) {
            plan.notes.push(n.clone());
        }
    }
    if r.bound_hit {
        plan.notes.push(format!(
            "the repair stopped after {MAX_PASSES} passes with more still proposed; run `repair` again on the result"
        ));
    }
    plan.passes = r.passes;
    let seen = |rel: &str| s.cache.seen(rel);
    match r.v.composite(&seen) {
        Ok((edits, moves, creates)) => {
            plan.edits = edits;
            plan.moves = moves;
            plan.creates = creates;
        }
        Err(why) => {
            plan.refused = Some(format!("{why}; nothing was changed"));
            plan.refusal = Some(Refusal::Proof);
        }
    }
    // What is left: the last pass's leaves, the unsafe changes not
    // consented to, the repairs held back, then every other finding.
    let mut left: Vec<Left> = Vec::new();
    let mut listed: HashSet<(&'static str, String)> = HashSet::new();
    let mut push = |left: &mut Vec<Left>, l: Left| {
        if listed.insert((l.check, l.file.clone())) {
            left.push(l);
        }
    };
    let on_file: HashSet<(&str, &str)> = fin
        .report
        .findings
        .iter()
        .map(|f| (f.check, f.file.as_str()))
        .collect();
    for l in &fin.left {
        push(
            &mut left,
            Left {
                check: l.check,
                file: l.file.clone(),
                why: l.why.clone(),
                needs_unsafe: false,
                reason: l.reason,
            },
        );
    }
    for c in fin.changes.iter().filter(|c| !may_take(c, opts)) {
        push(
            &mut left,
            Left {
                check: c.check,
                file: finding_file(&on_file, c),
                why: format!("with --unsafe-fixes: {}", c.what),
                needs_unsafe: true,
                reason: LeftReason::UnsafeNotRequested,
            },
        );
    }
    for (check, why) in &blocked {
        for f in fin.report.findings.iter().filter(|f| f.check == *check) {
            push(
                &mut left,
                Left {
                    check,
                    file: f.file.clone(),
                    why: format!("its repair was held back: {why}"),
                    needs_unsafe: false,
                    reason: LeftReason::NoRepair,
                },
            );
        }
    }
    plan.unsafe_made = unsafe_made(&r.v.touched);
    let changes = plan.has_changes();
    if changes {
        for e in &plan.edits {
            if let Ok(v) = serde_json::from_slice(&e.after) {
                plan.redactor.learn(&v);
            }
        }
        // The proof read the folder again: if it saw a writer, or the folder
        // is no longer what the plan was made from, the proof is about a
        // moment that never existed as a whole.
        crate::fix::persist::pause_point("before-proof");
        let moved = stamp_at(dir) != stamp_before;
        let flagged = fin
            .report
            .findings
            .iter()
            .any(|f| f.check == checks::changed_during_read::ID);
        if moved || flagged {
            plan.refusal = Some(Refusal::Busy);
            plan.refused = Some(
                "the conversation changed while the repair was being proven (a writer is active); nothing was changed; run again when it is idle".into(),
            );
        }
    }
    plan.left = left;
    if changes {
        if let Some(l) = last {
            plan.after = Some(l.report);
        }
    }
    plan.before = p0.report;
    let more = unfixed(&plan, opts.selected, &[]);
    plan.left.extend(more);
    plan
}

/// The file a change's finding is reported on: the changed file, or
/// `events/` for a check that reports the folder (an index gap).
/// `findings`: the (check, file) of every finding of the report.
fn finding_file(findings: &HashSet<(&str, &str)>, c: &Change) -> String {
    if !findings.contains(&(c.check, c.file.as_str())) && findings.contains(&(c.check, "events/")) {
        return "events/".into();
    }
    c.file.clone()
}

/// Original files whose change was unsafe although their checks declare
/// safe repairs.
fn unsafe_made(touched: &BTreeMap<String, Touch>) -> Vec<String> {
    touched
        .iter()
        .filter(|(_, t)| {
            t.unsafe_change
                && t.checks.iter().any(|c| {
                    checks::find(c).is_some_and(|k| k.repair().applicability == Applicability::Safe)
                })
        })
        .map(|(f, _)| f.clone())
        .collect()
}

fn empty_report() -> ConversationReport {
    ConversationReport {
        path: String::new(),
        id: String::new(),
        id_dashed: None,
        server_version: String::new(),
        listed: None,
        events: report::EventCounts {
            on_disk: 0,
            log_length: 0,
            ui_view: 0,
            agent_view: None,
            orphaned: 0,
        },
        load_error: None,
        verdict: String::new(),
        findings: Vec::new(),
        event_list: None,
        redactor: Default::default(),
        tree: None,
        access_errors: Vec::new(),
        appserver: None,
    }
}

/// Findings at warning or above that the plan leaves, with the reason.
fn unfixed(plan: &Plan, selected: &dyn Fn(&str) -> bool, _also: &[Left]) -> Vec<Left> {
    let already: HashSet<(&str, &str)> = plan
        .left
        .iter()
        .map(|l| (l.check, l.file.as_str()))
        .collect();
    plan.remaining()
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .filter(|f| !already.contains(&(f.check, f.file.as_str())))
        .map(|f| left_for(plan, f, selected))
        .collect()
}

fn left_for(plan: &Plan, f: &Finding, selected: &dyn Fn(&str) -> bool) -> Left {
    let declared = checks::find(f.check).map(|c| c.repair());
    let (reason, why) = if plan.refused.is_some() && f.fixable {
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
        let manual = declared.is_none_or(|r| r.applicability == Applicability::Manual);
        let why = match declared {
            Some(r) if manual && r.what != checks::Repair::NONE.what => format!(
                "no automatic repair: {} (see `convo-doctor explain {}`)",
                r.what, f.check
            ),
            _ => format!(
                "no safe automatic repair; needs a human (see `convo-doctor explain {}`)",
                f.check
            ),
        };
        (
            if manual {
                LeftReason::Manual
            } else {
                LeftReason::NoRepair
            },
            why,
        )
    };
    Left {
        needs_unsafe: false,
        check: f.check,
        file: f.file.clone(),
        why,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conversation of `n` events copied from the clean-tree fixture (its
    /// system prompt, then its user message again and again), each
    /// message's parent an id no file holds.
    fn dangling(n: usize) -> tempfile::TempDir {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/clean-tree");
        let conv = std::fs::read_dir(&fixture)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap();
        let mut names: Vec<_> = std::fs::read_dir(conv.join("events"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("event-")
            })
            .collect();
        names.sort();
        let text = |i: usize| std::fs::read_to_string(&names[i]).unwrap();
        let field = |t: &str, k: &str| {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            v[k].as_str().unwrap().to_string()
        };
        let (system, message) = (text(0), text(1));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(conv.file_name().unwrap());
        std::fs::create_dir_all(dir.join("events")).unwrap();
        std::fs::copy(conv.join("base_state.json"), dir.join("base_state.json")).unwrap();
        let (sys_id, msg_id, parent) = (
            field(&system, "id"),
            field(&message, "id"),
            field(&message, "parent_id"),
        );
        std::fs::write(
            dir.join(format!("events/event-00000-{sys_id}.json")),
            &system,
        )
        .unwrap();
        for i in 1..n {
            let id = format!("e0000000-0000-4000-8000-{i:012}");
            let lost = format!("f0000000-0000-4000-8000-{i:012}");
            let t = message.replace(&msg_id, &id).replace(&parent, &lost);
            std::fs::write(dir.join(format!("events/event-{i:05}-{id}.json")), t).unwrap();
        }
        tmp
    }

    /// Every parent of a log dangling: the repair re-links each event, and
    /// asks the disk about each file a bounded number of times (it once
    /// asked about every finding's file for every change: n² `stat`s).
    /// Counted, not timed.
    #[test]
    fn relinking_every_event_asks_the_disk_a_bounded_number_of_times() {
        let n = 300;
        let tmp = dangling(n);
        let conv = std::fs::read_dir(tmp.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let dir = DirFd::open(&conv).unwrap();
        let all = |_: &str| true;
        let opts = RepairOptions {
            server_version: None,
            selected: &all,
            unsafe_fixes: true,
        };
        super::super::state::DISK_ASKS.with(|c| c.set(0));
        let plan = plan(&dir, conv.display().to_string(), &opts);
        let asks = super::super::state::DISK_ASKS.with(|c| c.get());
        assert_eq!(plan.refused, None);
        let relinked = plan
            .edits
            .iter()
            .filter(|e| e.checks.contains(&checks::dangling_parent::ID))
            .count();
        assert_eq!(relinked, n - 1, "every event but the first is re-linked");
        assert!(asks <= 3 * n as u64, "{asks} disk lookups for {n} events");
    }
}
