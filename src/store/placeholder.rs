//! How a placeholder convo-doctor leaves in the slot of an event it set
//! aside is recognised on disk (what it writes: `crate::edit::placeholder`).
//! Here, below every reader, so the record parser can flag one.

/// The `code` of the ConversationErrorEvent placeholder: what `diagnose`
/// recognises a placeholder by.
pub const CODE: &str = "EventQuarantined";

/// The prefix of the AgentErrorEvent placeholder's `error`.
pub const ANSWER_PREFIX: &str = "convo-doctor set the result of this tool call aside";

/// Whether a parsed event is a placeholder convo-doctor wrote.
pub fn is_placeholder(kind: &str, code: Option<&str>, error: Option<&str>) -> bool {
    match kind {
        crate::kinds::CONVERSATION_ERROR => code == Some(CODE),
        crate::kinds::AGENT_ERROR => error.is_some_and(|e| e.starts_with(ANSWER_PREFIX)),
        _ => false,
    }
}
