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
    /// Why the slot gets a placeholder, in words.
    pub cause: Cause<'a>,
    /// The tool call its result would have answered.
    pub answers: Option<&'a ToolCall>,
}

/// Why a slot gets a placeholder: the words the placeholder says, true of
/// each (a copy was read, a missing file was never there).
#[derive(Clone, Copy, Debug)]
pub enum Cause<'a> {
    /// The file could not be read: why.
    Unreadable(&'a str),
    /// The file held what is not this event (a copy of another): what.
    Copy(&'a str),
    /// No file held the slot: the sentence that says so.
    Missing(&'a str),
}

pub use crate::store::placeholder::{is_placeholder, ANSWER_PREFIX, CODE};

/// The placeholder's bytes: compact JSON in the SDK's key order (`id`,
/// `timestamp`, `source`, `parent_id`, the kind's fields, `kind` last).
pub fn event(slot: &Slot) -> Vec<u8> {
    let j = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
    let parent = match slot.parent {
        ParentRef::Absent => String::new(),
        ParentRef::Root => format!(",\"parent_id\":{}", j("__root__")),
        ParentRef::Id(p) => format!(",\"parent_id\":{}", j(&p.spell())),
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
    let f = slot.file;
    // (the words each kind of placeholder has always said of the file)
    let its = if slot.answers.is_some() {
        "its event file"
    } else {
        "its file"
    };
    let (what, gone) = match slot.cause {
        Cause::Unreadable(why) => (
            format!("{its} (events/{f}) could not be read ({why})"),
            "The original file is in the repair's backup.",
        ),
        Cause::Copy(what) => (
            format!("{its} (events/{f}) held {what}"),
            "The file is in the repair's backup.",
        ),
        Cause::Missing(why) => (format!("{why}; this event fills the slot"), ""),
    };
    let gone = if gone.is_empty() {
        String::new()
    } else {
        format!(" {gone}")
    };
    let text = match slot.answers {
        Some(call) => {
            let lost = match slot.cause {
                Cause::Unreadable(_) => "its output is lost",
                Cause::Copy(_) | Cause::Missing(_) => "its output is not in the log",
            };
            format!(
                "{head},\"tool_name\":{},\"tool_call_id\":{},\"error\":{},\"kind\":\"{AGENT_ERROR}\"}}",
                j(&call.tool_name),
                j(&call.tool_call_id),
                j(&format!(
                    "{ANSWER_PREFIX}: {what}. The tool may or may not have run; {lost}.{gone}"
                )),
            )
        }
        None => {
            let set = match slot.cause {
                Cause::Missing(_) => "convo-doctor filled a gap in the log",
                _ => "convo-doctor set this event aside",
            };
            format!(
                "{head},\"code\":{},\"detail\":{},\"kind\":\"{CONVERSATION_ERROR}\"}}",
                j(CODE),
                j(&format!("{set}: {what}.{gone}")),
            )
        }
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
            cause: Cause::Unreadable("it is cut off"),
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
            cause: Cause::Unreadable("w"),
            answers: Some(&call),
        });
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["kind"], "AgentErrorEvent");
        assert_eq!(v["tool_call_id"], "call_1");
        assert_eq!(v["source"], "agent");
        assert!(v.get("parent_id").is_none());
        assert!(is_placeholder("AgentErrorEvent", None, v["error"].as_str()));
    }

    /// A copy and a missing file are not said to be unreadable, and only
    /// a file that was there is said to be in the backup.
    #[test]
    fn says_what_happened_to_the_slot() {
        let call = ToolCall {
            tool_name: "terminal".into(),
            tool_call_id: "call_1".into(),
        };
        let text = |cause, answers| {
            let b = event(&Slot {
                id: "e-3",
                timestamp: "t",
                parent: &ParentRef::Absent,
                file: "event-00003-e-3.json",
                cause,
                answers,
            });
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            v.get("error")
                .or(v.get("detail"))
                .and_then(|t| t.as_str())
                .unwrap()
                .to_string()
        };
        let copy = text(
            Cause::Copy("a byte-for-byte copy of event 00002"),
            Some(&call),
        );
        assert!(
            copy.contains("held a byte-for-byte copy of event 00002"),
            "{copy}"
        );
        assert!(copy.contains("its output is not in the log"), "{copy}");
        assert!(!copy.contains("could not be read"), "{copy}");
        let gap = text(Cause::Missing("no file holds index 00003"), None);
        assert!(
            gap.starts_with("convo-doctor filled a gap in the log: no file holds index 00003"),
            "{gap}"
        );
        assert!(!gap.contains("backup"), "{gap}");
        let cut = text(Cause::Unreadable("it is cut off"), Some(&call));
        assert!(cut.contains("could not be read (it is cut off)"), "{cut}");
        assert!(cut.contains("in the repair's backup"), "{cut}");
    }
}
