//! Claude Code sessions (issue 26): `~/.claude/projects/<project>/<session
//! uuid>.jsonl`, one JSON record a line, chained by `parentUuid`.
//!
//! The adapter reads a session ([`session`]), builds the view the client
//! resends on `--resume` ([`view`], measured with the real client: see
//! docs/claude-code.md and fixtures/claude/), runs the Claude Code checks
//! ([`checks`]) and gives the same [`ConversationReport`] the OpenHands
//! folders give, so every renderer shows it: `events` counted in the
//! client's units (lines, records, messages), `load_error` when the client
//! cannot resume, `event_list` one row per record.
//! [`repair`] re-links broken parents and answers calls whose results were
//! never recorded ([`answer`]), with a backup, a diff and an undo.

pub mod answer;
pub mod checks;
pub mod edits;
pub mod repair;
pub mod session;
pub mod view;

use std::path::Path;

use crate::report::{ConversationReport, EventCounts, EventRow, LoadFailure};
use crate::sessions::list::Listing;
use crate::sessions::{stem, Ask};
use crate::store::fsread::ReadError;

use session::{LineKind, Parent, Session};

/// What a PATH is, for the Claude Code adapter.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    /// A session file (`*.jsonl`).
    Session,
    /// A folder of sessions (a project folder): its `*.jsonl` files.
    Project,
    /// `~/.claude/projects` (or `~/.claude`): each project folder's sessions.
    Projects,
}

/// Whether `path` is a Claude Code store, told by its shape without
/// following a link: a `*.jsonl` file (a link or a FIFO so named too: reading
/// it says what it is); a folder holding a `*.jsonl` file that reads like a
/// session and no OpenHands conversation (`events/`, `base_state.json`); a
/// folder named `projects` inside `.claude`, or `.claude` itself.
pub fn shape(path: &Path) -> Option<Shape> {
    let md = std::fs::symlink_metadata(path).ok()?;
    if !md.is_dir() {
        return (path.extension().is_some_and(|e| e == "jsonl")).then_some(Shape::Session);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned());
    if name.as_deref() == Some(".claude")
        && std::fs::symlink_metadata(path.join("projects")).is_ok()
    {
        return Some(Shape::Projects);
    }
    if name.as_deref() == Some("projects") && parent.as_deref() == Some(".claude") {
        return Some(Shape::Projects);
    }
    if path.join("events").exists() || path.join("base_state.json").exists() {
        return None;
    }
    jsonl_files(path)
        .files
        .iter()
        .any(|f| looks_like_session(f))
        .then_some(Shape::Project)
}

/// Whether a `*.jsonl` file reads like a Claude Code session: its first
/// 64 KiB name `parentUuid` or `sessionId`, so a folder that merely holds
/// some other JSON Lines file is not taken for a project folder.
fn looks_like_session(path: &Path) -> bool {
    crate::sessions::read::head_says(path, &[b"\"parentUuid\"", b"\"sessionId\""], &[])
}

/// A session file's name: `*.jsonl`, one plain component, not hidden.
pub fn is_session_name(name: &str) -> bool {
    name.len() > ".jsonl".len()
        && name.ends_with(".jsonl")
        && !name.starts_with('.')
        && !name.contains('/')
        && !name.contains('\0')
}

/// How Claude Code names its session files: `*.jsonl`.
const RULE: crate::sessions::list::Rule = crate::sessions::list::Rule {
    named: &|name| Path::new(name).extension().is_some_and(|e| e == "jsonl"),
    sniffed: &|_, _| false,
    skip_hidden: false,
    files_at_top: true,
};

/// The `*.jsonl` files directly in `dir` (links not followed, but listed:
/// reading one says it is a link), sorted.
fn jsonl_files(dir: &Path) -> Listing {
    let mut l = Listing::default();
    l.walk(dir, 0, &RULE, 0);
    l
}

/// The session files a PATH of shape `s` holds, scan errors and notes.
pub fn sessions(path: &Path, s: &Shape) -> Listing {
    match s {
        Shape::Session => Listing {
            files: vec![path.to_path_buf()],
            ..Default::default()
        },
        Shape::Project => jsonl_files(path),
        Shape::Projects => {
            let root = if path.file_name().is_some_and(|n| n == ".claude") {
                path.join("projects")
            } else {
                path.to_path_buf()
            };
            let mut l = Listing::default();
            match crate::sessions::list::linked_folder(&root) {
                Some(note) => l.notes.push(note),
                None => l.walk(
                    &root,
                    1,
                    &crate::sessions::list::Rule {
                        files_at_top: false,
                        ..RULE
                    },
                    0,
                ),
            }
            l
        }
    }
}

/// The analysis of one session: the session, its view and its report.
pub struct Analysis {
    pub session: Session,
    pub view: view::View,
}

impl Analysis {
    pub fn load(path: &Path) -> Result<Analysis, ReadError> {
        let session = session::read(path)?;
        let view = view::build(&session);
        Ok(Analysis { session, view })
    }
}

/// How a Claude Code session is named in a report.
pub const WORDS: crate::sessions::Words = crate::sessions::Words {
    tag: "claude-code",
    client: "Claude Code",
    unit: "session",
    file: "the session file",
    unreadable: "unreadable session",
};

