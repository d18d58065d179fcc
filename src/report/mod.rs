//! The analysis of one conversation, ready for any renderer: counts of the two
//! views, the load verdict, findings, and (on request) the event listing.

mod verdict;

use serde::Serialize;
use serde_json::Value;

use crate::analysis::{tree, Analysis};
use crate::checks::{self, false_root, ix, Ctx, Finding};
use crate::secrets::Redactor;
use crate::store::conversation::Overlay;
use crate::store::{Conversation, ParentRef};
use crate::version::Version;
use crate::view::OrphanWhy;

#[derive(Debug, Serialize)]
pub struct EventCounts {
    /// Files in events/ whose names start `event-` and end `.json`.
    pub on_disk: usize,
    /// The SDK's log: the contiguous run of indices from 0.
    pub log_length: usize,
    /// Readable events of the log (what the UI lists).
    pub ui_view: usize,
    /// Length of the agent's active branch; `null` when the SDK cannot load.
    pub agent_view: Option<usize>,
    /// UI events the agent does not see (state-sync artifacts not counted).
    pub orphaned: usize,
}

#[derive(Debug, Serialize)]
pub struct LoadFailure {
    /// The Python exception the SDK raises.
    pub exception: &'static str,
    pub message: String,
}

/// One row of `diagnose --events`.
#[derive(Debug, Serialize)]
pub struct EventRow {
    pub index: u64,
    pub file: String,
    pub kind: Option<String>,
    pub source: Option<String>,
    /// The index of the event it hangs off: its `parent_id`'s, or for a
    /// pre-tree event without one, the previous file's (the SDK chains
    /// those); `null` when there is none (a root, a first event, a parent
    /// not in the log). Always an integer or null; `parent_link` says which.
    pub parent: Option<u64>,
    /// How it hangs: `event` (its `parent_id` names an event of the log),
    /// `root` (`parent_id` is `__root__`), `legacy` (no `parent_id`: chained
    /// to the previous file), `missing` (its `parent_id` is not in the log)
    /// or `none` (a first event without `parent_id`, an event beyond the
    /// index gap, or one that cannot be read).
    pub parent_link: &'static str,
    pub in_agent_view: bool,
    /// Why it is not in the agent view, or why it cannot be read.
    pub note: String,
}

#[derive(Debug, Serialize)]
pub struct ConversationReport {
    pub path: String,
    pub id: String,
    /// `id` dashed as the app server's database keeps it, when it is a UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_dashed: Option<String>,
    pub server_version: String,
    /// Whether agent-server `server_version` lists this folder in its
    /// conversation list; `null` when no server would catalog it (a nested
    /// sub-agent, an SDK-only store). `not-listed` says why not.
    pub listed: Option<bool>,
    pub events: EventCounts,
    pub load_error: Option<LoadFailure>,
    pub verdict: String,
    pub findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_list: Option<Vec<EventRow>>,
    /// Every secret read from this conversation: renderers pass all text through it.
    #[serde(skip)]
    pub redactor: Redactor,
    /// The event tree (`diagnose --tree`, `--format markdown`).
    #[serde(skip)]
    pub tree: Option<tree::Tree>,
    /// What could not be read for lack of permission or by an I/O error
    /// (`Conversation::access_errors`): the report describes a folder not
    /// wholly read, so `diagnose` and `repair` treat it as a scan error.
    #[serde(skip)]
    pub access_errors: Vec<String>,
    /// The app server's row and event copies of this conversation, when
    /// `--db` or `--events-store` was given (docs/appserver.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appserver: Option<appserver::Part>,
}

impl ConversationReport {
    /// A report for a conversation known only to the app server (a row, an
    /// event copy) with no folder among the PATHs: nothing to load, so no
    /// load error; the caller fills in counts, verdict and findings.
    pub fn record(path: String, id: String, server_version: String) -> Self {
        ConversationReport {
            path,
            id_dashed: crate::appserver::uuid_dashed(&id),
            id,
            server_version,
            listed: None,
            events: EventCounts {
                on_disk: 0,
                log_length: 0,
                ui_view: 0,
                agent_view: Some(0),
                orphaned: 0,
            },
            load_error: None,
            verdict: String::new(),
            findings: Vec::new(),
            event_list: None,
            redactor: Redactor::default(),
            tree: None,
            access_errors: Vec::new(),
            appserver: None,
        }
    }

    pub fn worst(&self) -> Option<checks::Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

/// What to analyse and how.
pub struct Options<'a> {
    pub version: Version,
    /// `--server-version` was given: version-specific repairs that an older
    /// server would reject (dropping meta.json's agent) are offered only then.
    pub version_given: bool,
    pub selected: &'a (dyn Fn(&str) -> bool + Sync),
    pub event_list: bool,
}

fn conversation_id(conv: &Conversation) -> String {
    let from = |v: Option<&Value>| {
        v.and_then(|d| d.get("id"))
            .and_then(Value::as_str)
            .map(crate::view::tree::norm_id)
    };
    from(conv.meta.value())
        .or_else(|| from(conv.base_state.value()))
        .unwrap_or_else(|| conv.folder.clone())
}

pub use crate::checks::describe::{describe_load_error, describe_read_error};

pub mod appserver;

/// Read, view, check: everything about one conversation.
pub fn analyze(dir: &std::path::Path, display: String, opts: &Options) -> ConversationReport {
    analyze_with(dir, display, opts, &Overlay::new())
}

