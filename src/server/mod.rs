//! Which conversations an agent-server release lists, and why not: a model of
//! `ConversationService` (startup scan, catalog, search) read from the real
//! releases. docs/format.md, "Which conversations the server lists", has the
//! rules per release with their file and function names.

pub mod lease;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::Value;

use crate::store::{Conversation, Doc};
use crate::version::Version;
use lease::{Held, Lease};

/// The three listing models the releases have had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// ≤ 1.36: `__aenter__` starts an `EventService` for every folder with a
    /// valid meta.json; only started ones are listed.
    Eager,
    /// 1.37–1.48: a catalog of meta.json records (lazy hydration, #4100);
    /// rows are composed from base_state.json.
    Catalog,
    /// ≥ 1.49: the catalog also parses the folder name as a UUID
    /// (`self._cipher_for(UUID(conversation_dir.name))`).
    CatalogUuidName,
}

pub fn era(v: Version) -> Era {
    if v < Version::new(1, 37, 0) {
        Era::Eager
    } else if v < Version::new(1, 49, 0) {
        Era::Catalog
    } else {
        Era::CatalogUuidName
    }
}

/// `ConversationExecutionStatus` values (the same in 1.33.0–1.58.2).
pub const STATUSES: &[&str] = &[
    "idle",
    "running",
    "paused",
    "waiting_for_confirmation",
    "finished",
    "error",
    "stuck",
    "deleting",
];

/// Python's `uuid.UUID(name)` on a folder name: the canonical 32-hex spelling,
/// or `None` where Python raises. Mirrors `UUID.__init__`: drop every `urn:`
/// and `uuid:`, strip `{}` from both ends, drop every `-`, require 32
/// characters, then `int(hex, 16)` (surrounding whitespace, a sign, a `0x`
/// prefix and single underscores between digits are accepted) in `[0, 2**128)`.
/// Non-ASCII digits, which `int()` also accepts, are rejected here.
pub fn py_uuid(name: &str) -> Option<String> {
    let s = name.replace("urn:", "").replace("uuid:", "");
    let s = s.trim_matches(|c| c == '{' || c == '}').replace('-', "");
    if s.chars().count() != 32 {
        return None;
    }
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .map(|r| r.strip_prefix('_').unwrap_or(r))
        .unwrap_or(t);
    if t.is_empty() || t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u128::from_str_radix(&digits, 16).ok()?;
    if neg && v != 0 {
        return None;
    }
    Some(format!("{v:032x}"))
}

/// pydantic's UUID from a JSON string (meta.json / base_state.json `id`):
/// 32 hex digits, the 8-4-4-4-12 spelling, either braced or `urn:uuid:`
/// prefixed; any case. The canonical 32-hex spelling, or `None`.
pub fn json_uuid(s: &str) -> Option<String> {
    let t = s
        .strip_prefix("urn:uuid:")
        .or_else(|| s.strip_prefix("URN:UUID:"))
        .unwrap_or(s);
    let t = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(t);
    let hex_ok = |p: &str| p.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = if t.len() == 32 {
        hex_ok(t)
    } else if t.len() == 36 {
        let parts: Vec<&str> = t.split('-').collect();
        parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| hex_ok(p))
    } else {
        false
    };
    ok.then(|| t.replace('-', "").to_ascii_lowercase())
}

/// One entry of the conversations directory that has a meta.json.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    /// meta.json `id`, canonical hex; `None` when it cannot be read as a UUID.
    pub id: Option<String>,
    /// meta.json `created_at` as pydantic makes it: `Some(true)` a naive
    /// datetime (no timezone), `Some(false)` an aware one (or absent: the
    /// default is `utc_now()`), `None` unparseable.
    pub created_naive: Option<bool>,
}

/// The store-wide pre-pass: every folder of a conversations directory that
/// holds a meta.json, with only its `id`, in directory-listing order (the
/// order of `Path.iterdir()`, which decides which of two records wins).
#[derive(Debug, Default)]
pub struct StoreIds {
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
}

impl StoreIds {
    /// Read `dir`: `iterdir()` order, `meta_file.exists()` (links followed,
    /// as Python does), and only meta.json's `id`.
    pub fn read(dir: &Path) -> StoreIds {
        #[derive(serde::Deserialize)]
        struct IdOnly {
            id: Option<Value>,
            created_at: Option<Value>,
        }
        let mut entries = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let meta = e.path().join("meta.json");
                if !std::fs::metadata(&meta).is_ok_and(|m| m.is_file()) {
                    if std::fs::metadata(&meta).is_ok() {
                        entries.push(Entry {
                            name: e.file_name().to_string_lossy().into_owned(),
                            id: None,
                            created_naive: None,
                        });
                    }
                    continue;
                }
                let doc = crate::store::fsread::read_regular(&meta)
                    .ok()
                    .and_then(|(b, _)| serde_json::from_slice::<IdOnly>(&b).ok());
                let created_naive = match doc.as_ref().map(|m| &m.created_at) {
                    None => None,
                    Some(None) => Some(false),
                    Some(Some(v)) => py_datetime(v).map(|aware| !aware),
                };
                let id = doc
                    .and_then(|m| m.id)
                    .and_then(|v| v.as_str().and_then(json_uuid));
                entries.push(Entry {
                    name: e.file_name().to_string_lossy().into_owned(),
                    id,
                    created_naive,
                });
            }
        }
        StoreIds {
            dir: dir.to_path_buf(),
            entries,
        }
    }

    /// Other folders whose meta.json carries `id`, in listing order.
    pub fn others_with(&self, id: &str, not: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.name != not && e.id.as_deref() == Some(id))
            .collect()
    }

    /// Every folder (this one included) whose meta.json carries `id`.
    pub fn all_with(&self, id: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.id.as_deref() == Some(id))
            .collect()
    }
}

