//! One event file: its name under the SDK's rule ([`name`]), its text
//! under the SDK parser's rules ([`sdk_json`]), and the few JSON keys that
//! drive the checks, parsed lazily ([`lazy`]: every other key is skipped
//! unread), or validated whole with the release's model.
//!
//! Long because: the record, its two parses and their tests are one contract
//! (same record).

mod compact;
mod lazy;
mod name;
mod sdk_json;
mod text;

use std::borrow::Cow;

use crate::validate::jv::Value as Jv;
pub use compact::{uuid_bits, Cid, Stamp, Sym};
pub use lazy::MAX_ODD_KEYS;
use lazy::{Field, KindOnly, RawEvent};
pub use name::{
    canonical_name, counts_as_event_file, is_canonical_name, is_count_marker, parse_event_name,
    parse_short_index_name, EventName,
};
pub use sdk_json::{invalid, sdk_json, too_deep, MAX_DEPTH, MAX_INT_DIGITS};
pub use text::{Id, Name, Text};

/// `ROOT_PARENT_ID`: a `parent_id` that means "this event starts a new root".
pub const ROOT_PARENT_ID: &str = "__root__";

pub use crate::kinds::{CONVERSATION_ERROR, STATE_UPDATE};

/// An event's `parent_id` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParentRef {
    /// No `parent_id` key: a legacy (pre-tree) event or a genuine first event.
    Absent,
    /// `"__root__"`: an explicit new root.
    Root,
    /// An explicit parent.
    Id(Cid),
}

impl ParentRef {
    pub fn is_present(&self) -> bool {
        !matches!(self, ParentRef::Absent)
    }
    /// The parent id as spelled in the file.
    pub fn id(&self) -> Option<Id> {
        self.cid().map(Cid::spell)
    }
    /// The parent id, compact.
    pub fn cid(&self) -> Option<&Cid> {
        match self {
            ParentRef::Id(c) => Some(c),
            _ => None,
        }
    }
}

/// The keys of an event that convo-doctor reads, compactly (issue 27):
/// ids and timestamps inline ([`Id`]), kinds and sources inline or as a
/// static of the kind tables ([`Name`]), the fields few events have behind
/// one pointer ([`Rare`]). Anything else is read again from the file when
/// a finding or a repair needs it.
#[derive(Clone, Debug)]
pub struct EventRecord {
    pub id: Option<Id>,
    pub kind: Sym,
    pub source: Option<Sym>,
    pub parent: ParentRef,
    timestamp: Option<Stamp>,
    /// `action.kind`, `observation.kind`, `tool_call_id`, `action_id`:
    /// `None` when the event has none of them (a message, a state update),
    /// 8 bytes instead of 128 there.
    call: Option<Box<Call>>,
    /// A placeholder convo-doctor left in the slot of an event it set aside
    /// (`crate::edit::placeholder`): it stands for an event of unknown kind.
    pub placeholder: bool,
    /// Every top-level key, as bits of [`crate::kinds::key_bit`]'s table.
    pub keys: u128,
    /// `key`, `error`, odd keys and validation errors: `None` when the
    /// event has none of them (almost every event).
    rare: Option<Box<Rare>>,
}

/// The fields of an action, an observation or an error answering a call.
#[derive(Clone, Debug, Default)]
pub struct Call {
    action_kind: Option<Sym>,
    observation_kind: Option<Sym>,
    tool_call_id: Option<Id>,
    action_id: Option<Id>,
}

/// The fields of a record that few events have.
#[derive(Clone, Debug, Default)]
pub struct Rare {
    /// `ConversationStateUpdateEvent.key`
    key: Option<String>,
    /// The first 200 characters of `AgentErrorEvent.error`.
    error: Option<String>,
    /// Top-level keys outside [`crate::kinds::key_bit`]'s table (no release
    /// knows them): the first [`MAX_ODD_KEYS`] distinct ones, in file order.
    odd_keys: Vec<String>,
    /// What pydantic says about the whole event under the release it was
    /// read for (empty: valid, or not validated). See [`crate::validate`].
    invalid: Vec<crate::validate::VError>,
}

impl EventRecord {
    /// `timestamp` as spelled in the file.
    pub fn timestamp(&self) -> Option<Id> {
        self.timestamp.as_ref().map(Stamp::spell)
    }
    /// The ids this event links to, `parent_id` and `action_id`, as
    /// spelled in the file.
    pub fn links(&self) -> [Option<Id>; 2] {
        [self.parent.id(), self.action_id().map(Id::new)]
    }
    /// `action.kind`
    pub fn action_kind(&self) -> Option<&'static str> {
        self.call.as_ref()?.action_kind.map(|k| k.as_str())
    }
    /// `observation.kind`
    pub fn observation_kind(&self) -> Option<&'static str> {
        self.call.as_ref()?.observation_kind.map(|k| k.as_str())
    }
    /// `tool_call_id`
    pub fn tool_call_id(&self) -> Option<&str> {
        self.call.as_ref()?.tool_call_id.as_deref()
    }
    /// `action_id`
    pub fn action_id(&self) -> Option<&str> {
        self.call.as_ref()?.action_id.as_deref()
    }
    /// `ConversationStateUpdateEvent.key`
    pub fn key(&self) -> Option<&str> {
        self.rare.as_ref()?.key.as_deref()
    }
    /// The first 200 characters of `AgentErrorEvent.error`.
    pub fn error(&self) -> Option<&str> {
        self.rare.as_ref()?.error.as_deref()
    }
    /// Top-level keys outside the known-key table: the first
    /// [`MAX_ODD_KEYS`] distinct ones, in file order.
    pub fn odd_keys(&self) -> &[String] {
        self.rare.as_ref().map_or(&[], |r| &r.odd_keys)
    }
    /// What pydantic says about the whole event under the release it was
    /// read for (empty: valid, or not validated).
    pub fn invalid(&self) -> &[crate::validate::VError] {
        self.rare.as_ref().map_or(&[], |r| &r.invalid)
    }
    /// Replace the validation errors.
    pub fn set_invalid(&mut self, errors: Vec<crate::validate::VError>) {
        if errors.is_empty() && self.rare.is_none() {
            return;
        }
        self.rare.get_or_insert_with(Box::default).invalid = errors;
        self.shed_rare();
    }
    /// Drop the rare part when it holds nothing.
    fn shed_rare(&mut self) {
        if self.rare.as_ref().is_some_and(|r| {
            r.key.is_none() && r.error.is_none() && r.odd_keys.is_empty() && r.invalid.is_empty()
        }) {
            self.rare = None;
        }
    }
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

