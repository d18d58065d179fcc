//! `unreadable-state`: base_state.json or meta.json missing, empty or invalid.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::store::{Doc, Unreadable};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "unreadable-state";

pub struct UnreadableState;

impl Check for UnreadableState {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "base_state.json or meta.json is missing, empty or not valid JSON"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json (the SDK's state, agent included) or meta.json (the
  agent-server's record) that is empty, truncated, not UTF-8 or not a JSON
  object, or a base_state.json that is missing while events exist.

Why it matters
  Without a readable base_state.json the SDK cannot resume: servers from 1.43
  refuse (\"no base_state.json to resume and no agent was provided\"), older
  ones rebuild it from meta.json's agent and lose stats, secrets and the HEAD.
  An unreadable meta.json drops the conversation from the agent-server's
  catalog. A missing meta.json is normal for SDK-only and sub-agent
  conversations and is not reported.

Repair
  Unsafe (only with `repair --unsafe-fixes`), for base_state.json, from what
  the folder itself still holds: a whole copy an interrupted atomic write
  left beside it (`.base_state.json.<random>[.tmp]`, a JSON state of this
  conversation) takes its place; else, when meta.json still carries the
  agent (servers before 1.43), a state is rebuilt from meta.json (id, agent,
  workspace, limits, policy; status idle; stats, secrets and the HEAD start
  empty, as a server before 1.43 would rebuild it). The proof then requires
  the release's model to accept it. Otherwise the state cannot be invented.
  Never delete meta.json while base_state.json is broken: its `agent` may be
  the last copy. An unreadable meta.json is left to a human."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "put back base_state.json from the folder itself: a whole copy an interrupted atomic write left beside it, else a state rebuilt from meta.json's agent (status idle; stats, secrets and the HEAD start empty)",
            guards: "the copy is a JSON state of this conversation with an agent; meta.json's `agent` has a `kind`; the release's model must accept the result (proven before writing); unreadable meta.json is left to a human; unsafe because what was lost is not known",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let blocking = matches!(
            ctx.load_error(),
            Some(
                LoadError::NoBaseState | LoadError::BadBaseState(_) | LoadError::StateDecode { .. }
            )
        );
        match &ctx.conv.base_state {
            Doc::Missing if blocking => out.push(Finding::new(
                self.id(),
                Severity::Error,
                "base_state.json",
                "base_state.json is missing; the SDK cannot resume the conversation (no agent to rebuild it from)".into(),
            )),
            Doc::Missing if !ctx.conv.events.files.is_empty() => out.push(Finding::new(
                self.id(),
                Severity::Warning,
                "base_state.json",
                "base_state.json is missing; a server before 1.43 rebuilds it from meta.json's agent, losing stats, secrets and the HEAD".into(),
            )),
            Doc::Unreadable(u) => {
                let (sev, tail) = match (blocking, u) {
                    (true, _) => (Severity::Error, "the SDK cannot resume the conversation"),
                    (false, Unreadable::Empty) => (
                        Severity::Error,
                        "a server before 1.43 replaces it with a fresh state, losing stats, secrets and the HEAD",
                    ),
                    _ => (Severity::Error, "the SDK cannot resume the conversation"),
                };
                out.push(Finding::new(
                    self.id(),
                    sev,
                    "base_state.json",
                    format!("base_state.json cannot be read: {u}; {tail}"),
                ));
            }
            _ => {}
        }
        if let Some(LoadError::BadBaseState(why)) = ctx.load_error() {
            if matches!(ctx.conv.base_state, Doc::Present(_)) {
                out.push(Finding::new(
                    self.id(),
                    Severity::Error,
                    "base_state.json",
                    format!("base_state.json is not a valid state: {why}; the SDK cannot resume the conversation"),
                ));
            }
        }
        if let Doc::Unreadable(u) = &ctx.conv.meta {
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                "meta.json",
                format!("meta.json cannot be read: {u}; the agent-server drops the conversation from its list"),
            ));
        }
    }
}

