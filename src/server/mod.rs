//! Which conversations an agent-server release lists, and why not: a model of
//! `ConversationService` (startup scan, catalog, search) read from the real
//! releases. docs/format.md, "Which conversations the server lists", has the
//! rules per release with their file and function names.
//!
//! Every rule it shares with the SDK is taken from where the SDK's own
//! behaviour is modelled, never written again here: meta.json is validated
//! with the release's extracted `StoredConversation` model ([`meta`]),
//! base_state.json and the event log by the load verdict `diagnose` computes
//! for the release ([`Inputs::load`]), ids and dates by pydantic's scalars
//! (`crate::validate::scalar`). What is the server's own: the eras
//! ([`era`]), the store pre-pass ([`StoreIds`]), the eager start
//! ([`eager`]) and the catalog and its search ([`catalog`]).

mod catalog;
mod eager;
pub mod lease;
pub mod meta;
mod store_ids;

use std::path::Path;

use crate::store::{Conversation, Doc};
use crate::validate::scalar;
use crate::version::{Change, Version};
use lease::Held;
pub use store_ids::{store_ids, Entry, StoreIds};

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

/// The listing model of a release, from the release table.
pub fn era(v: Version) -> Era {
    if !v.has(Change::Catalog) {
        Era::Eager
    } else if !v.has(Change::CatalogUuidName) {
        Era::Catalog
    } else {
        Era::CatalogUuidName
    }
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

/// Why the SDK of the release cannot load the conversation: the load verdict
/// `diagnose` computes (`crate::view`), in a sentence.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// It fails on base_state.json (read, validation, id), not on an event.
    pub state: bool,
    /// pydantic's `ConversationState` refuses base_state.json: what the
    /// 1.37+ search's `model_validate_json` raises on too.
    pub state_invalid: bool,
    /// The ≤ 1.36 start meets it: always, but for an event on the fresh
    /// path (base_state.json missing or empty: the start recreates the
    /// state from meta.json's agent and reads no event).
    pub at_start: bool,
    /// The exception and why (untrusted text already quoted).
    pub why: String,
}

/// What one judgement needs besides the folder.
pub struct Inputs<'a> {
    pub version: Version,
    /// The load verdict for this release: `None` when the SDK loads it.
    pub load: Option<LoadFailure>,
    /// For a `running` conversation, whose start runs crash recovery over
    /// every event of the log: the first that cannot be read, if any.
    pub running_unreadable: Option<String>,
    pub env: &'a lease::Env,
    /// Pass untrusted text (ids, names) through the redactor and clip.
    pub quote: &'a dyn Fn(&str) -> String,
}

impl Inputs<'_> {
    /// pydantic's `ConversationState` refuses base_state.json (the reason).
    fn state_invalid(&self) -> Option<&str> {
        self.load
            .as_ref()
            .filter(|l| l.state_invalid)
            .map(|l| l.why.as_str())
    }
}

const SCAN_EAGER: &str = "conversation_service.py ConversationService.__aenter__ (≤ 1.36)";
const CATALOG: &str = "conversation_service.py ConversationService._load_catalog_sync (1.37+)";
const SEARCH: &str = "conversation_service.py ConversationService._conversation_info / _load_persisted_state_sync (1.37+)";
const SEARCH_EAGER: &str =
    "conversation_service.py ConversationService._search_conversations (≤ 1.36)";
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

