//! One event file: its name under the SDK's rule, and the few JSON keys that
//! drive the checks, parsed lazily (every other key is skipped unread).

use serde::Deserialize;
use serde_json::Value;

/// `ROOT_PARENT_ID`: a `parent_id` that means "this event starts a new root".
pub const ROOT_PARENT_ID: &str = "__root__";

/// The state-sync artifact kind: never a tree node, never advances HEAD.
pub const STATE_UPDATE: &str = "ConversationStateUpdateEvent";
/// Treated as an artifact by the ≥1.35 leaf fallback (#4068), but it advances HEAD.
pub const CONVERSATION_ERROR: &str = "ConversationErrorEvent";

/// A name matched by `^event-(\d{5,})-([0-9a-fA-F-]{8,})\.json$` (`\d{5}` before 1.30).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventName {
    pub idx: u64,
    pub id: String,
}

/// Apply the SDK's `EVENT_NAME_RE` to a file name.
pub fn parse_event_name(name: &str, wide_index: bool) -> Option<EventName> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (digits, id) = rest.split_once('-')?;
    let ok_digits = digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit());
    if !ok_digits || (!wide_index && digits.len() != 5) {
        return None;
    }
    if id.len() < 8 || !id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return None;
    }
    // Parse the index from the digits; absurdly long indices do not fit and
    // are treated as unmatched rather than wrapping.
    let idx = digits.parse::<u64>().ok()?;
    Some(EventName {
        idx,
        id: id.to_string(),
    })
}

/// The name the SDK's `_path(idx)` rebuilds when it reads event `idx`
/// (`EVENT_FILE_PATTERN = "event-{idx:05d}-{event_id}.json"`).
pub fn canonical_name(idx: u64, id: &str) -> String {
    format!("event-{idx:05}-{id}.json")
}

/// Whether `name` is exactly [`canonical_name`]`(idx, id)`, without building
/// it (the reader asks this of every event it reads).
pub fn is_canonical_name(name: &str, idx: u64, id: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("event-")
        .and_then(|r| r.strip_suffix(".json"))
    else {
        return false;
    };
    let Some((digits, rest_id)) = rest.split_once('-') else {
        return false;
    };
    let width = idx.checked_ilog10().map_or(1, |l| l as usize + 1).max(5);
    rest_id == id
        && digits.len() == width
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u64>() == Ok(idx)
}

/// What `_count_events_on_disk` counts (and what `on_disk` reports).
pub fn counts_as_event_file(name: &str) -> bool {
    name.starts_with("event-") && name.ends_with(".json")
}

