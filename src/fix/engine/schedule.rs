//! Schedule: apply one pass's proposals to the in-memory overlay, analyse
//! the result and plan again, until no planner proposes a change it may
//! make. Each pass makes only the changes of the earliest phase proposed
//! (`crate::edit::Phase`, declared by each check), and must clear the
//! findings its changes claim.

use std::collections::{BTreeMap, HashSet};

use super::{run_pass, Offence, Pass, Setup, MAX_PASSES};
use crate::analysis::Analysis;
use crate::edit::{Action, Change, Phase, Safety};
use crate::fix::state::Virtual;
use crate::fix::RepairOptions;
use crate::report::ConversationReport;

/// A fixpoint reached (or the pass bound hit).
pub(super) struct Reached {
    pub v: Virtual,
    /// The last pass, when any change was made (else the first pass is the
    /// last).
    pub last: Option<Pass>,
    pub passes: usize,
    pub bound_hit: bool,
}

impl Reached {
    pub fn last<'a>(&'a self, first: &'a Pass) -> &'a Pass {
        self.last.as_ref().unwrap_or(first)
    }
}

pub(super) fn may_take(c: &Change, opts: &RepairOptions) -> bool {
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

/// The changes of `take` this pass makes: those of the earliest phase
/// proposed. In `Readable`, the changes alone, a patch that keeps an event
/// before a placeholder that replaces it; in every other phase, all the
/// changes of each check with a change in it (they plan together).
fn this_pass(mut take: Vec<Change>, unreadable: &HashSet<String>) -> Vec<Change> {
    let unread = |f: &str| unreadable.contains(f);
    let phase = |c: &Change| c.phase(&unread);
    let Some(first) = take.iter().map(phase).min() else {
        return take;
    };
    let patch = |c: &Change| matches!(c.action, Action::Patch { .. });
    if first == Phase::Readable {
        let patched: HashSet<String> = take
            .iter()
            .filter(|c| phase(c) == Phase::Readable && patch(c))
            .map(|c| c.file.clone())
            .collect();
        take.retain(|c| phase(c) == Phase::Readable && (patch(c) || !patched.contains(&c.file)));
        return take;
    }
    let checks: HashSet<&'static str> = take
        .iter()
        .filter(|c| phase(c) == first)
        .map(|c| c.check)
        .collect();
    take.retain(|c| checks.contains(c.check));
    take
}

pub(super) fn fixpoint(
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
        let take: Vec<Change> = pass
            .changes
            .iter()
            .filter(|c| may_take(c, s.opts) && !blocked.contains_key(c.check))
            .cloned()
            .collect();
        let take = this_pass(take, &pass.unreadable);
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
                    ran: Vec::new(),
                    checks: vec![check],
                    why: format!("its change ({what}) did not clear the finding on {file}"),
                });
            }
        }
        last = Some(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(check: &'static str, file: &str, action: Action, declared: Phase) -> Change {
        Change {
            file: file.into(),
            action,
            check,
            safety: Safety::Safe,
            what: String::new(),
            declared,
        }
    }

    fn patch() -> Action {
        Action::Patch {
            pointer: "/parent_id".into(),
            op: crate::edit::Op::Remove,
        }
    }

    const A: &str = "events/event-00001-a.json";
    const B: &str = "events/event-00002-b.json";

    fn checks(v: &[Change]) -> Vec<(&'static str, String)> {
        v.iter().map(|c| (c.check, c.file.clone())).collect()
    }

    #[test]
    fn a_change_that_moves_the_index_goes_first_with_its_checks_other_changes() {
        let take = vec![
            change("links", A, patch(), Phase::Links),
            change("state", "base_state.json", patch(), Phase::State),
            change(
                "gap",
                B,
                Action::Rename("events/event-00001-b.json".into()),
                Phase::Links,
            ),
            change("gap", A, patch(), Phase::Links),
        ];
        let got = this_pass(take, &HashSet::new());
        assert_eq!(
            checks(&got),
            vec![("gap", B.to_string()), ("gap", A.to_string())]
        );
    }

    #[test]
    fn a_patch_keeping_an_unreadable_event_goes_before_its_placeholder_and_the_links() {
        let unreadable: HashSet<String> = [A.to_string(), B.to_string()].into();
        let take = vec![
            change("links", "events/event-00003-c.json", patch(), Phase::Links),
            change("aside", A, Action::Replace(vec![]), Phase::Readable),
            change("field", A, patch(), Phase::Readable),
            change("aside", B, Action::Replace(vec![]), Phase::Readable),
        ];
        let got = this_pass(take, &unreadable);
        assert_eq!(
            checks(&got),
            vec![("field", A.to_string()), ("aside", B.to_string())]
        );
    }

    #[test]
    fn a_check_declaring_the_index_phase_goes_first() {
        let take = vec![
            change("links", A, patch(), Phase::Links),
            change("first", "base_state.json", patch(), Phase::Index),
        ];
        let got = this_pass(take, &HashSet::new());
        assert_eq!(checks(&got), vec![("first", "base_state.json".to_string())]);
    }

    #[test]
    fn links_go_before_the_state() {
        let take = vec![
            change("state", "base_state.json", patch(), Phase::State),
            change("links", A, patch(), Phase::Links),
        ];
        let got = this_pass(take, &HashSet::new());
        assert_eq!(checks(&got), vec![("links", A.to_string())]);
        let take = vec![change("state", "base_state.json", patch(), Phase::State)];
        assert_eq!(this_pass(take, &HashSet::new()).len(), 1);
    }
}
