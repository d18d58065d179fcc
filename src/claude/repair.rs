//! Re-linking a broken parent (`claude-broken-parent`): planned and proven
//! here, from the session and its view; with the calls answered
//! ([`super::answer`], `claude-unpaired-tool`) on the re-linked session,
//! brought to the JSONL core's repair run ([`Sessions`]); nothing is
//! written by this module.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::checks::{BROKEN_PARENT, UNPAIRED_TOOL};
use super::session::{Parent, Session};
use super::view::{Broken, View};
use crate::sessions::repair::{Adapter, Rewrite};

pub use super::answer::{apply_answers, plan_answers, Answer, INTERRUPTED};
pub use super::edits::{Answered, Edit, Relinked, Relinks};

/// One planned re-link: line index `at` gets `parentUuid` = `to_uuid` (the
/// record written before it, line index `to`), or null for a compaction's
/// boundary (a root by design: its link back is `logicalParentUuid`).
#[derive(Clone, Debug)]
pub struct Relink {
    pub at: usize,
    pub to: Option<usize>,
    pub to_uuid: Option<String>,
    pub why: Broken,
}

/// The re-links that give the walk back what the broken links cost: each
/// broken link of the walk whose record has a previous main-chain record in
/// the file (a record of the tree, off the sidechain, the final line of its
/// uuid) that is not the record itself and not walked after it toward the
/// leaf (which would make a loop).
pub fn plan(s: &Session, v: &View) -> Vec<Relink> {
    let rec = |i: usize| s.lines[i].record().expect("a record line");
    let finals: std::collections::HashSet<usize> = v.by_uuid.values().copied().collect();
    let pos_in_chain: std::collections::HashMap<usize, usize> =
        v.chain.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    // the previous main-chain record of every line, in one pass (a scan
    // back per broken link was quadratic on a long run of side records)
    let mut prev_main: Vec<Option<usize>> = Vec::with_capacity(s.lines.len());
    let mut last = None;
    for (j, l) in s.lines.iter().enumerate() {
        prev_main.push(last);
        if finals.contains(&j) && l.record().is_some_and(|r| r.in_tree() && !r.sidechain) {
            last = Some(j);
        }
    }
    let mut out = Vec::new();
    for link in &v.broken {
        // a re-attachment that loses nothing is re-linked too: it rests on
        // a heuristic of one client version
        if rec(link.at).is_compact_boundary() {
            if link.why != Broken::FalseRoot {
                out.push(Relink {
                    at: link.at,
                    to: None,
                    to_uuid: None,
                    why: link.why,
                });
            }
            continue;
        }
        let Some(prev) = prev_main[link.at] else {
            continue;
        };
        // the previous record must not be a descendant of this one on the
        // chain (it would close a loop)
        if let (Some(&a), Some(&b)) = (pos_in_chain.get(&link.at), pos_in_chain.get(&prev)) {
            if b > a {
                continue;
            }
        }
        let Some(uuid) = rec(prev).uuid.clone() else {
            continue;
        };
        out.push(Relink {
            at: link.at,
            to: Some(prev),
            to_uuid: Some(uuid),
            why: link.why,
        });
    }
    out.sort_by_key(|r| r.at);
    out
}

/// The file's bytes with each re-link applied: only the `parentUuid` value
/// of each line changes, in place (the rest of the line byte for byte).
/// Proven by parsing: each edited line must parse to its original object
/// with `parentUuid` alone changed, every other line is untouched. `Err`
/// says why a line could not be edited safely (nothing is written then).
pub fn apply(s: &Session, relinks: &[Relink]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.bytes.len() + relinks.len() * 40);
    let mut last = 0;
    for r in relinks {
        let line = &s.lines[r.at];
        let text = std::str::from_utf8(&s.bytes[line.start..line.end])
            .map_err(|_| format!("line {} is not UTF-8", line.no))?;
        let edited = edit_parent(text, r.to_uuid.as_deref()).ok_or_else(|| {
            format!(
                "line {}: its `parentUuid` could not be found once at the top level",
                line.no
            )
        })?;
        // the proof
        let mut want: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        want["parentUuid"] = serde_json::json!(r.to_uuid);
        let got: Value =
            serde_json::from_str(&edited).map_err(|e| format!("line {}: {e}", line.no))?;
        if got != want || !same_key_order(&got, &want) {
            return Err(format!(
                "line {}: the edit would change more than `parentUuid`",
                line.no
            ));
        }
        out.extend_from_slice(&s.bytes[last..line.start]);
        out.extend_from_slice(edited.as_bytes());
        last = line.end;
    }
    out.extend_from_slice(&s.bytes[last..]);
    Ok(out)
}