/// The SDK's count marker, `.eventlog-len-N.marker` (1.47+).
pub fn is_count_marker(name: &str) -> bool {
    name.strip_prefix(".eventlog-len-")
        .and_then(|r| r.strip_suffix(".marker"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// An event's `parent_id` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParentRef {
    /// No `parent_id` key: a legacy (pre-tree) event or a genuine first event.
    Absent,
    /// `"__root__"`: an explicit new root.
    Root,
    /// An explicit parent.
    Id(String),
}

impl ParentRef {
    pub fn is_present(&self) -> bool {
        !matches!(self, ParentRef::Absent)
    }
    pub fn id(&self) -> Option<&str> {
        match self {
            ParentRef::Id(s) => Some(s),
            _ => None,
        }
    }
}

/// The keys of an event that convo-doctor reads.
#[derive(Clone, Debug)]
pub struct EventRecord {
    pub id: Option<String>,
    pub kind: String,
    pub source: Option<String>,
    pub parent: ParentRef,
    pub timestamp: Option<String>,
    pub action_kind: Option<String>,
    pub observation_kind: Option<String>,
    pub tool_call_id: Option<String>,
    pub action_id: Option<String>,
    /// `ConversationStateUpdateEvent.key`
    pub key: Option<String>,
    /// The first 200 characters of `AgentErrorEvent.error`.
    pub error: Option<String>,
    /// A placeholder convo-doctor left in the slot of an event it set aside
    /// (`crate::edit::placeholder`): it stands for an event of unknown kind.
    pub placeholder: bool,
    /// Every top-level key, as bits of [`crate::kinds::key_bit`]'s table.
    pub keys: u128,
    /// Top-level keys outside that table (no release knows them): the first
    /// [`MAX_ODD_KEYS`] distinct ones, in file order.
    pub odd_keys: Vec<String>,
    /// What pydantic says about the whole event under the release it was
    /// read for (empty: valid, or not validated). See [`crate::validate`].
    pub invalid: Vec<crate::validate::VError>,
}

impl EventRecord {
    /// A state-sync artifact: never a tree node.
    pub fn is_state_update(&self) -> bool {
        self.kind == STATE_UPDATE
    }
    /// An artifact for the ≥1.35 leaf fallback and the false-root fingerprint.
    pub fn is_artifact(&self) -> bool {
        self.kind == STATE_UPDATE || self.kind == CONVERSATION_ERROR
    }
}

/// Why an event file cannot be read (each is a load failure for the SDK).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// 0 bytes: the SDK raises `FileNotFoundError("Missing event file")`.
    Empty,
    NotUtf8,
    /// Not valid JSON (truncated, garbage, too deeply nested).
    InvalidJson(String),
    NotObject,
    MissingKind,
    /// A key the SDK validates has the wrong type (e.g. a numeric `parent_id`).
    BadField {
        field: &'static str,
        found: &'static str,
        expected: &'static str,
    },
    /// Not a regular file (directory, FIFO, socket, symlink): never opened.
    NotAFile(&'static str),
    /// Too large to read safely.
    TooLarge(u64),
    Io(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Empty => write!(f, "the file is empty (0 bytes)"),
            Unreadable::NotUtf8 => write!(f, "the file is not valid UTF-8"),
            Unreadable::InvalidJson(e) => write!(f, "the file is not valid JSON ({e})"),
            Unreadable::NotObject => write!(f, "the JSON is not an object"),
            Unreadable::MissingKind => write!(f, "the event has no string `kind`"),
            Unreadable::BadField {
                field,
                found,
                expected,
            } => {
                write!(f, "`{field}` is {found}, not {expected}")
            }
            Unreadable::NotAFile(what) => write!(f, "it is a {what}, not a regular file"),
            Unreadable::TooLarge(n) => write!(f, "it is {n} bytes, over the read limit"),
            Unreadable::Io(e) => write!(f, "it cannot be read ({e})"),
        }
    }
}

/// `action` / `observation`: an object whose `kind` is read and whose other
/// keys (often a large tool output) are skipped unread; any other JSON type is
/// recorded by its type name only. (Deserializing it as a struct would make
/// serde quote a string value in its error message, and a file's content must
/// never reach the output.)
enum KindOnly {
    Object { kind: Option<Value> },
    Other(&'static str),
}

impl<'de> Deserialize<'de> for KindOnly {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KindOnly;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<KindOnly, A::Error> {
                let mut kind = None;
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == "kind" {
                        kind = Some(m.next_value::<Value>()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(KindOnly::Object { kind })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<KindOnly, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(KindOnly::Other("an array"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("a number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("a string"))
            }
            fn visit_unit<E>(self) -> Result<KindOnly, E> {
                Ok(KindOnly::Other("null"))
            }
        }
        d.deserialize_any(V)
    }
}

/// The subset of an event's keys we deserialize; serde skips the rest
/// unread. Every top-level key name is noted (as a bit of the known-key
/// table, or by name when unknown) so a reader can apply the SDK's
/// `extra="forbid"`. A repeated key keeps its last value, as Python's json.
#[derive(Default)]
struct RawEvent {
    id: Option<Value>,
    kind: Option<Value>,
    source: Option<Value>,
    parent_id: Option<Value>,
    timestamp: Option<Value>,
    action: Option<KindOnly>,
    observation: Option<KindOnly>,
    tool_call_id: Option<Value>,
    action_id: Option<Value>,
    key: Option<Value>,
    error: Option<Value>,
    code: Option<Value>,
    keys: u128,
    odd_keys: Vec<String>,
}

/// How many distinct unknown keys of one event are kept (in file order).
pub const MAX_ODD_KEYS: usize = 64;

impl<'de> Deserialize<'de> for RawEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawEvent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEvent, A::Error> {
                let mut r = RawEvent::default();
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match crate::kinds::key_bit(&k) {
                        Some(bit) => r.keys |= 1u128 << bit,
                        None => {
                            // at most MAX_ODD_KEYS kept, so an event with
                            // 10^6 keys costs at most 64 comparisons per key
                            // and no allocation once the list is full (it
                            // was quadratic: 10^5 keys took 12 s)
                            if r.odd_keys.len() < MAX_ODD_KEYS
                                && !r.odd_keys.iter().any(|o| *o == k)
                            {
                                r.odd_keys.push(k.to_string());
                            }
                        }
                    }
                    match &*k {
                        "id" => r.id = map.next_value()?,
                        "kind" => r.kind = map.next_value()?,
                        "source" => r.source = map.next_value()?,
                        "parent_id" => r.parent_id = map.next_value()?,
                        "timestamp" => r.timestamp = map.next_value()?,
                        "action" => r.action = map.next_value()?,
                        "observation" => r.observation = map.next_value()?,
                        "tool_call_id" => r.tool_call_id = map.next_value()?,
                        "action_id" => r.action_id = map.next_value()?,
                        "key" => r.key = map.next_value()?,
                        "error" => r.error = map.next_value()?,
                        "code" => r.code = map.next_value()?,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(r)
            }
        }
        d.deserialize_map(V)
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn opt_str(v: Option<Value>, field: &'static str) -> Result<Option<String>, Unreadable> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Unreadable::BadField {
            field,
            found: type_name(&other),
            expected: "a string",
        }),
    }
}

/// `action.kind` / `observation.kind` (the rest of the nested object, often
/// a large tool output, is skipped without being stored). `action` or
/// `observation` that is not an object fails the SDK's validation.
fn nested_kind(v: Option<KindOnly>, field: &'static str) -> Result<Option<String>, Unreadable> {
    match v {
        None | Some(KindOnly::Other("null")) => Ok(None),
        Some(KindOnly::Other(found)) => Err(Unreadable::BadField {
            field,
            found,
            expected: "an object",
        }),
        Some(KindOnly::Object {
            kind: Some(Value::String(s)),
        }) => Ok(Some(s)),
        Some(KindOnly::Object { .. }) => Ok(None),
    }
}

fn lenient_str(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// The checks before any parse: not empty, UTF-8, an object, and the SDK
/// parser's own rules (nesting, surrogates, huge integers, NaN/Infinity: see
/// [`sdk_json`]). Returns the text serde can parse for the same verdict.
fn precheck(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, Unreadable> {
    if bytes.is_empty() {
        return Err(Unreadable::Empty);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Unreadable::NotUtf8)?;
    if text.trim().is_empty() {
        return Err(Unreadable::InvalidJson("only white space".into()));
    }
    if !text.trim_start().starts_with('{') {
        // Valid JSON that is not an object, or not JSON at all. (serde would
        // happily read an array as a struct, so decide this first.)
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => Err(Unreadable::NotObject),
            Err(e) => Err(invalid(&e)),
        };
    }
    // Keys we do not need are skipped without serde's recursion limit, so the
    // SDK's own parser rules are checked first.
    sdk_json(text)
}

/// Parse an event file's bytes. Never panics; every failure is an [`Unreadable`].
pub fn parse_event(bytes: &[u8]) -> Result<EventRecord, Unreadable> {
    let text = precheck(bytes)?;
    let raw: RawEvent = serde_json::from_str::<RawEvent>(&text).map_err(|e| invalid(&e))?;
    build(raw)
}

fn build(raw: RawEvent) -> Result<EventRecord, Unreadable> {
    let kind = match raw.kind {
        Some(Value::String(s)) if !s.is_empty() => s,
        // `_validate_subtype`'s dict lookup of an unhashable kind: TypeError
        Some(k @ (Value::Array(_) | Value::Object(_))) => {
            return Err(Unreadable::BadField {
                field: "kind",
                found: type_name(&k),
                expected: "a string",
            })
        }
        _ => return Err(Unreadable::MissingKind),
    };
    let parent = match raw.parent_id {
        None | Some(Value::Null) => ParentRef::Absent,
        Some(Value::String(s)) if s == ROOT_PARENT_ID => ParentRef::Root,
        Some(Value::String(s)) => ParentRef::Id(s),
        Some(other) => {
            return Err(Unreadable::BadField {
                field: "parent_id",
                found: type_name(&other),
                expected: "a string",
            })
        }
    };
    let error: Option<String> = lenient_str(raw.error).map(|s| s.chars().take(200).collect());
    let placeholder = super::placeholder::is_placeholder(
        &kind,
        lenient_str(raw.code).as_deref(),
        error.as_deref(),
    );
    Ok(EventRecord {
        id: opt_str(raw.id, "id")?,
        kind,
        source: opt_str(raw.source, "source")?,
        parent,
        timestamp: lenient_str(raw.timestamp),
        action_kind: nested_kind(raw.action, "action")?,
        observation_kind: nested_kind(raw.observation, "observation")?,
        tool_call_id: lenient_str(raw.tool_call_id),
        action_id: lenient_str(raw.action_id),
        key: lenient_str(raw.key),
        error,
        placeholder,
        keys: raw.keys,
        odd_keys: raw.odd_keys,
        invalid: Vec::new(),
    })
}

impl KindOnly {
    fn from_value(v: &Jv) -> KindOnly {
        match v {
            Jv::Object(m) => KindOnly::Object {
                kind: m.get("kind").map(Jv::to_serde),
            },
            other => KindOnly::Other(match other {
                Jv::Null => "null",
                Jv::Bool(_) => "a boolean",
                Jv::Number(_) => "a number",
                Jv::String(_) => "a string",
                _ => "an array",
            }),
        }
    }
}

use crate::validate::jv::Value as Jv;

impl RawEvent {
    /// The same fields as the lazy deserializer, from a parsed object (a
    /// repeated key already kept its last value, as in Python).
    fn from_map(m: &crate::validate::jv::Map) -> RawEvent {
        let mut r = RawEvent::default();
        for (k, v) in m {
            let k: &str = k;
            match crate::kinds::key_bit(k) {
                Some(bit) => r.keys |= 1u128 << bit,
                None => {
                    // capped like the lazy path: linear in the key count
                    if r.odd_keys.len() < MAX_ODD_KEYS && !r.odd_keys.iter().any(|o| o == k) {
                        r.odd_keys.push(k.to_string());
                    }
                }
            }
            match k {
                "id" => r.id = Some(v.to_serde()),
                "kind" => r.kind = Some(v.to_serde()),
                "source" => r.source = Some(v.to_serde()),
                "parent_id" => r.parent_id = Some(v.to_serde()),
                "timestamp" => r.timestamp = Some(v.to_serde()),
                "action" => r.action = Some(KindOnly::from_value(v)),
                "observation" => r.observation = Some(KindOnly::from_value(v)),
                "tool_call_id" => r.tool_call_id = Some(v.to_serde()),
                "action_id" => r.action_id = Some(v.to_serde()),
                "key" => r.key = Some(v.to_serde()),
                "error" => r.error = Some(v.to_serde()),
                "code" => r.code = Some(v.to_serde()),
                _ => {}
            }
        }
        r
    }
}

/// [`parse_event`], and the whole event validated with the model of release
/// `version` (see [`crate::validate`]) in the same single parse; the first
/// errors are kept.
pub fn parse_event_for(
    bytes: &[u8],
    version: Option<crate::version::Version>,
) -> Result<EventRecord, Unreadable> {
    let Some(schema) = version.and_then(|v| crate::validate::schema_for(v).ok()) else {
        return parse_event(bytes);
    };
    let text = precheck(bytes)?;
    // serde_json's own nesting limit (128) is below the SDK's (201): such a
    // file, and every syntax error, takes the lazy path (not validated there).
    // The tree borrows the text's strings (crate::validate::jv).
    let value = match serde_json::from_str::<Jv>(&text) {
        Ok(v @ Jv::Object(_)) => v,
        _ => return parse_event(bytes),
    };
    let mut errors = crate::validate::event_tree(schema, &value).errors;
    // a crash (not a ValidationError) decides the exception: keep it first
    errors.sort_by_key(|e| e.exception() == "ValidationError");
    errors.truncate(MAX_KEPT_ERRORS);
    let Jv::Object(map) = &value else {
        unreachable!("matched as an object above")
    };
    let mut rec = build(RawEvent::from_map(map))?;
    rec.invalid = errors;
    Ok(rec)
}

/// How many validation errors an event keeps (pydantic reports them all).
pub const MAX_KEPT_ERRORS: usize = 3;

/// The nesting depth pydantic's JSON parser (jiter) accepts: 201 nested
/// arrays/objects parse, 202 do not (checked with SDK 1.58.2's
/// pydantic_core.from_json; fixtures/gen/jiter_rules.py).
pub const MAX_DEPTH: usize = 201;

/// The longest integer (in digits) jiter reads; longer is "number out of
/// range" (Python's int max_str_digits, 4300).
pub const MAX_INT_DIGITS: usize = 4300;

/// JSON text judged by the rules of pydantic's parser (jiter), which the SDK
/// reads every file with, where they differ from serde_json's:
/// - nesting deeper than [`MAX_DEPTH`] is invalid;
/// - a lone surrogate escape (`"\ud800"`, `"\udc00"`) is invalid;
/// - an integer of more than [`MAX_INT_DIGITS`] digits is invalid;
/// - `NaN`, `Infinity` and `-Infinity` are valid numbers, and so is any
///   float however large (`1e400` reads as inf).
///
/// Returns the text serde can parse for the same verdict: the same bytes, or
/// with each `NaN`/`Infinity` and each float serde might find out of range
/// replaced by `0` padded with spaces to the same length (so positions stay
/// true; an id or parent that is a number is refused whatever it is). One
/// linear pass, no recursion.
pub fn sdk_json(text: &str) -> Result<std::borrow::Cow<'_, str>, Unreadable> {
    let b = text.as_bytes();
    let bad = |what: &str, at: usize| {
        Err(Unreadable::InvalidJson(format!(
            "{what} at byte {at}, which the SDK's parser refuses"
        )))
    };
    let hex4 = |at: usize| -> Option<u32> {
        let h = b.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let (mut depth, mut i) = (0usize, 0usize);
    let mut numbers: Vec<(usize, usize)> = Vec::new();
    let mut special = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        if b.get(i + 1) == Some(&b'u') {
                            if let Some(u) = hex4(i + 2) {
                                if (0xDC00..0xE000).contains(&u) {
                                    return bad("a lone low surrogate escape", i);
                                }
                                if (0xD800..0xDC00).contains(&u) {
                                    let low = (b.get(i + 6) == Some(&b'\\')
                                        && b.get(i + 7) == Some(&b'u'))
                                    .then(|| hex4(i + 8))
                                    .flatten();
                                    if !low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                                        return bad("a lone high surrogate escape", i);
                                    }
                                    i += 12;
                                    continue;
                                }
                                i += 6;
                                continue;
                            }
                        }
                        i += 2;
                        continue;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Unreadable::InvalidJson(format!(
                        "nested more than {MAX_DEPTH} levels deep at byte {i}, beyond the SDK's parser limit"
                    )));
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' | b'N' | b'I' => {
                let start = i;
                if b[i] == b'-' {
                    i += 1;
                }
                let word = |w: &[u8]| b.get(i..i + w.len()) == Some(w);
                if word(b"NaN") || word(b"Infinity") {
                    i += if word(b"NaN") { 3 } else { 8 };
                    special = true;
                    numbers.push((start, i));
                    continue;
                }
                let digits_from = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let int_digits = i - digits_from;
                let (mut float, mut exp_digits, mut in_exp) = (false, 0usize, false);
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    float = true;
                    in_exp |= matches!(b[i], b'e' | b'E');
                    if in_exp && b[i].is_ascii_digit() {
                        exp_digits += 1;
                    }
                    i += 1;
                }
                if !float && int_digits > MAX_INT_DIGITS {
                    return bad("an integer of more than 4300 digits", start);
                }
                if i == start {
                    i += 1; // a stray N or I: serde reports it
                } else if float && (i - start > 24 || exp_digits >= 3) {
                    // may overflow f64 (serde refuses, jiter reads inf)
                    special = true;
                    numbers.push((start, i));
                }
            }
            _ => i += 1,
        }
    }
    if !special {
        return Ok(std::borrow::Cow::Borrowed(text));
    }
    let mut out = Vec::with_capacity(b.len());
    let mut last = 0;
    for (s, e) in numbers {
        out.extend_from_slice(&b[last..s]);
        out.push(b'0');
        out.extend(std::iter::repeat_n(b' ', e - s - 1));
        last = e;
    }
    out.extend_from_slice(&b[last..]);
    // only ASCII number tokens were replaced by ASCII
    Ok(std::borrow::Cow::Owned(
        String::from_utf8(out).unwrap_or_else(|_| text.to_string()),
    ))
}

