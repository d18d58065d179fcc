//! What `repair` says about Claude Code sessions (human and JSON); the
//! reports of `diagnose` are the ordinary conversation reports.

use std::io::{self, Write};

use crate::claude::repair::{Outcome, Summary};
use crate::secrets::redact_all;

/// One session, human: what was (or would be) re-linked, and the verdict
/// before and after.
pub fn repair_outcome(w: &mut dyn Write, o: &Outcome) -> io::Result<()> {
    let r = |s: &str| crate::text::sanitize(&o.redactor.redact(s));
    let verb = match o.status {
        "fixed" => "fixed",
        "would-fix" => "would fix",
        "failed" => "not repaired",
        _ => "nothing to repair in",
    };
    writeln!(w, "{verb} {}", r(&o.path))?;
    for l in &o.relinked {
        let now = match (&l.parent_now, l.to_line) {
            (Some(p), Some(t)) => format!("\"{}\" (line {t})", r(p)),
            (Some(p), None) => format!("\"{}\"", r(p)),
            (None, _) => "null (a compaction's boundary is a root)".into(),
        };
        writeln!(
            w,
            "  line {}: parentUuid {} -> {now} [claude-broken-parent]",
            l.line,
            match &l.parent_was {
                Some(p) => format!("\"{}\"", r(p)),
                None => "null".into(),
            },
        )?;
    }
    if let Some(e) = &o.error {
        writeln!(w, "  {}", r(e))?;
    }
    if o.relinked.is_empty() || o.status == "failed" {
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
        "\n{} Claude Code {}: {what} {fixed}",
        s.sessions,
        if s.sessions == 1 {
            "session"
        } else {
            "sessions"
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

/// `--format json` (one document) or `jsonl` (a line per session, then the
/// summary): [`super::sessions::repair_json`].
pub fn repair_json(
    w: &mut dyn Write,
    outcomes: &[Outcome],
    s: &Summary,
    lines: bool,
) -> io::Result<()> {
    super::sessions::repair_json(w, outcomes, |o| &o.redactor, s, lines)
}
