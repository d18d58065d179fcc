//! Re-linking a broken parent (`claude-broken-parent`): planned and proven
//! here, from the session and its view, and brought to the JSONL core's
//! repair run ([`Sessions`]); nothing is written by this module.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::checks::{BROKEN_PARENT, UNPAIRED_TOOL};
use super::session::{Parent, Session};
use super::view::{Broken, View};
use crate::sessions::repair::{Adapter, Changes, Rewrite};

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

/// What Claude Code (2.1.328) writes as the result of a call whose result
/// the session never recorded, when it resumes a session that ends on the
/// call (measured: a client killed during a Bash call, then resumed): a
/// user record with one `tool_result`, `is_error: true`, this text, and the
/// same text as `toolUseResult`, `toolDenialKind: "interrupted"`.
pub const INTERRUPTED: &str = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]";

/// One planned answer: after line index `at` (an assistant record on the
/// chain holding one `tool_use`, `id`, whose result is nowhere in the
/// file), a record with the client's own answer; the call's child on the
/// chain (line index `child`) re-linked onto it.
#[derive(Clone, Debug)]
pub struct Answer {
    pub at: usize,
    pub id: String,
    pub child: Option<usize>,
}

/// The answers the session needs: every call on the chain (dropped as
/// unpaired, or the call the chain ends on) whose result no line of the
/// file holds. A record with more than one call, or whose child on the
/// chain is not linked to it by its written `parentUuid` (the client
/// re-attached it), is left alone: its answer is not proven.
pub fn plan_answers(s: &Session, v: &View) -> Vec<Answer> {
    let rec = |i: usize| s.lines[i].record().expect("a record line");
    let answered_somewhere: std::collections::HashSet<&str> = s
        .records()
        .flat_map(|(_, r)| r.tool_results.iter().map(String::as_str))
        .collect();
    let mut targets: Vec<usize> = v
        .unpaired
        .iter()
        .chain(v.interrupted.iter())
        .copied()
        .filter(|&i| rec(i).kind == "assistant" && rec(i).tool_results.is_empty())
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let pos: std::collections::HashMap<usize, usize> =
        v.chain.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut out = Vec::new();
    for i in targets {
        let r = rec(i);
        let ([id], Some(&k), Some(uuid)) = (r.tool_uses.as_slice(), pos.get(&i), &r.uuid) else {
            continue;
        };
        if answered_somewhere.contains(id.as_str()) {
            continue;
        }
        let child = v.chain.get(k + 1).copied();
        if let Some(c) = child {
            if rec(c).parent != Parent::Id(uuid.clone()) {
                continue;
            }
        }
        out.push(Answer {
            at: i,
            id: id.clone(),
            child,
        });
    }
    out
}