fn opt_str<'a>(
    v: Option<Field<'a>>,
    field: &'static str,
) -> Result<Option<Cow<'a, str>>, Unreadable> {
    match v {
        None | Some(Field::Null) => Ok(None),
        Some(Field::Str(s)) => Ok(Some(s)),
        Some(Field::Other(found)) => Err(Unreadable::BadField {
            field,
            found,
            expected: "a string",
        }),
    }
}

/// `action.kind` / `observation.kind` (the rest of the nested object, often
/// a large tool output, is skipped without being stored). An `action` or
/// `observation` that is not an object has none: the release's validator
/// refuses it (1.58 as `model_type`; before, `_validate_subtype` crashes on
/// it with AttributeError or TypeError), so the record stays readable here.
fn nested_kind(v: Option<KindOnly>) -> Option<Sym> {
    match v {
        Some(KindOnly::Object {
            kind: Some(Field::Str(s)),
        }) => Some(Sym::new(&s)),
        _ => None,
    }
}

fn lenient_str(v: Option<Field<'_>>) -> Option<Cow<'_, str>> {
    match v {
        Some(Field::Str(s)) => Some(s),
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
        Some(Field::Str(s)) if !s.is_empty() => s,
        // `_validate_subtype`'s dict lookup of an unhashable kind: TypeError
        Some(Field::Other(found @ ("an array" | "an object"))) => {
            return Err(Unreadable::BadField {
                field: "kind",
                found,
                expected: "a string",
            })
        }
        _ => return Err(Unreadable::MissingKind),
    };
    let parent = match raw.parent_id {
        None | Some(Field::Null) => ParentRef::Absent,
        Some(Field::Str(s)) if s == ROOT_PARENT_ID => ParentRef::Root,
        Some(Field::Str(s)) => ParentRef::Id(Cid::new(&s)),
        Some(Field::Other(found)) => {
            return Err(Unreadable::BadField {
                field: "parent_id",
                found,
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
    let key = lenient_str(raw.key).map(Cow::into_owned);
    let rare = (key.is_some() || error.is_some() || !raw.odd_keys.is_empty()).then(|| {
        Box::new(Rare {
            key,
            error,
            odd_keys: raw.odd_keys,
            invalid: Vec::new(),
        })
    });
    let call = Call {
        action_kind: nested_kind(raw.action),
        observation_kind: nested_kind(raw.observation),
        tool_call_id: lenient_str(raw.tool_call_id).map(|s| Id::new(&s)),
        action_id: lenient_str(raw.action_id).map(|s| Id::new(&s)),
    };
    let call = (call.action_kind.is_some()
        || call.observation_kind.is_some()
        || call.tool_call_id.is_some()
        || call.action_id.is_some())
    .then(|| Box::new(call));
    Ok(EventRecord {
        id: opt_str(raw.id, "id")?.map(|s| Id::new(&s)),
        kind: Sym::new(&kind),
        source: opt_str(raw.source, "source")?.map(|s| Sym::new(&s)),
        parent,
        timestamp: lenient_str(raw.timestamp).map(|s| Stamp::new(&s)),
        call,
        placeholder,
        keys: raw.keys,
        rare,
    })
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
    rec.set_invalid(errors);
    Ok(rec)
}

pub use crate::validate::MAX_KEPT_ERRORS;

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(r.observation_kind(), Some("X"));
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
        // the record reads (the release's validator refuses it, naming the
        // type only: tests/hostile.rs), with no nested kind
        for text in [
            r#"{"kind":"K","action":"sk-NEVER-QUOTED"}"#,
            r#"{"kind":"K","observation":[1,"sk-NEVER-QUOTED"]}"#,
            r#"{"kind":"K","action":7}"#,
        ] {
            let r = parse_event(text.as_bytes()).unwrap();
            assert_eq!((r.action_kind(), r.observation_kind()), (None, None));
        }
        // duplicate keys take the Value path; the same rule holds there
        let r = parse_event(br#"{"kind":"K","kind":"K","action":"sk-NEVER-QUOTED"}"#).unwrap();
        assert_eq!(r.action_kind(), None);
        let r = parse_event(br#"{"kind":"K","action":null,"observation":{"x":1}}"#).unwrap();
        assert_eq!(r.action_kind(), None);
        assert_eq!(r.observation_kind(), None);
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
                r.set_invalid(Vec::new());
                format!("{r:?}")
            });
            let full = parse_event_for(text.as_bytes(), Some(v)).map(|mut r| {
                r.set_invalid(Vec::new());
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
        assert_eq!(r.invalid().len(), 1);
        assert_eq!(r.invalid()[0].loc, "llm_message");
        assert_eq!(r.invalid()[0].kind, "missing");
    }

    #[test]
    fn duplicate_keys_keep_the_last_like_python() {
        let r = parse_event(br#"{"id":"a","kind":"A","kind":"B"}"#).unwrap();
        assert_eq!(r.kind, "B");
    }
}
