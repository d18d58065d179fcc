//! Renderers: the only code that writes to stdout or stderr.

pub mod concise;
pub mod human;
pub mod json;
pub mod layout;
pub mod markdown;
mod messages;
pub mod output;
pub mod progress;
pub mod prometheus;
pub mod repair;
pub mod runs;
pub mod sessions;
pub mod tree;

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::checks::Severity;
use crate::report::ConversationReport;

/// Output format of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Readable text, one block per conversation, then a summary.
    Human,
    /// One JSON document: {"schema_version", "conversations", "summary"}.
    Json,
    /// One JSON object per line per conversation, then a {"summary"} line.
    Jsonl,
    /// One greppable line per finding: `PATH/FILE: severity[check] message`.
    Concise,
    /// The run's totals as Prometheus metrics, for node_exporter's textfile
    /// collector.
    Prometheus,
    /// A redacted report to paste into a ticket or a GitHub issue: findings
    /// tables and each tree as a Mermaid graph.
    Markdown,
}

/// When to colour human output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb.
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var("TERM").map_or(true, |t| t != "dumb")
            }
        }
    }
}

pub use crate::text::{is_unsafe_char, sanitize};
pub use messages::{
    error, fail, hold_messages, note, notes, release_messages, usage_error, warning,
};

/// The width human output wraps at: `None` unless stdout is a terminal (a
/// pipe or a file never wraps, so `grep` keeps whole lines); then `COLUMNS`
/// when it is a positive number (as ripgrep and ruff users expect), else the
/// terminal's own size, else 80.
pub fn stdout_width() -> Option<usize> {
    let stdout = io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    let size = || {
        terminal_size::terminal_size_of(&stdout)
            .map(|(w, _)| usize::from(w.0))
            .filter(|&w| w > 0)
    };
    Some(columns.or_else(size).unwrap_or(80))
}

/// Totals over every conversation of a run.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub conversations: usize,
    pub clean: usize,
    pub with_findings: usize,
    pub cannot_load: usize,
    pub events_on_disk: usize,
    pub events_orphaned: usize,
    pub findings: BTreeMap<&'static str, usize>,
    pub by_check: BTreeMap<&'static str, usize>,
    /// Findings `convo-doctor repair` fixes (each finding's `fixable`).
    pub fixable: usize,
    /// Findings only `convo-doctor repair --unsafe-fixes` fixes (each
    /// finding's `fixable_unsafe`).
    pub fixable_unsafe: usize,
    /// Findings per (check id, severity) (Prometheus output only).
    #[serde(skip)]
    pub by_check_severity: BTreeMap<(&'static str, Severity), usize>,
    /// Paths passed over during the scan, each a sentence.
    pub notes: Vec<String>,
    /// Scan errors: PATHs that could not be scanned or held no conversation,
    /// folders this user may not list, conversations not wholly readable
    /// (permission, I/O) or that could not be analysed. The report is
    /// incomplete and the run exits 2.
    pub errors: usize,
    /// What each scan error was, in the order met (the first
    /// [`ERRORS_LISTED`]; `errors` counts them all).
    pub error_messages: Vec<String>,
    /// An error ended the run, or left it nothing to diagnose (a `--db`
    /// that cannot be read, no conversation found, an `--id` naming none):
    /// not a scan that could not read everything.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// Conversations passed over by `--since` / `--changed-since`.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_unmodified: usize,
    /// The `--shard K/N` this report covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The worst conversations, worst first (human output only).
    #[serde(skip)]
    pub worst: Vec<Worst>,
    /// Wall time of the run (human output only: JSON stays deterministic).
    #[serde(skip)]
    pub elapsed: Option<std::time::Duration>,
}

/// What a repair run's summary says of its scan, in `diagnose`'s words.
#[derive(Debug, Default, Serialize)]
pub struct ScanInfo {
    /// Scan errors (see [`Summary::errors`]): the run exits 2.
    pub errors: usize,
    /// What each was (the first [`ERRORS_LISTED`]).
    pub error_messages: Vec<String>,
    /// Conversations passed over by `--since` / `--changed-since`.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_unmodified: usize,
    /// The `--shard K/N` this run covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

impl ScanInfo {
    /// A scan error: printed on stderr now, counted and quoted.
    pub fn error(&mut self, msg: String) {
        error(&msg);
        self.errors += 1;
        if self.error_messages.len() < ERRORS_LISTED {
            self.error_messages.push(crate::secrets::redact_all(&msg));
        }
    }
}

/// What the summary advises of the fixable findings, naming the command
/// for each kind (as ruff's "N fixable with the `--fix` option (M hidden
/// fixes can be enabled with the `--unsafe-fixes` option)"); `None` when
/// nothing is fixable.
pub fn fixable_advice(s: &Summary) -> Option<String> {
    match (s.fixable, s.fixable_unsafe) {
        (0, 0) => None,
        (0, m) => Some(format!(
            "{m} fixable with `convo-doctor repair --unsafe-fixes` (`repair --dry-run --unsafe-fixes` shows the diff)"
        )),
        (n, 0) => Some(format!(
            "{n} fixable with `convo-doctor repair` (`repair --dry-run` shows the diff)"
        )),
        (n, m) => Some(format!(
            "{n} fixable with `convo-doctor repair`; {m} more with `--unsafe-fixes` (`repair --dry-run` shows the diff)"
        )),
    }
}

/// A finding's mark: what fixes it, if anything does.
pub fn fixable_tag(f: &crate::checks::Finding) -> Option<&'static str> {
    if f.fixable {
        Some("[fixable]")
    } else if f.fixable_unsafe {
        Some("[fixable with --unsafe-fixes]")
    } else {
        None
    }
}

