//! A Codex rollout read into lines and records by the JSONL core
//! ([`crate::sessions::read`]: bounded, no link followed, no FIFO blocked
//! on, secrets learned as it is parsed): what a Codex record holds.

use std::path::Path;

use serde_json::Value;

use crate::secrets::Redactor;
use crate::store::fsread::ReadError;

/// The fields the client (0.171.0) needs in a `session_meta` payload to
/// resume: measured by taking them away one at a time
/// (fixtures/codex/gen/gen.py).
pub const META_FIELDS: [&str; 5] = ["id", "timestamp", "cwd", "originator", "cli_version"];

/// A `response_item` payload as the client reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// `message`, `function_call`, `function_call_output`, `reasoning`…
    pub kind: String,
    /// A message's `role`.
    pub role: Option<String>,
    /// A call's or an output's `call_id`.
    pub call_id: Option<String>,
    /// A developer message carrying the client's skills context
    /// (`<skills_instructions>`), a section of its world state.
    pub skills_context: bool,
    /// A real user message (no context the client wrote, no compaction's
    /// summary): what a compaction without a replacement history keeps.
    pub collected: bool,
}

/// How the client begins the summary message of a compaction
/// (`SUMMARY_PREFIX`; measured in its `compacted` records).
pub const SUMMARY_PREFIX: &str =
    "Another language model started to solve this problem and produced a summary of its thinking process.";

/// The user messages the client writes as context, not typed by the user
/// (`is_session_prefix_message`: its environment context and user
/// instructions).
const CONTEXT_PREFIXES: [&str; 3] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
];

impl Item {
    /// The summary message a compaction without a replacement history
    /// adds (an item of the client's own).
    pub fn summary() -> Item {
        Item {
            kind: "message".into(),
            role: Some("user".into()),
            call_id: None,
            skills_context: false,
            collected: false,
        }
    }

    /// A tool call the client answers (`function_call`, `custom_tool_call`,
    /// `local_shell_call`).
    pub fn is_call(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "function_call" | "custom_tool_call" | "local_shell_call"
        )
    }

    /// A tool call's answer.
    pub fn is_output(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "function_call_output" | "custom_tool_call_output"
        )
    }
}

/// One JSON object line: `{timestamp, type, payload}`.
#[derive(Clone, Debug)]
pub struct Record {
    /// `session_meta`, `response_item`, `event_msg`, `turn_context`,
    /// `compacted`, or another type the client skips.
    pub kind: String,
    /// For a `response_item` whose payload the client reads as an item.
    pub item: Option<Item>,
    /// For a `session_meta`: its payload's fields the client needs that are
    /// missing or not strings; its `id`.
    pub meta_missing: Vec<&'static str>,
    pub meta_id: Option<String>,
    pub meta_version: Option<String>,
    /// The `cwd` a `turn_context` or a `session_meta` names.
    pub cwd: Option<String>,
    /// The provider a `thread_settings_applied` event or a
    /// `session_meta` names.
    pub provider: Option<String>,
    /// The thread id an event names (`thread_id`, `session_id`).
    pub thread_id: Option<String>,
    pub timestamp: Option<String>,
    /// A digest of a `response_item`'s payload (its `internal_*` keys
    /// aside, key order aside), to tell which line an item of a
    /// compaction's replacement history is.
    pub digest: u64,
    /// A `compacted` record's `replacement_history`: each item's digest and
    /// what it is (`None`: no item the client reads). `None` when it has no
    /// replacement history.
    pub replacement: Option<Vec<(u64, Option<Item>)>>,
    /// A `world_state` record the client reads (`full` a boolean, `state`
    /// an object): `Some(full)`; a full one is the snapshot the client
    /// diffs its next context against, the others patch it.
    pub world_state: Option<bool>,
    /// A `compacted` record the client reads without a replacement history
    /// (an older client's: `message` a string, `replacement_history`
    /// absent or null and no `replacement_history_metadata`, with which
    /// the client does not read the record at all; measured).
    pub legacy_compaction: bool,
}

