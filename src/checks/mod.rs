//! Checks: one file per check, each with a stable kebab-case id.
//!
//! A check reads the store model and the views and emits [`Finding`]s; it
//! never prints and never writes.
//!
//! Long because: the registry, the Check trait and the context every check
//! reads are one declaration.

use std::time::SystemTime;

use serde::Serialize;

use crate::secrets::Redactor;
use crate::store::{Conversation, Index};
use crate::version::Version;
use crate::view::{LoadError, Reader, Views};

pub mod abandoned_branch;
pub mod bad_event_filename;
pub mod changed_during_read;
pub mod dangling_parent;
pub mod describe;
pub mod duplicate_event_id;
pub mod duplicate_index;
pub mod empty_conversation;
pub mod false_root;
pub mod filename_id_mismatch;
pub mod head_lag;
pub mod id_mismatch;
pub mod index_gap;
pub mod interrupted_repair;
pub mod invalid_event;
pub mod invalid_state;
pub mod legacy_tail_hazard;
pub mod live_lease;
pub mod meta_divergence;
pub mod meta_duplicate;
pub mod misparented_recovery_error;
pub mod not_listed;
pub mod out_of_order;
pub mod parent_cycle;
pub mod plaintext_secret;
pub mod secret_undecryptable;
pub mod shadowed;
pub mod stale_leaf;
pub mod stale_running;
pub mod unknown_field;
pub mod unknown_kind;
pub mod unreadable_event;
pub mod unreadable_state;
// the app server's side (issue 18): `run_related`
pub mod copy_extra_events;
pub mod copy_missing_events;
pub mod events_without_row;
pub mod invalid_row;
pub mod row_status_divergence;
pub mod row_title_divergence;
pub mod row_without_events;
pub mod s3_listing_limit;
pub mod unmigrated_event_layout;
pub mod user_prefix_split;
pub mod v0_row;

pub(crate) mod displaced;
mod meta_repair;
pub mod repairs;
mod set_aside;
pub(crate) mod tool_calls;

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Something is wrong or at risk, but the agent still loads.
    Warning,
    /// The agent cannot load the conversation, or loses history.
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem found in one conversation.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub severity: Severity,
    /// Path relative to the conversation folder (`events/` for the folder).
    pub file: String,
    pub message: String,
    /// Whether `convo-doctor repair` fixes it without further consent. A
    /// check's first guess (its declared [`Repair`] is safe, narrowed per
    /// finding with [`Finding::fixable`]) guides `repair`'s own reports;
    /// `diagnose` replaces it with what repair's planner decides
    /// ([`crate::fix::fixable`]).
    pub fixable: bool,
    /// Cleared only by `repair --unsafe-fixes` (set by `diagnose` from the
    /// planner, like `fixable`; never both).
    pub fixable_unsafe: bool,
}

impl Finding {
    pub fn new(
        check: &'static str,
        severity: Severity,
        file: impl Into<String>,
        message: String,
    ) -> Self {
        Finding {
            check,
            severity,
            file: file.into(),
            message,
            fixable: find(check).is_some_and(|c| c.repair().applicability == Applicability::Safe),
            fixable_unsafe: false,
        }
    }

    pub fn fixable(mut self, yes: bool) -> Self {
        self.fixable = yes;
        self
    }
}

/// The `execution_status` values the rules name (the SDK's
/// `ConversationExecutionStatus`).
pub mod status {
    /// A run is in progress (or was, when it crashed).
    pub const RUNNING: &str = "running";
    /// What the agent-server's crash recovery sets a stale `running` to.
    pub const ERROR: &str = "error";
    /// The SDK's default.
    pub const IDLE: &str = "idle";
    /// An action waits for the user's confirmation.
    pub const WAITING_FOR_CONFIRMATION: &str = "waiting_for_confirmation";
    /// The user paused the run.
    pub const PAUSED: &str = "paused";
}