/// How many scan errors a summary quotes (stderr has every one).
pub const ERRORS_LISTED: usize = 100;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many conversations the human summary names.
pub const WORST_SHOWN: usize = 10;

/// One of the worst conversations of a run.
#[derive(Debug)]
pub struct Worst {
    /// Ranks worst first: cannot load, worst severity, events the agent
    /// cannot see, number of findings.
    pub rank: (bool, Severity, usize, usize),
    pub path: String,
    /// The verdict, already redacted.
    pub verdict: String,
}

/// How bad a conversation is for `--fail-on`, `--hide-clean` and the
/// summary: its worst selected finding, and an error when the SDK cannot load
/// it whatever checks were selected (the verdict comes from the views, not
/// from `--only`/`--skip`).
pub fn severity(r: &ConversationReport) -> Option<Severity> {
    let cannot_load = r.events.agent_view.is_none().then_some(Severity::Error);
    r.worst().max(cannot_load)
}

impl Summary {
    /// A scan error: printed on stderr now, counted and quoted in the
    /// summary.
    pub fn error(&mut self, msg: String) {
        error(&msg);
        self.errors += 1;
        if self.error_messages.len() < ERRORS_LISTED {
            self.error_messages.push(crate::secrets::redact_all(&msg));
        }
    }

    /// An error that ended the run or left it nothing to diagnose: counted
    /// as a scan error (exit 2), and said as a failure.
    pub fn fail(&mut self, msg: String) {
        self.failed = true;
        self.error(msg);
    }

    /// The summary's line about its errors.
    pub fn errors_line(&self) -> String {
        match self.failed {
            true => format!(
                "{}: the run failed (the errors are on stderr; exit status 2)",
                crate::checks::plural(self.errors, "error", "errors")
            ),
            false => errors_line(self.errors),
        }
    }

    pub fn add(&mut self, r: &ConversationReport) {
        self.conversations += 1;
        if severity(r).is_some_and(|s| s > Severity::Info) {
            self.with_findings += 1;
        } else {
            self.clean += 1;
        }
        if r.events.agent_view.is_none() {
            self.cannot_load += 1;
        }
        self.events_on_disk += r.events.on_disk;
        self.events_orphaned += r.events.orphaned;
        for f in &r.findings {
            *self.findings.entry(f.severity.as_str()).or_default() += 1;
            *self.by_check.entry(f.check).or_default() += 1;
            self.fixable += usize::from(f.fixable);
            self.fixable_unsafe += usize::from(f.fixable_unsafe);
            *self
                .by_check_severity
                .entry((f.check, f.severity))
                .or_default() += 1;
        }
        self.rank_worst(r);
    }

    /// Keep the `WORST_SHOWN` worst conversations with a finding above info
    /// (ties keep the first in path order): memory stays flat.
    fn rank_worst(&mut self, r: &ConversationReport) {
        let Some(sev) = severity(r).filter(|&s| s > Severity::Info) else {
            return;
        };
        let rank = (
            r.events.agent_view.is_none(),
            sev,
            r.events.orphaned,
            r.findings.len(),
        );
        if self.worst.len() == WORST_SHOWN && self.worst.last().is_some_and(|w| w.rank >= rank) {
            return;
        }
        let at = self.worst.partition_point(|w| w.rank >= rank);
        self.worst.insert(
            at,
            Worst {
                rank,
                path: r.path.clone(),
                verdict: r.redactor.redact(&r.verdict).into_owned(),
            },
        );
        self.worst.truncate(WORST_SHOWN);
    }
}

/// A renderer of diagnose reports, fed one conversation at a time.
pub trait Renderer {
    fn conversation(&mut self, w: &mut dyn Write, r: &ConversationReport) -> io::Result<()>;
    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()>;
}

pub fn renderer(format: Format, color: bool) -> Box<dyn Renderer> {
    match format {
        Format::Human => Box::new(human::Human::new(color)),
        Format::Json => Box::new(json::Json::document()),
        Format::Jsonl => Box::new(json::Json::lines()),
        Format::Concise => Box::new(concise::Concise),
        Format::Prometheus => Box::new(prometheus::Prometheus),
        Format::Markdown => Box::new(markdown::Markdown::default()),
    }
}

/// Write text to stdout.
pub fn out(text: &str) -> io::Result<()> {
    let mut o = io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()
}

/// Where a finding is: the conversation path joined with its file.
pub fn location(conv_path: &str, file: &str) -> String {
    if file.is_empty() {
        conv_path.to_string()
    } else {
        format!("{}/{file}", conv_path.trim_end_matches('/'))
    }
}

/// The summary's line about scan errors (human and concise output).
pub fn errors_line(n: usize) -> String {
    format!(
        "{}: not everything could be read, so this report is incomplete (the errors are on stderr; exit status 2)",
        crate::checks::plural(n, "scan error", "scan errors")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_neutralises_escapes() {
        assert_eq!(sanitize("a\x1b[31mb"), "a\\u{1b}[31mb");
        assert_eq!(sanitize("x\u{202E}y"), "x\\u{202e}y");
        assert_eq!(sanitize("plain ü"), "plain ü");
        assert_eq!(sanitize("l1\nl2"), "l1\\u{a}l2");
    }
}
