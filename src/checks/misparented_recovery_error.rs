//! `misparented-recovery-error`: the agent-server's crash-recovery error for
//! an interrupted tool call hangs off a stale HEAD instead of its action
//! (servers before #4488), so the agent's branch holds a tool result without
//! its call.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::kinds;
use crate::store::ParentRef;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "misparented-recovery-error";

pub struct MisparentedRecoveryError;

/// The text the agent-server writes (`EventService.start`, ≥1.7.4).
pub const RECOVERY_PREFIX: &str = "A restart occurred while this tool was in progress";

/// One recovery error whose parent is not its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misparented {
    pub error: usize,
    pub action: usize,
    /// Every guard for a re-link holds: exactly one ActionEvent with this
    /// `tool_call_id`, and no other result for it.
    pub safe: bool,
}

/// The analysis, computed once per conversation (shared by the check, the
/// report and the repair).
pub fn find<'c>(ctx: &'c Ctx) -> &'c [Misparented] {
    ctx.shared.misparented.get_or_init(|| compute(ctx))
}

fn compute(ctx: &Ctx) -> Vec<Misparented> {
    let r = &ctx.reader;
    let n = r.len();
    let mut out = Vec::new();
    // per tool call id: the ActionEvents that made it (in log order) and
    // how many results answer it, found in one pass when a recovery error
    // first needs them
    let mut by_call: Option<std::collections::HashMap<&str, (Vec<usize>, usize)>> = None;
    for i in 0..n {
        let Some(rec) = r.record(i) else { continue };
        if rec.kind != kinds::AGENT_ERROR
            || !rec.error().is_some_and(|e| e.starts_with(RECOVERY_PREFIX))
        {
            continue;
        }
        let Some(call) = rec.tool_call_id() else {
            continue;
        };
        let by_call = by_call.get_or_insert_with(|| {
            let mut m: std::collections::HashMap<&str, (Vec<usize>, usize)> = Default::default();
            for j in 0..n {
                let Some(x) = r.record(j) else { continue };
                let Some(tc) = x.tool_call_id() else {
                    continue;
                };
                if x.kind == kinds::ACTION {
                    m.entry(tc).or_default().0.push(j);
                } else if kinds::is_result(&x.kind) {
                    m.entry(tc).or_default().1 += 1;
                }
            }
            m
        });
        // (this error is one of the results counted)
        let Some((actions, results)) = by_call.get(call) else {
            continue;
        };
        let Some(&action) = actions.first() else {
            continue;
        };
        let parent_ok = match &rec.parent {
            ParentRef::Id(p) => r.index.id_to_idx.get_cid(p) == Some(&action),
            ParentRef::Absent => i > 0 && i - 1 == action,
            ParentRef::Root => false,
        };
        if parent_ok {
            continue;
        }
        let other_results = *results > 1;
        out.push(Misparented {
            error: i,
            action,
            safe: actions.len() == 1 && !other_results && action < i,
        });
    }
    out
}

impl Check for MisparentedRecoveryError {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "A crash-recovery tool error is attached to a stale HEAD, not to its action (#4487)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  The AgentErrorEvent the agent-server appends after a crash (\"A restart
  occurred while this tool was in progress...\") whose `parent_id` is not the
  ActionEvent with the same `tool_call_id`. Before #4488 the server stamped it
  onto the persisted HEAD, which lags behind the newest events after a crash,
  so the error became a sibling of its own action.

Why it matters
  The agent's branch then holds a tool result without its tool call, and the
  SDK's tool-call matching raises KeyError on every later turn: the
  conversation is stuck (#4487). The events after the stale HEAD, the action
  included, fall off the agent's branch.

Repair
  Set the error's `parent_id` to its ActionEvent (what #4488 does), when
  exactly one ActionEvent has that `tool_call_id` and nothing else answered
  it. Only that value changes."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "set the crash-recovery AgentErrorEvent's `parent_id` to the ActionEvent with the same `tool_call_id` (#4488)",
            guards: "exactly one ActionEvent has that `tool_call_id`, before the error; nothing else answered it",
            planner: Some(plan),
            phase: crate::edit::Phase::Links,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for m in find(ctx) {
            let on_branch = ctx.views.in_agent.get(m.error) == Some(&true);
            let sev = if on_branch {
                Severity::Error
            } else {
                Severity::Warning
            };
            let mut msg = format!(
                "the crash-recovery error at {} answers the tool call of event {} but hangs off another event{}",
                ix(m.error),
                ix(m.action),
                if on_branch {
                    "; the agent's branch holds a tool result without its call (KeyError on the next turn)"
                } else {
                    ""
                }
            );
            if !m.safe {
                msg.push_str("; not repaired automatically: that tool call has more than one action or result");
            }
            out.push(Finding::new(self.id(), sev, ctx.event_path(m.error), msg).fixable(m.safe));
        }
    }
}

/// Re-parent a crash-recovery error onto its ActionEvent (what #4488 does).
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    for m in find(ctx) {
        let rel = ctx.event_path(m.error);
        if !m.safe {
            p.leave(
                rel,
                "that tool call has more than one action or result; which one the error answers needs a human",
            );
            continue;
        }
        let target = ctx.reader.id(m.action).to_string();
        let what = format!(
            "re-parent the recovery error {} onto its action {} ({target})",
            super::ix(m.error),
            super::ix(m.action)
        );
        p.relink(rel, &target, crate::edit::Safety::Safe, what);
    }
}
