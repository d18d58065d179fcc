//! `ConversationState.create` (resume path), `_resolve_active_leaf` and
//! `EventLog.path_to_root`, as the SDK implements them.

use serde_json::Value;

use super::read::{ReadError, Reader};
use crate::store::{Doc, Unreadable};
use crate::validate::scalar;
use crate::version::LeafRule;

/// Why the SDK would refuse to load the conversation (it raises).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// base_state.json is missing (or empty: `if base_text:`) and the caller
    /// passes no agent: `ConversationState.create`'s fresh path raises
    /// `ValueError("agent is required when initializing a new
    /// ConversationState")` in every release 1.29.3–1.58.2 (the 1.58.2
    /// agent-server's `EventService.start` raises its own `ValueError` first).
    /// A server before 1.43 passes meta.json's agent instead: [`fresh_start`].
    NoBaseState,
    /// base_state.json cannot be validated (`ValidationError`).
    BadBaseState(String),
    /// base_state.json is a directory (`IsADirectoryError`), not UTF-8
    /// (`UnicodeDecodeError`) or not JSON (`JSONDecodeError`): reading it or
    /// `json.loads` fails before any validation.
    StateDecode {
        exception: &'static str,
        why: String,
    },
    /// `ConversationState.model_validate` refuses base_state.json (pydantic's errors).
    InvalidState(Vec<crate::validate::VError>),
    /// base_state.json belongs to another conversation.
    IdMismatch { expected: String, found: String },
    /// An event on the walk (or in the leaf scan) cannot be read.
    Read { idx: usize, error: ReadError },
    /// The stored `leaf_event_id` is not in the index (`KeyError`).
    UnknownLeaf { id: String },
    /// An event on the walk names a parent not in the index (`KeyError`).
    UnknownParent { idx: usize, parent: String },
    /// The walk came back to an event it had visited (`ValueError`).
    Cycle { idx: usize },
}

impl LoadError {
    /// The Python exception the SDK raises.
    pub fn exception(&self) -> &'static str {
        match self {
            LoadError::NoBaseState | LoadError::IdMismatch { .. } => "ValueError",
            LoadError::BadBaseState(_) => "ValidationError",
            LoadError::StateDecode { exception, .. } => exception,
            LoadError::InvalidState(e) => e.first().map_or("ValidationError", |e| e.exception()),
            LoadError::Read { error, .. } => match error {
                ReadError::NonCanonicalName { .. } | ReadError::Unreadable(Unreadable::Empty) => {
                    "FileNotFoundError"
                }
                ReadError::Unreadable(Unreadable::NotUtf8) => "UnicodeDecodeError",
                // `open()` of a directory named like an event file
                ReadError::Unreadable(Unreadable::NotAFile("directory")) => "IsADirectoryError",
                // `_validate_subtype` looks an object or array `kind` up in a dict
                ReadError::Unreadable(Unreadable::BadField { field: "kind", .. }) => "TypeError",
                ReadError::Invalid { errors, .. } => {
                    errors.first().map_or("ValidationError", |e| e.exception())
                }
                _ => "ValidationError",
            },
            LoadError::UnknownLeaf { .. } | LoadError::UnknownParent { .. } => "KeyError",
            LoadError::Cycle { .. } => "ValueError",
        }
    }
}

/// Normalise a conversation id: dashes removed, lower case.
pub fn norm_id(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '-')
        .flat_map(|c| c.to_lowercase())
        .collect()
}

fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn bad(why: String) -> LoadError {
    LoadError::BadBaseState(why)
}

/// `ConversationState.create`'s fresh path: base_state.json missing or
/// empty, and a server that still passes meta.json's agent (< 1.43) to
/// recreate the state from it. The fresh path reads no event (no
/// `rebuild_view()`); the history is read only when the view is next built.
pub fn fresh_start(conv: &crate::store::Conversation, version: crate::version::Version) -> bool {
    let empty = matches!(
        conv.base_state,
        Doc::Missing | Doc::Unreadable(Unreadable::Empty)
    );
    let meta_agent = conv.meta.value().and_then(|m| m.get("agent")).is_some();
    empty && version.meta_owns_agent() && meta_agent
}