/// Everything a check may look at.
pub struct Ctx<'a> {
    pub conv: &'a Conversation,
    pub index: &'a Index,
    pub views: &'a Views,
    pub reader: Reader<'a>,
    pub version: Version,
    /// `--server-version` was given (not the default).
    pub version_given: bool,
    pub now: SystemTime,
    /// Every secret of this conversation (the output layer's redactor),
    /// applied early where a message clips a value (see [`Ctx::quote`]).
    pub redactor: Redactor,
    /// How to ask whether a backup folder holds a kept run that repaired a
    /// given folder (`interrupted-repair` prints an `undo` command only for
    /// such a folder): the engine's lookup, passed in by the command that
    /// builds the context; `None` vouches for no backup folder.
    pub runs: Option<crate::runs::Lookup>,
    /// Analyses several checks and repairs share, computed once per
    /// conversation on first use.
    pub(crate) shared: Shared,
}

/// The shared analyses (false roots, head lag, misparented errors): each
/// computed at most once per [`Ctx`], whoever asks first.
#[derive(Default)]
pub(crate) struct Shared {
    pub false_roots: std::sync::OnceLock<Vec<false_root::FalseRoot>>,
    pub head_lag: std::sync::OnceLock<Option<head_lag::Lag>>,
    pub misparented: std::sync::OnceLock<Vec<misparented_recovery_error::Misparented>>,
    pub crosses: std::sync::OnceLock<Vec<filename_id_mismatch::Cross>>,
    pub strays: std::sync::OnceLock<bad_event_filename::Strays>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        conv: &'a Conversation,
        index: &'a Index,
        views: &'a Views,
        version: Version,
    ) -> Self {
        let mut redactor = Redactor::default();
        for doc in [&conv.base_state, &conv.meta] {
            if let Some(v) = doc.value() {
                redactor.learn(v);
            }
        }
        Ctx {
            conv,
            index,
            views,
            reader: Reader::new(conv, index, version),
            version,
            version_given: false,
            now: SystemTime::now(),
            redactor,
            runs: None,
            shared: Shared::default(),
        }
    }

    /// An untrusted value (a kind, an id, a host name read from a file) as a
    /// message may quote it: secrets redacted *before* it is clipped to
    /// [`QUOTE_MAX`](crate::text::QUOTE_MAX) characters (so a clip can never
    /// leave part of a secret), escaping left to the renderer.
    pub fn quote(&self, s: &str) -> String {
        crate::text::clip(&self.redactor.redact(s), crate::text::QUOTE_MAX)
    }

    /// base_state.json says a run is in progress: `execution_status` is
    /// `running` (the SDK's `ConversationExecutionStatus.RUNNING`), which the
    /// agent-server's crash recovery and its listing act on.
    pub fn running(&self) -> bool {
        self.conv
            .base_state
            .value()
            .and_then(|b| b.get("execution_status"))
            .and_then(serde_json::Value::as_str)
            == Some(status::RUNNING)
    }

    /// base_state.json says an action may still wait to run: a run in
    /// progress, one paused, or an action waiting for confirmation (the
    /// states in which the SDK leaves a call at the branch's end open).
    pub fn may_have_pending_call(&self) -> bool {
        self.conv
            .base_state
            .value()
            .and_then(|b| b.get("execution_status"))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|s| {
                [
                    status::RUNNING,
                    status::WAITING_FOR_CONFIRMATION,
                    status::PAUSED,
                ]
                .contains(&s)
            })
    }

    /// The load error, when the SDK cannot load the conversation.
    pub fn load_error(&self) -> Option<&'a LoadError> {
        self.views.agent.as_ref().err()
    }

    /// How bad an event the SDK cannot read is: an error when it is the
    /// one that stops the load, a warning when only the UI skips it.
    pub fn read_failure(&self, idx: usize) -> (Severity, &'static str) {
        match self.load_error() {
            Some(LoadError::Read { idx: i, .. }) if *i == idx => {
                (Severity::Error, "the SDK refuses to load the conversation")
            }
            _ => (Severity::Warning, "the UI skips it"),
        }
    }

    /// One finding of `check` per event of the log the SDK cannot read
    /// for a reason `say` words (it returns `None` for the reasons of other
    /// checks): on the event's file, as bad as its failure is, the words
    /// followed by what the failure does ([`Ctx::read_failure`]).
    pub fn read_failures(
        &self,
        check: &'static str,
        out: &mut Vec<Finding>,
        say: impl Fn(usize, &crate::view::ReadError) -> Option<String>,
    ) {
        for i in 0..self.reader.len() {
            let Err(e) = self.reader.read(i) else {
                continue;
            };
            let Some(what) = say(i, &e) else { continue };
            let (sev, tail) = self.read_failure(i);
            out.push(Finding::new(
                check,
                sev,
                self.event_path(i),
                format!("{what}; {tail}"),
            ));
        }
    }

    /// `events/<name>` of the event at `idx` (in the contiguous log).
    pub fn event_path(&self, idx: usize) -> String {
        format!("events/{}", self.reader.file(idx).name)
    }
}