/// What one line of the file is.
pub type LineKind = crate::sessions::LineKind<Record>;
pub type Line = crate::sessions::Line<Record>;
/// A rollout as read.
pub type Rollout = crate::sessions::Jsonl<Record>;

impl Rollout {
    /// The session's id: the first `session_meta`'s, else the id the
    /// events name.
    pub fn id(&self) -> Option<String> {
        self.records()
            .find_map(|(_, r)| r.meta_id.clone())
            .or_else(|| self.records().find_map(|(_, r)| r.thread_id.clone()))
    }
}

/// The id and timestamp a rollout's file name carries:
/// `rollout-<YYYY-MM-DDTHH-MM-SS>-<uuid>.jsonl`.
pub fn name_parts(path: &Path) -> Option<(String, String)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    if rest.len() != 19 + 1 + 36 || !rest.is_char_boundary(19) {
        return None;
    }
    let (ts, id) = (&rest[..19], &rest[20..]);
    let uuid_like = is_uuid(id);
    let b = ts.as_bytes();
    let ts_like = b.iter().enumerate().all(|(k, &c)| match k {
        4 | 7 | 13 | 16 => c == b'-',
        10 => c == b'T',
        _ => c.is_ascii_digit(),
    });
    if !uuid_like || !ts_like {
        return None;
    }
    // 2026-12-03T06-55-54 -> 2026-12-03T06:55:54.000Z
    let iso = format!(
        "{}T{}:{}:{}.000Z",
        &ts[..10],
        &ts[11..13],
        &ts[14..16],
        &ts[17..19]
    );
    Some((id.to_ascii_lowercase(), iso))
}

/// Read and parse a rollout. A scan error (permission, I/O) or what is
/// wrong with the file itself (a link, a FIFO, too large) is the caller's
/// to report.
pub fn read(path: &Path) -> Result<Rollout, ReadError> {
    crate::sessions::read::read(path)
}

/// Parse a rollout's bytes (one JSON record a line).
pub fn parse(bytes: Vec<u8>) -> Rollout {
    crate::sessions::read::parse(bytes)
}

impl crate::sessions::read::Record for Record {
    fn not_json(_: &serde_json::Error) -> String {
        "not JSON".into()
    }

    fn parse(o: &serde_json::Map<String, Value>, v: &Value, redactor: &mut Redactor) -> Record {
        learn(redactor, v);
        record(o)
    }
}

fn record(o: &serde_json::Map<String, Value>) -> Record {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let kind = s(o.get("type")).unwrap_or_default();
    let payload = o.get("payload").and_then(Value::as_object);
    let p = |k: &str| s(payload.and_then(|p| p.get(k)));
    let mut r = Record {
        kind: kind.clone(),
        item: None,
        meta_missing: Vec::new(),
        meta_id: None,
        meta_version: None,
        cwd: None,
        provider: None,
        thread_id: None,
        timestamp: s(o.get("timestamp")),
        digest: 0,
        replacement: None,
        world_state: None,
        legacy_compaction: false,
    };
    match kind.as_str() {
        "session_meta" => {
            r.meta_missing = META_FIELDS
                .iter()
                .copied()
                .filter(|k| p(k).is_none())
                .collect();
            r.meta_id = p("id");
            r.meta_version = p("cli_version");
            r.cwd = p("cwd");
            r.provider = p("model_provider");
        }
        "response_item" => {
            r.item = payload.and_then(item);
            r.digest = o.get("payload").map(digest).unwrap_or(0);
        }
        "compacted" => {
            r.legacy_compaction = payload.is_some_and(|p| {
                p.get("message").is_some_and(Value::is_string)
                    && p.get("replacement_history").is_none_or(Value::is_null)
                    && !p.contains_key("replacement_history_metadata")
            });
            r.replacement = payload
                .and_then(|p| p.get("replacement_history"))
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|x| (digest(x), x.as_object().and_then(item)))
                        .collect()
                });
        }
        "turn_context" => r.cwd = p("cwd"),
        // `WorldStateItem { full: bool, state: Map<String, Value> }`: any
        // other shape is a line the client does not read
        "world_state" => {
            r.world_state = payload
                .filter(|p| p.get("state").is_some_and(Value::is_object))
                .and_then(|p| p.get("full"))
                .and_then(Value::as_bool);
        }
        "event_msg" => {
            r.thread_id = p("thread_id");
            let settings = payload
                .and_then(|p| p.get("thread_settings"))
                .and_then(Value::as_object);
            r.provider = s(settings.and_then(|t| t.get("model_provider_id")));
            r.cwd = s(settings.and_then(|t| t.get("cwd")));
        }
        _ => r.thread_id = p("thread_id").or_else(|| p("session_id")),
    }
    r
}

