//! What `repair` says about Codex rollouts (human and JSON); the reports of
//! `diagnose` are the ordinary conversation reports.

use std::io::{self, Write};

use crate::codex::repair::{Outcome, Summary};
use crate::secrets::redact_all;

/// One rollout, human: each edit with the line it removes or writes (a
/// diff, clipped), and the verdict before and after.
pub fn repair_outcome(w: &mut dyn Write, o: &Outcome) -> io::Result<()> {
    let r = |s: &str| crate::text::sanitize(&o.redactor.redact(s));
    let verb = match o.status {
        "fixed" => "fixed",
        "would-fix" => "would fix",
        "failed" => "not repaired",
        _ => "nothing to repair in",
    };
    writeln!(w, "{verb} {}", r(&o.path))?;
    for e in &o.edits {
        match e.line {
            Some(l) => writeln!(w, "  line {l}: {} [{}]", r(&e.what), e.check)?,
            None => writeln!(w, "  {} [{}]", r(&e.what), e.check)?,
        }
        if let Some(t) = &e.removed {
            writeln!(w, "  - {}", r(t))?;
        }
        if let Some(t) = &e.added {
            writeln!(w, "  + {}", r(t))?;
        }
    }
    if let Some(e) = &o.error {
        writeln!(w, "  {}", r(e))?;
    }
    if o.edits.is_empty() || o.status == "failed" {
        writeln!(w, "  {}", r(&o.before))?;
    } else {
        writeln!(w, "  before: {}", r(&o.before))?;
        writeln!(w, "  after:  {}", r(&o.after))?;
    }
    Ok(())
}

pub fn repair_summary(w: &mut dyn Write, s: &Summary) -> io::Result<()> {
    for e in &s.errors {
        writeln!(w, "error: {}", crate::text::sanitize(&redact_all(e)))?;
    }
    let what = if s.dry_run { "would fix" } else { "fixed" };
    let fixed = if s.dry_run { s.would_fix } else { s.fixed };
    write!(
        w,
        "\n{} Codex {}: {what} {fixed}",
        s.sessions,
        if s.sessions == 1 {
            "rollout"
        } else {
            "rollouts"
        }
    )?;
    if s.failed > 0 {
        write!(w, ", {} not repaired", s.failed)?;
    }
    writeln!(w)?;
    if let (Some(id), Some(dir)) = (&s.run_id, &s.backup_dir) {
        writeln!(
            w,
            "backup: {} (undo with `convo-doctor undo {id}`)",
            crate::text::sanitize(dir)
        )?;
    }
    Ok(())
}

/// `--format json` (one document) or `jsonl` (a line per rollout, then the
/// summary): [`super::sessions::repair_json`].
pub fn repair_json(
    w: &mut dyn Write,
    outcomes: &[Outcome],
    s: &Summary,
    lines: bool,
) -> io::Result<()> {
    super::sessions::repair_json(w, outcomes, |o| &o.redactor, s, lines)
}
