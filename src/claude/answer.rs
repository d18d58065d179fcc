//! Answering a call whose result was never recorded (`claude-unpaired-tool`)
//! the way Claude Code itself does: planned and proven here, written by the
//! repair run with the re-links ([`super::repair`]); nothing is written by
//! this module.

use serde_json::Value;

use super::repair::{apply, Answered, Relink};
use super::session::{Parent, Session};
use super::view::{Broken, View};

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