/// What the resume path reads from base_state.json: (leaf_event_id, head_is_empty),
/// in the SDK's order: `json.loads` (JSONDecodeError), `model_validate` of
/// the fields the walk depends on (ValidationError), then the id check
/// (ValueError). A pre-tree release (< 1.31) has neither tree field and
/// ignores both keys (its model ignores unknown keys).
fn head(reader: &Reader) -> Result<(Option<String>, bool), LoadError> {
    let conv = reader.conv;
    let state = match &conv.base_state {
        Doc::Present(v) => v,
        Doc::Missing | Doc::Unreadable(Unreadable::Empty) => {
            if fresh_start(conv, reader.version) {
                return Ok((None, false));
            }
            return Err(LoadError::NoBaseState);
        }
        Doc::Unreadable(u @ Unreadable::NotAFile("directory")) => {
            return Err(LoadError::StateDecode {
                exception: "IsADirectoryError",
                why: u.to_string(),
            })
        }
        Doc::Unreadable(u @ Unreadable::NotUtf8) => {
            return Err(LoadError::StateDecode {
                exception: "UnicodeDecodeError",
                why: u.to_string(),
            })
        }
        Doc::Unreadable(u @ Unreadable::InvalidJson(_)) => {
            return Err(LoadError::StateDecode {
                exception: "JSONDecodeError",
                why: u.to_string(),
            })
        }
        Doc::Unreadable(u) => return Err(bad(u.to_string())),
    };
    // The whole model first: a crashing validator's exception (AttributeError
    // before 1.58) ends `model_validate` whatever else is wrong.
    crate::validate::state_verdict(reader.version, state).map_err(LoadError::InvalidState)?;
    let found = match state.get("id") {
        None => return Err(bad("`id`: Field required".into())),
        Some(Value::String(s)) => match scalar::uuid_str(s) {
            Some(id) => id,
            None => return Err(bad("`id`: Input should be a valid UUID".into())),
        },
        Some(_) => {
            return Err(bad(
                "`id`: UUID input should be a string, bytes or UUID object".into(),
            ))
        }
    };
    let tree = reader.version.tree_era();
    let leaf = match state.get("leaf_event_id") {
        _ if !tree => None,
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("`leaf_event_id`: Input should be a valid string".into())),
    };
    let head_is_empty = match state.get("head_is_empty") {
        _ if !tree => false,
        None => false,
        Some(v) => match scalar::serde::bool(v).ok() {
            Some(b) => b,
            None => {
                return Err(bad(
                    "`head_is_empty`: Input should be a valid boolean".into()
                ))
            }
        },
    };
    let expected = conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .map(|s| scalar::uuid_str(s).unwrap_or_else(|| norm_id(s)))
        .or_else(|| is_hex32(&conv.folder).then(|| conv.folder.to_lowercase()));
    if let Some(e) = expected {
        if e != found {
            return Err(LoadError::IdMismatch { expected: e, found });
        }
    }
    Ok((leaf, head_is_empty))
}

fn read_at<'a>(
    reader: &Reader<'a>,
    idx: usize,
) -> Result<&'a crate::store::EventRecord, LoadError> {
    reader
        .read(idx)
        .map_err(|error| LoadError::Read { idx, error })
}

/// `_resolve_active_leaf()` as an index, `None` for an empty HEAD.
pub fn resolve_leaf(reader: &Reader) -> Result<Option<usize>, LoadError> {
    let (leaf, head_is_empty) = head(reader)?;
    if let Some(id) = leaf {
        return match reader.index.id_to_idx.get(&id) {
            Some(&i) => Ok(Some(i)),
            None => Err(LoadError::UnknownLeaf { id }),
        };
    }
    if head_is_empty {
        return Ok(None);
    }
    let n = reader.len();
    if n == 0 {
        return Ok(None);
    }
    // The fallback returns `get_id(i)`, which `path_to_root` looks up again
    // by id: a second copy of an id stands for its first copy.
    match reader.version.leaf_rule() {
        LeafRule::LastUnlessParented => {
            let last = read_at(reader, n - 1)?;
            Ok((!last.parent.is_present()).then(|| reader.first_of(n - 1)))
        }
        LeafRule::SkipArtifacts => {
            for i in (0..n).rev() {
                if !read_at(reader, i)?.is_artifact() {
                    return Ok(Some(reader.first_of(i)));
                }
            }
            Ok(None)
        }
    }
}

/// `path_to_root(leaf)`, root-first, as indices.
pub fn path_to_root(reader: &Reader, leaf: Option<usize>) -> Result<Vec<usize>, LoadError> {
    let mut chain = Vec::new();
    // one bit an index (every index on the walk is below the log's length),
    // not a hash set of a long branch
    let mut seen = vec![0u64; reader.len().div_ceil(64)];
    let mut cur = leaf;
    while let Some(idx) = cur {
        let (word, bit) = (idx / 64, 1u64 << (idx % 64));
        if word >= seen.len() {
            seen.resize(word + 1, 0);
        }
        if seen[word] & bit != 0 {
            return Err(LoadError::Cycle { idx });
        }
        seen[word] |= bit;
        let rec = read_at(reader, idx)?;
        chain.push(idx);
        cur = reader
            .effective_parent(idx, rec)
            .map_err(|parent| LoadError::UnknownParent { idx, parent })?;
    }
    chain.reverse();
    Ok(chain)
}

/// The agent view: the active branch of a tree-era reader, or the whole log
/// for a pre-tree reader (< 1.31 iterates the log, skipping empty files).
pub fn active_branch(reader: &Reader) -> Result<Vec<usize>, LoadError> {
    if !reader.version.tree_era() {
        head(reader)?;
        let mut all = Vec::new();
        for i in 0..reader.len() {
            match reader.read(i) {
                Ok(_) => all.push(i),
                Err(ReadError::Unreadable(Unreadable::Empty)) => {}
                Err(error) => return Err(LoadError::Read { idx: i, error }),
            }
        }
        return Ok(all);
    }
    let leaf = resolve_leaf(reader)?;
    path_to_root(reader, leaf)
}
