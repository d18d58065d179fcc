//! `unknown-field`: an event carries a key the selected release's model of
//! that kind does not have. Events forbid extra keys, so the SDK refuses it.

use super::{ix, Check, Ctx, Finding, Repair};
use crate::view::ReadError;

pub struct UnknownField;

impl Check for UnknownField {
    fn id(&self) -> &'static str {
        "unknown-field"
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
  None: run a server at least as new as the one that wrote the
  conversation. `--server-version` selects the release whose fields apply."
    }

    fn repair(&self) -> Repair {
        Repair::manual("run a server at least as new as the one that wrote the conversation")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for i in 0..ctx.reader.len() {
            let Err(ReadError::UnknownField { kind, field }) = ctx.reader.read(i) else {
                continue;
            };
            let (sev, tail) = ctx.read_failure(i);
            out.push(Finding::new(
                self.id(),
                sev,
                ctx.event_path(i),
                format!(
                    "event {} ({}) has the key `{}`, which SDK {} does not know for that kind (written by a newer release?); {tail}",
                    ix(i),
                    ctx.quote(&kind),
                    ctx.quote(&field),
                    ctx.reader.kinds.source,
                ),
            ));
        }
    }
}
