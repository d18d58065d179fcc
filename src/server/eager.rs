//! ≤ 1.36: the startup scan starts an `EventService` for every folder whose
//! meta.json validates, and lists the ones that started. A start resumes
//! the conversation exactly as the SDK loads it (`ConversationState.create`:
//! base_state.json validated, the id checked, `rebuild_view()` over every
//! event of the active branch), so the folder is listed only where the load
//! verdict of the release says it loads; nothing here re-derives that.

use std::collections::BTreeSet;

use serde_json::Value;

use super::lease::{self, Lease};
use super::{meta, owner_text, Inputs, StoreIds, Verdict, LEASE, SCAN_EAGER, START};
use crate::store::Conversation;
use crate::validate::scalar;

/// Another folder whose meta.json validates and carries this folder's id,
/// when this folder's own meta.json does not start it under its name: the
/// server starts that record's conversation in `<conversations>/<id>`, i.e.
/// THIS folder's state and events (found by fixtures/gen/listing_fuzz.py
/// seed 120: a copy's meta.json lists the original whose own is broken).
/// (That meta.json, the folder it is in.)
pub(super) fn rescued(
    conv: &Conversation,
    ids: &StoreIds,
    inp: &Inputs,
) -> Option<(Value, String)> {
    let name = conv.folder.as_str();
    let own = conv
        .meta
        .value()
        .is_some_and(|m| meta::valid(m, inp.version) && meta::id(m).as_deref() == Some(name));
    if own || scalar::uuid_str(name).as_deref() != Some(name) {
        return None;
    }
    ids.others_with(name, name).into_iter().find_map(|e| {
        match ids.read_json(&e.name, "meta.json") {
            Some(Some(m)) if meta::valid(&m, inp.version) => Some((m, e.name.clone())),
            _ => None,
        }
    })
}

/// The verdict on a folder started from `meta` (its own, or `via` a copy's).
pub(super) fn judge(conv: &Conversation, meta: &Value, inp: &Inputs, via: Option<&str>) -> Verdict {
    let q = inp.quote;
    let v = start(conv, meta, inp);
    match via {
        None => v,
        Some(via) => Verdict {
            why: format!(
                "this folder's own meta.json does not start it, but folder `{}` has a valid meta.json with this id, and the server starts that conversation here, in this folder: {}",
                q(via),
                v.why
            ),
            ..v
        },
    }
}

fn start(conv: &Conversation, meta: &Value, inp: &Inputs) -> Verdict {
    let q = inp.quote;
    if let Lease::Live(p, held) = &lease::judge(&conv.lease, inp.env) {
        return Verdict::hidden(
            "lease-held",
            "owner_lease.json",
            format!(
                "another server ({}) holds the lease until {}: the startup scan skips the conversation (`ConversationLeaseHeldError`) and it stays unlisted until this server restarts after that time",
                owner_text(p, held, q),
                lease::when(p.expires_at)
            ),
            LEASE,
        );
    }
    if let Some(l) = inp.load.as_ref().filter(|l| l.at_start) {
        let (rule, file) = if l.state {
            ("state-does-not-load", "base_state.json")
        } else {
            ("events-do-not-load", "events/")
        };
        return Verdict::hidden(
            rule,
            file,
            format!(
                "the SDK cannot load it ({}): the start resumes it as the SDK does (`ConversationState.create` validates base_state.json and rebuilds the view from every event of the active branch), fails, and the folder is skipped",
                l.why
            ),
            START,
        );
    }
    if let Some(why) = conv
        .base_state
        .value()
        .and_then(|st| agent_mismatch(meta, st, q))
    {
        return Verdict::hidden(
            "agent-mismatch",
            "meta.json",
            format!("the start resumes the conversation with meta.json's agent, and `agent.verify(state.agent)` refuses it: {why}; the start fails and the folder is skipped"),
            START,
        );
    }
    if let Some(e) = &inp.running_unreadable {
        return Verdict::hidden(
            "events-do-not-load",
            "events/",
            format!("the conversation is `running`, so the start runs crash recovery over every event, and {e}: the start fails and the folder is skipped"),
            START,
        );
    }
    let why = match &inp.load {
        Some(l) => format!(
            "started at startup and listed: base_state.json is missing or empty, so the start recreates the state from meta.json's agent and reads no event; the history does not load ({}), so the conversation fails once it is opened",
            l.why
        ),
        None => "started at startup and listed".into(),
    };
    Verdict::new(Some(true), "listed", "meta.json", why, SCAN_EAGER)
}

/// `BUILT_IN_TOOL_CLASSES` of 1.29.3–1.34.0: class name, tool name.
const BUILT_IN_TOOLS: &[(&str, &str)] = &[
    ("FinishTool", "finish"),
    ("ThinkTool", "think"),
    ("InvokeSkillTool", "invoke_skill"),
    ("SwitchLLMTool", "switch_llm"),
    ("VisionInspectTool", "inspect_image_with_vision"),
];
/// `include_default_tools`' default: every class of `BUILT_IN_TOOLS`.
const DEFAULT_TOOLS: &[&str] = &["FinishTool", "ThinkTool"];

/// `AgentBase.verify(persisted)` (agent/base.py, the same in 1.29.3–1.36):
/// the runtime agent (meta.json's) must be of the persisted agent's class
/// (base_state.json's) and keep every tool of it; a tool may only be
/// added. Both agents have validated by now (meta.json and the load).
fn agent_mismatch(meta: &Value, state: &Value, q: &dyn Fn(&str) -> String) -> Option<String> {
    let (runtime, persisted) = (meta.get("agent")?, state.get("agent")?);
    // a dict without `kind` but with `llm` is an `Agent` (`_populate_agent_from_settings`)
    let kind = |a: &Value| {
        a.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("Agent")
            .to_string()
    };
    if kind(runtime) != kind(persisted) {
        return Some(format!(
            "meta.json's agent is a `{}`, base_state.json's a `{}`",
            q(&kind(runtime)),
            q(&kind(persisted))
        ));
    }
    let names = |a: &Value| -> BTreeSet<String> {
        let mut out: BTreeSet<String> = a
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(String::from))
            .collect();
        let defaults: Vec<&str> = match a.get("include_default_tools").and_then(Value::as_array) {
            Some(list) => list.iter().filter_map(Value::as_str).collect(),
            None => DEFAULT_TOOLS.to_vec(),
        };
        for class in defaults {
            if let Some((_, name)) = BUILT_IN_TOOLS.iter().find(|(c, _)| *c == class) {
                out.insert(name.to_string());
            }
        }
        out
    };
    let runtime_names = names(runtime);
    let removed: Vec<String> = names(persisted)
        .into_iter()
        .filter(|n| !runtime_names.contains(n))
        .map(|n| format!("`{}`", q(&n)))
        .collect();
    (!removed.is_empty()).then(|| {
        format!(
            "meta.json's agent lacks tools base_state.json's has ({}): tools may only be added",
            removed.join(", ")
        )
    })
}
