//! `ConversationState.create` (resume path), `_resolve_active_leaf` and
//! `EventLog.path_to_root`, as the SDK implements them.

use std::collections::HashSet;

use serde_json::Value;

use super::read::{ReadError, Reader};
use crate::store::Doc;
use crate::version::LeafRule;

/// Why the SDK would refuse to load the conversation (it raises).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// base_state.json is missing (or empty) and nothing can recreate it.
    NoBaseState,
    /// base_state.json cannot be read or validated.
    BadBaseState(String),
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
            LoadError::InvalidState(e) => e.first().map_or("ValidationError", |e| e.exception()),
            LoadError::Read { error, .. } => match error {
                ReadError::NonCanonicalName { .. }
                | ReadError::Unreadable(crate::store::Unreadable::Empty) => "FileNotFoundError",
                ReadError::Unreadable(crate::store::Unreadable::NotUtf8) => "UnicodeDecodeError",
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

/// What the resume path reads from base_state.json: (leaf_event_id, head_is_empty).
fn head(reader: &Reader) -> Result<(Option<String>, bool), LoadError> {
    let conv = reader.conv;
    let state = match &conv.base_state {
        Doc::Present(v) => v,
        Doc::Missing | Doc::Unreadable(crate::store::Unreadable::Empty) => {
            // An empty or missing base_state.json is the "fresh" path: only a
            // server that still passes meta.json's agent (< 1.43) recreates it.
            let meta_agent = conv.meta.value().and_then(|m| m.get("agent")).is_some();
            if reader.version.meta_owns_agent() && meta_agent {
                return Ok((None, false));
            }
            return Err(LoadError::NoBaseState);
        }
        Doc::Unreadable(u) => return Err(LoadError::BadBaseState(u.to_string())),
    };
    crate::validate::state_verdict(reader.version, state).map_err(LoadError::InvalidState)?;
    let found = state.get("id").and_then(Value::as_str).map(norm_id);
    let expected = conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .map(norm_id)
        .or_else(|| is_hex32(&conv.folder).then(|| conv.folder.to_lowercase()));
    if let (Some(e), Some(f)) = (&expected, &found) {
        if e != f {
            return Err(LoadError::IdMismatch {
                expected: e.clone(),
                found: f.clone(),
            });
        }
    }
    let leaf = match state.get("leaf_event_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if reader.version.tree_era() => Some(s.clone()),
        Some(Value::String(_)) => None, // pre-tree readers ignore the key
        Some(_) => {
            return Err(LoadError::BadBaseState(
                "`leaf_event_id` is not a string".into(),
            ))
        }
    };
    let head_is_empty = match state.get("head_is_empty") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b && reader.version.tree_era(),
        Some(_) => {
            return Err(LoadError::BadBaseState(
                "`head_is_empty` is not a boolean".into(),
            ))
        }
    };
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
    match reader.version.leaf_rule() {
        LeafRule::LastUnlessParented => {
            let last = read_at(reader, n - 1)?;
            Ok((!last.parent.is_present()).then_some(n - 1))
        }
        LeafRule::SkipArtifacts => {
            for i in (0..n).rev() {
                if !read_at(reader, i)?.is_artifact() {
                    return Ok(Some(i));
                }
            }
            Ok(None)
        }
    }
}

/// `path_to_root(leaf)`, root-first, as indices.
pub fn path_to_root(reader: &Reader, leaf: Option<usize>) -> Result<Vec<usize>, LoadError> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = leaf;
    while let Some(idx) = cur {
        if !seen.insert(idx) {
            return Err(LoadError::Cycle { idx });
        }
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
                Err(ReadError::Unreadable(crate::store::Unreadable::Empty)) => {}
                Err(error) => return Err(LoadError::Read { idx: i, error }),
            }
        }
        return Ok(all);
    }
    let leaf = resolve_leaf(reader)?;
    path_to_root(reader, leaf)
}
