//! Account for what is left: every finding a plan does not clear, with the
//! reason (a planner's guard, consent not given, a repair held back or
//! refused, no repair at all, not selected).

use std::collections::{BTreeMap, HashSet};

use super::schedule::may_take;
use super::Pass;
use crate::checks::{self, Applicability, Finding, Severity};
use crate::edit::Change;
use crate::fix::state::Touch;
use crate::fix::{Left, LeftReason, Plan, RepairOptions};

/// What the run itself leaves, on the state of its last pass `fin`: the
/// planners' leaves, the unsafe changes not consented to, then the
/// findings of the checks whose repair was held back (`blocked`, with
/// why). One entry per (check, file).
pub(super) fn left_by_run(
    fin: &Pass,
    opts: &RepairOptions,
    blocked: &BTreeMap<&'static str, String>,
) -> Vec<Left> {
    let mut left: Vec<Left> = Vec::new();
    let mut listed: HashSet<(&'static str, String)> = HashSet::new();
    let mut push = |l: Left| {
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
        push(Left {
            check: l.check,
            file: l.file.clone(),
            why: l.why.clone(),
            needs_unsafe: false,
            reason: l.reason,
        });
    }
    for c in fin.changes.iter().filter(|c| !may_take(c, opts)) {
        push(Left {
            check: c.check,
            file: finding_file(&on_file, c),
            why: format!("with --unsafe-fixes: {}", c.what),
            needs_unsafe: true,
            reason: LeftReason::UnsafeNotRequested,
        });
    }
    for (check, why) in blocked {
        for f in fin.report.findings.iter().filter(|f| f.check == *check) {
            push(Left {
                check,
                file: f.file.clone(),
                why: format!("its repair was held back: {why}"),
                needs_unsafe: false,
                reason: LeftReason::NoRepair,
            });
        }
    }
    left
}

/// The file a change's finding is reported on: the changed file; else
/// `events/` for a check that reports the folder (an index gap); else the
/// one file the check reports (a HEAD's repair that also adds an event and
/// takes out a count marker is one finding left, on base_state.json).
/// `findings`: the (check, file) of every finding of the report.
fn finding_file(findings: &HashSet<(&str, &str)>, c: &Change) -> String {
    if findings.contains(&(c.check, c.file.as_str())) {
        return c.file.clone();
    }
    if findings.contains(&(c.check, "events/")) {
        return "events/".into();
    }
    let mut of_check = findings.iter().filter(|(k, _)| *k == c.check);
    match (of_check.next(), of_check.next()) {
        (Some((_, f)), None) => f.to_string(),
        _ => c.file.clone(),
    }
}

/// Original files whose change was unsafe although their checks declare
/// safe repairs.
pub(super) fn unsafe_made(touched: &BTreeMap<String, Touch>) -> Vec<String> {
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

/// Findings at warning or above that the plan leaves and does not list
/// yet, with the reason.
pub(super) fn unfixed(plan: &Plan, selected: &dyn Fn(&str) -> bool) -> Vec<Left> {
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
