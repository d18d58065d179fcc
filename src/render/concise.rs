//! `--format concise`: one greppable line per finding, carrying the
//! conversation's path (`PATH/events/event-00007-….json: error[false-root]
//! message`, as ruff's concise output does), then a short summary.

use std::io::{self, Write};

use super::{sanitize, severity, Renderer, Summary};
use crate::checks::{plural, Severity};
use crate::report::ConversationReport;
use crate::secrets::redact_all;

pub struct Concise;

impl Renderer for Concise {
    fn conversation(&mut self, w: &mut dyn Write, r: &ConversationReport) -> io::Result<()> {
        let clean = |s: &str| sanitize(&r.redactor.redact(s));
        let mut s = String::new();
        for f in &r.findings {
            s.push_str(&format!(
                "{}: {}[{}] {}{}\n",
                clean(&super::location(&r.path, &f.file)),
                f.severity.as_str(),
                f.check,
                clean(&f.message),
                super::fixable_tag(f)
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            ));
        }
        // A conversation the SDK cannot load is never silent, even when the
        // selected checks found nothing to say about it.
        let has_error = r.findings.iter().any(|f| f.severity == Severity::Error);
        if severity(r) == Some(Severity::Error) && !has_error {
            s.push_str(&format!(
                "{}: error: {}\n",
                clean(&r.path),
                clean(&r.verdict)
            ));
        }
        w.write_all(r.redactor.redact(&s).as_bytes())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let total: usize = s.findings.values().sum();
        let mut t = format!(
            "{}; {} scanned: {} clean, {} with findings",
            plural(total, "finding", "findings"),
            plural(s.conversations, "conversation", "conversations"),
            s.clean,
            s.with_findings
        );
        if s.cannot_load > 0 {
            t.push_str(&format!(", {} cannot load", s.cannot_load));
        }
        t.push('\n');
        if let Some(advice) = super::fixable_advice(s) {
            t.push_str(&advice);
            t.push('\n');
        }
        if s.errors > 0 {
            t.push_str(&s.errors_line());
            t.push('\n');
        }
        w.write_all(redact_all(&t).as_bytes())?;
        w.flush()?;
        super::notes(&s.notes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::render::location;

    #[test]
    fn locations_join_the_conversation_path() {
        assert_eq!(location("s/abc", "events/e.json"), "s/abc/events/e.json");
        assert_eq!(location("s/abc/", "meta.json"), "s/abc/meta.json");
        assert_eq!(location("s/abc", ""), "s/abc");
    }
}