type Cache = Mutex<HashMap<PathBuf, (Option<SystemTime>, Arc<StoreIds>)>>;

/// The pre-pass of `dir`, read once per process (and again when the
/// directory's own mtime changes, i.e. a folder was added, removed or renamed).
pub fn store_ids(dir: &Path) -> Arc<StoreIds> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let mtime = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, ids)) = map.get(dir) {
        if *t == mtime && mtime.is_some() {
            return ids.clone();
        }
    }
    let ids = Arc::new(StoreIds::read(dir));
    map.insert(dir.to_path_buf(), (mtime, ids.clone()));
    ids
}

/// The verdict on one folder for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `None`: not something a server catalogs (a nested sub-agent, or an
    /// SDK-only folder in a directory where no folder has a meta.json).
    pub listed: Option<bool>,
    /// Stable short name of the deciding rule.
    pub rule: &'static str,
    /// The file that decides, relative to the folder (`./` for its name).
    pub file: &'static str,
    /// Why, in a sentence (untrusted text already passed through `quote`).
    pub why: String,
    /// Where the release decides it.
    pub code: &'static str,
    /// The failure breaks the whole search call, not only this row.
    pub breaks_search: bool,
}

impl Verdict {
    fn new(
        listed: Option<bool>,
        rule: &'static str,
        file: &'static str,
        why: String,
        code: &'static str,
    ) -> Self {
        Verdict {
            listed,
            rule,
            file,
            why,
            code,
            breaks_search: false,
        }
    }
    fn hidden(rule: &'static str, file: &'static str, why: String, code: &'static str) -> Self {
        Self::new(Some(false), rule, file, why, code)
    }
}

/// What one judgement needs besides the folder.
pub struct Inputs<'a> {
    pub version: Version,
    /// Why the SDK's resume of base_state.json fails for this release
    /// (`ConversationState.create`: unreadable state, id mismatch, nothing to
    /// rebuild from), if it does. Event read errors are not included: the
    /// start of a conversation does not read events...
    pub load_error: Option<String>,
    /// ...except crash recovery of a `running` one, which reads every event:
    /// the first that cannot be read, if any.
    pub running_unreadable: Option<String>,
    /// The SDK's `ConversationState` validation failure (`LoadError::BadBaseState`).
    pub state_invalid: Option<String>,
    pub env: &'a lease::Env,
    /// Pass untrusted text (ids, names) through the redactor and clip.
    pub quote: &'a dyn Fn(&str) -> String,
}

const SCAN_EAGER: &str = "conversation_service.py ConversationService.__aenter__ (≤ 1.36)";
const CATALOG: &str = "conversation_service.py ConversationService._load_catalog_sync (1.37+)";
const SEARCH: &str = "conversation_service.py ConversationService._conversation_info / _load_persisted_state_sync (1.37+)";
const START: &str = "event_service.py EventService.start (≤ 1.36, at startup)";
const LEASE: &str = "conversation_lease.py ConversationLease.claim";

fn is_subagent(dir: &Path) -> bool {
    let parent = dir.parent();
    parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents")
        && parent
            .and_then(Path::parent)
            .is_some_and(crate::store::conversation::is_conversation_dir)
}

#[derive(Clone, Copy)]
enum Ty {
    StrOrNull,
    UuidOrNull,
    Bool,
    Int,
    Object,
    ObjectOrNull,
    List,
    ListOrNull,
    StrMap,
    Tags,
    SpanName,
    Kinded,
    KindedOrNull,
    DateTime,
}

impl Ty {
    fn what(self) -> &'static str {
        match self {
            Ty::StrOrNull => "a string or null",
            Ty::UuidOrNull => "a UUID or null",
            Ty::Bool => "a boolean",
            Ty::Int => "an integer",
            Ty::Object => "an object",
            Ty::ObjectOrNull => "an object or null",
            Ty::List => "a list",
            Ty::ListOrNull => "a list or null",
            Ty::StrMap => "an object of strings",
            Ty::Tags => {
                "null or tags (lowercase alphanumeric keys, strings of at most 256 characters)"
            }
            Ty::SpanName => "null or a span name (1 to 128 of `A-Za-z0-9._:/-`)",
            Ty::Kinded => "an object with a `kind`",
            Ty::KindedOrNull => "an object with a `kind` or null",
            Ty::DateTime => "a datetime pydantic accepts",
        }
    }
}