/// The conversation's id as 32 hex digits: meta.json's, else the folder's.
fn conversation_hex(ctx: &Ctx) -> Option<String> {
    let hex = |s: &str| s.replace('-', "").to_ascii_lowercase();
    let id = ctx
        .conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .and_then(serde_json::Value::as_str)
        .map(hex)
        .unwrap_or_else(|| hex(&ctx.conv.folder));
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// Put back a base_state.json the SDK can resume, from the folder itself.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::{Action, Safety};
    use serde_json::{Map, Value};
    const REL: &str = "base_state.json";
    if let Doc::Unreadable(_) = &ctx.conv.meta {
        p.leave(
            "meta.json",
            "meta.json cannot be invented; restore it from a backup (never delete it)",
        );
    }
    let broken = match &ctx.conv.base_state {
        Doc::Unreadable(_) => true,
        Doc::Missing => !ctx.conv.events.files.is_empty(),
        Doc::Present(_) => matches!(ctx.load_error(), Some(LoadError::BadBaseState(_))),
    };
    if !broken {
        return;
    }
    let Some(cid) = conversation_hex(ctx) else {
        p.leave(
            REL,
            "the conversation's id is not known, so no state can be matched to it",
        );
        return;
    };
    let hex = |s: &str| s.replace('-', "").to_ascii_lowercase();
    let is_state = |v: &Value| {
        v.get("id").and_then(Value::as_str).map(hex).as_deref() == Some(cid.as_str())
            && v.pointer("/agent/kind").and_then(Value::as_str).is_some()
    };
    let missing = !ctx.conv.base_state.exists();
    let put = |p: &mut crate::edit::Proposals, bytes: Vec<u8>, what: String| {
        if missing {
            let like = if ctx.conv.meta.exists() {
                "meta.json".to_string()
            } else {
                match ctx.conv.events.files.first() {
                    Some(f) => format!("events/{}", f.name),
                    None => return,
                }
            };
            p.push(REL, Action::Create { bytes, like }, Safety::Unsafe, what);
        } else {
            p.push(REL, Action::Replace(bytes), Safety::Unsafe, what);
        }
    };
    // 1. a whole copy an interrupted atomic write left beside it (newest)
    let mut copies: Vec<(std::time::SystemTime, String, Vec<u8>)> = ctx
        .conv
        .entries
        .iter()
        .filter(|n| n.starts_with(".base_state.json."))
        .filter_map(|n| {
            let (b, md) = ctx.conv.read_file(n).ok()?;
            let v: Value = serde_json::from_slice(&b).ok()?;
            let t = md.modified().ok()?;
            is_state(&v).then(|| (t, n.clone(), b))
        })
        .collect();
    copies.sort();
    if let Some((_, name, bytes)) = copies.pop() {
        put(
            p,
            bytes,
            format!("put back base_state.json from `{name}`, a whole copy an interrupted write left beside it"),
        );
        return;
    }
    // 2. rebuilt from meta.json's agent (servers before 1.43 do the same)
    let Some(meta) = ctx.conv.meta.value() else {
        p.leave(REL, "no copy of the state and no meta.json to rebuild it from: the state cannot be invented; restore it from a backup");
        return;
    };
    let Some(agent) = meta
        .get("agent")
        .filter(|a| a.get("kind").is_some_and(Value::is_string))
    else {
        p.leave(REL, "no copy of the state, and meta.json carries no agent (servers from 1.43 keep it only in base_state.json): restore it from a backup");
        return;
    };
    let dashed = format!(
        "{}-{}-{}-{}-{}",
        &cid[..8],
        &cid[8..12],
        &cid[12..16],
        &cid[16..20],
        &cid[20..]
    );
    let dir = std::path::absolute(&ctx.conv.dir).unwrap_or_else(|_| ctx.conv.dir.clone());
    let mut st = Map::new();
    st.insert("id".into(), Value::from(dashed));
    st.insert("agent".into(), agent.clone());
    if let Some(w) = meta.get("workspace").filter(|w| w.is_object()) {
        st.insert("workspace".into(), w.clone());
    }
    st.insert(
        "persistence_dir".into(),
        Value::from(dir.to_string_lossy().into_owned()),
    );
    for key in [
        "max_iterations",
        "stuck_detection",
        "confirmation_policy",
        "security_analyzer",
    ] {
        if let Some(v) = meta.get(key).filter(|v| !v.is_null()) {
            st.insert(key.into(), v.clone());
        }
    }
    st.insert("execution_status".into(), Value::from(super::status::IDLE));
    let bytes = serde_json::to_vec(&Value::Object(st)).unwrap_or_default();
    put(
        p,
        bytes,
        "rebuild base_state.json from meta.json (id, agent, workspace, limits, policy; status idle; stats, secrets and the HEAD start empty)".into(),
    );
}