fn same_key_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().eq(y.keys()),
        _ => false,
    }
}

/// `text` with the value of its one `"parentUuid":` replaced by `uuid`
/// (`None`: null):
/// `None` unless the key occurs exactly once (so a `parentUuid` quoted
/// inside a message can never be the one edited) and its value is `null`
/// or a string.
fn edit_parent(text: &str, uuid: Option<&str>) -> Option<String> {
    let key = "\"parentUuid\":";
    let mut hits = text.match_indices(key);
    let (at, _) = hits.next()?;
    if hits.next().is_some() {
        return None;
    }
    let vstart = at + key.len();
    let rest = &text[vstart..];
    let trimmed = rest.trim_start();
    let ws = rest.len() - trimmed.len();
    let vlen = if trimmed.starts_with("null") {
        4
    } else if let Some(inner) = trimmed.strip_prefix('"') {
        // a uuid string: no escapes expected; refuse any
        let close = inner.find('"')?;
        if inner[..close].contains('\\') {
            return None;
        }
        close + 2
    } else {
        return None;
    };
    let new = serde_json::to_string(&uuid).ok()?;
    Some(format!(
        "{}{}{}",
        &text[..vstart + ws],
        new,
        &trimmed[vlen..]
    ))
}

/// Whether `p` is what the plan would leave: used by tests.
pub fn parent_of(s: &Session, at: usize) -> Option<&Parent> {
    s.lines[at].record().map(|r| &r.parent)
}

/// What became of one session.
pub type Outcome = crate::sessions::repair::Outcome<Relinks>;

/// `convo-doctor repair` of Claude Code sessions (PATHs that are session
/// files, project folders or `~/.claude/projects`): each session's broken
/// parents re-linked ([`plan`]), proven twice (each edited line parses to
/// its original with `parentUuid` alone changed; the repaired session's walk
/// has no broken link and resends at least what it did).
pub struct Sessions;

impl Adapter for Sessions {
    const CLIENT: &'static str = "Claude Code";
    const UNITS: (&'static str, &'static str) = ("session", "sessions");
    const STORE: &'static str = "projects folder";
    type Changes = Relinks;

    fn backup_inside(abs: &Path, _files: &[PathBuf]) -> bool {
        abs.components()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0].as_os_str() == ".claude" && w[1].as_os_str() == "projects")
    }

    fn plan(
        path: &Path,
        dry_run: bool,
        selected: &dyn Fn(&str) -> bool,
    ) -> (Outcome, Option<Rewrite>) {
        plan_one(path, dry_run, selected)
    }
}

