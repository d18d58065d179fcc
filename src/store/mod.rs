//! The store model: what is on disk, read once, with nothing inferred.

pub mod conversation;
pub mod discover;
pub mod event;
pub mod fsread;
pub mod index;
pub mod placeholder;

pub use conversation::{Conversation, Doc, EventFile};
pub use event::{EventRecord, ParentRef, Unreadable};
pub use index::Index;