/// The uuid of the answer to call `id` of record `call` in session `sid`:
/// derived from them (a run again writes the same bytes), in the form of a
/// random (version 4) uuid.
fn answer_uuid(sid: &str, call: &str, id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in ["convo-doctor claude-unpaired-tool", sid, call, id] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x: String = b.iter().map(|v| format!("{v:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    )
}

/// `ts` (`YYYY-MM-DDTHH:MM:SS.mmmZ`, the client's form) one millisecond
/// later; `None` for another form or a millisecond of 999 (a carry this
/// does not make).
fn one_ms_later(ts: &str) -> Option<String> {
    let b = ts.as_bytes();
    if b.len() != 24 || b[19] != b'.' || b[23] != b'Z' || b[10] != b'T' {
        return None;
    }
    let ms: u32 = ts[20..23].parse().ok()?;
    if ms >= 999 || !ts[20..23].bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(format!("{}{:03}Z", &ts[..20], ms + 1))
}

/// The answer's line: the keys in the order the client writes them, the
/// session's fields copied from the call's record.
fn answer_line(
    call: &serde_json::Map<String, Value>,
    a: &Answer,
    uuid: &str,
    ts: &str,
    prompt_id: Option<&Value>,
) -> Option<String> {
    use serde_json::json;
    let mut m = serde_json::Map::new();
    m.insert("parentUuid".into(), call.get("uuid")?.clone());
    m.insert("isSidechain".into(), json!(false));
    if let Some(p) = prompt_id {
        m.insert("promptId".into(), p.clone());
    }
    m.insert("type".into(), json!("user"));
    m.insert(
        "message".into(),
        json!({"role": "user", "content": [{"type": "tool_result", "content": INTERRUPTED, "is_error": true, "tool_use_id": a.id}]}),
    );
    m.insert("uuid".into(), json!(uuid));
    m.insert("timestamp".into(), json!(ts));
    m.insert("toolUseResult".into(), json!(INTERRUPTED));
    m.insert("toolDenialKind".into(), json!("interrupted"));
    m.insert("sourceToolAssistantUUID".into(), call.get("uuid")?.clone());
    for k in [
        "userType",
        "entrypoint",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
    ] {
        if let Some(v) = call.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    serde_json::to_string(&Value::Object(m)).ok()
}

/// The file's bytes with each answer written on a new line right after its
/// call's line, and the call's child re-linked onto it (only its
/// `parentUuid` value changes, proven as a re-link is). `Err` says why an
/// answer could not be written safely (nothing is written then).
pub fn apply_answers(
    s: &Session,
    v: &View,
    answers: &[Answer],
) -> Result<(Vec<u8>, Vec<Answered>), String> {
    let sid = s
        .records()
        .find_map(|(_, r)| r.session_id.clone())
        .unwrap_or_default();
    let taken: std::collections::HashSet<&str> =
        s.records().filter_map(|(_, r)| r.uuid.as_deref()).collect();
    // the prompt id of the turn a call belongs to: the nearest record
    // before it on the chain that carries one
    let raw = |i: usize| -> Result<serde_json::Map<String, Value>, String> {
        let line = &s.lines[i];
        match serde_json::from_slice(&s.bytes[line.start..line.end]) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(format!("line {} does not parse again", line.no)),
        }
    };
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut relinks: Vec<Relink> = Vec::new();
    let mut done = Vec::new();
    for (n, a) in answers.iter().enumerate() {
        let line = &s.lines[a.at];
        let call = raw(a.at)?;
        let call_uuid = call
            .get("uuid")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("line {}: no uuid", line.no))?;
        let uuid = answer_uuid(&sid, call_uuid, &a.id);
        if taken.contains(uuid.as_str()) {
            return Err(format!("line {}: the answer's uuid is taken", line.no));
        }
        let ts = call
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(one_ms_later)
            .ok_or_else(|| {
                format!(
                    "line {}: its timestamp cannot be followed by the answer's",
                    line.no
                )
            })?;
        if s.bytes.get(line.end) != Some(&b'\n') {
            return Err(format!("line {}: no newline after it", line.no));
        }
        let k = v.chain.iter().position(|&c| c == a.at).unwrap_or(0);
        let prompt_id = v.chain[..k]
            .iter()
            .rev()
            .find_map(|&c| raw(c).ok().and_then(|m| m.get("promptId").cloned()));
        let text = answer_line(&call, a, &uuid, &ts, prompt_id.as_ref())
            .ok_or_else(|| format!("line {}: the answer could not be written", line.no))?;
        // the proof: the line parses to the answer for this call alone
        let back: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let block = &back["message"]["content"][0];
        if back["parentUuid"] != call_uuid
            || block["tool_use_id"] != a.id.as_str()
            || block["is_error"] != true
            || back["uuid"] != uuid.as_str()
        {
            return Err(format!("line {}: the answer does not read back", line.no));
        }
        inserts.push((a.at, text));
        if let Some(c) = a.child {
            relinks.push(Relink {
                at: c,
                to: Some(a.at),
                to_uuid: Some(uuid.clone()),
                why: Broken::Phantom,
            });
        }
        done.push(Answered {
            line: line.no,
            tool_use_ids: vec![a.id.clone()],
            // lines before it move down by the answers written before
            written_at: line.no + 1 + n,
            relinked_child: a.child.map(|c| s.lines[c].no),
        });
    }
    relinks.sort_by_key(|r| r.at);
    let relinked = apply(s, &relinks)?;
    // the relinked file has the same lines: write each answer after its call
    let fixed = super::session::parse(relinked);
    let mut out = Vec::with_capacity(fixed.bytes.len() + inserts.len() * 700);
    let mut last = 0;
    inserts.sort_by_key(|(at, _)| *at);
    for (at, text) in &inserts {
        let end = fixed.lines[*at].end + 1;
        out.extend_from_slice(&fixed.bytes[last..end]);
        out.extend_from_slice(text.as_bytes());
        out.push(b'\n');
        last = end;
    }
    out.extend_from_slice(&fixed.bytes[last..]);
    Ok((out, done))
}

/// Whether `p` is what the plan would leave: used by tests.
pub fn parent_of(s: &Session, at: usize) -> Option<&Parent> {
    s.lines[at].record().map(|r| &r.parent)
}

/// One re-link, as reported.
#[derive(Debug, Serialize)]
pub struct Relinked {
    pub line: usize,
    /// `null`, the phantom uuid, or the loop's target, as written.
    pub parent_was: Option<String>,
    /// `null` for a compaction's boundary.
    pub parent_now: Option<String>,
    /// The line of the record it now names.
    pub to_line: Option<usize>,
}

/// A call answered as the client answers one whose result was never
/// recorded (`claude-unpaired-tool`).
#[derive(Debug, Serialize)]
pub struct Answered {
    /// The line of the call (the assistant record holding the `tool_use`).
    pub line: usize,
    /// The calls answered (`tool_use` ids).
    pub tool_use_ids: Vec<String>,
    /// The line the answer is written on (after the repair).
    pub written_at: usize,
    /// The line of the record re-linked onto the answer (the call's child
    /// on the chain, as numbered before the repair), if the chain goes on.
    pub relinked_child: Option<usize>,
}

/// One edit of a session.
#[derive(Debug)]
pub enum Edit {
    Relinked(Relinked),
    Answered(Answered),
}

/// The edits of one session, as reported (`relinked` and `answered` in
/// JSON).
#[derive(Debug, Default)]
pub struct Relinks {
    pub edits: Vec<Edit>,
}

impl Relinks {
    pub fn relinked(&self) -> impl Iterator<Item = &Relinked> {
        self.edits.iter().filter_map(|e| match e {
            Edit::Relinked(r) => Some(r),
            Edit::Answered(_) => None,
        })
    }

    pub fn answered(&self) -> impl Iterator<Item = &Answered> {
        self.edits.iter().filter_map(|e| match e {
            Edit::Answered(a) => Some(a),
            Edit::Relinked(_) => None,
        })
    }
}

impl Serialize for Relinks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("relinked", &self.relinked().collect::<Vec<_>>())?;
        m.serialize_entry("answered", &self.answered().collect::<Vec<_>>())?;
        m.end()
    }
}

