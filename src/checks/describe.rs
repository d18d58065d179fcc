//! The load failure and an unreadable event in words, as every message
//! (a finding, the verdict line, the listing's reason) quotes them.

use super::{ix, Ctx};
use crate::view::LoadError;

/// A read error for a message: a quoted kind is redacted, then clipped.
pub fn describe_read_error(e: &crate::view::ReadError, ctx: &Ctx) -> String {
    match e {
        crate::view::ReadError::UnknownKind { kind, field } => format!(
            "its {field} `{}` is not a kind this SDK knows",
            ctx.quote(kind)
        ),
        other => other.to_string(),
    }
}

pub fn describe_load_error(e: &LoadError, ctx: &Ctx) -> String {
    let reader = &ctx.reader;
    match e {
        // `ConversationState.create` reads an empty file as no state (`if base_text:`)
        LoadError::NoBaseState => match ctx.conv.base_state {
            crate::store::Doc::Unreadable(crate::store::Unreadable::Empty) => {
                "base_state.json is empty and there is no agent to rebuild it".into()
            }
            _ => "base_state.json is missing and there is no agent to rebuild it".into(),
        },
        LoadError::BadBaseState(why) | LoadError::StateDecode { why, .. } => {
            format!("base_state.json: {why}")
        }
        LoadError::InvalidState(errors) => format!(
            "base_state.json: {}",
            errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        LoadError::IdMismatch { expected, found } => {
            format!(
                "Conversation ID mismatch: {} is {}, base_state.json has {}",
                super::id_mismatch::id_source(ctx),
                ctx.quote(expected),
                ctx.quote(found)
            )
        }
        LoadError::Read { idx, error } => format!(
            "event {} (events/{}): {}",
            ix(*idx),
            reader.file(*idx).name,
            describe_read_error(error, ctx)
        ),
        LoadError::UnknownLeaf { .. } => "Unknown event_id: leaf_event_id is not in the log".into(),
        LoadError::UnknownParent { idx, .. } => {
            format!(
                "Unknown event_id: the parent of event {} is not in the log",
                ix(*idx)
            )
        }
        LoadError::Cycle { idx } => format!("Cycle in event tree at event {}", ix(*idx)),
    }
}
