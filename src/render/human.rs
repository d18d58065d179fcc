//! `--format human`: a block per conversation, then a summary.

use std::fmt::Write as _;
use std::io::{self, Write};

use owo_colors::OwoColorize;

use super::layout::{table, wrap};
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
    /// Wrap at this many columns (stdout is a terminal); `None`: never wrap.
    width: Option<usize>,
}

impl Human {
    /// Human output for stdout: wrapped at its width when it is a terminal.
    pub fn new(color: bool) -> Self {
        Self::with_width(color, super::stdout_width())
    }

    pub fn with_width(color: bool, width: Option<usize>) -> Self {
        Human { color, width }
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
        let width = self.width;
        let _ = writeln!(s, "{}", self.strong(&clean(r, &r.path)));
        for f in &r.findings {
            // The file relative to the conversation, whose full path heads
            // the block: lines short enough to paste into a ticket (`--format
            // concise` keeps the full path on every line, for grep). On a
            // terminal the message wraps under the head, which is never split.
            let head = if f.file.is_empty() {
                format!("  {}[{}]:", self.sev(f.severity), f.check)
            } else {
                format!(
                    "  {}[{}] {}:",
                    self.sev(f.severity),
                    f.check,
                    clean(r, &f.file),
                )
            };
            let message = clean(r, &f.message);
            let fix = super::fixable_tag(f).map(|t| self.faint(t));
            let words = message.split(' ').map(str::to_string).chain(fix);
            let _ = writeln!(s, "{}", wrap(&head, words, 4, width));
        }
        let arrow = format!("  {}", self.faint("→"));
        let verdict = self.verdict(r);
        let _ = writeln!(s, "{}", wrap(&arrow, verdict.split(' '), 4, width));
        if let Some(listed) = r.listed {
            let how = if listed { "yes" } else { "no (see not-listed)" };
            let text = format!("listed by agent-server {}: {how}", r.server_version);
            let _ = writeln!(s, "{}", wrap(&arrow, text.split(' '), 4, width));
        }
        if let Some(tree) = &r.tree {
            s.push_str(&super::tree::draw(r, tree, self.color));
        }
        if let Some(rows) = &r.event_list {
            let mut cells: Vec<[String; 6]> = Vec::with_capacity(rows.len() + 1);
            cells.push(["index", "kind", "source", "parent", "agent", "note"].map(String::from));
            for row in rows {
                let parent = match (row.parent_link, row.parent) {
                    ("root", _) => "__root__".to_string(),
                    ("missing", _) => "(missing)".to_string(),
                    ("legacy", Some(p)) => format!("{p:05} (legacy)"),
                    (_, Some(p)) => format!("{p:05}"),
                    (_, None) => "-".to_string(),
                };
                let mark = if row.in_agent_view { "yes" } else { "-" };
                cells.push([
                    format!("{:05}", row.index),
                    clean(r, row.kind.as_deref().unwrap_or("?")),
                    clean(r, row.source.as_deref().unwrap_or("-")),
                    clean(r, &parent),
                    mark.to_string(),
                    clean(r, &row.note),
                ]);
            }
            let lines = table(&cells, width);
            for (i, line) in lines.into_iter().enumerate() {
                let line = match i.checked_sub(1) {
                    None => self.faint(&line),
                    Some(k) if self.color && !rows[k].in_agent_view => line.dimmed().to_string(),
                    Some(_) => line,
                };
                let _ = writeln!(s, "{line}");
            }
        }
        s.push('\n');
        // Every piece was redacted before it was escaped; redacting the whole
        // block again is the backstop for anything composed after.
        w.write_all(r.redactor.redact(&s).as_bytes())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let mut t = String::new();
        let width = self.width;
        // One line of the summary, wrapped at the terminal's width with its
        // continuation indented two columns deeper than the line.
        let line = |t: &mut String, text: &str| {
            let lead = text.len() - text.trim_start_matches(' ').len();
            let mut words = text[lead..].split(' ');
            let first = format!("{}{}", &text[..lead], words.next().unwrap_or(""));
            let _ = writeln!(t, "{}", wrap(&first, words, lead + 2, width));
        };
        let mut head = String::new();
        let n = s.conversations;
        let _ = write!(
            head,
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
            let _ = write!(head, ", {} cannot load", s.cannot_load);
        }
        if s.events_orphaned > 0 {
            let _ = write!(
                head,
                "; {} the agents cannot see",
                plural(s.events_orphaned, "event", "events")
            );
        }
        line(&mut t, &head);
        if !s.by_check.is_empty() {
            let mut checks: Vec<(&&str, &usize)> = s.by_check.iter().collect();
            checks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            // each `check ×N,` stays whole on its line
            let last = checks.len() - 1;
            let list = checks
                .iter()
                .enumerate()
                .map(|(i, (c, k))| format!("{c} ×{k}{}", if i < last { "," } else { "" }));
            let _ = writeln!(t, "{}", wrap("findings:", list, 2, width));
        }
        if let Some(text) = super::fixable_advice(s) {
            line(&mut t, &text);
        }
        if s.conversations > 1 && !s.worst.is_empty() {
            let _ = writeln!(t, "worst first:");
            for x in &s.worst {
                // the head keeps its path on its line, however wide
                let _ = writeln!(
                    t,
                    "  {} {}",
                    self.sev(x.rank.1),
                    self.strong(&sanitize(&x.path)),
                );
                let arrow = format!("    {}", self.faint("→"));
                let verdict = sanitize(&x.verdict);
                let _ = writeln!(t, "{}", wrap(&arrow, verdict.split(' '), 6, width));
            }
        }
        if s.skipped_unmodified > 0 {
            let text = format!(
                "{} not modified since the cutoff (--since/--changed-since) and not scanned",
                plural(s.skipped_unmodified, "conversation", "conversations")
            );
            line(&mut t, &text);
        }
        if let Some(shard) = &s.shard {
            line(
                &mut t,
                &format!("shard {shard}: only this shard's conversations were scanned"),
            );
        }
        if s.errors > 0 {
            line(&mut t, &s.errors_line());
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
                    "elapsed {secs:.2} s ({}{rate})",
                    plural(s.events_on_disk, "event", "events")
                ))
            );
        }
        // the summary names conversations: it passes through the run's
        // redactor like every other output
        w.write_all(redact_all(&t).as_bytes())?;
        w.flush()?;
        // notes are not the report: stderr, as errors (docs/output.md)
        super::notes(&s.notes);
        Ok(())
    }
}
