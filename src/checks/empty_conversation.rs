//! `empty-conversation`: a conversation folder of a store emptied down to
//! nothing (no base_state.json, no meta.json, no events/).

use super::{Check, Ctx, Finding, Repair, Severity};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "empty-conversation";

pub struct EmptyConversation;

impl Check for EmptyConversation {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "a conversation folder holds none of a conversation's files: the server ignores it"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A folder of a store named like a conversation id (32 hex digits, or a UUID)
  that holds no base_state.json, no meta.json and no events/: a conversation
  emptied down to nothing (a cleanup that went too far, a failed restore, a
  volume that lost its files) or one whose creation never wrote anything.

Why it matters
  The agent-server skips a folder without meta.json when it starts: checked
  in-process against 1.33.0 and 1.58.2 (fixtures/gen/empty_conversation_check.py),
  it does not list the conversation, its GET answers 404, and starting a
  conversation with the same id creates a fresh, empty one in the folder.
  Whatever history it held is gone from every view, silently.

Repair
  None automatic: restore the folder from a backup if there is one, else
  remove it."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "nothing is left to repair: the folder holds no file of the conversation; restore it from a backup, or remove the empty folder (the server will create a fresh conversation if that id is started again)",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let c = ctx.conv;
        if c.base_state.exists() || c.meta.exists() || c.events.exists {
            return;
        }
        let held = if c.entries.is_empty() {
            "it is empty".to_string()
        } else {
            format!(
                "it holds only {}",
                c.entries
                    .iter()
                    .take(3)
                    .map(|e| format!("`{}`", ctx.quote(e)))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if c.entries.len() > 3 { ", ..." } else { "" }
            )
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            "",
            format!(
                "no base_state.json, meta.json or events/ ({held}): the agent-server does not list this conversation, its id answers 404, and a new conversation started with this id replaces it"
            ),
        ));
    }
}