/// The byte offset where JSON text first nests deeper than `max` arrays and
/// objects (brackets inside strings do not count). Linear, no recursion.
pub fn too_deep(bytes: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A parse error as a message that never quotes the file's content: syntax
/// errors name a position only; a data error (serde's "invalid type: string
/// \"...\"" quotes the value, which may be a secret or 50 MB long) is replaced
/// by its position.
pub fn invalid(e: &serde_json::Error) -> Unreadable {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Eof => "it ends early: truncated".to_string(),
        Category::Syntax => e.to_string(),
        Category::Data | Category::Io => format!(
            "a value has an unexpected type at line {} column {}",
            e.line(),
            e.column()
        ),
    };
    Unreadable::InvalidJson(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule_matches_the_sdk_regex() {
        let n = parse_event_name("event-00007-ae760ea7-1234.json", true).unwrap();
        assert_eq!(n.idx, 7);
        assert_eq!(n.id, "ae760ea7-1234");
        assert_eq!(
            parse_event_name("event-123456-abcdef12.json", true)
                .unwrap()
                .idx,
            123456
        );
        // 1.29.x read exactly five digits
        assert!(parse_event_name("event-123456-abcdef12.json", false).is_none());
        assert!(parse_event_name("event-7-abcdef12.json", true).is_none());
        assert!(parse_event_name("event-00007-abc.json", true).is_none());
        assert!(parse_event_name("event-00007-nothex99.json", true).is_none());
        assert!(parse_event_name(".eventlog.lock", true).is_none());
        assert!(parse_event_name("event-00007-abcdef12.json.tmp", true).is_none());
        assert!(counts_as_event_file("event-7-x.json"));
        assert!(!counts_as_event_file(".eventlog.lock"));
    }

    #[test]
    fn is_canonical_name_agrees_with_canonical_name() {
        let ids = ["ab", "abcdef12", "a-b", ""];
        let idxs = [0u64, 7, 99_999, 100_000, 123_456, u64::MAX];
        let names = [
            "event-00007-ab.json",
            "event-000007-ab.json",
            "event-7-ab.json",
            "event-00000-.json",
            "event-99999-abcdef12.json",
            "event-100000-abcdef12.json",
            "event-0100000-abcdef12.json",
            "event-123456-a-b.json",
            "event-+0007-ab.json",
            "event-00007-ab.json.tmp",
            "event-18446744073709551615-ab.json",
            "x",
        ];
        for id in ids {
            for idx in idxs {
                let canon = canonical_name(idx, id);
                assert!(is_canonical_name(&canon, idx, id), "{canon}");
                for n in names {
                    assert_eq!(is_canonical_name(n, idx, id), n == canon, "{n} {idx} {id}");
                }
            }
        }
    }

    #[test]
    fn canonical_name_pads_to_five() {
        assert_eq!(canonical_name(7, "ab"), "event-00007-ab.json");
        assert_eq!(canonical_name(123456, "ab"), "event-123456-ab.json");
    }

    #[test]
    fn parses_only_the_keys_it_needs() {
        let r = parse_event(
            br#"{"id":"a","timestamp":"t","source":"user","parent_id":"__root__",
               "llm_message":{"role":"user","content":[{"type":"text","text":"hi"}]},
               "kind":"MessageEvent"}"#,
        )
        .unwrap();
        assert_eq!(r.kind, "MessageEvent");
        assert_eq!(r.parent, ParentRef::Root);
        assert_eq!(r.id.as_deref(), Some("a"));
        let r = parse_event(br#"{"id":"b","kind":"ObservationEvent","observation":{"kind":"X"}}"#)
            .unwrap();
        assert_eq!(r.observation_kind.as_deref(), Some("X"));
        assert_eq!(r.parent, ParentRef::Absent);
    }

    #[test]
    fn every_broken_shape_is_unreadable_not_a_panic() {
        assert_eq!(parse_event(b"").unwrap_err(), Unreadable::Empty);
        assert_eq!(parse_event(b"\xff\xfe").unwrap_err(), Unreadable::NotUtf8);
        assert!(matches!(
            parse_event(br#"{"id":"a","kind":"Mess"#).unwrap_err(),
            Unreadable::InvalidJson(m) if m.contains("truncated")
        ));
        assert_eq!(parse_event(b"[1,2]").unwrap_err(), Unreadable::NotObject);
        assert_eq!(parse_event(b"\"x\"").unwrap_err(), Unreadable::NotObject);
        assert_eq!(
            parse_event(br#"{"id":"a"}"#).unwrap_err(),
            Unreadable::MissingKind
        );
        assert_eq!(
            parse_event(br#"{"id":"a","kind":"K","parent_id":5}"#).unwrap_err(),
            Unreadable::BadField {
                field: "parent_id",
                found: "a number",
                expected: "a string"
            }
        );
        assert!(matches!(
            parse_event(br#"{"id":"a","kind":"K","parent_id":{"x":1}}"#).unwrap_err(),
            Unreadable::BadField { .. }
        ));
        let deep = "[".repeat(100_000);
        assert!(matches!(
            parse_event(deep.as_bytes()).unwrap_err(),
            Unreadable::InvalidJson(_)
        ));
        let deep_obj = format!(r#"{{"id":"a","kind":"K","x":{}}}"#, "[".repeat(100_000));
        assert!(matches!(
            parse_event(deep_obj.as_bytes()).unwrap_err(),
            Unreadable::InvalidJson(_)
        ));
    }

    #[test]
    fn a_mistyped_nested_object_is_named_by_type_never_quoted() {
        for (text, field, found) in [
            (
                r#"{"kind":"K","action":"sk-NEVER-QUOTED"}"#,
                "action",
                "a string",
            ),
            (
                r#"{"kind":"K","observation":[1,"sk-NEVER-QUOTED"]}"#,
                "observation",
                "an array",
            ),
            (r#"{"kind":"K","action":7}"#, "action", "a number"),
        ] {
            let e = parse_event(text.as_bytes()).unwrap_err();
            assert_eq!(
                e,
                Unreadable::BadField {
                    field,
                    found,
                    expected: "an object"
                }
            );
            assert!(!e.to_string().contains("NEVER"));
        }
        // duplicate keys take the Value path; the same rule holds there
        let e = parse_event(br#"{"kind":"K","kind":"K","action":"sk-NEVER-QUOTED"}"#).unwrap_err();
        assert!(!e.to_string().contains("NEVER"), "{e}");
        let r = parse_event(br#"{"kind":"K","action":null,"observation":{"x":1}}"#).unwrap();
        assert_eq!(r.action_kind, None);
        assert_eq!(r.observation_kind, None);
    }

    #[test]
    fn nesting_beyond_the_sdk_limit_is_unreadable() {
        // exactly at the limit: 201 levels (the object and 200 arrays)
        // parse in SDK 1.58.2; 202 do not
        let ok = format!(
            r#"{{"kind":"K","x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(parse_event(ok.as_bytes()).is_ok());
        let deep = format!(
            r#"{{"kind":"K","x":{}{}}}"#,
            "[".repeat(201),
            "]".repeat(201)
        );
        assert!(matches!(
            parse_event(deep.as_bytes()).unwrap_err(),
            Unreadable::InvalidJson(m) if m.contains("nested")
        ));
        // brackets inside strings do not count
        let s = format!(
            r#"{{"kind":"K","x":"{}\"{}"}}"#,
            "[".repeat(500),
            "{".repeat(500)
        );
        assert!(parse_event(s.as_bytes()).is_ok());
    }

    #[test]
    fn the_validating_parse_reads_the_same_record() {
        let v = crate::version::NEWEST;
        for text in [
            r#"{"id":"a","kind":"A","kind":"B","zz_odd":1,"source":"user","zz_odd":2}"#,
            r#"{"kind":"K","action":"sk-NEVER-QUOTED"}"#,
            r#"{"kind":"K","observation":[1]}"#,
            r#"{"kind":"K","action":null,"observation":{"x":1,"kind":"O"}}"#,
            r#"{"id":"a","kind":"K","parent_id":5}"#,
            r#"{"id":7,"kind":"K"}"#,
            r#"{"id":"a"}"#,
            r#"{"id":"a","kind":"Mess"#,
            r#"[1,2]"#,
            "",
            r#"{"id":"x","kind":"MessageEvent","source":"user","parent_id":"__root__","timestamp":"t","error":"e","tool_call_id":"c","action_id":"d","key":"k"}"#,
        ] {
            let lazy = parse_event(text.as_bytes()).map(|mut r| {
                r.invalid.clear();
                format!("{r:?}")
            });
            let full = parse_event_for(text.as_bytes(), Some(v)).map(|mut r| {
                r.invalid.clear();
                format!("{r:?}")
            });
            assert_eq!(lazy, full, "{text}");
        }
        // nested deeper than serde_json's limit but within the SDK's: read lazily
        let deep = format!(
            r#"{{"kind":"K","x":{}{}}}"#,
            "[".repeat(150),
            "]".repeat(150)
        );
        assert!(parse_event_for(deep.as_bytes(), Some(v)).is_ok());
        // the validation itself: a MessageEvent without its message
        let r = parse_event_for(
            br#"{"id":"x","kind":"MessageEvent","source":"user"}"#,
            Some(v),
        )
        .unwrap();
        assert_eq!(r.invalid.len(), 1);
        assert_eq!(r.invalid[0].loc, "llm_message");
        assert_eq!(r.invalid[0].kind, "missing");
    }

    /// Each verdict checked with SDK 1.58.2's own parser
    /// (`pydantic_core.from_json`, what `Event.model_validate_json` uses):
    /// fixtures/gen/jiter_rules.py prints the same table.
    #[test]
    fn numbers_surrogates_and_depth_are_judged_like_the_sdk() {
        let ev = |v: &str| format!(r#"{{"id":"a","kind":"K","x":{v}}}"#);
        for ok in [
            "NaN".to_string(),
            "Infinity".into(),
            "-Infinity".into(),
            "[NaN,1e400,-1e400]".into(),
            "9".repeat(4300),
            format!("-{}", "9".repeat(4300)),
            format!("1.{}", "9".repeat(5000)),
            r#""\ud800\udc00""#.into(),
            r#""\u00e9""#.into(),
        ] {
            let r = parse_event(ev(&ok).as_bytes());
            assert!(r.is_ok(), "{}: {r:?}", &ok[..ok.len().min(20)]);
            assert_eq!(r.unwrap().id.as_deref(), Some("a"));
        }
        for bad in [
            "9".repeat(4301),
            "9".repeat(5000),
            format!("-{}", "9".repeat(4301)),
            r#""\ud800""#.into(),
            r#""\udc00""#.into(),
            r#""a\ud800b""#.into(),
            r#""\ud800\u0041""#.into(),
        ] {
            assert!(
                matches!(
                    parse_event(ev(&bad).as_bytes()),
                    Err(Unreadable::InvalidJson(_))
                ),
                "{}",
                &bad[..bad.len().min(20)]
            );
        }
        // a number where a string is needed stays refused, NaN included
        assert!(parse_event(br#"{"id":NaN,"kind":"K"}"#).is_err());
    }

    #[test]
    fn duplicate_keys_keep_the_last_like_python() {
        let r = parse_event(br#"{"id":"a","kind":"A","kind":"B"}"#).unwrap();
        assert_eq!(r.kind, "B");
    }
}
