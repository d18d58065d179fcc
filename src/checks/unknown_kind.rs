//! `unknown-kind`: an event whose `kind` (or nested `action.kind` /
//! `observation.kind`) the SDK of the selected version does not know.

use super::{ix, Applicability, Check, Ctx, Finding, Repair};
use crate::view::ReadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "unknown-kind";

pub struct UnknownKind;

fn hint(kind: &str) -> &'static str {
    if kind.starts_with("ExecuteBash") {
        " (ExecuteBash* was renamed Terminal* in 1.3 and removed in 1.5)"
    } else if kind.starts_with("ClientAction_") {
        " (client tool kinds are registered from meta.json `client_tools`)"
    } else {
        " (a custom tool's kind, registered only when its module is imported)"
    }
}

impl Check for UnknownKind {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event's kind is not one the SDK can deserialize"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event whose `kind`, `action.kind` or `observation.kind` is not in the
  list of kinds the selected SDK release registers (extracted from the real
  releases, see data/kinds/). Typical causes: a custom tool whose module is not
  imported when the server resumes (#4080), `ExecuteBash*` events from before
  1.5, a client tool missing from meta.json `client_tools`.

Why it matters
  The SDK raises `ValidationError: Unknown kind` for such an event. On the
  active branch, or in the tail scanned to find the HEAD, that refuses the
  whole conversation even though every other event is intact (error).
  Elsewhere the UI skips it (warning).

Repair
  Best: make the kind importable on the server (install the custom tool's
  module). Otherwise, unsafe (only with `repair --unsafe-fixes`): set the
  event aside as for `unreadable-event` (a placeholder with the same id and
  parent takes its slot; the file is kept in the run's backup).
  `--server-version` selects which release's kinds are used."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "set the event aside (as for `unreadable-event`); the better fix is to make the kind importable on the server",
            guards: "as for `unreadable-event`",
            planner: Some(plan),
            phase: crate::edit::Phase::Readable,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        ctx.read_failures(self.id(), out, |i, e| {
            let ReadError::UnknownKind { kind, field } = e else {
                return None;
            };
            Some(format!(
                "event {} has {field} `{}`, unknown to SDK {}{}",
                ix(i),
                ctx.quote(kind),
                ctx.reader.kinds.source,
                hint(kind)
            ))
        });
    }
}

/// Set aside every event of the log whose kind the release does not know.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    super::set_aside::plan(ctx, p, super::set_aside::Class::UnknownKind);
}
