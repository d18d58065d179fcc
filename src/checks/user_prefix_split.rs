//! `user-prefix-split` (warning): one conversation's copy filed under more
//! than one user segment.

use super::{plural, Check, Ctx, Finding, Severity};
use crate::appserver::Related;

pub struct UserPrefixSplit;

impl Check for UserPrefixSplit {
    fn id(&self) -> &'static str {
        "user-prefix-split"
    }

    fn summary(&self) -> &'static str {
        "One conversation's event copy split across user prefixes: the app server reads one of them"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--events-store`: the same conversation id with events both under
  `<prefix>/v1_conversations/<id>/` and `<prefix>/<user_id>/v1_conversations/
  <id>/` (or under two user ids). The event service files a conversation
  under its owner's id when it knows one, and without it when the request
  had no user (the webhook of a sandbox without an owner, a change of
  deployment mode); see OpenHands PR#12571.

What the user sees
  The app server reads one prefix only (`get_conversation_path`: the
  requesting user's, else none): the UI shows the events of that prefix and
  never those of the other, so the conversation looks cut short or empty.

What to do
  Move the events of the other prefix into the one the app server reads
  for this user (for a multi-user deployment `<prefix>/<user_id>/...`, for
  the single-user OSS app `<prefix>/v1_conversations/...`); event file
  names are unique ids, so the two sets merge without clashes."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        if rel.copies.len() < 2 {
            return;
        }
        let parts: Vec<String> = rel
            .copies
            .iter()
            .map(|c| {
                let who = match &c.at.user {
                    Some(u) => format!("user `{}`", crate::text::clip(u, crate::text::QUOTE_MAX)),
                    None => "no user".into(),
                };
                format!(
                    "{} ({who}): {}",
                    c.location,
                    plural(c.ids().len(), "event", "events")
                )
            })
            .collect();
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            "",
            format!(
                "its event copy is split across {} prefixes: {}; the app server reads one, so the UI misses the others' events",
                rel.copies.len(),
                parts.join("; ")
            ),
        ));
    }
}
