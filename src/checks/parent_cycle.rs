//! `parent-cycle`: following `parent_id`s comes back to where it started.

use super::{ix, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

pub struct ParentCycle;

impl Check for ParentCycle {
    fn id(&self) -> &'static str {
        "parent-cycle"
    }

    fn summary(&self) -> &'static str {
        "The parent links of some events form a loop"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Events whose `parent_id` links form a loop (A's parent is B, B's parent A).

Why it matters
  `path_to_root` raises \"Cycle in event tree\" (ValueError) when the agent's
  branch runs into it, and the conversation fails to load (OpenHands#15247).
  Causes: an explicit forward `parent_id` from patched or custom code (#4089).

Repair
  None automatic: which link is wrong cannot be decided from disk alone."
    }

    fn repair(&self) -> Repair {
        Repair::manual("which link is wrong cannot be decided from disk alone")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let r = &ctx.reader;
        let n = r.len();
        // 0 = unvisited, 1 = on the current walk, 2 = done
        let mut state = vec![0u8; n];
        let blocking = matches!(ctx.load_error(), Some(LoadError::Cycle { .. }));
        for start in 0..n {
            let mut walk = Vec::new();
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    2 => break,
                    1 => {
                        let from = walk.iter().position(|&w| w == i).unwrap_or(0);
                        let mut members: Vec<usize> = walk[from..].to_vec();
                        members.sort_unstable();
                        let names: Vec<String> = members.iter().map(|&m| ix(m)).collect();
                        out.push(Finding::new(
                            self.id(),
                            if blocking {
                                Severity::Error
                            } else {
                                Severity::Warning
                            },
                            ctx.event_path(members[0]),
                            format!(
                                "events {} point at each other in a loop{}",
                                names.join(" → "),
                                if blocking {
                                    "; the SDK cannot load the conversation (ValueError)"
                                } else {
                                    ""
                                }
                            ),
                        ));
                        break;
                    }
                    _ => {}
                }
                state[i] = 1;
                walk.push(i);
                // Only explicit links can loop; the linear fallback goes down.
                cur = r
                    .record(i)
                    .and_then(|rec| rec.parent.id())
                    .and_then(|p| r.index.id_to_idx.get(p).copied());
            }
            for w in walk {
                state[w] = 2;
            }
        }
    }
}
