//! `duplicate-index`: two files hold the same index; the SDK sees only one.

use super::{ix, Applicability, Check, Ctx, Finding, Repair, Severity};

pub struct DuplicateIndex;

impl Check for DuplicateIndex {
    fn id(&self) -> &'static str {
        "duplicate-index"
    }

    fn summary(&self) -> &'static str {
        "Two event files have the same index; the SDK keeps one and loses the other"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Two or more files in events/ whose names carry the same index (including a
  5-digit and a 6-digit spelling of it).

Why it matters
  The SDK's index keeps, for each index, the file listed last by the directory
  listing (os.listdir order, which depends on the filesystem). The other file
  is invisible, and any event whose parent it is fails with KeyError. Causes:
  concurrent writers before 1.8.2 (no lock), an append after a gap.

Repair
  Unsafe (only with `repair --unsafe-fixes`): keep the file the SDK reads
  here and quarantine the others into the run's backup. Unsafe because
  another machine's directory order could have shown the other one."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "keep the file the SDK reads at that index, quarantine the ones it cannot see (moved into the run's backup)",
            guards: "unsafe because which copy the SDK keeps follows this machine's directory order; another machine could have shown the other one",
            planner: Some(crate::fix::quarantine::plan_duplicate),
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let files = &ctx.conv.events.files;
        for (&idx, positions) in &ctx.index.duplicate_idx {
            let names: Vec<String> = positions
                .iter()
                .map(|&p| format!("`{}`", files[p].name))
                .collect();
            let kept = &files[*positions.last().unwrap_or(&positions[0])].name;
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                format!("events/{}", files[positions[0]].name),
                format!(
                    "{} files hold index {}: {}; the SDK keeps `{kept}` (last in directory order here) and cannot see the others",
                    positions.len(),
                    ix(idx as usize),
                    names.join(", "),
                ),
            ));
        }
    }
}