/// Plan one session: the outcome and, when there is something to write,
/// the bytes read and the bytes to write.
fn plan_one(
    path: &Path,
    dry_run: bool,
    selected: &dyn Fn(&str) -> bool,
) -> (Outcome, Option<Rewrite>) {
    let o = Outcome::new(path);
    let a = match super::Analysis::load(path) {
        Ok(a) => a,
        Err(e) => return (o.unread(e), None),
    };
    let mut o = Outcome {
        redactor: a.session.redactor.clone(),
        before: super::verdict(&a),
        ..o
    };
    o.after = o.before.clone();
    let relinks = if selected(BROKEN_PARENT) {
        plan(&a.session, &a.view)
    } else {
        Vec::new()
    };
    let mut checks = Vec::new();
    let mut bytes = a.session.bytes.clone();
    if !relinks.is_empty() {
        bytes = match apply(&a.session, &relinks) {
            Ok(b) => b,
            Err(why) => {
                let why = format!("the re-link could not be proven ({why}); nothing was changed");
                return (o.failed(why), None);
            }
        };
        // the second proof: the repaired session as the client would walk it
        let fixed = super::Analysis {
            view: super::view::build(&super::session::parse(bytes.clone())),
            session: super::session::parse(bytes.clone()),
        };
        let relinked: std::collections::HashSet<usize> = relinks.iter().map(|r| r.at).collect();
        let worse = fixed.view.resent.len() < a.view.resent.len()
            || fixed.view.broken.iter().any(|b| relinked.contains(&b.at));
        if worse {
            let why = "the re-linked session would not resend more; nothing was changed";
            return (o.failed(why.into()), None);
        }
        checks.push(BROKEN_PARENT);
        for r in &relinks {
            let rec = a.session.lines[r.at].record().expect("a record");
            o.changes.edits.push(Edit::Relinked(Relinked {
                line: a.session.lines[r.at].no,
                parent_was: match &rec.parent {
                    Parent::Id(p) => Some(p.clone()),
                    _ => None,
                },
                parent_now: r.to_uuid.clone(),
                to_line: r.to.map(|t| a.session.lines[t].no),
            }));
        }
    }
    // the calls without a result, answered on the re-linked session
    let mid = super::Analysis {
        view: super::view::build(&super::session::parse(bytes.clone())),
        session: super::session::parse(bytes.clone()),
    };
    let answers = if selected(UNPAIRED_TOOL) {
        plan_answers(&mid.session, &mid.view)
    } else {
        Vec::new()
    };
    if !answers.is_empty() {
        let (b, done) = match apply_answers(&mid.session, &mid.view, &answers) {
            Ok(x) => x,
            Err(why) => {
                let why = format!(
                    "the answer to a call could not be proven ({why}); nothing was changed"
                );
                return (o.failed(why), None);
            }
        };
        // the proof: the answered session resends every message it did,
        // each call answered and its answer, and has no new broken link
        let after = super::view::build(&super::session::parse(b.clone()));
        let after_s = super::session::parse(b.clone());
        let uuids = |s: &Session, idx: &[usize]| -> std::collections::HashSet<String> {
            idx.iter()
                .filter_map(|&i| s.lines[i].record().and_then(|r| r.uuid.clone()))
                .collect()
        };
        let now = uuids(&after_s, &after.resent);
        let mut want = uuids(&mid.session, &mid.view.resent);
        want.extend(uuids(
            &mid.session,
            &answers.iter().map(|x| x.at).collect::<Vec<_>>(),
        ));
        let calls: std::collections::HashSet<&str> =
            answers.iter().map(|x| x.id.as_str()).collect();
        let still = after
            .unpaired
            .iter()
            .chain(after.interrupted.iter())
            .any(|&i| {
                after_s.lines[i].record().is_some_and(|r| {
                    r.tool_uses
                        .iter()
                        .chain(r.tool_results.iter())
                        .any(|t| calls.contains(t.as_str()))
                })
            });
        if !want.is_subset(&now) || still || after.broken.len() > mid.view.broken.len() {
            let why = "the session with the calls answered would not resend each call and all it did; nothing was changed";
            return (o.failed(why.into()), None);
        }
        bytes = b;
        checks.push(UNPAIRED_TOOL);
        o.changes.edits.extend(done.into_iter().map(Edit::Answered));
    }
    if checks.is_empty() {
        return (o, None);
    }
    let fixed = super::Analysis {
        view: super::view::build(&super::session::parse(bytes.clone())),
        session: super::session::parse(bytes.clone()),
    };
    o.after = super::verdict(&fixed);
    o.status = if dry_run { "would-fix" } else { "fixed" };
    (o, Some((a.session.bytes, bytes, checks)))
}