/// [`analyze`] with some files replaced by planned contents.
pub fn analyze_with(
    dir: &std::path::Path,
    display: String,
    opts: &Options,
    overlay: &Overlay,
) -> ConversationReport {
    let a = Analysis::load(dir, opts.version, overlay);
    analyze_ctx(&a.ctx(opts.version_given), display, opts)
}

/// [`analyze`] plus the event tree (`diagnose --tree`, `--format markdown`).
pub fn analyze_tree(dir: &std::path::Path, display: String, opts: &Options) -> ConversationReport {
    let a = Analysis::load(dir, opts.version, &Overlay::new());
    let ctx = a.ctx(opts.version_given);
    let mut r = analyze_ctx(&ctx, display, opts);
    r.tree = Some(tree::build(&ctx));
    r
}

/// [`analyze`] with the context (and its shared analyses) already built
/// ([`Analysis::ctx`]), so a repair plan computes them once.
pub fn analyze_ctx(ctx: &Ctx, display: String, opts: &Options) -> ConversationReport {
    let (conv, index, views) = (ctx.conv, ctx.index, ctx.views);
    let mut findings = checks::run_all(ctx, opts.selected);
    // The events/ folder itself unreadable is `unreadable-event`'s finding:
    // like every other, shown only when that check is selected.
    if let Some(err) = conv
        .events
        .error
        .as_ref()
        .filter(|_| (opts.selected)(checks::unreadable_event::ID))
    {
        findings.insert(
            0,
            Finding::new(
                checks::unreadable_event::ID,
                checks::Severity::Error,
                "events/",
                err.clone(),
            ),
        );
    }
    // `repair` refuses a folder an interrupted run left half-made until that
    // run is undone: nothing in it is fixable by `repair` as it stands.
    if conv.journal.exists() {
        for f in &mut findings {
            f.fixable = false;
        }
    }
    let false_roots = false_root::find(ctx);
    let listed = checks::not_listed::verdict(ctx).listed;
    let redactor = ctx.redactor.clone();
    let events = EventCounts {
        on_disk: conv.events.on_disk,
        log_length: index.len(),
        ui_view: views.ui.len(),
        agent_view: views.agent_len(),
        orphaned: views.orphans.len(),
    };
    let load_error = views.agent.as_ref().err().map(|e| LoadFailure {
        exception: e.exception(),
        message: describe_load_error(e, ctx),
    });
    let verdict = verdict::verdict(ctx, &events, &load_error, false_roots);
    let event_list = opts.event_list.then(|| rows(ctx));
    let id = conversation_id(conv);
    ConversationReport {
        path: display,
        id_dashed: crate::appserver::uuid_dashed(&id),
        id,
        server_version: opts.version.to_string(),
        listed,
        events,
        load_error,
        verdict,
        findings,
        event_list,
        redactor,
        tree: None,
        access_errors: conv.access_errors.clone(),
        appserver: None,
    }
}

fn rows(ctx: &Ctx) -> Vec<EventRow> {
    let r = &ctx.reader;
    let mut out = Vec::new();
    let orphan_why: std::collections::HashMap<usize, OrphanWhy> =
        ctx.views.orphans.iter().copied().collect();
    for i in 0..r.len() {
        let f = r.file(i);
        let rec = r.record(i);
        let (parent, parent_link) = match rec.map(|x| &x.parent) {
            Some(ParentRef::Root) => (None, "root"),
            Some(ParentRef::Id(p)) => match r.index.id_to_idx.get_cid(p) {
                Some(&pi) => (Some(pi as u64), "event"),
                None => (None, "missing"),
            },
            Some(ParentRef::Absent) if i > 0 => (Some(i as u64 - 1), "legacy"),
            _ => (None, "none"),
        };
        let note = match r.read(i) {
            Err(e) => format!("unreadable: {}", describe_read_error(&e, ctx)),
            Ok(_) if ctx.views.in_agent[i] => String::new(),
            Ok(rec) if rec.is_state_update() => "state-sync artifact".into(),
            Ok(_) => match orphan_why.get(&i) {
                Some(OrphanWhy::BeforeRoot { root }) => format!("before the root at {}", ix(*root)),
                Some(OrphanWhy::OffBranch { at }) => format!("branch left at {}", ix(*at)),
                Some(OrphanWhy::CannotLoad) => "conversation cannot load".into(),
                _ => "detached".into(),
            },
        };
        out.push(EventRow {
            index: i as u64,
            file: f.name.to_string(),
            kind: rec.map(|x| ctx.quote(&x.kind)),
            source: rec.and_then(|x| x.source.as_deref()).map(|s| ctx.quote(s)),
            parent,
            parent_link,
            in_agent_view: ctx.views.in_agent[i],
            note,
        });
    }
    for &pos in &ctx.index.beyond_gap {
        let f = &ctx.conv.events.files[pos];
        let rec = f.record.as_ref().ok();
        out.push(EventRow {
            index: f.idx,
            file: f.name.to_string(),
            kind: rec.map(|x| ctx.quote(&x.kind)),
            source: rec.and_then(|x| x.source.as_deref()).map(|s| ctx.quote(s)),
            parent: None,
            parent_link: "none",
            in_agent_view: false,
            note: "beyond the index gap: invisible".into(),
        });
    }
    out
}
