//! What the JSONL-session formats (Claude Code sessions, Codex rollouts)
//! share in their repair output: one JSON document, or a line per session
//! then the summary, each outcome through its own redactor.

use std::io::{self, Write};

use crate::secrets::{redact_all, Redactor};

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
