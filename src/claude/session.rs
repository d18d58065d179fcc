//! A Claude Code session file read into lines and records by the JSONL core
//! ([`crate::sessions::read`]: bounded, no link followed, no FIFO blocked
//! on, secrets learned as it is parsed): what a Claude Code record holds.

use std::path::Path;

use serde_json::Value;

use crate::secrets::Redactor;
use crate::store::fsread::ReadError;

/// How a record names its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parent {
    /// No `parentUuid` key (bookkeeping records).
    Absent,
    /// `parentUuid: null`: a root.
    Null,
    /// `parentUuid: "<uuid>"`.
    Id(String),
    /// `parentUuid` holds something else (a number, an object).
    Odd,
}

/// One JSON object line the client reads as a record.
#[derive(Clone, Debug)]
pub struct Record {
    pub uuid: Option<String>,
    pub parent: Parent,
    /// `type`: `user`, `assistant`, `attachment`, `system`, bookkeeping.
    pub kind: String,
    pub subtype: Option<String>,
    pub sidechain: bool,
    pub timestamp: Option<String>,
    pub session_id: Option<String>,
    pub version: Option<String>,
    /// The `role` of an object `message` (user and assistant records).
    pub role: Option<String>,
    /// A compaction boundary's `compactMetadata.preservedSegment`: the
    /// messages (`head` to `tail`, by their links) kept after the summary
    /// record `anchor`, as uuids.
    pub preserved: Option<Preserved>,
    /// The ids of the `tool_use` blocks of its message content.
    pub tool_uses: Vec<String>,
    /// The `tool_use_id`s of the `tool_result` blocks of its message content.
    pub tool_results: Vec<String>,
    /// A short digest of the message content, to tell two records written
    /// under one uuid apart (not shown).
    pub content_hash: u64,
    /// `leafUuid` of a `last-prompt` record (the client's checkpoint).
    pub leaf_uuid: Parent,
    /// `explicit: true` on a `last-prompt` record.
    pub explicit: bool,
    /// `message.id` of an assistant record (one API reply may be written
    /// as several records sharing it).
    pub message_id: Option<String>,
}

impl Record {
    /// A record of the conversation tree: it has a uuid and is one of the
    /// types the client chains (user, assistant, attachment, system).
    pub fn in_tree(&self) -> bool {
        self.uuid.is_some()
            && matches!(
                self.kind.as_str(),
                "user" | "assistant" | "attachment" | "system"
            )
    }

    /// A message the client resends as one of the API's messages (a user
    /// or assistant record with a message object): the unit of "resume
    /// sends N of M".
    pub fn is_message(&self) -> bool {
        self.in_tree() && matches!(self.kind.as_str(), "user" | "assistant") && self.role.is_some()
    }

    /// A compaction's boundary: a deliberate root.
    pub fn is_compact_boundary(&self) -> bool {
        self.kind == "system" && self.subtype.as_deref() == Some("compact_boundary")
    }
}

/// A compaction's preserved segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preserved {
    pub head: String,
    pub anchor: String,
    pub tail: String,
    /// `compactMetadata.preservedMessages.uuids`: the list the client uses
    /// in place of the head-to-tail walk when it is there.
    pub uuids: Option<Vec<String>>,
}

/// What one line of the file is.
pub type LineKind = crate::sessions::LineKind<Record>;
pub type Line = crate::sessions::Line<Record>;
/// A session file as read.
pub type Session = crate::sessions::Jsonl<Record>;

impl Session {
    /// The session's id: the `sessionId` its records carry, else the file
    /// name without `.jsonl`.
    pub fn id(&self, path: &Path) -> String {
        self.records()
            .find_map(|(_, r)| r.session_id.clone())
            .unwrap_or_else(|| crate::sessions::stem(path))
    }

    /// The client version that wrote the newest record that says.
    pub fn version(&self) -> Option<&str> {
        self.records().rev().find_map(|(_, r)| r.version.as_deref())
    }
}

