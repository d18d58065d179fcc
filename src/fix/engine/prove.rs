//! Prove: the final state of a run against the original folder. No new
//! error, no event of the agent's branch lost (but those taken out), no
//! view shrinking beyond what was taken out, every placeholder and every
//! new event readable. A proof that fails names the checks whose changes
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
