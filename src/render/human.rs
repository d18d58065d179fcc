//! `--format human`: a block per conversation, then a summary.

use std::fmt::Write as _;
use std::io::{self, Write};

use owo_colors::OwoColorize;
use unicode_width::UnicodeWidthChar;

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

/// Columns a string takes on a terminal: display width (a CJK character
/// takes two, a combining mark none), not bytes; the colour sequences this
/// renderer adds take none (untrusted text is escaped by `sanitize`, so every
/// ESC in a line is ours).
pub fn width_of(s: &str) -> usize {
    let mut w = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        w += c.width().unwrap_or(0);
    }
    w
}

/// `first`, then `words` each after a space, wrapped at `width` columns:
/// continuation lines are indented by `indent` spaces. `first` (a finding's
/// `severity[check] PATH:` head) and each word are never split, so a path
/// stays whole and greppable even when it is wider than the terminal. An
/// empty word (two spaces in a row of the text it was split from) keeps its
/// space, except where the line breaks; without a width the text is
/// returned exactly. No trailing newline.
pub fn wrap<S: AsRef<str>>(
    first: &str,
    words: impl IntoIterator<Item = S>,
    indent: usize,
    width: Option<usize>,
) -> String {
    let mut out = first.to_string();
    let Some(max) = width else {
        for word in words {
            out.push(' ');
            out.push_str(word.as_ref());
        }
        return out;
    };
    let mut col = width_of(first);
    for word in words {
        let word = word.as_ref();
        let w = width_of(word);
        if col + 1 + w <= max {
            out.push(' ');
            out.push_str(word);
            col += 1 + w;
        } else if !word.is_empty() {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(word);
            col = indent + w;
        }
    }
    out
}

/// `s` cut to `max` columns, its end replaced by `…` when it was longer.
fn elide(s: &str, max: usize) -> String {
    if width_of(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// The `--events` table's columns the terminal's width may elide (kind and
/// the why-not note), and the narrowest each may become.
const KIND: usize = 1;
const NOTE: usize = 5;
const MIN_ELIDED: usize = 6;

/// Lay `rows` (the header first) out in columns sized to their content,
/// each line indented by two. Without a `width` (a pipe, a file) columns are
/// two spaces apart and nothing is cut. With one, the kind and note columns,
/// widest first, are elided with `…` until the table fits (one space apart
/// when two do not leave them `MIN_ELIDED` columns each); a table that
/// cannot fit even then overflows rather than cut the other columns. The last
/// column is not padded.
fn table(rows: &[[String; 6]], width: Option<usize>) -> Vec<String> {
    let mut cols = [0usize; 6];
    for row in rows {
        for (c, cell) in row.iter().enumerate() {
            cols[c] = cols[c].max(width_of(cell));
        }
    }
    let total = |cols: &[usize; 6], gap: usize| 2 + cols.iter().sum::<usize>() + gap * 5;
    let mut gap = 2;
    if let Some(max) = width {
        let mut narrowest = cols;
        narrowest[KIND] = cols[KIND].min(MIN_ELIDED);
        narrowest[NOTE] = cols[NOTE].min(MIN_ELIDED);
        if total(&narrowest, 2) > max {
            gap = 1;
        }
        while total(&cols, gap) > max {
            let (wider, other) = if cols[NOTE] >= cols[KIND] {
                (NOTE, KIND)
            } else {
                (KIND, NOTE)
            };
            let c = if cols[wider] > MIN_ELIDED {
                wider
            } else if cols[other] > MIN_ELIDED {
                other
            } else {
                break;
            };
            cols[c] -= 1;
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::from("  ");
            for (c, cell) in row.iter().enumerate() {
                let cell = elide(cell, cols[c]);
                line.push_str(&cell);
                if c + 1 < row.len() {
                    let pad = cols[c] - width_of(&cell) + gap;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_is_display_columns_without_colour_codes() {
        assert_eq!(width_of("abc"), 3);
        // two columns per CJK character, none for a combining accent
        assert_eq!(width_of("日本"), 4);
        assert_eq!(width_of("e\u{301}"), 1);
        assert_eq!(width_of("\x1b[31;1merror\x1b[0m[x]"), 8);
        // an escaped control character is text: `\u{1b}` is 6 columns
        assert_eq!(width_of(&sanitize("\x1b")), 6);
    }

    #[test]
    fn wrap_keeps_the_head_and_words_whole() {
        let w = Some(20);
        // fits: one line
        assert_eq!(wrap("  a:", "b c".split(' '), 4, w), "  a: b c");
        // the head wider than the width stays whole; the words go under it
        let head = "  error[x] some/long/path.json:";
        assert_eq!(
            wrap(head, "one two three four five".split(' '), 4, w),
            format!("{head}\n    one two three\n    four five")
        );
        // a word wider than the width is not split
        assert_eq!(
            wrap("  a:", ["x", "0123456789012345678901", "y"], 4, w),
            "  a: x\n    0123456789012345678901\n    y"
        );
        // CJK counts two columns: 5 characters take 10
        assert_eq!(
            wrap("ab", ["日本語日本", "日本語日本"], 0, Some(13)),
            "ab 日本語日本\n日本語日本"
        );
        // without a width nothing wraps, and every space is kept
        let long = "w  ".repeat(100);
        assert_eq!(wrap("x:", long.split(' '), 4, None), format!("x: {long}"));
        // with one, doubled spaces are kept within a line
        assert_eq!(wrap("x:", "a  b".split(' '), 4, w), "x: a  b");
    }

    #[test]
    fn elide_cuts_to_display_width() {
        assert_eq!(elide("MessageEvent", 12), "MessageEvent");
        assert_eq!(elide("MessageEvent", 8), "Message…");
        assert_eq!(elide("日本語日本", 6), "日本…");
        assert_eq!(width_of(&elide("日本語日本", 6)), 5);
    }

    #[test]
    fn table_fits_by_eliding_kind_and_note_only() {
        let rows: Vec<[String; 6]> = [
            ["index", "kind", "source", "parent", "agent", "note"],
            [
                "00000",
                "ConversationStateUpdateEvent",
                "environment",
                "00001 (legacy)",
                "-",
                "state-sync artifact",
            ],
            ["00001", "MessageEvent", "user", "__root__", "yes", ""],
        ]
        .iter()
        .map(|r| r.map(String::from))
        .collect();
        let whole = table(&rows, None);
        assert_eq!(
            whole[1],
            "  00000  ConversationStateUpdateEvent  environment  00001 (legacy)  -      state-sync artifact"
        );
        assert_eq!(
            whole[2],
            "  00001  MessageEvent                  user         __root__        yes"
        );
        let narrow = table(&rows, Some(60));
        for l in &narrow {
            assert!(width_of(l) <= 60, "{l:?}");
        }
        assert!(narrow[1].starts_with("  00000  "), "{:?}", narrow[1]);
        assert!(
            narrow[1].contains("environment  00001 (legacy)  -"),
            "{:?}",
            narrow[1]
        );
        assert!(narrow[1].contains('…'));
    }
}
