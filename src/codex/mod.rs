//! Codex CLI rollouts (issue 26): `$CODEX_HOME/sessions/YYYY/MM/DD/
//! rollout-<time>-<uuid>.jsonl`, one JSON record a line (`{timestamp,
//! type, payload}`).
//!
//! The adapter reads a rollout ([`session`]), builds the view the client
//! resends on `codex exec resume` ([`view`], measured with the real client:
//! see docs/codex.md and fixtures/codex/), runs the Codex checks
//! ([`checks`]) and gives the same [`ConversationReport`] the OpenHands
//! folders and Claude Code sessions give, so every renderer shows it:
//! `events` counted in the client's units (lines, records, items),
//! `load_error` when the client cannot resume, `event_list` one row per
//! record. [`repair`] plans the edits (an invalid line set aside, a copy
//! dropped, a `session_meta` rebuilt) written with a backup and an undo.

pub mod checks;
pub mod edits;
pub mod repair;
pub mod session;
pub mod state;
pub mod state_fix;
pub mod state_row;
pub mod view;

use std::path::Path;

use crate::report::{ConversationReport, EventCounts, EventRow, LoadFailure};
use crate::sessions::list::Listing;
use crate::sessions::Ask;
use crate::store::fsread::ReadError;

use session::{LineKind, Rollout};

/// What a PATH is, for the Codex adapter.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    /// A rollout file.
    Rollout,
    /// A folder of rollouts (`sessions/`, a day's folder, any folder
    /// holding rollouts up to three levels down).
    Tree,
    /// `$CODEX_HOME` (`~/.codex`): its `sessions/`.
    Home,
}

/// How deep a tree is searched for rollouts (`sessions/YYYY/MM/DD/`).
const DEPTH: usize = 3;