/// How far a check's repair can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// Nothing the agent saw is lost (re-links, renumbering, meta sync):
    /// `repair` applies it.
    Safe,
    /// The agent loses sight of something (a quarantined event, a guess):
    /// applied only with `--unsafe-fixes`; listed otherwise.
    Unsafe,
    /// No automatic repair; the declaration says why.
    Manual,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
            Applicability::Manual => "manual",
        }
    }
}

/// Plans a check's repair on the state of the current pass: reads the
/// context, proposes changes (each tagged safe or unsafe), or leaves a
/// finding with the reason. It never writes and never reads `--unsafe-fixes`.
pub type Planner = fn(&Ctx, &mut crate::edit::Proposals);

/// The repair a check proposes, declared once next to its id and text:
/// `repair` dispatches from it, and docs/repair.md's table and
/// `repair --help` are generated from it.
#[derive(Clone, Copy)]
pub struct Repair {
    pub applicability: Applicability,
    /// What the repair does (safe, unsafe), or why there is none (manual).
    pub what: &'static str,
    /// When it applies (the guards), for the docs; empty when manual.
    pub guards: &'static str,
    pub planner: Option<Planner>,
    /// The phase its changes run in (a change that moves the index or
    /// makes an unreadable event readable runs earlier: see
    /// [`crate::edit::Phase`]).
    pub phase: crate::edit::Phase,
}

impl Repair {
    /// The default: no automatic repair.
    pub const NONE: Repair = Repair::manual("no repair");

    pub const fn manual(why: &'static str) -> Repair {
        Repair {
            applicability: Applicability::Manual,
            what: why,
            guards: "",
            planner: None,
            phase: crate::edit::Phase::State,
        }
    }
}

/// A check. Implementations live one per file in this module.
pub trait Check: Sync {
    /// Stable kebab-case id; scripts depend on it.
    fn id(&self) -> &'static str;
    /// One line: what the check finds.
    fn summary(&self) -> &'static str;
    /// The long explanation `convo-doctor explain <id>` prints.
    fn explain(&self) -> &'static str;
    /// The repair this check proposes (default: none, manual).
    fn repair(&self) -> Repair {
        Repair::NONE
    }
    /// Whether the state this check finds blocks every repair of the
    /// conversation (a gate), and why: `repair` refuses the conversation
    /// while any check's gate holds (default: never). Asked whatever
    /// `--only`/`--skip` select.
    fn gate(&self, _ctx: &Ctx) -> Option<crate::edit::Refused> {
        None
    }
    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>);
    /// Checks across the app server's row, its event copy and the folder
    /// (`--db`, `--events-store`): run once per conversation id, with or
    /// without a folder. Folder checks leave it empty.
    fn run_related(&self, _rel: &crate::appserver::Related, _out: &mut Vec<Finding>) {}
}

