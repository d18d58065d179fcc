//! The Codex repairs, planned here from the rollout and its view; nothing
//! is written by this module. Three edits, each measured with the real
//! client (fixtures/codex/sessions): an invalid line set aside, the later
//! copy of a line written twice dropped, a missing `session_meta` rebuilt.

use serde::Serialize;
use serde_json::json;

use super::checks::{self, DUPLICATE_LINE, INVALID_LINE, MISSING_SESSION_META};
use super::session::{LineKind, Rollout};
use super::view::{self, NoResume, View};

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
                why: format!("an exact copy of {}", checks::line_name(r, j)),
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

/// One edit, as reported.
#[derive(Debug, Serialize)]
pub struct Edited {
    pub check: &'static str,
    /// The line dropped (numbered as in the rollout read), or `null` for a
    /// line written.
    pub line: Option<usize>,
    pub what: String,
    /// The line removed or written, as the human diff shows it (clipped;
    /// not in JSON, which carries no content).
    #[serde(skip)]
    pub removed: Option<String>,
    #[serde(skip)]
    pub added: Option<String>,
}

/// What became of one rollout.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub path: String,
    /// `fixed`, `would-fix` (dry run), `unchanged`, `failed`.
    pub status: &'static str,
    pub edits: Vec<Edited>,
    /// The verdict before and after ("resume sends N of M items…").
    pub before: String,
    pub after: String,
    pub error: Option<String>,
    #[serde(skip)]
    pub redactor: crate::secrets::Redactor,
}

#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub sessions: usize,
    pub fixed: usize,
    /// Rollouts `--dry-run` would fix.
    pub would_fix: usize,
    pub failed: usize,
    pub run_id: Option<String>,
    pub backup_dir: Option<String>,
    pub dry_run: bool,
    pub errors: Vec<String>,
}