/// Read and parse a session file. A scan error (permission, I/O) or what is
/// wrong with the file itself (a link, a FIFO, too large) is the caller's
/// to report.
pub fn read(path: &Path) -> Result<Session, ReadError> {
    crate::sessions::read::read(path)
}

/// Parse a session's bytes (one JSON record a line).
pub fn parse(bytes: Vec<u8>) -> Session {
    crate::sessions::read::parse(bytes)
}

impl crate::sessions::read::Record for Record {
    fn not_json(e: &serde_json::Error) -> String {
        format!("not JSON ({})", e.classify_reason())
    }

    fn parse(o: &serde_json::Map<String, Value>, v: &Value, redactor: &mut Redactor) -> Record {
        redactor.learn(v);
        record(o)
    }
}

fn record(o: &serde_json::Map<String, Value>) -> Record {
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let parent = match o.get("parentUuid") {
        None => Parent::Absent,
        Some(Value::Null) => Parent::Null,
        Some(Value::String(p)) => Parent::Id(p.clone()),
        Some(_) => Parent::Odd,
    };
    let message = o.get("message").and_then(Value::as_object);
    let content_hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        if let Some(m) = message {
            serde_json::to_string(m).unwrap_or_default().hash(&mut h);
        }
        if let Some(a) = o.get("attachment") {
            serde_json::to_string(a).unwrap_or_default().hash(&mut h);
        }
        h.finish()
    };
    let (mut tool_uses, mut tool_results) = (Vec::new(), Vec::new());
    let blocks = message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for b in blocks {
        let id = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
        match b.get("type").and_then(Value::as_str) {
            Some("tool_use") => tool_uses.extend(id("id")),
            Some("tool_result") => tool_results.extend(id("tool_use_id")),
            _ => {}
        }
    }
    let meta = o.get("compactMetadata");
    let list = meta.and_then(|m| m.get("preservedMessages")).and_then(|p| {
        let anchor = p.get("anchorUuid").and_then(Value::as_str)?.to_string();
        let uuids: Option<Vec<String>> = p
            .get("uuids")?
            .as_array()?
            .iter()
            .map(|u| u.as_str().map(str::to_string))
            .collect();
        Some((anchor, uuids?))
    });
    let preserved = meta.and_then(|m| m.get("preservedSegment")).and_then(|p| {
        let g = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Preserved {
            head: g("headUuid")?,
            anchor: g("anchorUuid")?,
            tail: g("tailUuid")?,
            uuids: None,
        })
    });
    // the list wins over the segment (the client reads it first)
    let preserved = match (list, preserved) {
        (Some((anchor, uuids)), p) => Some(Preserved {
            head: p.as_ref().map(|p| p.head.clone()).unwrap_or_default(),
            tail: p.as_ref().map(|p| p.tail.clone()).unwrap_or_default(),
            anchor,
            uuids: Some(uuids),
        }),
        (None, p) => p,
    };
    Record {
        preserved,
        tool_uses,
        tool_results,
        uuid: s("uuid"),
        parent,
        kind: s("type").unwrap_or_default(),
        subtype: s("subtype"),
        sidechain: o.get("isSidechain").and_then(Value::as_bool) == Some(true),
        timestamp: s("timestamp"),
        session_id: s("sessionId"),
        version: s("version"),
        role: message
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            .map(str::to_string),
        content_hash,
        leaf_uuid: match o.get("leafUuid") {
            None => Parent::Absent,
            Some(Value::Null) => Parent::Null,
            Some(Value::String(p)) => Parent::Id(p.clone()),
            Some(_) => Parent::Odd,
        },
        explicit: o.get("explicit").and_then(Value::as_bool) == Some(true),
        message_id: message
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

trait Classify {
    fn classify_reason(&self) -> &'static str;
}

impl Classify for serde_json::Error {
    fn classify_reason(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "I/O",
            serde_json::error::Category::Syntax => "a syntax error",
            serde_json::error::Category::Data => "bad data",
            serde_json::error::Category::Eof => "it ends early",
        }
    }
}