/// The report of one session file, as every renderer shows it. A file that
/// cannot be read is a report with a load error (what is wrong with the
/// file) or, for a scan error (permission, I/O), `access_errors`.
pub fn analyze(path: &Path, display: String, ask: &Ask) -> ConversationReport {
    crate::sessions::analyze(&WORDS, path, display, ask, stem, Analysis::load, report)
}

fn report(a: Analysis, path: &Path, mut r: ConversationReport, ask: &Ask) -> ConversationReport {
    let a = &a;
    let (selected, event_list) = (ask.selected, ask.event_list);
    let (s, v) = (&a.session, &a.view);
    r.id = s.id(path);
    r.server_version = match s.version() {
        Some(ver) => format!("claude-code {}", crate::text::clip(ver, 40)),
        None => "claude-code".into(),
    };
    r.redactor = s.redactor.clone();
    let tree_records = s.records().filter(|(_, x)| x.in_tree()).count();
    let m = v.messages.len() - v.compacted.len();
    r.events = EventCounts {
        on_disk: s.lines.len(),
        log_length: tree_records,
        ui_view: m,
        agent_view: Some(v.resent.len()),
        orphaned: v.lost.len() + v.unpaired.len(),
    };
    if v.chain.is_empty() {
        r.events.agent_view = None;
        r.load_error = Some(LoadFailure {
            exception: "no conversation",
            message: "no line of the file is a record of the conversation (user, assistant, attachment or system with a uuid)".into(),
        });
    }
    r.findings = checks::run(s, v, selected);
    r.verdict = verdict(a);
    if event_list {
        r.event_list = Some(rows(a));
    }
    r
}

/// "resume sends N of M messages: K cut off at line L".
pub fn verdict(a: &Analysis) -> String {
    let (s, v) = (&a.session, &a.view);
    if v.chain.is_empty() {
        return "Claude Code has nothing to resume: the file holds no conversation record".into();
    }
    let n = v.resent.len();
    let m = v.messages.len() - v.compacted.len();
    let compacted = if v.compacted.is_empty() {
        String::new()
    } else {
        format!(
            " ({} before the compaction at {}, summarised)",
            crate::checks::plural(v.compacted.len(), "message", "messages"),
            s.line_name(v.chain[0])
        )
    };
    let unpaired = if v.unpaired.is_empty() {
        String::new()
    } else {
        format!(
            "{}{} dropped as unpaired tool calls",
            if v.lost.is_empty() { "" } else { ", " },
            v.unpaired.len()
        )
    };
    if v.lost.is_empty() && v.unpaired.is_empty() {
        return format!("resume sends all {m} messages{compacted}");
    }
    if v.lost.is_empty() {
        return format!("resume sends {n} of {m} messages: {unpaired}{compacted}");
    }
    let at = v
        .broken
        .iter()
        .rev()
        .find(|b| b.to.is_none())
        .or(v.broken.first())
        .map(|b| format!(" at {}", s.line_name(b.at)))
        .unwrap_or_default();
    format!(
        "resume sends {n} of {m} messages: {} cut off{at}{unpaired}{compacted}",
        v.lost.len()
    )
}

/// `diagnose --events`: one row per line that is a record of the tree;
/// `index` is the line number, `parent` the parent's line number.
fn rows(a: &Analysis) -> Vec<EventRow> {
    let (s, v) = (&a.session, &a.view);
    let on_chain: std::collections::HashSet<usize> = v.chain.iter().copied().collect();
    let unpaired: std::collections::HashSet<usize> = v.unpaired.iter().copied().collect();
    let fetched: std::collections::HashSet<usize> = v.fetched.iter().copied().collect();
    let mut out = Vec::new();
    for (i, l) in s.lines.iter().enumerate() {
        let row = |kind: Option<String>, parent, parent_link, in_view, note: String| EventRow {
            index: l.no as u64,
            file: format!("line {}", l.no),
            kind,
            source: None,
            parent,
            parent_link,
            in_agent_view: in_view,
            note,
        };
        match &l.kind {
            LineKind::Blank => {}
            LineKind::Invalid { reason, .. } => out.push(row(
                None,
                None,
                "none",
                false,
                format!("unreadable: {reason}"),
            )),
            LineKind::Record(r) if r.in_tree() => {
                let (parent, link) = match &r.parent {
                    Parent::Id(p) => match v.by_uuid.get(p) {
                        Some(&j) => (Some(s.lines[j].no as u64), "event"),
                        None => (None, "missing"),
                    },
                    Parent::Null => (None, "root"),
                    _ => (None, "none"),
                };
                let superseded = r.uuid.as_ref().and_then(|u| v.by_uuid.get(u)) != Some(&i);
                let note = if unpaired.contains(&i) {
                    "an unpaired tool call or result: the client drops it".into()
                } else if on_chain.contains(&i) {
                    String::new()
                } else if fetched.contains(&i) {
                    "off the chain; the client fetches it as the result of a call on it".into()
                } else if superseded {
                    "its uuid is written again later".into()
                } else if r.sidechain {
                    "sidechain".into()
                } else {
                    "not on the resumed chain".into()
                };
                let kind = match &r.subtype {
                    Some(st) => format!("{}:{}", r.kind, crate::text::clip(st, 40)),
                    None => crate::text::clip(&r.kind, 40),
                };
                let sent =
                    (on_chain.contains(&i) || fetched.contains(&i)) && !unpaired.contains(&i);
                out.push(row(Some(kind), parent, link, sent, note));
            }
            LineKind::Record(_) => {}
        }
    }
    out
}
