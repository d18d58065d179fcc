//! `s3-listing-limit` (warning): an S3 copy longer than one listing page,
//! which `AwsEventService` silently truncates.

use super::{Check, Ctx, Finding, Severity};
use crate::appserver::events_store::{Backend, S3_PAGE};
use crate::appserver::Related;

pub struct S3ListingLimit;

impl Check for S3ListingLimit {
    fn id(&self) -> &'static str {
        "s3-listing-limit"
    }

    fn summary(&self) -> &'static str {
        "An S3 event copy over 1,000 keys: the app server lists, counts and exports only the first 1,000"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  With `--events-store s3://...`: a conversation whose copy holds more than
  1,000 keys. `AwsEventService._search_paths` makes one `list_objects_v2`
  call and never follows its continuation token, so it sees the first 1,000
  keys in key order, which is event-id order, not time order (a fix,
  OpenHands PR#15239, was closed unmerged). convo-doctor lists every page.
  The filesystem and GCS services list everything.

What the user sees
  Search, count and the trajectory export of the conversation each see
  1,000 events, an arbitrary subset of a long conversation: messages
  missing from the middle, a count stuck at 1,000, a truncated download.

What to do
  Nothing in the data is wrong: every event is in the bucket. Read a long
  conversation from its agent-server while the sandbox runs, or from the
  bucket directly (`aws s3 sync`); an app server that pages the listing
  shows it whole."
    }

    fn run(&self, _ctx: &Ctx, _out: &mut Vec<Finding>) {}

    fn run_related(&self, rel: &Related, out: &mut Vec<Finding>) {
        if rel.backend() != Some(Backend::S3) {
            return;
        }
        for c in &rel.copies {
            let keys = c.keys();
            if keys > S3_PAGE {
                out.push(Finding::new(
                    self.id(),
                    Severity::Warning,
                    "",
                    format!(
                        "its copy at {} holds {keys} keys: AwsEventService reads one listing page of {S3_PAGE}, so the UI shows, counts and exports {S3_PAGE} of them (by event id, not time) and {} never",
                        c.location,
                        keys - S3_PAGE
                    ),
                ));
            }
        }
    }
}
