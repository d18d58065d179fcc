//! What `repair` says about the JSONL-session formats (Claude Code
//! sessions, Codex rollouts), human and JSON, the same for every format:
//! each file's edits (the format's [`Changes`]) and verdicts, the summary,
//! or one JSON document or a line per file then the summary, each outcome
//! through its own redactor. The reports of `diagnose` are the ordinary
//! conversation reports.

use std::io::{self, Write};

use crate::secrets::{redact_all, Redactor};
use crate::sessions::repair::{Changes, Outcome, Summary};

/// One file, human: what was (or would be) changed, and the verdict before
/// and after.
pub fn repair_outcome<C: Changes>(w: &mut dyn Write, o: &Outcome<C>) -> io::Result<()> {
    let r = |s: &str| crate::text::sanitize(&o.redactor.redact(s));
    let verb = match o.status {
        "fixed" => "fixed",
        "would-fix" => "would fix",
        "failed" => "not repaired",
        _ => "nothing to repair in",
    };
    writeln!(w, "{verb} {}", r(&o.path))?;
    for c in o.changes.items() {
        C::human(c, w, &r)?;
    }
    if let Some(e) = &o.error {
        writeln!(w, "  {}", r(e))?;
    }
    if o.changes.is_empty() || o.status == "failed" {
        writeln!(w, "  {}", r(&o.before))?;
    } else {
        writeln!(w, "  before: {}", r(&o.before))?;
        writeln!(w, "  after:  {}", r(&o.after))?;
    }
    Ok(())
}

/// The run, human: errors, how many files were (or would be) fixed, and
/// the backup to undo.
pub fn repair_summary(
    w: &mut dyn Write,
    s: &Summary,
    client: &str,
    (one, many): (&str, &str),
) -> io::Result<()> {
    for e in &s.errors {
        writeln!(w, "error: {}", crate::text::sanitize(&redact_all(e)))?;
    }
    let what = if s.dry_run { "would fix" } else { "fixed" };
    let fixed = if s.dry_run { s.would_fix } else { s.fixed };
    write!(
        w,
        "\n{} {client} {}: {what} {fixed}",
        s.sessions,
        if s.sessions == 1 { one } else { many }
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

/// `--format json` (one document: `{"sessions": [...], "summary": ...}`) or
/// `jsonl` (a line per session, then `{"summary": ...}`).
pub fn repair_json<O: serde::Serialize, S: serde::Serialize>(
    w: &mut dyn Write,
    outcomes: &[O],
    redactor: impl Fn(&O) -> &Redactor,
    s: &S,
    lines: bool,
) -> io::Result<()> {
    if lines {
        for o in outcomes {
            writeln!(w, "{}", redactor(o).redact(&to_json(o)?))?;
        }
        writeln!(w, "{{\"summary\":{}}}", redact_all(&to_json(s)?))?;
    } else {
        let mut body = String::from("{\"sessions\":[");
        for (i, o) in outcomes.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(&redactor(o).redact(&to_json(o)?));
        }
        body.push_str("],\"summary\":");
        body.push_str(&redact_all(&to_json(s)?));
        body.push('}');
        writeln!(w, "{body}")?;
    }
    Ok(())
}

fn to_json<T: serde::Serialize>(v: &T) -> io::Result<String> {
    serde_json::to_string(v).map_err(io::Error::other)
}