impl Changes for Relinks {
    type Item = Edit;

    fn items(&self) -> &[Edit] {
        &self.edits
    }

    fn human(e: &Edit, w: &mut dyn Write, r: &dyn Fn(&str) -> String) -> io::Result<()> {
        let l = match e {
            Edit::Relinked(l) => l,
            Edit::Answered(a) => {
                let ids: Vec<String> = a.tool_use_ids.iter().map(|i| r(i)).collect();
                let child = match a.relinked_child {
                    Some(c) => format!(", line {c} re-linked onto it"),
                    None => String::new(),
                };
                return writeln!(
                    w,
                    "  line {}: tool_use {} answered as interrupted (the client's own answer), written at line {}{child} [{UNPAIRED_TOOL}]",
                    a.line,
                    ids.join(", "),
                    a.written_at
                );
            }
        };
        let now = match (&l.parent_now, l.to_line) {
            (Some(p), Some(t)) => format!("\"{}\" (line {t})", r(p)),
            (Some(p), None) => format!("\"{}\"", r(p)),
            (None, _) => "null (a compaction's boundary is a root)".into(),
        };
        let was = match &l.parent_was {
            Some(p) => format!("\"{}\"", r(p)),
            None => "null".into(),
        };
        let line = l.line;
        writeln!(
            w,
            "  line {line}: parentUuid {was} -> {now} [claude-broken-parent]"
        )
    }
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