/// `StoredConversation` fields (`model_fields` of 1.29.3, 1.33.0, 1.34.0,
/// 1.38.0, 1.43.1, 1.47.0, 1.52.0, 1.55.1, 1.58.2), their top-level JSON
/// type, and the first of those releases whose model has the field (an
/// unknown key is ignored by the model).
const META_FIELDS: &[(&str, Ty, (u32, u32, u32))] = &[
    ("title", Ty::StrOrNull, (0, 0, 0)),
    ("created_at", Ty::DateTime, (0, 0, 0)),
    ("updated_at", Ty::DateTime, (0, 0, 0)),
    ("conversation_id", Ty::UuidOrNull, (0, 0, 0)),
    ("forked_from_conversation_id", Ty::UuidOrNull, (1, 33, 0)),
    ("forked_from_event_id", Ty::StrOrNull, (1, 33, 0)),
    ("parent_conversation_id", Ty::UuidOrNull, (1, 38, 0)),
    ("title_llm_profile", Ty::StrOrNull, (0, 0, 0)),
    ("user_id", Ty::StrOrNull, (0, 0, 0)),
    ("observability_span_name", Ty::SpanName, (1, 33, 0)),
    (
        "observability_parent_span_context",
        Ty::StrOrNull,
        (1, 52, 0),
    ),
    ("prompt", Ty::StrOrNull, (1, 58, 0)),
    ("autotitle", Ty::Bool, (0, 0, 0)),
    ("stuck_detection", Ty::Bool, (0, 0, 0)),
    ("secrets_encrypted", Ty::Bool, (0, 0, 0)),
    ("worktree", Ty::Bool, (0, 0, 0)),
    ("max_iterations", Ty::Int, (0, 0, 0)),
    ("confirmation_policy", Ty::Kinded, (0, 0, 0)),
    ("secrets", Ty::Object, (0, 0, 0)),
    ("observability_metadata", Ty::ObjectOrNull, (0, 0, 0)),
    ("tags", Ty::Tags, (0, 0, 0)),
    ("tool_module_qualnames", Ty::StrMap, (0, 0, 0)),
    ("metrics", Ty::ObjectOrNull, (0, 0, 0)),
    ("hook_config", Ty::ObjectOrNull, (0, 0, 0)),
    ("security_analyzer", Ty::KindedOrNull, (0, 0, 0)),
    ("launched_agent_profile", Ty::ObjectOrNull, (0, 0, 0)),
    ("initial_message", Ty::ObjectOrNull, (0, 0, 0)),
    ("worktree_options", Ty::ObjectOrNull, (1, 58, 0)),
    ("agent_launch_additions", Ty::ObjectOrNull, (1, 38, 0)),
    ("client_tools", Ty::List, (0, 0, 0)),
    ("agent_definitions", Ty::List, (0, 0, 0)),
    ("observability_tags", Ty::List, (0, 0, 0)),
    ("required_runtime_credential_bindings", Ty::List, (1, 38, 0)),
    ("plugins", Ty::ListOrNull, (0, 0, 0)),
];

/// pydantic's lax `bool` from JSON: true/false, 0/1, and a few strings.
fn py_bool(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Number(n) => n.as_f64().is_some_and(|f| f == 0.0 || f == 1.0),
        Value::String(s) => matches!(
            s.to_ascii_lowercase().as_str(),
            "0" | "off" | "f" | "false" | "n" | "no" | "1" | "on" | "t" | "true" | "y" | "yes"
        ),
        _ => false,
    }
}

/// pydantic's lax `int` from JSON: an integer, a boolean, a float with no
/// fraction, or a string of an integer.
fn py_int(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Value::String(s) => s.trim().parse::<i64>().is_ok(),
        _ => false,
    }
}

/// What `StoredConversation.model_validate_json` rejects, for the fields that
/// decide (required `id` and `workspace`; before 1.37 the `agent` the event
/// service is rebuilt from).
fn meta_problem(meta: &Value, version: Version) -> Option<String> {
    let Value::Object(o) = meta else {
        return Some("meta.json is not a JSON object".into());
    };
    match o.get("id") {
        None => return Some("meta.json has no `id`".into()),
        Some(Value::String(s)) if json_uuid(s).is_some() => {}
        Some(_) => return Some("meta.json `id` is not a UUID".into()),
    }
    match o.get("workspace") {
        Some(Value::Object(w)) => {
            // the model's type is `LocalWorkspace` in every release
            if !w.get("working_dir").is_some_and(Value::is_string) {
                return Some("meta.json `workspace.working_dir` is missing or not a string".into());
            }
            if w.get("kind")
                .is_some_and(|k| k.as_str() != Some("LocalWorkspace"))
            {
                return Some("meta.json `workspace` is not a LocalWorkspace".into());
            }
        }
        None => return Some("meta.json has no `workspace`".into()),
        Some(_) => return Some("meta.json `workspace` is not an object".into()),
    }
    // Typed fields of `StoredConversation` (fixtures/gen/listing_fuzz.py found
    // them): a value of the wrong JSON type fails the whole model. Only the
    // top-level type is modelled, for the releases whose model has the field.
    for (k, ty, since) in META_FIELDS {
        let Some(v) = o.get(*k) else { continue };
        if version < Version::new(since.0, since.1, since.2) {
            continue;
        }
        let ok = match ty {
            Ty::StrOrNull => v.is_string() || v.is_null(),
            Ty::UuidOrNull => v.is_null() || v.as_str().is_some_and(|s| json_uuid(s).is_some()),
            Ty::Bool => py_bool(v),
            Ty::Int => py_int(v),
            Ty::Object => v.is_object(),
            Ty::ObjectOrNull => v.is_object() || v.is_null(),
            Ty::List => v.is_array(),
            Ty::ListOrNull => v.is_array() || v.is_null(),
            Ty::StrMap => v
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string)),
            // `_validate_tags` (sdk/conversation/types.py, 1.33.0–1.58.2)
            Ty::Tags => {
                v.is_null()
                    || v.as_object().is_some_and(|m| {
                        m.iter().all(|(k, x)| {
                            !k.is_empty()
                                && k.bytes()
                                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                                && x.as_str().is_some_and(|s| s.chars().count() <= 256)
                        })
                    })
            }
            // `_validate_observability_span_name` (sdk/conversation/types.py)
            Ty::SpanName => {
                v.is_null()
                    || v.as_str().is_some_and(|s| {
                        !s.is_empty()
                            && s.chars().count() <= 128
                            && s.bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
                    })
            }
            Ty::Kinded => v.get("kind").is_some_and(Value::is_string),
            Ty::KindedOrNull => v.is_null() || v.get("kind").is_some_and(Value::is_string),
            Ty::DateTime => py_datetime(v).is_some(),
        };
        if !ok {
            return Some(format!("meta.json `{k}` is not {}", ty.what()));
        }
    }
    None
}