/// Every check, in the order they run and are listed.
pub static REGISTRY: &[&dyn Check] = &[
    &changed_during_read::ChangedDuringRead,
    &interrupted_repair::InterruptedRepair,
    &empty_conversation::EmptyConversation,
    &unreadable_state::UnreadableState,
    &id_mismatch::IdMismatch,
    &false_root::FalseRootCheck,
    &unreadable_event::UnreadableEvent,
    &unknown_kind::UnknownKind,
    &unknown_field::UnknownField,
    &invalid_event::InvalidEvent,
    &invalid_state::InvalidState,
    &index_gap::IndexGap,
    &duplicate_index::DuplicateIndex,
    &duplicate_event_id::DuplicateEventId,
    &filename_id_mismatch::FilenameIdMismatch,
    &bad_event_filename::BadEventFilename,
    &dangling_parent::DanglingParent,
    &parent_cycle::ParentCycle,
    &out_of_order::OutOfOrder,
    &stale_leaf::StaleLeaf,
    &head_lag::HeadLag,
    &misparented_recovery_error::MisparentedRecoveryError,
    &legacy_tail_hazard::LegacyTailHazard,
    &stale_running::StaleRunning,
    &abandoned_branch::AbandonedBranch,
    &meta_divergence::MetaDivergence,
    &meta_duplicate::MetaDuplicate,
    &plaintext_secret::PlaintextSecret,
    &live_lease::LiveLease,
    &not_listed::NotListed,
    &shadowed::Shadowed,
    &secret_undecryptable::SecretUndecryptable,
    &invalid_row::InvalidRow,
    &v0_row::V0Row,
    &row_without_events::RowWithoutEvents,
    &events_without_row::EventsWithoutRow,
    &copy_missing_events::CopyMissingEvents,
    &copy_extra_events::CopyExtraEvents,
    &s3_listing_limit::S3ListingLimit,
    &user_prefix_split::UserPrefixSplit,
    &unmigrated_event_layout::UnmigratedEventLayout,
    &row_status_divergence::RowStatusDivergence,
    &row_title_divergence::RowTitleDivergence,
    // Claude Code sessions (src/claude/checks.rs; run on a session, not a folder)
    &crate::claude::checks::BrokenParent,
    &crate::claude::checks::InvalidLine,
    &crate::claude::checks::DuplicateUuid,
    &crate::claude::checks::UnpairedTool,
    // Codex rollouts (src/codex/checks.rs; run on a rollout, not a folder)
    &crate::codex::checks::MissingSessionMeta,
    &crate::codex::checks::InvalidLine,
    &crate::codex::checks::DuplicateLine,
    &crate::codex::checks::UnpairedCall,
    &crate::codex::checks::StateParity,
];

pub fn find(id: &str) -> Option<&'static dyn Check> {
    REGISTRY.iter().copied().find(|c| c.id() == id)
}

/// The gate that blocks repairing the conversation, if any: of every
/// check's ([`Check::gate`]), the first by [`crate::edit::Refusal`]'s order.
pub fn gate(ctx: &Ctx) -> Option<crate::edit::Refused> {
    REGISTRY
        .iter()
        .filter_map(|c| c.gate(ctx))
        .min_by_key(|r| r.kind)
}

