//! The Codex repairs, planned and proven here from the rollout and its
//! view, and brought to the JSONL core's repair run ([`Rollouts`]); nothing
//! is written by this module. Three edits, each measured with the real
//! client (fixtures/codex/sessions): an invalid line set aside, the later
//! copy of a line written twice dropped, a missing `session_meta` rebuilt.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::checks::{self, DUPLICATE_LINE, INVALID_LINE, MISSING_SESSION_META};
use super::session::{self, LineKind, Rollout};
use super::view::{self, NoResume, View};
use super::Analysis;
use crate::sessions::repair::{Adapter, Rewrite};

/// One planned edit.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Take line index `at` out of the rollout (an invalid line, a copy).
    Drop {
        at: usize,
        check: &'static str,
        why: String,
    },
    /// Write this `session_meta` line before everything.
    Meta { line: String },
}

impl Edit {
    pub fn check(&self) -> &'static str {
        match self {
            Edit::Drop { check, .. } => check,
            Edit::Meta { .. } => MISSING_SESSION_META,
        }
    }
}

/// The edits that give the client back what the damage costs, for the
/// checks `selected`. `file` is the id and start time of the file name.
pub fn plan(
    r: &Rollout,
    v: &View,
    file: Option<&(String, String)>,
    selected: &dyn Fn(&str) -> bool,
) -> Vec<Edit> {
    let mut out = Vec::new();
    if selected(INVALID_LINE) {
        for (i, l) in r.lines.iter().enumerate() {
            if let LineKind::Invalid { reason, .. } = &l.kind {
                out.push(Edit::Drop {
                    at: i,
                    check: INVALID_LINE,
                    why: format!("{reason}; set aside"),
                });
            }
        }
    }
    if selected(DUPLICATE_LINE) {
        for (i, j) in checks::duplicates(r) {
            out.push(Edit::Drop {
                at: i,
                check: DUPLICATE_LINE,
                why: format!("an exact copy of {}", r.line_name(j)),
            });
        }
    }
    let no_meta_anywhere = !r.records().any(|(_, x)| x.kind == "session_meta");
    let missing = matches!(
        v.no_resume,
        Some(NoResume::NoMeta { later: None }) | Some(NoResume::FirstInvalid)
    );
    if selected(MISSING_SESSION_META) && no_meta_anywhere && missing {
        if let Some(line) = rebuild_meta(r, file) {
            out.push(Edit::Meta { line });
        }
    }
    out
}

/// A `session_meta` line rebuilt from what the rollout still holds: `None`
/// when the file name or the working directory is not known.
pub fn rebuild_meta(r: &Rollout, file: Option<&(String, String)>) -> Option<String> {
    let (id, started) = file?;
    let cwd = r.records().find_map(|(_, x)| x.cwd.clone())?;
    let provider = r.records().find_map(|(_, x)| x.provider.clone());
    let stamp = r
        .records()
        .find_map(|(_, x)| x.timestamp.clone())
        .unwrap_or_else(|| started.clone());
    let mut payload = json!({
        "id": id,
        "timestamp": started,
        "cwd": cwd,
        "originator": "convo-doctor",
        "cli_version": "unknown",
    });
    if let Some(p) = provider {
        payload["model_provider"] = json!(p);
    }
    let line = json!({"timestamp": stamp, "type": "session_meta", "payload": payload});
    serde_json::to_string(&line).ok()
}