/// Whether `path` is a Codex store, told by its shape without following a
/// link: a `rollout-*.jsonl` file (a link or a FIFO so named too: reading it
/// says what it is) or a `*.jsonl` file that reads like a rollout; a folder
/// with `sessions/` (a link there too: the listing says it is not followed)
/// that is `.codex` or holds `config.toml` or a state database; a folder
/// holding rollouts, or a `sessions` (year, month, day) folder holding them
/// up to three levels down, and no OpenHands conversation.
pub fn shape(path: &Path) -> Option<Shape> {
    let md = std::fs::symlink_metadata(path).ok()?;
    if !md.is_dir() {
        let name = path.file_name()?.to_string_lossy().into_owned();
        let jsonl = name.ends_with(".jsonl");
        return (jsonl && (name.starts_with("rollout-") || looks_like_rollout(path)))
            .then_some(Shape::Rollout);
    }
    if path.join("events").exists() || path.join("base_state.json").exists() {
        return None;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let sessions = std::fs::symlink_metadata(path.join("sessions"))
        .is_ok_and(|m| m.is_dir() || m.file_type().is_symlink());
    if sessions
        && (name.as_deref() == Some(".codex")
            || path.join("config.toml").is_file()
            || has_state_db(path))
    {
        return Some(Shape::Home);
    }
    // a folder holding rollouts itself; or `sessions`, a year's, month's or
    // day's folder holding them below (not any folder above them: that is
    // the other adapters' to scan)
    let mut found = Listing::default();
    found.walk(path, 0, &RULE, 1);
    let named = name.as_deref().is_some_and(|n| {
        n == "sessions"
            || n == "archived_sessions"
            || ((n.len() == 4 || n.len() == 2) && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if found.files.is_empty() && named {
        found.walk(path, DEPTH, &RULE, 1);
    }
    (!found.files.is_empty()).then_some(Shape::Tree)
}

fn has_state_db(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("state_") && n.ends_with(".sqlite")
        })
}

/// Whether a `*.jsonl` file reads like a Codex rollout: its first 64 KiB
/// hold a `session_meta` or `response_item` record and no Claude Code
/// `parentUuid`.
fn looks_like_rollout(path: &Path) -> bool {
    crate::sessions::read::head_says(
        path,
        &[b"\"type\":\"session_meta\"", b"\"type\":\"response_item\""],
        &[b"\"parentUuid\""],
    )
}

/// How Codex names its rollouts: `rollout-*.jsonl`, or a `*.jsonl` that
/// reads like one; hidden entries passed over.
const RULE: crate::sessions::list::Rule = crate::sessions::list::Rule {
    named: &|name| name.starts_with("rollout-") && name.ends_with(".jsonl"),
    sniffed: &|name, p| name.ends_with(".jsonl") && looks_like_rollout(p),
    skip_hidden: true,
    files_at_top: true,
};

/// The rollouts a PATH of shape `s` holds, scan errors and notes.
pub fn sessions(path: &Path, s: &Shape) -> Listing {
    let mut l = Listing::default();
    match s {
        Shape::Rollout => l.files.push(path.to_path_buf()),
        Shape::Tree => l.walk(path, DEPTH, &RULE, 0),
        Shape::Home => {
            let tree = path.join("sessions");
            match crate::sessions::list::linked_folder(&tree) {
                Some(note) => l.notes.push(note),
                None => l.walk(&tree, DEPTH, &RULE, 0),
            }
            // the rollouts `codex archive` moved aside (flat), diagnosed
            // like the others, never repaired
            let archived = path.join("archived_sessions");
            if std::fs::symlink_metadata(&archived).is_ok() {
                match crate::sessions::list::linked_folder(&archived) {
                    Some(note) => l.notes.push(note),
                    None => l.walk(&archived, DEPTH, &RULE, 0),
                }
            }
            // the threads the state database lists whose rollout is gone
            let ghosts = state::ghosts(path, &l.files);
            l.files.extend(ghosts.into_iter().map(|(_, p)| p));
        }
    }
    l
}

/// The analysis of one rollout: the rollout, its view, its file name's id
/// and start time.
pub struct Analysis {
    pub rollout: Rollout,
    pub view: view::View,
    pub file: Option<(String, String)>,
}

impl Analysis {
    pub fn load(path: &Path) -> Result<Analysis, ReadError> {
        Ok(Analysis::of(session::read(path)?, path))
    }

    pub fn of(rollout: Rollout, path: &Path) -> Analysis {
        let file = session::name_parts(path);
        let view = view::build(&rollout, file.as_ref().map(|f| f.0.as_str()));
        Analysis {
            rollout,
            view,
            file,
        }
    }
}

/// How a Codex rollout is named in a report.
pub const WORDS: crate::sessions::Words = crate::sessions::Words {
    tag: "codex",
    client: "Codex",
    unit: "rollout",
    file: "the rollout",
    unreadable: "unreadable rollout",
};

/// The report of one rollout, as every renderer shows it. A file that
/// cannot be read is a report with a load error (what is wrong with the
/// file) or, for a scan error (permission, I/O), `access_errors`.
pub fn analyze(path: &Path, display: String, ask: &Ask) -> ConversationReport {
    if let Some(g) = state::ghost(path, ask.selected) {
        let mut r = ConversationReport::record(display, stem(path), WORDS.tag.into());
        r.id_dashed = None;
        r.events.agent_view = None;
        r.load_error = Some(LoadFailure {
            exception: "rollout gone",
            message: "the state database lists this thread, and its rollout is gone".into(),
        });
        r.verdict = "Codex cannot resume this thread: its rollout is gone".into();
        r.findings.extend(g);
        return r;
    }
    crate::sessions::analyze(&WORDS, path, display, ask, stem, Analysis::load, report)
}

fn stem(path: &Path) -> String {
    match session::name_parts(path) {
        Some((id, _)) => id,
        None => crate::sessions::stem(path),
    }
}

fn report(a: Analysis, path: &Path, mut r: ConversationReport, ask: &Ask) -> ConversationReport {
    let a = &a;
    let (selected, event_list) = (ask.selected, ask.event_list);
    let (s, v) = (&a.rollout, &a.view);
    r.id = a
        .file
        .as_ref()
        .map(|f| f.0.clone())
        .or_else(|| s.id())
        .unwrap_or_else(|| stem(path));
    r.server_version = match s.records().find_map(|(_, x)| x.meta_version.clone()) {
        Some(ver) => format!("codex {}", crate::text::clip(&ver, 40)),
        None => "codex".into(),
    };
    r.redactor = s.redactor.clone();
    r.events = EventCounts {
        on_disk: s.lines.len(),
        log_length: s.records().count(),
        ui_view: v.items.len() - summarised(v),
        agent_view: Some(v.resent.len()),
        orphaned: (v.items.len() - summarised(v)).saturating_sub(v.resent.len()),
    };
    if let Some(why) = &v.no_resume {
        r.events.agent_view = None;
        r.load_error = Some(LoadFailure {
            exception: "cannot resume",
            message: format!("the client cannot resume this rollout: {}", why.words()),
        });
    }
    r.findings = checks::run(s, v, selected);
    if selected(checks::STATE_PARITY) {
        if let Some(p) = state::parity(path, &r.id) {
            if matches!(p, state::Parity::Gone { .. }) && r.load_error.is_none() {
                r.events.agent_view = None;
                r.load_error = Some(LoadFailure {
                    exception: "cannot resume",
                    message: "the state database's row for this thread names a rollout that is gone: the client does not look for this one".into(),
                });
            }
            r.findings.extend(checks::state(&p, path));
        }
        r.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    }
    r.verdict = match &r.load_error {
        Some(l) if a.view.resumes() => format!("Codex cannot resume this thread: {}", l.message),
        _ => verdict(a),
    };
    if state::is_archived(path) {
        // measured: the client refuses an archived thread until it is
        // unarchived; what it would then resend is the verdict's
        r.verdict = format!(
            "archived (`codex exec resume` refuses it until `codex unarchive {}`); once unarchived: {}",
            r.id, r.verdict
        );
    }
    if event_list {
        r.event_list = Some(rows(a));
    }
    r
}

/// "resume sends N of M items: K cut off at line L".
pub fn verdict(a: &Analysis) -> String {
    let (s, v) = (&a.rollout, &a.view);
    if let Some(why) = &v.no_resume {
        return format!("Codex cannot resume this rollout: {}", why.words());
    }
    // items a compaction summarised are not counted as items of the
    // history (as for Claude Code): the replacement stands for them
    let summarised = summarised(v);
    let (n, m) = (v.resent.len(), v.items.len() - summarised);
    let copies = checks::duplicates(s)
        .iter()
        .filter(|(i, _)| v.is_resent(*i))
        .count();
    let mut notes = Vec::new();
    if copies > 0 {
        notes.push(format!(
            "{} written twice",
            crate::checks::plural(copies, "item", "items")
        ));
    }
    if let Some(at) = v.compaction {
        notes.push(format!(
            "{summarised} before the compaction at {}, summarised",
            s.line_name(at)
        ));
    }
    // what the client sends of its own (fixtures/codex/gen/fuzz.py reads
    // this count)
    notes.extend(v.own_words());
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    if n >= m {
        return format!(
            "resume sends all {}{notes}",
            crate::checks::plural(n, "item", "items")
        );
    }
    let mut parts = Vec::new();
    if let Some(at) = v.restart {
        parts.push(format!(
            "{} cut off at {} (a session_meta again)",
            v.cut.len(),
            s.line_name(at)
        ));
    }
    if !v.orphan_outputs.is_empty() {
        parts.push(format!(
            "{} dropped as tool outputs without their call",
            v.orphan_outputs.len()
        ));
    }
    format!("resume sends {n} of {m} items: {}{notes}", parts.join(", "))
}

/// The items a compaction summarised (not resent as lines).
fn summarised(v: &view::View) -> usize {
    v.summarised.len()
}

/// `diagnose --events`: one row per line that is a record; `index` is the
/// line number.
fn rows(a: &Analysis) -> Vec<EventRow> {
    let (s, v) = (&a.rollout, &a.view);
    let set = |l: &[usize]| {
        l.iter()
            .copied()
            .collect::<std::collections::HashSet<usize>>()
    };
    let (cut, orphans) = (set(&v.cut), set(&v.orphan_outputs));
    let summarised = set(&v.summarised);
    let mut out = Vec::new();
    for (i, l) in s.lines.iter().enumerate() {
        let row = |kind: Option<String>, in_view, note: String| EventRow {
            index: l.no as u64,
            file: format!("line {}", l.no),
            kind,
            source: None,
            parent: None,
            parent_link: "none",
            in_agent_view: in_view,
            note,
        };
        match &l.kind {
            LineKind::Blank => {}
            LineKind::Invalid { reason, .. } => {
                out.push(row(None, false, format!("unreadable: {reason}")))
            }
            LineKind::Record(x) => {
                let kind = match &x.item {
                    Some(it) => format!("response_item:{}", crate::text::clip(&it.kind, 40)),
                    None => crate::text::clip(&x.kind, 40),
                };
                let note = if v.is_resent(i) || x.item.is_none() {
                    if x.kind == "response_item" && x.item.is_none() {
                        "its payload is no item the client reads".into()
                    } else {
                        String::new()
                    }
                } else if !v.resumes() {
                    "the client cannot resume this rollout".into()
                } else if summarised.contains(&i) {
                    "before the compaction: summarised, not resent".into()
                } else if cut.contains(&i) {
                    "before a later session_meta: not resent".into()
                } else if orphans.contains(&i) {
                    "a tool output without its call: the client drops it".into()
                } else {
                    "not resent".into()
                };
                out.push(row(Some(kind), v.is_resent(i), note));
            }
        }
    }
    out
}
