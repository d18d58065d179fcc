//! 1.37+: the catalog of meta.json records (`_load_catalog_sync`) and the
//! search that composes each row from base_state.json
//! (`_conversation_info` / `_load_persisted_state_sync`).

use serde_json::Value;

use super::{era, meta, Entry, Era, Inputs, StoreIds, Verdict, CATALOG, SEARCH};
use crate::store::{Conversation, Doc};
use crate::validate::{self, scalar};
use crate::version::Version;

/// `payload.get("execution_status", "idle")` then `ConversationExecutionStatus(...)`:
/// the members are the release's own (its extracted `ConversationState`).
fn status_problem(state: &Value, version: Version) -> Option<String> {
    let v = state.get("execution_status")?;
    if validate::state_field_valid(version, "execution_status", v) {
        return None;
    }
    Some(if v.is_string() {
        "is not a ConversationExecutionStatus".into()
    } else {
        "is not a string".into()
    })
}

/// Whether the catalog scan keeps this folder's own record (under whatever
/// id its meta.json carries).
fn own_record_passes(conv: &Conversation, version: Version) -> bool {
    let meta_ok = conv.meta.value().is_some_and(|m| meta::valid(m, version));
    let state_ok = match &conv.base_state {
        Doc::Missing => true,
        Doc::Unreadable(_) => false,
        Doc::Present(v) => status_problem(v, version).is_none(),
    };
    meta_ok && state_ok
}

/// Whether the catalog scan keeps the record of another folder.
fn record_passes(ids: &StoreIds, e: &Entry, version: Version) -> bool {
    if era(version) == Era::CatalogUuidName && scalar::py_uuid(&e.name).is_none() {
        return false;
    }
    let read = |f: &str| ids.read_json(&e.name, f);
    let meta_ok = matches!(read("meta.json"), Some(Some(m)) if meta::valid(&m, version));
    let state_ok = match read("base_state.json") {
        Some(None) => true,
        Some(Some(v)) => status_problem(&v, version).is_none(),
        None => false,
    };
    meta_ok && state_ok
}

/// A folder whose own record the catalog does not file under its name,
/// while another folder's meta.json carries its id and that record is kept:
/// the record is filed under the id, and the search reads
/// `conversations_dir / id.hex`, i.e. THIS folder's base_state.json (found
/// by fixtures/gen/listing_fuzz.py: a copy's meta.json lists the original
/// whose own meta.json is broken, or makes the search fail on the
/// original's broken state).
pub(super) fn rescued(conv: &Conversation, ids: &StoreIds, inp: &Inputs) -> Option<Verdict> {
    let name = conv.folder.as_str();
    let own_id = conv.meta.value().and_then(meta::id);
    if own_record_passes(conv, inp.version) && own_id.as_deref() == Some(name) {
        return None;
    }
    if scalar::uuid_str(name).as_deref() != Some(name) {
        return None;
    }
    let via = ids
        .others_with(name, name)
        .into_iter()
        .find(|e| record_passes(ids, e, inp.version))?;
    Some(search_reads(conv, inp, &via.name))
}

/// The catalog sorts every record by `stored.created_at` before composing
/// the page (`records.sort(key=...)`): see [`super::breaks_sort`]; here
/// every record the catalog keeps takes part.
pub(super) fn sort_breaks(
    conv: &Conversation,
    meta: &Value,
    ids: &StoreIds,
    inp: &Inputs,
    id: &str,
) -> Option<Verdict> {
    if !own_record_passes(conv, inp.version) {
        return None;
    }
    if !meta::naive_created_at(meta) {
        return None;
    }
    let other = ids.entries.iter().find(|e| {
        e.name != conv.folder
            && e.created_naive == Some(false)
            && record_passes(ids, e, inp.version)
    })?;
    let q = inp.quote;
    let row = conv.folder == id
        && inp.state_invalid().is_none()
        && conv
            .base_state
            .value()
            .is_some_and(|st| state_id_elsewhere(st, id, q).is_none());
    Some(super::breaks_sort(&other.name, row, era(inp.version), q))
}

/// The row of a record kept from folder `via`: what the search makes of
/// this folder's base_state.json.
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
        Doc::Present(v) => status_problem(v, inp.version)
            .map(|p| format!("its `execution_status` {p}"))
            .or_else(|| inp.state_invalid().map(String::from)),
    };
    if let Some(p) = bad {
        return breaks_search(format!("{whose}, and {p}"));
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

/// The search raises while composing the page: every conversation on it is lost.
fn breaks_search(what: String) -> Verdict {
    let mut v = Verdict::hidden(
        "breaks-search",
        "base_state.json",
        format!("{what}: `ConversationState.model_validate_json` raises while the list is composed, and nothing catches it: the search call fails for every conversation on the same page"),
        SEARCH,
    );
    v.breaks_search = true;
    v
}

/// The row is composed as `ConversationInfo(**state.model_dump(), ...)`: its
/// id is base_state.json's `id`, not the catalog's. When that is another UUID,
/// the list shows a row under that id and never this folder (found by
/// fixtures/gen/listing_fuzz.py; 1.43.1, 1.47.0 and 1.58.2 agree).
fn state_id_elsewhere(state: &Value, id: &str, q: &dyn Fn(&str) -> String) -> Option<Verdict> {
    let sid = state.get("id").and_then(|v| scalar::serde::uuid(v).ok())?;
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

/// The verdict on a folder named after the valid meta.json it holds.
pub(super) fn judge(conv: &Conversation, inp: &Inputs, id: &str) -> Verdict {
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
    if let Some(p) = status_problem(state, inp.version) {
        return Verdict::hidden(
            "bad-execution-status",
            "base_state.json",
            format!("base_state.json `execution_status` {p}: `ConversationExecutionStatus(...)` raises and the catalog drops the conversation"),
            CATALOG,
        );
    }
    if let Some(p) = inp.state_invalid() {
        return breaks_search(p.to_string());
    }
    if let Some(v) = state_id_elsewhere(state, id, inp.quote) {
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
