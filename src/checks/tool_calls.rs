//! What answers a tool call, as the SDK decides it (each rule here once, with
//! where the SDK spells it), the tool calls nothing answers, and the error
//! event that answers one: shared by every check that asks (`stale-running`,
//! `stale-leaf`, `head-lag`, `dangling-parent`, `set-aside`'s planners).
//!
//! An action left unanswered on the agent's branch is not inert: at its next
//! step the agent executes every such action before it asks the LLM
//! (`Agent._step`: "Check for pending actions (implicit confirmation) and
//! execute them"), so a repair that makes a branch with one loadable would
//! run that tool again on resume.

use super::Ctx;
use crate::kinds::{ACTION, AGENT_ERROR, OBSERVATION, USER_REJECT};
use crate::store::EventRecord;

/// An action the SDK may execute: an ActionEvent whose `action` validated
/// (not null). Only these are pending (`get_unmatched_actions`: "Only
/// executable actions (validated) are considered pending").
pub fn executable(r: &EventRecord) -> bool {
    r.kind == ACTION && r.action_kind().is_some()
}

/// The id an answer names an action by: the action's JSON `id`, the one
/// the SDK's loaded event carries (`get_unmatched_actions` compares
/// `event.id`), not the id in its file name, which the walk follows. An
/// action without one gets a fresh uuid from the SDK, which nothing names.
pub fn action_id(r: &EventRecord) -> Option<&str> {
    r.id.as_deref()
}

/// Whether the action at `i` carries a JSON `id` other than the one in its
/// file name: an answer naming the file's id does not answer it for the
/// SDK ([`action_id`]), so whether it is open waits on `filename-id-mismatch`
/// settling which id is the event's. A planner that would answer an open
/// call waits for that first.
pub fn id_unsettled(ctx: &Ctx, i: usize) -> bool {
    ctx.reader
        .read(i)
        .is_ok_and(|r| action_id(r).is_some_and(|j| j != ctx.reader.id(i)))
}

/// The SDK's `ConversationState.get_unmatched_actions` over `events` (in
/// log order): each executable action (`action` not null) that no later
/// observation or rejection names by `action_id` (its JSON id,
/// [`action_id`]), and no later AgentErrorEvent answers by `tool_call_id`.
/// In log order.
pub fn unmatched(ctx: &Ctx, events: &[usize]) -> Vec<usize> {
    let mut observed_actions = std::collections::HashSet::new();
    let mut observed_calls = std::collections::HashSet::new();
    let mut out = Vec::new();
    for &i in events.iter().rev() {
        let Ok(r) = ctx.reader.read(i) else { continue };
        if let Some(a) = answer(r) {
            match a {
                Answer::Action(id) => observed_actions.insert(id),
                Answer::Call(tc) => observed_calls.insert(tc),
            };
            continue;
        }
        if executable(r)
            && !action_id(r).is_some_and(|a| observed_actions.contains(a))
            && !r.tool_call_id().is_some_and(|t| observed_calls.contains(t))
        {
            out.push(i)
        }
    }
    out.reverse();
    out
}

/// An executable action that no later event of the agent's branch
/// answers ([`unmatched`]), with what follows it there and where an answer
/// to it is, off the branch.
pub struct OpenCall {
    /// The action (its position).
    pub action: usize,
    /// The event after it on the branch: the conversation went on past the
    /// call. `None` when the action is the branch's last event, a call
    /// still pending.
    pub next: Option<usize>,
    /// A readable event that answers it, off the branch or before it on
    /// the branch (where the SDK does not count it), if any.
    pub answer_elsewhere: Option<usize>,
}

/// The tool calls left open on `branch` (positions, root first). Reads the
/// log once more only when there is one.
pub fn open_calls(ctx: &Ctx, branch: &[usize]) -> Vec<OpenCall> {
    let open = unmatched(ctx, branch);
    if open.is_empty() {
        return Vec::new();
    }
    let at: std::collections::HashMap<usize, usize> =
        branch.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut out: Vec<OpenCall> = open
        .iter()
        .map(|&a| OpenCall {
            action: a,
            next: at.get(&a).and_then(|&k| branch.get(k + 1)).copied(),
            answer_elsewhere: None,
        })
        .collect();
    // the open calls by what would answer them: the action's id, its call
    let mut by_action: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    let mut by_call: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (k, &a) in open.iter().enumerate() {
        let Ok(r) = ctx.reader.read(a) else { continue };
        if let Some(id) = action_id(r) {
            by_action.entry(id).or_default().push(k);
        }
        if let Some(tc) = r.tool_call_id() {
            by_call.entry(tc).or_default().push(k);
        }
    }
    // (an answer on the branch is before the call: the SDK matches an
    // answer only after its call, `get_unmatched_actions` walking back)
    let calls: std::collections::HashSet<usize> = open.iter().copied().collect();
    for j in (0..ctx.reader.len()).filter(|j| !calls.contains(j)) {
        let Ok(r) = ctx.reader.read(j) else { continue };
        let ks = match answer(r) {
            Some(Answer::Action(id)) => by_action.get(id),
            Some(Answer::Call(tc)) => by_call.get(tc),
            None => None,
        };
        for &k in ks.into_iter().flatten() {
            out[k].answer_elsewhere.get_or_insert(j);
        }
    }
    out
}