/// Whether pydantic (v2, JSON input) accepts `v` for a `datetime` field, and
/// if so whether the value is timezone-aware: `Some(true)` aware, `Some(false)`
/// naive, `None` rejected. Strings: `YYYY-MM-DD` (naive midnight), or
/// `YYYY-MM-DD[T ]HH:MM[:SS[.f]]` with an optional `Z` or `±HH[:]MM`, or a
/// number (a Unix time, aware). Numbers: Unix seconds (or milliseconds above
/// 2e10), aware. Anything else (null, a boolean, `"yesterday"`, `""`, month
/// 13) is rejected: checked against 1.58.2's `StoredConversation`.
pub fn py_datetime(v: &Value) -> Option<bool> {
    match v {
        Value::Number(n) => {
            let f = n.as_f64()?;
            unix_ok(f).then_some(true)
        }
        Value::String(s) => {
            if let Ok(f) = s.trim().parse::<f64>() {
                if !s.trim().is_empty()
                    && s.trim()
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
                {
                    return unix_ok(f).then_some(true);
                }
            }
            parse_iso(s)
        }
        _ => None,
    }
}

/// A Unix time pydantic takes: seconds, or milliseconds above 2e10, up to
/// the end of year 9999.
fn unix_ok(f: f64) -> bool {
    f.is_finite() && (-62_135_596_800_000.0..=253_402_300_799_999.0).contains(&f)
}

fn parse_iso(s: &str) -> Option<bool> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let t = b.get(r)?;
        t.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(t).ok()?.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    if !crate::clock::valid_date(y, mo, d) {
        return None;
    }
    if b.len() == 10 {
        return Some(false);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (h, mi) = (num(11..13)?, num(14..16)?);
    if b.get(13) != Some(&b':') || h > 23 || mi > 59 {
        return None;
    }
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        let sec = num(i + 1..i + 3)?;
        if sec > 59 {
            return None;
        }
        i += 3;
        if matches!(b.get(i), Some(b'.' | b',')) {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return None;
            }
        }
    }
    match &b[i..] {
        [] => Some(false),
        [b'Z' | b'z'] => Some(true),
        [b'+' | b'-', rest @ ..] => {
            let ok = match rest {
                [a, b2, b':', c, d2] | [a, b2, c, d2] => {
                    [a, b2, c, d2].iter().all(|x| x.is_ascii_digit())
                }
                _ => false,
            };
            ok.then_some(true)
        }
        _ => None,
    }
}

/// The SDK's `ConversationState` validation of base_state.json, for the
/// required fields (`id`, `agent`, `workspace`) and the status enum.
fn state_problem(state: &Value) -> Option<String> {
    let Value::Object(o) = state else {
        return Some("base_state.json is not a JSON object".into());
    };
    for k in ["id", "agent", "workspace"] {
        if !o.contains_key(k) {
            return Some(format!(
                "base_state.json has no `{k}`, which ConversationState requires"
            ));
        }
    }
    match o.get("id") {
        Some(Value::String(s)) if json_uuid(s).is_some() => {}
        _ => return Some("base_state.json `id` is not a UUID".into()),
    }
    let Some(agent) = o.get("agent").and_then(Value::as_object) else {
        return Some("base_state.json `agent` is not an object".into());
    };
    // the agent is a discriminated union (`kind`) and needs its `llm`
    // (checked with 1.43.1's and 1.58.2's ConversationState)
    if !agent.get("kind").is_some_and(Value::is_string) {
        return Some("base_state.json `agent` has no `kind`".into());
    }
    if !agent.get("llm").is_some_and(Value::is_object) {
        return Some("base_state.json `agent` has no `llm`".into());
    }
    None
}

/// `payload.get("execution_status", "idle")` then `ConversationExecutionStatus(...)`.
fn status_problem(state: &Value) -> Option<String> {
    match state.get("execution_status") {
        None => None,
        Some(Value::String(s)) if STATUSES.contains(&s.as_str()) => None,
        Some(Value::String(_)) => Some("is not a ConversationExecutionStatus".into()),
        Some(_) => Some("is not a string".into()),
    }
}

/// Whether the catalog scan (1.37+) keeps this folder's own record (under
/// whatever id its meta.json carries).
fn own_record_passes(conv: &Conversation, version: Version) -> bool {
    let meta_ok = conv
        .meta
        .value()
        .is_some_and(|m| meta_problem(m, version).is_none());
    let state_ok = match &conv.base_state {
        Doc::Missing => true,
        Doc::Unreadable(_) => false,
        Doc::Present(v) => status_problem(v).is_none(),
    };
    meta_ok && state_ok
}

