//! `bad-event-filename`: an `event-*.json` whose name the SDK does not accept,
//! or does not read back under that name.

use super::{ix, Check, Ctx, Finding, Repair, Severity};
use crate::view::{LoadError, ReadError};

pub struct BadEventFilename;

impl Check for BadEventFilename {
    fn id(&self) -> &'static str {
        "bad-event-filename"
    }

    fn summary(&self) -> &'static str {
        "A file named like an event does not follow the SDK's event-name rule"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A file in events/ whose name starts `event-` and ends `.json` but does not
  match `^event-(\\d{5,})-([0-9a-fA-F-]{8,})\\.json$` (a short index, a non-hex
  id, extra text), or one that matches but is not spelled the way the SDK
  rebuilds the path to read it (`event-{idx:05d}-{id}.json`, e.g. a 6-digit
  spelling of a small index).

Why it matters
  A non-matching file is invisible to the SDK, but its count-on-disk still
  counts it, so the next append writes at an inflated index: a gap, and the
  new event (and the HEAD) vanish on the next restart. A matching but
  non-canonical name is read as a path that does not exist
  (FileNotFoundError).

Repair
  None automatic yet (moving the stray file to a quarantine folder is planned)."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "the SDK never reads a misnamed file; which index it belongs at needs a human",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for s in &ctx.conv.events.stray {
            let content = match &s.record {
                Some(r) => format!(
                    " It holds a {} the SDK will never show.",
                    ctx.quote(&r.kind)
                ),
                None => String::new(),
            };
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                format!("events/{}", s.name),
                format!(
                    "`{}` does not match the SDK's event-name rule: it is invisible, and the next append will skip an index and leave a gap.{content}",
                    s.name
                ),
            ));
        }
        let blocking = match ctx.load_error() {
            Some(LoadError::Read { idx, .. }) => Some(*idx),
            _ => None,
        };
        for i in 0..ctx.reader.len() {
            if let Err(ReadError::NonCanonicalName { expected }) = ctx.reader.read(i) {
                out.push(Finding::new(
                    self.id(),
                    if blocking == Some(i) { Severity::Error } else { Severity::Warning },
                    ctx.event_path(i),
                    format!(
                        "event {} is indexed, but the SDK reads it as `{expected}`, which does not exist",
                        ix(i)
                    ),
                ));
            }
        }
    }
}