/// The actions and tool calls some readable event of the log answers
/// ([`answer`]'s rule), anywhere in it.
pub struct Answered<'c> {
    actions: std::collections::HashSet<&'c str>,
    calls: std::collections::HashSet<&'c str>,
}

impl<'c> Answered<'c> {
    pub fn of(ctx: &'c Ctx) -> Answered<'c> {
        let mut a = Answered {
            actions: Default::default(),
            calls: Default::default(),
        };
        for j in 0..ctx.reader.len() {
            match ctx.reader.read(j).ok().and_then(answer) {
                Some(Answer::Action(id)) => a.actions.insert(id),
                Some(Answer::Call(tc)) => a.calls.insert(tc),
                None => false,
            };
        }
        a
    }

    /// Whether the action at `i` has an answer somewhere: naming it by its
    /// JSON `id` ([`action_id`]), or answering its tool call.
    pub fn answers(&self, ctx: &Ctx, i: usize) -> bool {
        let r = ctx.reader.read(i).ok();
        r.and_then(action_id)
            .is_some_and(|j| self.actions.contains(j))
            || r.and_then(|r| r.tool_call_id())
                .is_some_and(|tc| self.calls.contains(tc))
    }
}

/// What an event answers, by the SDK's rule (`get_unmatched_actions`,
/// conversation/state.py): an observation or a rejection names the action
/// by `action_id` (its `tool_call_id` does not count), an AgentErrorEvent
/// the call by `tool_call_id` (it has no `action_id`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer<'a> {
    Action(&'a str),
    Call(&'a str),
}

pub fn answer(r: &EventRecord) -> Option<Answer<'_>> {
    match r.kind.as_str() {
        OBSERVATION | USER_REJECT => r.action_id().map(Answer::Action),
        AGENT_ERROR => r.tool_call_id().map(Answer::Call),
        _ => None,
    }
}

/// Whether `r` answers the action `action` (its id and `tool_call_id`), by
/// [`answer`]'s rule.
pub fn answers(r: &EventRecord, action: &str, tool_call_id: Option<&str>) -> bool {
    match answer(r) {
        Some(Answer::Action(id)) => id == action,
        Some(Answer::Call(tc)) => Some(tc) == tool_call_id,
        None => false,
    }
}

/// The agent-server's crash recovery's other rule (`already_observed`,
/// agent_server/event_service.py, since 1.20.1, #3063): before it answers
/// the first unmatched action with its restart error, it looks for any
/// observation-like event (an `ObservationBaseEvent`: observation,
/// rejection or AgentErrorEvent) of `events` carrying the action's
/// `tool_call_id`, whatever its `action_id`, and appends nothing when one
/// is there. Not what answers a call ([`answer`]): what keeps the server
/// from answering it twice.
pub fn observed_by_call(ctx: &Ctx, events: &[usize], tool_call_id: &str) -> bool {
    events.iter().any(|&j| {
        ctx.reader.read(j).is_ok_and(|r| {
            crate::kinds::is_result(&r.kind) && r.tool_call_id() == Some(tool_call_id)
        })
    })
}

/// The action's `tool_name` and `tool_call_id`, what an answer names.
pub fn call_of(ctx: &Ctx, i: usize) -> Option<(String, String)> {
    let tc = ctx.reader.read(i).ok()?.tool_call_id()?.to_string();
    let b = ctx.conv.bytes(&ctx.event_path(i))?;
    let v: serde_json::Value = serde_json::from_slice(&b).ok()?;
    Some((v.get("tool_name")?.as_str()?.to_string(), tc))
}

/// The newest timestamp of the log, so an appended event keeps the order
/// monotone.
pub fn newest_timestamp(ctx: &Ctx) -> String {
    (0..ctx.reader.len())
        .rev()
        .find_map(|j| {
            ctx.reader
                .record(j)
                .and_then(|r| r.timestamp().map(String::from))
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00".into())
}

/// An AgentErrorEvent answering `tool_call_id`, compact, in the SDK's key
/// order (`id`, `timestamp`, `source`, `parent_id`, fields, `kind` last).
pub fn error_event(
    id: &str,
    timestamp: &str,
    parent: &str,
    (tool_name, tool_call_id): (&str, &str),
    error: &str,
) -> Vec<u8> {
    let j = |v: &str| serde_json::to_string(v).unwrap_or_default();
    format!(
        "{{\"id\":{},\"timestamp\":{},\"source\":\"agent\",\"parent_id\":{},\"tool_name\":{},\"tool_call_id\":{},\"error\":{},\"kind\":\"{AGENT_ERROR}\"}}",
        j(id),
        j(timestamp),
        j(parent),
        j(tool_name),
        j(tool_call_id),
        j(error)
    )
    .into_bytes()
}