/// Another folder whose meta.json carries this folder's id and whose own
/// record the catalog keeps (1.37+): the record is filed under the id, and
/// the search reads `conversations_dir / id.hex`, i.e. THIS folder's
/// base_state.json (found by fixtures/gen/listing_fuzz.py: a copy's meta.json
/// lists the original whose own meta.json is broken, or makes the search
/// fail on the original's broken state).
fn rescuer(ids: &StoreIds, name: &str, era: Era, version: Version) -> Option<String> {
    if json_uuid(name).as_deref() != Some(name) {
        return None;
    }
    ids.others_with(name, name)
        .into_iter()
        .find(|e| record_passes(ids, e, era, version))
        .map(|e| e.name.clone())
}

/// Whether the catalog scan (1.37+) keeps the record of another folder.
fn record_passes(ids: &StoreIds, e: &Entry, era: Era, version: Version) -> bool {
    if era == Era::CatalogUuidName && py_uuid(&e.name).is_none() {
        return false;
    }
    let dir = ids.dir.join(&e.name);
    let read = |f: &str| -> Option<Option<Value>> {
        match std::fs::read(dir.join(f)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
            Err(_) => None,
            Ok(b) => serde_json::from_slice(&b).ok().map(Some),
        }
    };
    let meta_ok = matches!(read("meta.json"), Some(Some(m)) if meta_problem(&m, version).is_none());
    let state_ok = match read("base_state.json") {
        Some(None) => true,
        Some(Some(v)) => status_problem(&v).is_none(),
        None => false,
    };
    meta_ok && state_ok
}

/// 1.37+ sorts every catalog record by `stored.created_at` before composing
/// the page (`records.sort(key=...)`). A naive `created_at` (no timezone:
/// `"2024-01-01"`, `"2024-01-01T00:00:00"`) next to an aware one makes Python
/// raise `TypeError` (found by fixtures/gen/listing_fuzz.py): the search fails
/// for the whole store, though this row alone composes. Blamed on the naive
/// folder (the servers write aware dates).
fn sort_breaks(
    conv: &Conversation,
    meta: &Value,
    ids: &StoreIds,
    era: Era,
    inp: &Inputs,
) -> Option<Verdict> {
    if meta.get("created_at").and_then(py_datetime) != Some(false) {
        return None;
    }
    let other = ids.entries.iter().find(|e| {
        e.name != conv.folder
            && e.created_naive == Some(false)
            && record_passes(ids, e, era, inp.version)
    })?;
    let mut v = Verdict::new(
        Some(true),
        "breaks-sort",
        "meta.json",
        format!(
            "meta.json `created_at` has no timezone (a naive datetime), while folder `{}` has an aware one: sorting the catalog by `created_at` raises TypeError (can't compare offset-naive and offset-aware datetimes), so the search call fails for every conversation (the whole store, whatever this row's own state)",
            (inp.quote)(&other.name)
        ),
        SEARCH,
    );
    v.breaks_search = true;
    Some(v)
}

/// The row of a record kept from folder `via` (1.37+): what the search makes
/// of this folder's base_state.json.
fn search_reads(conv: &Conversation, inp: &Inputs, via: &str) -> Verdict {
    let q = inp.quote;
    let whose = format!(
        "this folder's own meta.json gives the catalog no record under its name, but folder `{}` has a meta.json with this id, which the catalog keeps; the search reads this folder's base_state.json",
        q(via)
    );
    let bad = match &conv.base_state {
        Doc::Missing => {
            return Verdict::hidden(
                "no-base-state",
                "base_state.json",
                format!(
                    "{whose}, which does not exist: search skips the row (count still counts it)"
                ),
                SEARCH,
            )
        }
        Doc::Unreadable(u) => Some(format!("it cannot be read as JSON ({u})")),
        Doc::Present(v) => status_problem(v)
            .map(|p| format!("its `execution_status` {p}"))
            .or_else(|| state_problem(v))
            .or_else(|| inp.state_invalid.clone()),
    };
    if let Some(p) = bad {
        let mut v = Verdict::hidden(
            "breaks-search",
            "base_state.json",
            format!("{whose}, and {p}: `ConversationState.model_validate_json` raises while the list is composed, and nothing catches it: the search call fails for every conversation on the same page"),
            SEARCH,
        );
        v.breaks_search = true;
        return v;
    }
    if let Some(v) = conv
        .base_state
        .value()
        .and_then(|st| state_id_elsewhere(st, &conv.folder, q))
    {
        return v;
    }
    Verdict::new(
        Some(true),
        "listed",
        "meta.json",
        format!("{whose}: listed, with that folder's title and dates"),
        SEARCH,
    )
}

/// 1.37+ composes a row as `ConversationInfo(**state.model_dump(), ...)`: its
/// id is base_state.json's `id`, not the catalog's. When that is another UUID,
/// the list shows a row under that id and never this folder (found by
/// fixtures/gen/listing_fuzz.py; 1.43.1, 1.47.0 and 1.58.2 agree).
fn state_id_elsewhere(state: &Value, id: &str, q: &dyn Fn(&str) -> String) -> Option<Verdict> {
    let sid = state
        .get("id")
        .and_then(Value::as_str)
        .and_then(json_uuid)?;
    (sid != id).then(|| {
        Verdict::hidden(
            "state-id-elsewhere",
            "base_state.json",
            format!(
                "base_state.json carries the id `{}`: the row is composed from the state, so the list shows a conversation `{}` (opening it reads folder `{}`), never this one",
                q(&sid),
                q(&sid),
                q(&sid)
            ),
            SEARCH,
        )
    })
}