/// A digest of an item: its keys sorted, its top-level `internal_*` keys
/// left out (the client's bookkeeping, not sent).
pub fn digest(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    fn walk(v: &Value, top: bool, h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m
                    .keys()
                    .filter(|k| !(top && k.starts_with("internal_")))
                    .collect();
                keys.sort();
                "{".hash(h);
                for k in keys {
                    k.hash(h);
                    walk(&m[k], false, h);
                }
                "}".hash(h);
            }
            Value::Array(a) => {
                "[".hash(h);
                for x in a {
                    walk(x, false, h);
                }
                "]".hash(h);
            }
            other => other.to_string().hash(h),
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    walk(v, true, &mut h);
    h.finish()
}

/// Learn a record's secrets, but not the thread's own id: Codex writes it
/// under `session_id` (a key the SDK's rule takes for a secret), and it is
/// the rollout's name, not a credential. Only a uuid there is spared.
fn learn(redactor: &mut Redactor, v: &Value) {
    let sid = v
        .get("payload")
        .and_then(|p| p.get("session_id"))
        .and_then(Value::as_str);
    if sid.is_some_and(is_uuid) {
        let mut copy = v.clone();
        if let Some(p) = copy.get_mut("payload").and_then(Value::as_object_mut) {
            p.remove("session_id");
        }
        redactor.learn(&copy);
    } else {
        redactor.learn(v);
    }
}

/// `8-4-4-4-12` hex digits.
pub fn is_uuid(id: &str) -> bool {
    id.len() == 36
        && id.char_indices().all(|(k, c)| {
            if [8, 13, 18, 23].contains(&k) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// A payload the client reads as an item: a `message` with a `role` and a
/// `content` array, a call with its `call_id` (and a function's `name` and
/// `arguments`), an output with its `call_id` and `output`; other typed
/// payloads (reasoning, web search…) as they are. Measured: a `message`
/// without its role and content is skipped.
fn item(p: &serde_json::Map<String, Value>) -> Option<Item> {
    let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let kind = s("type")?;
    let call_id = s("call_id");
    let ok = match kind.as_str() {
        "message" => s("role").is_some() && p.get("content").is_some_and(Value::is_array),
        "function_call" => call_id.is_some() && s("name").is_some() && p.get("arguments").is_some(),
        "custom_tool_call" => call_id.is_some() && s("name").is_some(),
        "function_call_output" | "custom_tool_call_output" => {
            call_id.is_some() && p.get("output").is_some()
        }
        _ => true,
    };
    let skills_context = kind == "message"
        && s("role").as_deref() == Some("developer")
        && p.get("content").and_then(Value::as_array).is_some_and(|c| {
            c.iter().any(|x| {
                x.get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.trim_start().starts_with("<skills_instructions>"))
            })
        });
    // `content_items_to_text`: the texts of its parts that are not empty
    let text: Vec<&str> = p
        .get("content")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|x| {
                    matches!(
                        x.get("type").and_then(Value::as_str),
                        Some("input_text" | "output_text")
                    )
                })
                .filter_map(|x| x.get("text").and_then(Value::as_str))
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let collected = kind == "message"
        && s("role").as_deref() == Some("user")
        && !text.is_empty()
        && !text[0].starts_with(SUMMARY_PREFIX)
        && !CONTEXT_PREFIXES
            .iter()
            .any(|c| text[0].trim_start().starts_with(c));
    ok.then(|| Item {
        role: s("role"),
        kind,
        call_id,
        skills_context,
        collected,
    })
}
