//! `--format human`: a block per conversation, then a summary.

use std::fmt::Write as _;
use std::io::{self, Write};

use owo_colors::OwoColorize;

use super::{sanitize, Renderer, Summary};
use crate::checks::{plural, Severity};
use crate::report::ConversationReport;
use crate::secrets::redact_all;

/// An untrusted string for the terminal: secrets redacted first (a secret
/// holding a control character must still match), then escaped.
fn clean(r: &ConversationReport, s: &str) -> String {
    sanitize(&r.redactor.redact(s))
}

pub struct Human {
    color: bool,
}

impl Human {
    pub fn new(color: bool) -> Self {
        Human { color }
    }

    fn sev(&self, s: Severity) -> String {
        let label = s.as_str();
        if !self.color {
            return label.to_string();
        }
        match s {
            Severity::Error => label.red().bold().to_string(),
            Severity::Warning => label.yellow().bold().to_string(),
            Severity::Info => label.cyan().to_string(),
        }
    }

    fn strong(&self, s: &str) -> String {
        if self.color {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    }

    fn faint(&self, s: &str) -> String {
        if self.color {
            s.dimmed().to_string()
        } else {
            s.to_string()
        }
    }

    fn verdict(&self, r: &ConversationReport) -> String {
        let v = clean(r, &r.verdict);
        if !self.color {
            return v;
        }
        if r.events.agent_view.is_none() {
            v.red().to_string()
        } else if r.events.orphaned > 0 && r.worst() >= Some(Severity::Warning) {
            v.yellow().to_string()
        } else {
            v.green().to_string()
        }
    }
}

impl Renderer for Human {
    fn conversation(&mut self, w: &mut dyn Write, r: &ConversationReport) -> io::Result<()> {
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.strong(&clean(r, &r.path)));
        for f in &r.findings {
            let fix = if f.fixable { " [fixable]" } else { "" };
            // The conversation's path on every finding line: `grep
            // false-root` keeps which conversation it was.
            let _ = writeln!(
                s,
                "  {}[{}] {}: {}{}",
                self.sev(f.severity),
                f.check,
                clean(r, &super::concise::location(&r.path, &f.file)),
                clean(r, &f.message),
                self.faint(fix)
            );
        }
        let _ = writeln!(s, "  {} {}", self.faint("→"), self.verdict(r));
        if let Some(listed) = r.listed {
            let how = if listed { "yes" } else { "no (see not-listed)" };
            let _ = writeln!(
                s,
                "  {} listed by agent-server {}: {how}",
                self.faint("→"),
                r.server_version
            );
        }
        if let Some(tree) = &r.tree {
            s.push_str(&super::tree::draw(r, tree, self.color));
        }
        if let Some(rows) = &r.event_list {
            let _ = writeln!(
                s,
                "  {}",
                self.faint(&format!(
                    "{:<7} {:<30} {:<11} {:<18} {:<5} {}",
                    "index", "kind", "source", "parent", "agent", "note"
                ))
            );
            for row in rows {
                let parent = match &row.parent {
                    serde_json::Value::Null => "-".to_string(),
                    serde_json::Value::Number(n) => format!("{:05}", n.as_u64().unwrap_or(0)),
                    serde_json::Value::String(p) => p.clone(),
                    other => other.to_string(),
                };
                let mark = if row.in_agent_view { "yes" } else { "-" };
                let line = format!(
                    "{:05}   {:<30} {:<11} {:<18} {:<5} {}",
                    row.index,
                    clean(r, row.kind.as_deref().unwrap_or("?")),
                    clean(r, row.source.as_deref().unwrap_or("-")),
                    clean(r, &parent),
                    mark,
                    clean(r, &row.note)
                );
                let line = if self.color && !row.in_agent_view {
                    line.dimmed().to_string()
                } else {
                    line
                };
                let _ = writeln!(s, "  {line}");
            }
        }
        s.push('\n');
        // Every piece was redacted before it was escaped; redacting the whole
        // block again is the backstop for anything composed after.
        w.write_all(r.redactor.redact(&s).as_bytes())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let mut t = String::new();
        let n = s.conversations;
        let _ = write!(
            t,
            "{} {} scanned: {} clean, {} with findings",
            n,
            if n == 1 {
                "conversation"
            } else {
                "conversations"
            },
            s.clean,
            s.with_findings
        );
        if s.cannot_load > 0 {
            let _ = write!(t, ", {} cannot load", s.cannot_load);
        }
        if s.events_orphaned > 0 {
            let _ = write!(t, "; {} events the agents cannot see", s.events_orphaned);
        }
        t.push('\n');
        if !s.by_check.is_empty() {
            let mut checks: Vec<(&&str, &usize)> = s.by_check.iter().collect();
            checks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let list: Vec<String> = checks.iter().map(|(c, k)| format!("{c} ×{k}")).collect();
            let _ = writeln!(t, "findings: {}", list.join(", "));
        }
        if s.fixable > 0 {
            let _ = writeln!(
                t,
                "{} fixable with `convo-doctor repair` (`repair --dry-run` shows the diff)",
                s.fixable
            );
        }
        if s.conversations > 1 && !s.worst.is_empty() {
            let _ = writeln!(t, "worst first:");
            for x in &s.worst {
                let _ = writeln!(
                    t,
                    "  {} {}\n    {} {}",
                    self.sev(x.rank.1),
                    self.strong(&sanitize(&x.path)),
                    self.faint("→"),
                    sanitize(&x.verdict)
                );
            }
        }
        if s.skipped_unmodified > 0 {
            let _ = writeln!(
                t,
                "{} not modified since the cutoff (--since/--changed-since) and not scanned",
                plural(s.skipped_unmodified, "conversation", "conversations")
            );
        }
        if let Some(shard) = &s.shard {
            let _ = writeln!(
                t,
                "shard {shard}: only this shard's conversations were scanned"
            );
        }
        for note in &s.notes {
            let _ = writeln!(t, "note: {}", sanitize(&redact_all(note)));
        }
        // Only a batch gets its timing (one conversation's output stays
        // reproducible byte for byte).
        if let Some(d) = s.elapsed.filter(|_| s.conversations > 1) {
            let secs = d.as_secs_f64();
            let rate = if secs > 0.0 {
                format!(", {:.0} events/s", s.events_on_disk as f64 / secs)
            } else {
                String::new()
            };
            let _ = writeln!(
                t,
                "{}",
                self.faint(&format!(
                    "elapsed {secs:.2} s ({} events{rate})",
                    s.events_on_disk
                ))
            );
        }
        // the summary names conversations and quotes notes: it passes
        // through the run's redactor like every other output
        w.write_all(redact_all(&t).as_bytes())?;
        w.flush()
    }
}