/// Run the selected checks; findings sorted worst first, then by file.
pub fn run_all(ctx: &Ctx, selected: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let chosen: Vec<&dyn Check> = REGISTRY
        .iter()
        .copied()
        .filter(|c| selected(c.id()))
        .collect();
    let mut out = Vec::new();
    if ctx.index.len() >= PARALLEL_CHECKS_FROM && rayon::current_num_threads() > 1 {
        // a long log: the checks run side by side on the pool (`-j`), each
        // into its own list, gathered in the registry's order, so the
        // findings are the same, in the same order, as one after another
        use rayon::prelude::*;
        let each: Vec<Vec<Finding>> = chosen
            .par_iter()
            .map(|check| {
                let mut found = Vec::new();
                check.run(ctx, &mut found);
                found
            })
            .collect();
        out = each.into_iter().flatten().collect();
    } else {
        for check in chosen {
            check.run(ctx, &mut out);
        }
    }
    out.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| a.check.cmp(b.check))
    });
    out
}

/// From how many events a conversation's checks run in parallel (below
/// it, a store's conversations already keep the threads busy).
const PARALLEL_CHECKS_FROM: usize = 4096;

pub use describe::describe_read_error;

/// Propose moving every count marker (`events/.eventlog-len-N.marker`, SDK
/// 1.47+) into the backup: a repair that puts a file at an index a writer
/// with the log open does not know of must make that writer count the files
/// again before its next append (it skips the count while a marker names
/// its length), or it would write over that index. As safe as the safest
/// change of the running planner that moves the index: a marker is not
/// taken out by a `repair` that leaves that change to `--unsafe-fixes`
/// (nothing would need it, and the finding stays); none when the planner
/// moves nothing.
pub fn drop_count_markers(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::Safety;
    let check = p.check();
    let Some(safety) = p
        .changes
        .iter()
        .filter(|c| c.check == check && c.action.moves_the_index(&c.file))
        .map(|c| c.safety)
        .min_by_key(|s| *s == Safety::Unsafe)
    else {
        return;
    };
    for name in &ctx.conv.events.other {
        if crate::store::event::is_count_marker(name) {
            p.push(
                format!("events/{name}"),
                crate::edit::Action::Remove,
                safety,
                format!(
                    "move the count marker `{name}` into the backup (a writer that has the log open counts the files again before its next append)"
                ),
            );
        }
    }
}

/// `00042`: an index as the file names spell it.
pub fn ix(i: usize) -> String {
    format!("{i:05}")
}

/// "00003–00007" for a run, "00003" for one.
pub fn ix_range(a: usize, b: usize) -> String {
    if a == b {
        ix(a)
    } else {
        format!("{}–{}", ix(a), ix(b))
    }
}

/// Compress sorted indices into "00001–00004, 00009".
pub fn ranges(sorted: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(ix_range(start, end));
        i += 1;
    }
    if parts.len() > 6 {
        let more = parts.len() - 5;
        parts.truncate(5);
        parts.push(format!("and {more} more ranges"));
    }
    parts.join(", ")
}

/// "1 event" / "3 events".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_explained() {
        let mut seen = std::collections::HashSet::new();
        for c in REGISTRY {
            assert!(seen.insert(c.id()), "duplicate id {}", c.id());
            // lower case, digits (`s3-listing-limit`, `v0-row`) and dashes,
            // starting with a letter
            assert!(
                c.id()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && c.id().starts_with(|ch: char| ch.is_ascii_lowercase()),
                "{}",
                c.id()
            );
            assert!(
                !c.summary().is_empty() && c.explain().len() > 80,
                "{}",
                c.id()
            );
        }
        for required in [
            "false-root",
            "unreadable-event",
            "unknown-kind",
            "index-gap",
            "duplicate-index",
            "duplicate-event-id",
            "filename-id-mismatch",
            "bad-event-filename",
            "dangling-parent",
            "parent-cycle",
            "stale-leaf",
            "abandoned-branch",
            "meta-divergence",
            "meta-duplicate",
            "plaintext-secret",
            "live-lease",
        ] {
            assert!(find(required).is_some(), "missing {required}");
        }
    }

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(ranges(&[1, 2, 3, 7]), "00001–00003, 00007");
        assert_eq!(ranges(&[4]), "00004");
        assert_eq!(ranges(&[]), "");
    }
}
