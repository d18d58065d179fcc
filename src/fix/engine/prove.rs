//! Prove: the final state of a run against the original folder. No new
//! error, no event of the agent's branch lost (but those taken out), no
//! view shrinking beyond what was taken out, no tool call left open on the
//! agent's branch by the repair, every placeholder and every new event
//! readable. A proof that fails names the checks whose changes
//! it holds to blame.

use std::collections::HashSet;

use super::schedule::Reached;
use super::{Offence, Pass};
use crate::checks::Severity;

/// The final state against the original folder.
pub(super) fn prove(before: &Pass, r: &Reached) -> Result<(), Offence> {
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
    let all_checks = || r.v.checks_that_ran();
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
                ran: Vec::new(),
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
                ran: Vec::new(),
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
                ran: Vec::new(),
                checks: all_checks(),
                why: format!("the repair would take event {lost} off the agent's branch"),
            });
        }
    }
    let (b, a) = (before.report.events.ui_view, after.report.events.ui_view);
    if a + removed.len() < b {
        return Err(Offence {
            ran: Vec::new(),
            checks: all_checks(),
            why: format!("the repair would shrink the UI's view from {b} to {a} events"),
        });
    }
    // 3. no tool call left open on the agent's branch by the repair: the
    // agent executes such an action again at its next step
    // (`tool_calls::open_calls`)
    let open_before: HashSet<&str> = match &before.branch {
        Some(_) => before.open.iter().map(|o| o.action.as_str()).collect(),
        None => HashSet::new(),
    };
    for o in after
        .open
        .iter()
        .filter(|o| !open_before.contains(o.action.as_str()))
    {
        // the conversation goes on past the call through a link this run
        // made, into the call or out of its action
        let linked = |f: &String| r.v.touched.get(&orig(f)).filter(|t| t.linked);
        if let Some(next) = &o.next {
            if let Some(t) = linked(next).or_else(|| linked(&o.file)) {
                return Err(Offence {
                ran: Vec::new(),
                    checks: t.checks.clone(),
                    why: format!(
                        "the repair would link {next} after the tool call of {}, which nothing on the agent's branch answers: the agent would run that tool again",
                        o.file
                    ),
                });
            }
        }
        // a folder the SDK refused, made to load with a call the damage left
        // open mid-branch (its result in no file): loading it would run the
        // tool again, and nothing here can say what it returned
        if before.branch.is_none() && o.answer_elsewhere.is_none() {
            if let Some(next) = &o.next {
                return Err(Offence {
                ran: Vec::new(),
                    checks: all_checks(),
                    why: format!(
                        "the repair would make the conversation load with the tool call of {} open on the agent's branch, {next} after it and its result in no file: the agent would run that tool again (a human decides: answer the call, or take what follows it off the branch)",
                        o.file
                    ),
                });
            }
        }
        // ... or a call at its end (new on the branch, whether the folder
        // loaded or not), while base_state.json says no action waits to run
        // (not running, paused or waiting for confirmation): its result was
        // written once and is lost, or sits before it, and loading it runs
        // the tool again
        if o.answer_elsewhere.is_none() && o.next.is_none() && !before.may_pend {
            return Err(Offence {
                ran: Vec::new(),
                checks: all_checks(),
                why: format!(
                    "the repair would make the conversation load with the tool call of {} open at the end of the agent's branch (no event after it answers it), while base_state.json says no action waits to run: the agent would run that tool again (a human decides: answer the call, or take it off the branch)",
                    o.file
                ),
            });
        }
        if let Some(answer) = &o.answer_elsewhere {
            return Err(Offence {
                ran: Vec::new(),
                checks: all_checks(),
                why: format!(
                    "the repair would leave the tool call of {} open on the agent's branch while its result ({answer}) is off it or before it: the agent would run that tool again",
                    o.file
                ),
            });
        }
    }
    // 4. every placeholder is an event the release reads
    let now_at: std::collections::HashMap<&String, &String> =
        r.v.overlay.renamed.iter().map(|(n, o)| (o, n)).collect();
    for (file, t) in &r.v.touched {
        if !t.replaced {
            continue;
        }
        let now = now_at.get(file).copied().unwrap_or(file);
        if after.unreadable.contains(now) {
            return Err(Offence {
                ran: Vec::new(),
                checks: t.checks.clone(),
                why: format!("the placeholder written in place of {file} would not read"),
            });
        }
    }
    for name in r.v.created() {
        if after.unreadable.contains(name) {
            return Err(Offence {
                ran: Vec::new(),
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