/// The rollout's bytes with `edits` applied: dropped lines leave with their
/// newline, a rebuilt `session_meta` goes first; every other line is kept
/// byte for byte (proven: the kept lines of the result, in order, are the
/// original's kept lines).
pub fn apply(r: &Rollout, edits: &[Edit]) -> Result<Vec<u8>, String> {
    let drop: std::collections::HashSet<usize> = edits
        .iter()
        .filter_map(|e| match e {
            Edit::Drop { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(r.bytes.len() + 512);
    for e in edits {
        if let Edit::Meta { line } = e {
            if line.contains('\n') {
                return Err("the rebuilt session_meta holds a newline".into());
            }
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
    }
    let mut kept = Vec::new();
    for (i, l) in r.lines.iter().enumerate() {
        if drop.contains(&i) {
            continue;
        }
        let next = r.lines.get(i + 1).map(|n| n.start).unwrap_or(r.bytes.len());
        out.extend_from_slice(&r.bytes[l.start..next]);
        kept.push(r.text(i));
    }
    // a dropped last line leaves the line before it without its newline
    // only when that one had none: the file always ended as it did
    let after = super::session::parse(out.clone());
    let skip = usize::from(edits.iter().any(|e| matches!(e, Edit::Meta { .. })));
    let got: Vec<&[u8]> = (skip..after.lines.len()).map(|i| after.text(i)).collect();
    if got != kept {
        return Err("the edit would change a line it does not name".into());
    }
    Ok(out)
}

/// The repaired rollout's view must resume and resend at least the items
/// it did, less the copies dropped: `Err` says why not.
pub fn prove(
    before: &View,
    edits: &[Edit],
    after_bytes: &[u8],
    file_id: Option<&str>,
) -> Result<View, String> {
    let after = super::session::parse(after_bytes.to_vec());
    let v = view::build(&after, file_id);
    if let Some(why) = &v.no_resume {
        return Err(format!(
            "the repaired rollout would not resume: {}",
            why.words()
        ));
    }
    let dropped = edits
        .iter()
        .filter(|e| matches!(e, Edit::Drop { at, .. } if before.is_resent(*at)))
        .count();
    if before.resumes() && v.resent.len() + dropped < before.resent.len() {
        return Err("the repaired rollout would resend less".into());
    }
    Ok(v)
}

pub use super::edits::{Edited, Edits, Outcome};

/// `convo-doctor repair` of Codex rollouts (PATHs that are rollouts,
/// sessions trees or `CODEX_HOME`): each rollout's edits planned ([`plan`]),
/// proven twice (every line not named by an edit kept byte for byte; the
/// repaired rollout resumes and resends at least what it did, less the
/// copies). The write re-checks the client's writer lock: a client
/// appending to the rollout since the read (a live session) makes it refuse.
pub struct Rollouts;

/// How much of a line a diff shows.
const SHOWN: usize = 160;

fn shown(bytes: &[u8]) -> String {
    crate::text::clip(&String::from_utf8_lossy(bytes), SHOWN)
}

impl Adapter for Rollouts {
    const CLIENT: &'static str = "Codex";
    const UNITS: (&'static str, &'static str) = ("rollout", "rollouts");
    const STORE: &'static str = "sessions folder";
    type Changes = Edits;

    fn backup_inside(abs: &Path, files: &[PathBuf]) -> bool {
        abs.ancestors().any(|a| {
            a.file_name().is_some_and(|n| n == "sessions")
                && a.parent().is_some_and(|h| {
                    h.file_name().is_some_and(|n| n == ".codex") || h.join("config.toml").is_file()
                })
        }) || files.iter().any(|f| {
            f.parent()
                .and_then(|d| std::path::absolute(d).ok())
                .is_some_and(|d| abs.starts_with(d))
        })
    }

    fn plan(
        path: &Path,
        dry_run: bool,
        selected: &dyn Fn(&str) -> bool,
    ) -> (Outcome, Option<Rewrite>) {
        plan_one(path, dry_run, selected)
    }

    fn busy(path: &Path, before: &[u8]) -> Option<String> {
        live(path, &Analysis::of(session::parse(before.to_vec()), path))
    }

    /// The state database of each `CODEX_HOME` the rollouts lie in: the
    /// rows they lack, written in one transaction ([`super::state_fix`]).
    fn beside(
        files: &[PathBuf],
        selected: &dyn Fn(&str) -> bool,
    ) -> Vec<(Outcome, Option<crate::sessions::repair::Beside>)> {
        if !selected(checks::STATE_PARITY) {
            return Vec::new();
        }
        let mut homes: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
        for f in files {
            let Some(home) = std::path::absolute(f)
                .ok()
                .and_then(|a| super::state::home_of(&a))
            else {
                continue;
            };
            match homes.iter_mut().find(|(h, _)| *h == home) {
                Some((_, fs)) => fs.push(f.clone()),
                None => homes.push((home, vec![f.clone()])),
            }
        }
        let mut out = Vec::new();
        for (home, fs) in homes {
            let Some(plan) = super::state_fix::plan(&home, &fs) else {
                continue;
            };
            out.push(super::state_fix::outcome(plan));
        }
        out
    }
}

/// Plan one rollout: the outcome and, when there is something to write,
/// the bytes read and the bytes to write.
fn plan_one(
    path: &Path,
    dry_run: bool,
    selected: &dyn Fn(&str) -> bool,
) -> (Outcome, Option<Rewrite>) {
    let o = Outcome::new(path);
    let a = match Analysis::load(path) {
        Ok(a) => a,
        Err(e) => return (o.unread(e), None),
    };
    let mut o = Outcome {
        redactor: a.rollout.redactor.clone(),
        before: super::verdict(&a),
        ..o
    };
    o.after = o.before.clone();
    if let Some(why) = live(path, &a) {
        return (o.failed(why), None);
    }
    let edits = plan(&a.rollout, &a.view, a.file.as_ref(), selected);
    if edits.is_empty() {
        if !a.view.resumes() && selected(MISSING_SESSION_META) {
            o.error = Some(
                "no session_meta can be rebuilt: that needs a file named rollout-<time>-<uuid>.jsonl, no session_meta line left in it, and a turn_context naming the working directory".into(),
            );
        }
        return (o, None);
    }
    let bytes = match apply(&a.rollout, &edits) {
        Ok(b) => b,
        Err(why) => {
            let why = format!("the edit could not be proven ({why}); nothing was changed");
            return (o.failed(why), None);
        }
    };
    let file_id = a.file.as_ref().map(|f| f.0.as_str());
    if let Err(why) = prove(&a.view, &edits, &bytes, file_id) {
        return (o.failed(format!("{why}; nothing was changed")), None);
    }
    let fixed = Analysis::of(session::parse(bytes.clone()), path);
    o.after = super::verdict(&fixed);
    let mut checks = Vec::new();
    for e in &edits {
        if !checks.contains(&e.check()) {
            checks.push(e.check());
        }
        o.changes.edits.push(match e {
            Edit::Drop { at, check, why } => Edited {
                check,
                line: Some(a.rollout.lines[*at].no),
                what: why.clone(),
                removed: Some(shown(a.rollout.text(*at))),
                added: None,
            },
            Edit::Meta { line } => Edited {
                check: e.check(),
                line: None,
                what: "a session_meta rebuilt from the file name and the rollout's turn_context, written as line 1".into(),
                removed: None,
                added: Some(shown(line.as_bytes())),
            },
        });
    }
    o.status = if dry_run { "would-fix" } else { "fixed" };
    (o, Some((a.rollout.bytes, bytes, checks)))
}

/// Why the rollout may not be written now: a Codex client holds its
/// thread's writer lock.
fn live(path: &Path, a: &Analysis) -> Option<String> {
    let id = a
        .file
        .as_ref()
        .map(|f| f.0.clone())
        .or_else(|| a.rollout.id())?;
    super::state::writer_active(path, &id).then(|| {
        format!("a Codex client is writing this thread now (it holds `thread-writer-locks/{id}.lock`): nothing was changed; repair it once the client has exited")
    })
}