/// Judge one folder for one release.
pub fn judge(conv: &Conversation, ids: &StoreIds, inp: &Inputs) -> Verdict {
    let q = inp.quote;
    let era = era(inp.version);
    let scan = if era == Era::Eager {
        SCAN_EAGER
    } else {
        CATALOG
    };
    if is_subagent(&conv.dir) {
        return Verdict::new(
            None,
            "sub-agent",
            "./",
            "a sub-agent conversation nested in its parent's folder: the server lists the parent only".into(),
            CATALOG,
        );
    }
    if era == Era::Eager {
        if let Some((meta, via)) = eager::rescued(conv, ids, inp) {
            return eager::judge(conv, &meta, inp, Some(&via));
        }
    } else if let Some(v) = catalog::rescued(conv, ids, inp) {
        return v;
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
                scan,
            )
        }
        Doc::Unreadable(u) => {
            return Verdict::hidden(
                "meta-unreadable",
                "meta.json",
                format!("meta.json cannot be read as JSON ({u}): `StoredConversation.model_validate_json` raises and the folder is dropped"),
                scan,
            )
        }
        Doc::Present(v) => v,
    };
    let name = conv.folder.as_str();
    if era == Era::CatalogUuidName && scalar::py_uuid(name).is_none() {
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
    if let Some(p) = meta::problem(meta, inp.version, q) {
        if era == Era::Eager && meta::no_agent(meta) {
            return Verdict::hidden(
                "meta-no-agent",
                "meta.json",
                format!("meta.json carries no `agent` (written by a 1.43+ server, or edited): releases before 1.37 rebuild the agent from meta.json, so `StoredConversation` refuses it and the folder is skipped: {p}"),
                SCAN_EAGER,
            );
        }
        return Verdict::hidden(
            "meta-invalid",
            "meta.json",
            format!(
                "{p}: `StoredConversation.model_validate_json` raises and the folder is dropped"
            ),
            scan,
        );
    }
    let id = meta::id(meta).unwrap_or_default();
    // the sort sees every catalog record, before any row is composed
    if era != Era::Eager {
        if let Some(v) = catalog::sort_breaks(conv, meta, ids, inp, &id) {
            return v;
        }
    }
    if name != id {
        return folder_not_id(ids, &id, name, era, q);
    }
    match era {
        Era::Eager => eager::judge(conv, meta, inp, None),
        Era::Catalog | Era::CatalogUuidName => catalog::judge(conv, inp, &id),
    }
}

/// The folder is not named after the id in its meta.json.
fn folder_not_id(
    ids: &StoreIds,
    id: &str,
    name: &str,
    era: Era,
    q: &dyn Fn(&str) -> String,
) -> Verdict {
    let owner = ids
        .entries
        .iter()
        .any(|e| e.name == id && e.id.as_deref() == Some(id));
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
    let code = if era == Era::Eager {
        SCAN_EAGER
    } else {
        SEARCH
    };
    Verdict::hidden("folder-not-id", "meta.json", why, code)
}

/// Every release sorts the rows it lists by `created_at` before composing
/// the page (≤ 1.36 the started conversations, `all_conversations.sort`;
/// 1.37+ every catalog record, `records.sort`). A naive `created_at` (no
/// timezone: `"2024-01-01"`, `"2024-01-01T00:00:00"`) next to an aware one
/// (folder `other`'s) makes Python raise `TypeError` (found by
/// fixtures/gen/listing_fuzz.py): the search fails for the whole store,
/// though this row alone (`row`) composes. Blamed on the naive folder (the
/// servers write aware dates).
pub fn breaks_sort(other: &str, row: bool, era: Era, q: &dyn Fn(&str) -> String) -> Verdict {
    let mut v = Verdict::new(
        Some(row),
        "breaks-sort",
        "meta.json",
        format!(
            "meta.json `created_at` has no timezone (a naive datetime), while folder `{}` has an aware one: sorting the conversations by `created_at` raises TypeError (can't compare offset-naive and offset-aware datetimes), so the search call fails for every conversation (the whole store, whatever this row's own state)",
            q(other)
        ),
        if era == Era::Eager { SEARCH_EAGER } else { SEARCH },
    );
    v.breaks_search = true;
    v
}

/// The internal consistency of a verdict with the load verdict: an eager
/// server (≤ 1.36) starts every conversation it lists, and a start resumes
/// the conversation as the SDK loads it, so a conversation the release
/// cannot load is never listed by it (the one exception, which the real
/// 1.33.0 shows: on the fresh path, base_state.json missing or empty, the
/// start recreates the state and reads no event, so a history that does not
/// load fails only once the conversation is opened). Checked on every report in debug
/// builds (and so in the fuzzers).
pub fn consistent(verdict: &Verdict, inp: &Inputs) -> Result<(), String> {
    if era(inp.version) == Era::Eager && verdict.listed == Some(true) {
        if let Some(l) = inp.load.as_ref().filter(|l| l.at_start) {
            return Err(format!(
                "agent-server {} lists a conversation its SDK cannot load ({}) [{}]",
                inp.version, l.why, verdict.rule
            ));
        }
    }
    Ok(())
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
mod tests;
