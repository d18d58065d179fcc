//! The event a quarantine leaves in the slot of one the SDK cannot read.
//!
//! A quarantined event's file is not removed: its bytes go into the run's
//! backup and the file, under the same name, gets a small event every
//! release reads, with the same id and the same parent. So the index stays
//! contiguous (no later file is renamed, and a writer that has the log open
//! appends where it expects to), every child and the HEAD still find their
//! parent, and the UI shows where something was set aside.
//!
//! - In the slot of a tool call's result (an observation answering an
//!   action no other event answers): an `AgentErrorEvent` answering that
//!   call, the event the agent-server's crash recovery writes (#4488), so
//!   the agent does not run the tool again on resume.
//! - Anywhere else: a `ConversationErrorEvent`, which the SDK never sends
//!   to the LLM ("Conversation-level failure that is NOT sent back to the
//!   LLM", `event/conversation_error.py`), so the model's context is what
//!   it would have been without the event. Both kinds exist in every
//!   release since 1.1.0, with the fields used here.

use crate::kinds::{AGENT_ERROR, CONVERSATION_ERROR};
use crate::store::ParentRef;

/// A tool call the placeholder answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub tool_name: String,
    pub tool_call_id: String,
}

/// Everything a placeholder is made from.
#[derive(Clone, Debug)]
pub struct Slot<'a> {
    /// The id the SDK indexes the slot by (the one in the file name).
    pub id: &'a str,
    /// A timestamp the release's model accepts (the event's own when it
    /// can be read, else a neighbour's).
    pub timestamp: &'a str,
    /// The parent link to keep (`Absent` in a pre-tree log).
    pub parent: &'a ParentRef,
    /// The quarantined file's name (in `events/`).
    pub file: &'a str,
    /// Why it was set aside, in words.
    pub why: &'a str,
    /// The tool call its result would have answered.
    pub answers: Option<&'a ToolCall>,
}

pub use crate::store::placeholder::{is_placeholder, ANSWER_PREFIX, CODE};

/// The placeholder's bytes: compact JSON in the SDK's key order (`id`,
/// `timestamp`, `source`, `parent_id`, the kind's fields, `kind` last).
pub fn event(slot: &Slot) -> Vec<u8> {
    let j = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
    let parent = match slot.parent {
        ParentRef::Absent => String::new(),
        ParentRef::Root => format!(",\"parent_id\":{}", j("__root__")),
        ParentRef::Id(p) => format!(",\"parent_id\":{}", j(p)),
    };
    let head = format!(
        "{{\"id\":{},\"timestamp\":{},\"source\":{}{parent}",
        j(slot.id),
        j(slot.timestamp),
        j(if slot.answers.is_some() {
            "agent"
        } else {
            "environment"
        }),
    );
    let text = match slot.answers {
        Some(call) => format!(
            "{head},\"tool_name\":{},\"tool_call_id\":{},\"error\":{},\"kind\":\"{AGENT_ERROR}\"}}",
            j(&call.tool_name),
            j(&call.tool_call_id),
            j(&format!(
                "{ANSWER_PREFIX}: its event file (events/{}) could not be read ({}). The tool may or may not have run; its output is lost. The original file is in the repair's backup.",
                slot.file, slot.why
            )),
        ),
        None => format!(
            "{head},\"code\":{},\"detail\":{},\"kind\":\"{CONVERSATION_ERROR}\"}}",
            j(CODE),
            j(&format!(
                "convo-doctor set this event aside: its file (events/{}) could not be read ({}). The original file is in the repair's backup.",
                slot.file, slot.why
            )),
        ),
    };
    text.into_bytes()
}

/// A UUID (version 4 layout) derived from `seed`, so a plan is the same
/// every time it is made (and a proof can check its bytes).
pub fn derived_id(seed: &[u8]) -> String {
    use sha2::Digest;
    let h: String = sha2::Sha256::digest(seed)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut b: Vec<char> = h[..32].chars().collect();
    b[12] = '4';
    b[16] = match b[16] {
        '0' | '4' | '8' | 'c' => '8',
        '1' | '5' | '9' | 'd' => '9',
        '2' | '6' | 'a' | 'e' => 'a',
        _ => 'b',
    };
    let s: String = b.into_iter().collect();
    format!(
        "{}-{}-{}-{}-{}",
        &s[..8],
        &s[8..12],
        &s[12..16],
        &s[16..20],
        &s[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_id_and_parent_and_parses() {
        let p = ParentRef::Id("p-1".into());
        let b = event(&Slot {
            id: "e-1",
            timestamp: "2026-01-01T00:00:00",
            parent: &p,
            file: "event-00003-e-1.json",
            why: "it is cut off",
            answers: None,
        });
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["id"], "e-1");
        assert_eq!(v["parent_id"], "p-1");
        assert_eq!(v["kind"], "ConversationErrorEvent");
        assert_eq!(v["code"], CODE);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.last().unwrap().as_str(), "kind");
    }

    #[test]
    fn answers_a_tool_call_and_omits_an_absent_parent() {
        let call = ToolCall {
            tool_name: "terminal".into(),
            tool_call_id: "call_1".into(),
        };
        let b = event(&Slot {
            id: "e-2",
            timestamp: "t",
            parent: &ParentRef::Absent,
            file: "f",
            why: "w",
            answers: Some(&call),
        });
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["kind"], "AgentErrorEvent");
        assert_eq!(v["tool_call_id"], "call_1");
        assert_eq!(v["source"], "agent");
        assert!(v.get("parent_id").is_none());
        assert!(is_placeholder("AgentErrorEvent", None, v["error"].as_str()));
    }
}
