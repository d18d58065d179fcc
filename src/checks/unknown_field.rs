//! `unknown-field`: an event carries a key the selected release's model of
//! that kind does not have. Events forbid extra keys, so the SDK refuses it.

use super::{ix, Applicability, Check, Ctx, Finding, Repair};
use crate::view::ReadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "unknown-field";

pub struct UnknownField;

impl Check for UnknownField {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An event has a key the selected SDK release does not know (written by a newer one?)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  An event with a top-level key that the selected release's model of its
  kind does not define. Every event model forbids extra keys
  (`extra=\"forbid\"`), so the SDK raises `ValidationError: Extra inputs are
  not permitted`. The usual cause is a downgrade: a newer release wrote a
  field an older one does not know (1.58.2 writes `extended_content` on
  every ObservationEvent; 1.33.0 refuses it). The accepted keys of every kind
  come from the real releases (data/kinds/).

Why it matters
  On the agent's branch, or in the tail scanned to find the HEAD, the
  conversation fails to load (error); elsewhere the UI skips the event
  (warning).

Repair
  Best: run a server at least as new as the one that wrote the
  conversation. `--server-version` selects the release whose fields apply.
  Otherwise, unsafe (only with `repair --unsafe-fixes`): every such key is
  dropped from the event at once (the SDK names only the first), its value
  kept in the run's backup; a newer release then no longer sees that value. A
  `parent_id` that a pre-tree release refuses is never dropped."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "drop every key the release forbids from that event (all at once: the SDK names only the first); the values stay in the run's backup. The better fix is a server at least as new as the one that wrote the conversation",
            guards: "a top-level key of an event of the log that the release's model of its kind does not have; never `parent_id` (a pre-tree reader is told to upgrade instead); unsafe because a newer release loses that value",
            planner: Some(plan),
            phase: crate::edit::Phase::Readable,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        ctx.read_failures(self.id(), out, |i, e| {
            let ReadError::UnknownField { kind, field } = e else {
                return None;
            };
            Some(format!(
                "event {} ({}) has the key `{}`, which SDK {} does not know for that kind (written by a newer release?)",
                ix(i),
                ctx.quote(kind),
                ctx.quote(field),
                ctx.reader.kinds.source,
            ))
        });
    }
}

/// Drop every key the release does not know from each such event (all at
/// once: the SDK names only the first, and would name the next).
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    for i in 0..ctx.reader.len() {
        let Err(ReadError::UnknownField { kind, .. }) = ctx.reader.read(i) else {
            continue;
        };
        let rel = ctx.event_path(i);
        let fields = ctx
            .reader
            .record(i)
            .map(|r| ctx.reader.unknown_fields(r))
            .unwrap_or_default();
        if fields.iter().any(|f| f == "parent_id") {
            p.leave(
                rel,
                "a pre-tree release cannot read a tree-era event: run 1.31 or newer",
            );
            continue;
        }
        for field in fields {
            p.drop_key(
                rel.clone(),
                &format!("/{}", field.replace('~', "~0").replace('/', "~1")),
                crate::edit::Safety::Unsafe,
                format!(
                    "drop `{}` from event {} ({}), which SDK {} does not know for that kind",
                    ctx.quote(&field),
                    ix(i),
                    ctx.quote(&kind),
                    ctx.reader.kinds.source
                ),
            );
        }
    }
}
