//! `invalid-row` (error): a row of `conversation_metadata` the app server
//! cannot turn into a conversation (`SQLAppConversationInfoService._to_info`
//! raises), which fails every conversation-list page it falls on.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct InvalidRow;

/// `ConversationTrigger` values of openhands-ai 1.11.0
/// (`app_conversation_models.py`; checked against the real enum by
/// tests/appserver.rs through fixtures/appserver/manifest.json).
pub const TRIGGERS: &[&str] = &[
    "resolver",
    "gui",
    "suggested_task",
    "openhands_api",
    "slack",
    "microagent_management",
    "jira",
    "jira_dc",
    "linear",
    "bitbucket",
    "automation",
];

/// `ProviderType` values of openhands-ai 1.11.0 (`integrations/provider.py`),
/// checked the same way.
pub const PROVIDERS: &[&str] = &[
    "github",
    "gitlab",
    "bitbucket",
    "bitbucket_data_center",
    "forgejo",
    "azure_devops",
    "enterprise_sso",
];

/// Why the app server cannot read `row`, if it cannot (only V1 rows are
/// read: every query filters `conversation_version == 'V1'`).
pub fn why(row: &crate::appserver::db::Row) -> Option<String> {
    if crate::appserver::uuid_hex(&row.conversation_id).is_none() {
        return Some(format!(
            "its conversation_id `{}` is not a UUID (`UUID(stored.conversation_id)` raises ValueError)",
            crate::text::clip(&row.conversation_id, crate::text::QUOTE_MAX)
        ));
    }
    if !row.is_v1() {
        return None;
    }
    if row.sandbox_id.is_none() {
        return Some("its sandbox_id is NULL (`assert sandbox_id is not None` fails)".into());
    }
    if let Some(t) = row.trigger.as_deref().filter(|t| !TRIGGERS.contains(t)) {
        return Some(format!(
            "its trigger `{}` is not a ConversationTrigger (ValueError)",
            crate::text::clip(t, crate::text::QUOTE_MAX)
        ));
    }
    if let Some(g) = row
        .git_provider
        .as_deref()
        .filter(|g| !PROVIDERS.contains(g))
    {
        return Some(format!(
            "its git_provider `{}` is not a ProviderType (ValueError)",
            crate::text::clip(g, crate::text::QUOTE_MAX)
        ));
    }
    if let Some(p) = row
        .parent_conversation_id
        .as_deref()
        .filter(|p| crate::appserver::uuid_hex(p).is_none())
    {
        return Some(format!(
            "its parent_conversation_id `{}` is not a UUID (ValueError)",
            crate::text::clip(p, crate::text::QUOTE_MAX)
        ));
    }
    None
}

impl Check for InvalidRow {
    fn id(&self) -> &'static str {
        "invalid-row"
    }

    fn summary(&self) -> &'static str {
        "An app server row the app server cannot read: every conversation-list page holding it fails"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A row of the app server's `conversation_metadata` table (`--db`) that
  `SQLAppConversationInfoService._to_info` cannot turn into a conversation:
  a conversation_id that is not a UUID, a V1 row whose sandbox_id is NULL
  (`assert sandbox_id is not None`), a trigger that is not a
  ConversationTrigger, a git_provider that is not a ProviderType, a
  parent_conversation_id that is not a UUID. The app server itself never
  writes such a row; a hand edit, a restore or a foreign tool does.

What the user sees
  The conversation list (`GET /api/v1/app-conversations/search`, 100 rows a
  page, newest first) raises on the row, so the whole page fails with HTTP
  500: the UI shows no conversations at all, not only this one (checked with
  the real openhands-ai 1.11.0, fixtures/appserver/manifest.json).

What to do
  Fix the named column in the database (the app server's values are listed
  in the message), or delete the row if the conversation is gone. Back the
  database up first; convo-doctor never writes to it."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        let Some(row) = rel.row else { return };
        if let Some(why) = why(row) {
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                "",
                format!(
                    "the app server cannot read its row in {} ({why}): every page of the conversation list that holds it fails with HTTP 500, so the UI lists nothing there",
                    rel.rows.map_or("the database", |r| r.display.as_str())
                ),
            ));
        }
    }
}
