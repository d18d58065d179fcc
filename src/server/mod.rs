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
                        });
                    }
                    continue;
                }
                let id = crate::store::fsread::read_regular(&meta)
                    .ok()
                    .and_then(|(b, _)| serde_json::from_slice::<IdOnly>(&b).ok())
                    .and_then(|m| m.id)
                    .and_then(|v| v.as_str().and_then(json_uuid));
                entries.push(Entry {
                    name: e.file_name().to_string_lossy().into_owned(),
                    id,
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

/// What `StoredConversation.model_validate_json` rejects, for the fields that
/// decide (required `id` and `workspace`; before 1.37 the `agent` the event
/// service is rebuilt from).
fn meta_problem(meta: &Value) -> Option<String> {
    let Value::Object(o) = meta else {
        return Some("meta.json is not a JSON object".into());
    };
    match o.get("id") {
        None => return Some("meta.json has no `id`".into()),
        Some(Value::String(s)) if json_uuid(s).is_some() => {}
        Some(_) => return Some("meta.json `id` is not a UUID".into()),
    }
    match o.get("workspace") {
        Some(Value::Object(_)) => {}
        None => return Some("meta.json has no `workspace`".into()),
        Some(_) => return Some("meta.json `workspace` is not an object".into()),
    }
    None
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
    if !o.get("agent").is_some_and(Value::is_object) {
        return Some("base_state.json `agent` is not an object".into());
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
    if let Some(p) = meta_problem(meta) {
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
}