/// Judge one folder for one release.
pub fn judge(conv: &Conversation, ids: &StoreIds, inp: &Inputs) -> Verdict {
    let q = inp.quote;
    let era = era(inp.version);
    if is_subagent(&conv.dir) {
        return Verdict::new(
            None,
            "sub-agent",
            "./",
            "a sub-agent conversation nested in its parent's folder: the server lists the parent only".into(),
            CATALOG,
        );
    }
    let own_id = conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .and_then(json_uuid);
    let keyed_here =
        own_record_passes(conv, inp.version) && own_id.as_deref() == Some(&conv.folder);
    if era != Era::Eager && !keyed_here {
        if let Some(via) = rescuer(ids, &conv.folder, era, inp.version) {
            return search_reads(conv, inp, &via);
        }
    }
    let meta = match &conv.meta {
        Doc::Missing if ids.entries.is_empty() => {
            return Verdict::new(
                None,
                "not-agent-server",
                "meta.json",
                "no folder here has a meta.json: an SDK-only store, which no agent-server lists".into(),
                CATALOG,
            )
        }
        Doc::Missing => {
            return Verdict::hidden(
                "no-meta",
                "meta.json",
                "there is no meta.json: the server skips every folder without one (`if not meta_file.exists(): continue`). A crash between the first base_state.json and `save_meta`, a hook sub-conversation, or an SDK-only run leaves such a folder".into(),
                if era == Era::Eager { SCAN_EAGER } else { CATALOG },
            )
        }
        Doc::Unreadable(u) => {
            return Verdict::hidden(
                "meta-unreadable",
                "meta.json",
                format!("meta.json cannot be read as JSON ({u}): `StoredConversation.model_validate_json` raises and the folder is dropped"),
                if era == Era::Eager { SCAN_EAGER } else { CATALOG },
            )
        }
        Doc::Present(v) => v,
    };
    let name = conv.folder.as_str();
    if era == Era::CatalogUuidName && py_uuid(name).is_none() {
        return Verdict::hidden(
            "folder-not-uuid",
            "./",
            format!(
                "the folder name `{}` is not a UUID: `UUID(conversation_dir.name)` raises in the catalog scan (1.49+) and the folder is dropped",
                q(name)
            ),
            CATALOG,
        );
    }
    if let Some(p) = meta_problem(meta, inp.version) {
        return Verdict::hidden(
            "meta-invalid",
            "meta.json",
            format!(
                "{p}: `StoredConversation.model_validate_json` raises and the folder is dropped"
            ),
            if era == Era::Eager {
                SCAN_EAGER
            } else {
                CATALOG
            },
        );
    }
    let id = meta
        .get("id")
        .and_then(Value::as_str)
        .and_then(json_uuid)
        .unwrap_or_default();
    // the sort sees every catalog record, before any row is composed
    if era != Era::Eager && own_record_passes(conv, inp.version) {
        if let Some(mut v) = sort_breaks(conv, meta, ids, era, inp) {
            let row = name == id
                && inp.state_invalid.is_none()
                && conv.base_state.value().is_some_and(|st| {
                    state_problem(st).is_none() && state_id_elsewhere(st, &id, q).is_none()
                });
            v.listed = Some(row);
            return v;
        }
    }
    if era == Era::Eager && !meta.get("agent").is_some_and(Value::is_object) {
        return Verdict::hidden(
            "meta-no-agent",
            "meta.json",
            "meta.json carries no `agent` (written by a 1.43+ server, or edited): releases before 1.37 rebuild the agent from meta.json (`type(self.stored.agent).model_validate`), so the start fails and the folder is skipped".into(),
            START,
        );
    }
    if name != id {
        let owner = ids
            .entries
            .iter()
            .any(|e| e.name == id && e.id.as_deref() == Some(&id));
        let why = if owner {
            format!(
                "its meta.json carries the id of folder `{id}`: the server reads that conversation from `{id}` and never shows this folder (see `shadowed`)"
            )
        } else if era == Era::Eager {
            format!(
                "the server files a conversation under the id in meta.json and works in `<conversations>/{id}`, not in `{}`: at startup it creates that folder with a fresh, empty conversation from this meta.json; this folder's history is never shown",
                q(name)
            )
        } else {
            format!(
                "the catalog files it under the id in meta.json, but the list reads the state from `<conversations>/{id}/base_state.json`, not from `{}`: that file does not exist, so search skips the row (count still counts it)",
                q(name)
            )
        };
        return Verdict::hidden(
            "folder-not-id",
            "meta.json",
            why,
            if era == Era::Eager {
                SCAN_EAGER
            } else {
                SEARCH
            },
        );
    }
    match era {
        Era::Eager => {
            let l = lease::judge(&conv.lease, inp.env);
            if let Lease::Live(p, held) = &l {
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
            let kind = meta.get("workspace").and_then(|w| w.get("kind"));
            if kind.is_some_and(|k| k.as_str() != Some("LocalWorkspace")) {
                return Verdict::hidden(
                    "meta-invalid",
                    "meta.json",
                    "meta.json `workspace` is not a LocalWorkspace: `EventService.start` asserts it and the start fails".into(),
                    START,
                );
            }
            if let Doc::Unreadable(u) = &conv.base_state {
                if !matches!(u, crate::store::Unreadable::Empty) {
                    return Verdict::hidden(
                        "state-does-not-load",
                        "base_state.json",
                        format!("base_state.json cannot be read ({u}): the event service fails to start and the folder is skipped"),
                        START,
                    );
                }
            }
            if let Some(p) = conv.base_state.value().and_then(status_problem) {
                return Verdict::hidden(
                    "state-does-not-load",
                    "base_state.json",
                    format!("base_state.json `execution_status` {p}: the state does not validate, the event service fails to start and the folder is skipped"),
                    START,
                );
            }
            if let Some(p) = conv.base_state.value().and_then(state_problem) {
                return Verdict::hidden(
                    "state-does-not-load",
                    "base_state.json",
                    format!("{p}: the state does not validate, the event service fails to start and the folder is skipped"),
                    START,
                );
            }
            if let Some(e) = &inp.load_error {
                return Verdict::hidden(
                    "state-does-not-load",
                    "base_state.json",
                    format!("the state does not load ({e}): the event service fails to start and the folder is skipped"),
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
            Verdict::new(
                Some(true),
                "listed",
                "meta.json",
                "started at startup and listed".into(),
                SCAN_EAGER,
            )
        }
        Era::Catalog | Era::CatalogUuidName => {
            let state = match &conv.base_state {
                Doc::Missing => {
                    return Verdict::hidden(
                        "no-base-state",
                        "base_state.json",
                        "there is no base_state.json: the catalog keeps the record, but search skips a row without a persisted state (`_load_persisted_state_sync` returns None); count still counts it".into(),
                        SEARCH,
                    )
                }
                Doc::Unreadable(u) => {
                    return Verdict::hidden(
                        "base-state-unreadable",
                        "base_state.json",
                        format!("base_state.json cannot be read as JSON ({u}): \"strict on purpose: a corrupt base state still drops the conversation from the catalog\""),
                        CATALOG,
                    )
                }
                Doc::Present(v) => v,
            };
            if let Some(p) = status_problem(state) {
                return Verdict::hidden(
                    "bad-execution-status",
                    "base_state.json",
                    format!("base_state.json `execution_status` {p}: `ConversationExecutionStatus(...)` raises and the catalog drops the conversation"),
                    CATALOG,
                );
            }
            let bad = state_problem(state).or_else(|| {
                inp.state_invalid
                    .as_ref()
                    .map(|e| format!("base_state.json: {e}"))
            });
            if let Some(p) = bad {
                let mut v = Verdict::hidden(
                    "breaks-search",
                    "base_state.json",
                    format!("{p}: `ConversationState.model_validate_json` raises while the list is composed, and nothing catches it: the search call fails for every conversation on the same page"),
                    SEARCH,
                );
                v.breaks_search = true;
                return v;
            }
            if let Some(v) = state_id_elsewhere(state, &id, q) {
                return v;
            }
            Verdict::new(
                Some(true),
                "listed",
                "meta.json",
                "in the catalog and listed".into(),
                CATALOG,
            )
        }
    }
}

/// "instance abc on host h pid 12 (a container)".
pub fn owner_text(p: &lease::Payload, held: &Held, q: &dyn Fn(&str) -> String) -> String {
    let mut s = format!("instance `{}`", q(&p.owner));
    if let Some(h) = &p.host {
        s.push_str(&format!(" on host `{}`", q(h)));
    }
    if let Some(pid) = p.pid {
        s.push_str(&format!(" pid {pid}"));
    }
    match held {
        Held::OtherHost { container: true } => s.push_str(", a container by its host name"),
        Held::NoHostPid => s.push_str(", no host or pid recorded (a pre-1.22 lease)"),
        Held::ThisHostAlive {
            reused: true,
            command,
        } => s.push_str(&format!(
            ", a pid now used by `{}`, not an agent-server",
            q(command.as_deref().unwrap_or("?"))
        )),
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_uuid_of_folder_names() {
        let h = "0f8b0186d86c5dbb8239dd60a36a9ec5";
        assert_eq!(py_uuid(h).as_deref(), Some(h));
        assert_eq!(
            py_uuid("0f8b0186-d86c-5dbb-8239-dd60a36a9ec5").as_deref(),
            Some(h)
        );
        assert_eq!(
            py_uuid("{0F8B0186D86C5DBB8239DD60A36A9EC5}").as_deref(),
            Some(h)
        );
        assert_eq!(
            py_uuid("urn:uuid:0f8b0186d86c5dbb8239dd60a36a9ec5").as_deref(),
            Some(h)
        );
        assert_eq!(py_uuid("my-conversation"), None);
        assert_eq!(py_uuid("0f8b0186d86c5dbb8239dd60a36a9ecz"), None);
        // int(x, 16) quirks: 0x prefix and underscores (still 32 characters)
        assert_eq!(
            py_uuid("0x0000000000000000000000000000ff").as_deref(),
            Some("000000000000000000000000000000ff")
        );
        assert_eq!(
            py_uuid("0000_00000000000000000000000000f").as_deref(),
            Some("0000000000000000000000000000000f")
        );
        assert_eq!(py_uuid("-0000000000000000000000000000001"), None);
    }

    #[test]
    fn json_uuid_spellings() {
        let h = "0f8b0186d86c5dbb8239dd60a36a9ec5";
        assert_eq!(
            json_uuid("0F8B0186-D86C-5DBB-8239-DD60A36A9EC5").as_deref(),
            Some(h)
        );
        assert_eq!(json_uuid("0f8b0186-d86c5dbb-8239-dd60a36a9ec5-"), None);
        assert_eq!(json_uuid("not-a-uuid"), None);
    }

    #[test]
    fn eras_switch_at_the_releases_read() {
        assert_eq!(era(Version::new(1, 36, 1)), Era::Eager);
        assert_eq!(era(Version::new(1, 37, 0)), Era::Catalog);
        assert_eq!(era(Version::new(1, 48, 0)), Era::Catalog);
        assert_eq!(era(Version::new(1, 49, 0)), Era::CatalogUuidName);
    }

    /// pydantic's verdict on a meta.json `created_at`, as 1.58.2's and
    /// 1.43.1's `StoredConversation.model_validate_json` gave it (aware,
    /// naive, rejected; the same in both).
    #[test]
    fn pydantic_datetimes() {
        let table: &[(&str, Option<bool>)] = &[
            (r#""yesterday""#, None),
            (r#""2024-01-01""#, Some(false)),
            (r#""2024-01-01T00:00:00""#, Some(false)),
            (r#""2024-01-01t00:00:00z""#, Some(true)),
            (r#""2024-01-01 00:00""#, Some(false)),
            (r#""2024-01-01T00:00:00.123456Z""#, Some(true)),
            (r#""2024-01-01T00:00:00+0200""#, Some(true)),
            (r#""2024-01-01T00:00:00+02""#, None),
            (r#""2024-02-30""#, None),
            (r#""2023-02-29""#, None),
            (r#""2024-02-29""#, Some(false)),
            (r#""2024-01-01T24:00:00""#, None),
            (r#""2024-01-01T00:00:60""#, None),
            (r#""2024-01-01T00:00:00.Z""#, None),
            (r#""2024-01-01T00:00:00 Z""#, None),
            (r#""1700000000""#, Some(true)),
            (r#""1700000000.5""#, Some(true)),
            (r#""-5""#, Some(true)),
            (r#""""#, None),
            (r#"" 2024-01-01""#, None),
            (r#""2024-1-01""#, None),
            (r#""2024-01-01T00""#, None),
            (r#""2024-01-01T00:00:00,5Z""#, Some(true)),
            (r#"1700000000"#, Some(true)),
            (r#"1700000000.5"#, Some(true)),
            (r#"0"#, Some(true)),
            (r#"-1"#, Some(true)),
            (r#"10000000000000.0"#, Some(true)),
            (r#"190000000000000.0"#, Some(true)),
            (r#"210000000000000.0"#, Some(true)),
            (r#"1e+20"#, None),
            (r#"null"#, None),
            (r#"true"#, None),
            (r#"[]"#, None),
            (r#"{}"#, None),
            (r#""2024-01-01T00:00:00-00:00""#, Some(true)),
        ];
        for (json, want) in table {
            let v: Value = serde_json::from_str(json).unwrap();
            assert_eq!(py_datetime(&v), *want, "{json}");
        }
    }

    /// `StoredConversation.model_validate_json` of 1.58.2 and 1.43.1 (the
    /// same verdicts) on a real 1.58.2 meta.json with one field replaced.
    /// Not modelled: the inside of nested models (`launched_agent_profile: {}`
    /// is rejected for its missing fields; we say valid).
    #[test]
    fn meta_field_types_as_pydantic_says() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/listing/1.58.2/5b99a880a4e45a5cb72780153adc8aba/meta.json"
        );
        let base: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(meta_problem(&base, Version::new(1, 58, 2)), None);
        let table: &[(&str, &str, bool)] = &[
            ("observability_span_name", r#""""#, false),
            ("observability_span_name", r#"null"#, true),
            ("observability_span_name", r#""a b""#, false),
            (
                "observability_span_name",
                &format!("\"{}\"", "x".repeat(129)),
                false,
            ),
            ("observability_span_name", r#""my.span:1/x-y""#, true),
            ("conversation_id", r#""""#, false),
            ("conversation_id", r#""x""#, false),
            ("tags", r#"null"#, true),
            ("tags", r#"{"A": "b"}"#, false),
            ("tags", r#"{"a": 1}"#, false),
            ("confirmation_policy", r#"{}"#, false),
            ("confirmation_policy", r#"null"#, false),
            ("security_analyzer", r#"{}"#, false),
            ("title", r#""""#, true),
            ("title", r#""  ""#, true),
            ("secrets", r#"null"#, false),
            ("secrets", r#"[]"#, false),
            ("observability_metadata", r#"null"#, true),
            ("tool_module_qualnames", r#"null"#, false),
            ("plugins", r#"null"#, true),
            ("client_tools", r#"null"#, false),
            ("max_iterations", r#""5""#, true),
            ("max_iterations", r#"true"#, true),
            ("stuck_detection", r#"0"#, true),
            ("stuck_detection", r#""yes""#, true),
            ("stuck_detection", r#"2"#, false),
            ("required_runtime_credential_bindings", r#"null"#, false),
            ("metrics", r#"{}"#, true),
            ("hook_config", r#"{}"#, true),
            ("initial_message", r#"{}"#, true),
        ];
        for (k, json, ok) in table {
            let mut m = base.clone();
            m[*k] = serde_json::from_str(json).unwrap();
            for v in [Version::new(1, 58, 2), Version::new(1, 43, 1)] {
                assert_eq!(meta_problem(&m, v).is_none(), *ok, "{k} = {json} ({v})");
            }
        }
    }
}
