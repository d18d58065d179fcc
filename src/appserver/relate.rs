//! Join the app server's rows and event copies with the agent-server folders
//! by conversation id, and hand each conversation's three sides to the
//! checks' `run_related`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::SystemTime;

use serde::Serialize;

use super::db::{self, DbSpec, Row, Rows};
use super::events_store::{norm_id, Backend, CopyEvents, CopyRef, EventStore, StoreSpec};
use crate::checks::{self, Finding};
use crate::report::{ConversationReport, EventCounts};
use crate::store::Conversation;

/// Kinds the agent-server's event service publishes to its subscribers (so
/// its webhook posts them and the copy keeps them) without ever writing them
/// to the conversation's `events/`: not an extra event of the copy.
/// (Seen with the real agent-server: fixtures/appserver/manifest.json
/// `webhook_only_kinds`.)
pub const WEBHOOK_ONLY_KINDS: &[&str] = &["ConversationStateUpdateEvent"];

/// At most this many copy-only events are read for their kind.
const KIND_READS: usize = 1000;

/// The app server's sources given to `diagnose` (`--db`, `--events-store`),
/// read once: every row, and every copy's place.
pub struct Sources {
    pub rows: Option<Rows>,
    pub store: Option<EventStore>,
    /// Where each conversation's copies are, by id: kept compact (one
    /// entry per copy of a bucket of 100,000 conversations).
    copies: HashMap<u128, Vec<Place>>,
    /// Things said about the sources (revision, what was passed over).
    pub notes: Vec<String>,
}

/// A copy's place beside its id: the user segment, or the old layout's folder.
#[derive(Debug)]
struct Place {
    user: Option<Box<str>>,
    legacy: Option<Box<str>>,
}

fn key(hex: &str) -> Option<u128> {
    u128::from_str_radix(hex, 16).ok()
}

/// One copy of a conversation's events, read.
#[derive(Debug)]
pub struct Copy {
    pub at: CopyRef,
    /// Where it is (a path or a URL, with a trailing slash).
    pub location: String,
    pub events: Result<CopyEvents, String>,
}

impl Copy {
    pub fn ids(&self) -> &[String] {
        self.events.as_ref().map_or(&[], |e| &e.ids)
    }
    pub fn keys(&self) -> usize {
        self.events.as_ref().map_or(0, |e| e.keys)
    }
}

/// Everything known of one conversation id: what the checks' `run_related` read.
pub struct Related<'a> {
    /// 32 hex digits.
    pub id: &'a str,
    pub folder: Option<&'a Conversation>,
    /// The rows, when `--db` was given.
    pub rows: Option<&'a Rows>,
    pub row: Option<&'a Row>,
    /// The store, when `--events-store` was given.
    pub store: Option<&'a EventStore>,
    /// Copies in the 1.2.0+ layout, one per user segment.
    pub copies: Vec<Copy>,
    /// Copies in the pre-1.2.0 layout `v1/events/<uuid>/`.
    pub legacy: Vec<Copy>,
    pub now: SystemTime,
}

/// One event file of the folder, as the copy would name it.
pub struct FolderEvent {
    pub id: String,
    pub idx: u64,
    pub mtime: Option<SystemTime>,
}

impl Related<'_> {
    pub fn backend(&self) -> Option<Backend> {
        self.store.map(EventStore::backend)
    }

    /// The folder's event files, by id (the name's id, as the copy names it).
    pub fn folder_events(&self) -> Vec<FolderEvent> {
        let Some(conv) = self.folder else {
            return Vec::new();
        };
        conv.events
            .files
            .iter()
            .map(|f| FolderEvent {
                id: norm_id(&f.name_id),
                idx: f.idx,
                mtime: f.mtime,
            })
            .collect()
    }

    /// A folder an agent-server catalogs (it has a meta.json) and that is
    /// not a sub-agent nested in another conversation's folder.
    pub fn agent_server_folder(&self) -> bool {
        self.folder.is_some_and(|c| {
            let nested = c
                .dir
                .parent()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n == "subagents");
            c.meta.exists() && !nested
        })
    }

    /// Every event id of every copy (both layouts).
    pub fn copy_ids(&self) -> HashSet<&str> {
        self.copies
            .iter()
            .chain(&self.legacy)
            .flat_map(|c| c.ids().iter().map(String::as_str))
            .collect()
    }

    /// `kind` of a copy's event (read from the copy), first copy that has it.
    pub fn copy_kind(&self, id: &str) -> Option<String> {
        let store = self.store?;
        self.copies
            .iter()
            .find(|c| c.ids().binary_search_by(|x| x.as_str().cmp(id)).is_ok())
            .and_then(|c| store.event_kind(&c.at, id))
    }

    /// Copy-only events that are real extras: not one of
    /// [`WEBHOOK_ONLY_KINDS`] (at most [`KIND_READS`] are read; the rest
    /// count as extras with an unknown kind).
    pub fn copy_extras(&self) -> Vec<(String, Option<String>)> {
        let Some(conv) = self.folder else {
            return Vec::new();
        };
        let on_disk: HashSet<String> = conv
            .events
            .files
            .iter()
            .map(|f| norm_id(&f.name_id))
            .collect();
        let mut only: BTreeSet<&str> = BTreeSet::new();
        for c in &self.copies {
            for id in c.ids() {
                if !on_disk.contains(id) {
                    only.insert(id);
                }
            }
        }
        let mut out = Vec::new();
        for (n, id) in only.into_iter().enumerate() {
            let kind = if n < KIND_READS {
                self.copy_kind(id)
            } else {
                None
            };
            if kind
                .as_deref()
                .is_some_and(|k| WEBHOOK_ONLY_KINDS.contains(&k))
            {
                continue;
            }
            out.push((id.to_string(), kind));
        }
        out
    }

    /// The folder's `base_state.json` `execution_status`.
    pub fn folder_status(&self) -> Option<&str> {
        self.folder?
            .base_state
            .value()?
            .get("execution_status")?
            .as_str()
    }

    /// The folder's `meta.json` `title`.
    pub fn folder_title(&self) -> Option<&str> {
        self.folder?.meta.value()?.get("title")?.as_str()
    }

    /// How a row is named in messages: its title and version.
    pub fn row_name(&self) -> String {
        match self.row {
            Some(r) => match &r.title {
                Some(t) => format!("`{}`", crate::text::clip(t, crate::text::QUOTE_MAX)),
                None => "(untitled)".into(),
            },
            None => String::new(),
        }
    }
}

/// The app server's side of a conversation in a report (`appserver` in JSON).
#[derive(Debug, Serialize)]
pub struct Part {
    /// The row of `conversation_metadata`, when `--db` was given and it has one.
    pub row: Option<RowPart>,
    /// The event copies found (each user segment, and the old layout).
    pub copies: Vec<CopyPart>,
}

#[derive(Debug, Serialize)]
pub struct RowPart {
    pub db: String,
    pub conversation_id: String,
    pub conversation_version: Option<String>,
    pub title: Option<String>,
    pub sandbox_id: Option<String>,
    pub execution_status: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CopyPart {
    pub location: String,
    /// The `<user_id>` segment (`null`: none).
    pub user: Option<String>,
    /// The pre-1.2.0 layout.
    pub legacy: bool,
    pub events: usize,
    pub keys: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Sources {
    /// Read the rows and list the copies. Errors name the source.
    pub fn open(db: Option<&DbSpec>, store: Option<&StoreSpec>) -> anyhow::Result<Sources> {
        let mut notes = Vec::new();
        let rows = match db {
            Some(spec) => {
                let rows = db::read(spec)?;
                notes.push(format!(
                    "app server database {}: {} row(s) of conversation_metadata{}",
                    rows.display,
                    rows.by_id.len() + rows.bad_ids.len(),
                    rows.revision
                        .as_deref()
                        .map(|r| format!(", alembic revision {r}"))
                        .unwrap_or_default()
                ));
                Some(rows)
            }
            None => None,
        };
        let mut copies: HashMap<u128, Vec<Place>> = HashMap::new();
        let store = match store {
            Some(spec) => {
                let store = EventStore::open(spec.clone())?;
                let listing = store.list()?;
                notes.push(format!(
                    "app server events store {} ({}): {} conversation copies",
                    spec.display(),
                    spec.backend().service(),
                    listing.copies.len()
                ));
                notes.extend(listing.notes);
                for c in listing.copies {
                    if let Some(k) = key(&c.hex) {
                        copies.entry(k).or_default().push(Place {
                            user: c.user.map(String::into_boxed_str),
                            legacy: c.legacy.map(String::into_boxed_str),
                        });
                    }
                }
                Some(store)
            }
            None => None,
        };
        Ok(Sources {
            rows,
            store,
            copies,
            notes,
        })
    }

    /// Ids with a row or a copy that no scanned folder carries, sorted; and
    /// the rows whose id is not a UUID (reported apart).
    pub fn record_ids(&self, folder_ids: &HashSet<String>) -> Vec<String> {
        let mut ids: BTreeSet<u128> = self.copies.keys().copied().collect();
        if let Some(rows) = &self.rows {
            ids.extend(rows.by_id.keys().filter_map(|k| key(k)));
        }
        ids.into_iter()
            .map(|k| format!("{k:032x}"))
            .filter(|id| !folder_ids.contains(id))
            .collect()
    }

    /// The three sides of `id`.
    pub fn relate<'a>(&'a self, id: &'a str, folder: Option<&'a Conversation>) -> Related<'a> {
        let row = self.rows.as_ref().and_then(|r| r.by_id.get(id));
        let mut copies = Vec::new();
        let mut legacy = Vec::new();
        if let Some(store) = &self.store {
            let places = key(id).and_then(|k| self.copies.get(&k));
            for p in places.into_iter().flatten() {
                let c = CopyRef {
                    hex: id.to_string(),
                    user: p.user.as_deref().map(str::to_string),
                    legacy: p.legacy.as_deref().map(str::to_string),
                };
                let read = Copy {
                    location: store.locate(&c),
                    events: store.events(&c).map_err(|e| format!("{e:#}")),
                    at: c,
                };
                if read.at.legacy.is_some() {
                    legacy.push(read);
                } else {
                    copies.push(read);
                }
            }
        }
        Related {
            id,
            folder,
            rows: self.rows.as_ref(),
            row,
            store: self.store.as_ref(),
            copies,
            legacy,
            now: SystemTime::now(),
        }
    }

    /// Run the selected app-server checks on `rel`.
    pub fn findings(rel: &Related, selected: &dyn Fn(&str) -> bool) -> Vec<Finding> {
        let mut out = Vec::new();
        for c in checks::REGISTRY {
            if selected(c.id()) {
                c.run_related(rel, &mut out);
            }
        }
        out
    }

    fn part(&self, rel: &Related) -> Part {
        let row = rel.row.map(|r| RowPart {
            db: self
                .rows
                .as_ref()
                .map(|x| x.display.clone())
                .unwrap_or_default(),
            conversation_id: r.conversation_id.clone(),
            conversation_version: r.conversation_version.clone(),
            title: r.title.clone(),
            sandbox_id: r.sandbox_id.clone(),
            execution_status: r.execution_status.clone(),
        });
        let copies = rel
            .copies
            .iter()
            .chain(&rel.legacy)
            .map(|c| CopyPart {
                location: c.location.clone(),
                user: c.at.user.clone(),
                legacy: c.at.legacy.is_some(),
                events: c.ids().len(),
                keys: c.keys(),
                error: c.events.as_ref().err().cloned(),
            })
            .collect();
        Part { row, copies }
    }

    /// Add the app server's findings about a scanned folder to its report.
    pub fn attach(
        &self,
        conv: &Conversation,
        report: &mut ConversationReport,
        selected: &dyn Fn(&str) -> bool,
    ) {
        let id = folder_id(conv, &report.id);
        let rel = self.relate(&id, Some(conv));
        let found = Self::findings(&rel, selected);
        report.appserver = Some(self.part(&rel));
        if !found.is_empty() {
            report.findings.extend(found);
            sort(&mut report.findings);
        }
    }

    /// A report for a conversation the app server knows (a row, a copy) and
    /// that no scanned folder carries.
    pub fn record_report(
        &self,
        id: &str,
        server_version: &str,
        selected: &dyn Fn(&str) -> bool,
    ) -> ConversationReport {
        let rel = self.relate(id, None);
        let mut findings = Self::findings(&rel, selected);
        sort(&mut findings);
        let path = rel
            .copies
            .first()
            .or(rel.legacy.first())
            .map(|c| c.location.clone())
            .or_else(|| {
                let rows = self.rows.as_ref()?;
                let row = rel.row?;
                Some(format!("{}#{}", rows.display, row.conversation_id))
            })
            .unwrap_or_else(|| id.to_string());
        let copy_events: usize = rel.copies.iter().map(|c| c.ids().len()).sum();
        let keys: usize = rel.copies.iter().chain(&rel.legacy).map(Copy::keys).sum();
        let verdict = record_verdict(&rel, copy_events);
        let mut r = ConversationReport::record(path, id.to_string(), server_version.to_string());
        r.events = EventCounts {
            on_disk: keys,
            log_length: 0,
            ui_view: copy_events,
            agent_view: Some(0),
            orphaned: 0,
        };
        r.verdict = verdict;
        r.findings = findings;
        r.appserver = Some(self.part(&rel));
        r
    }

    /// Reports for rows whose `conversation_id` is not a UUID.
    pub fn bad_id_reports(
        &self,
        server_version: &str,
        selected: &dyn Fn(&str) -> bool,
    ) -> Vec<ConversationReport> {
        let Some(rows) = &self.rows else {
            return Vec::new();
        };
        rows.bad_ids
            .iter()
            .map(|row| {
                let rel = Related {
                    id: "",
                    folder: None,
                    rows: Some(rows),
                    row: Some(row),
                    store: None,
                    copies: Vec::new(),
                    legacy: Vec::new(),
                    now: SystemTime::now(),
                };
                let mut r = ConversationReport::record(
                    format!("{}#{}", rows.display, row.conversation_id),
                    row.conversation_id.clone(),
                    server_version.to_string(),
                );
                r.findings = Self::findings(&rel, selected);
                r.verdict = "app server row only: its id is not a UUID".into();
                r.appserver = Some(self.part(&rel));
                r
            })
            .collect()
    }
}

/// The id a folder is related by: its name when that is a conversation id
/// (the agent-server reads and writes `<conversations>/<id hex>`), else the
/// id its files carry.
pub fn folder_id(conv: &Conversation, report_id: &str) -> String {
    super::uuid_hex(&conv.folder)
        .or_else(|| super::uuid_hex(report_id))
        .unwrap_or_else(|| conv.folder.clone())
}

fn sort(f: &mut [Finding]) {
    f.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| a.check.cmp(b.check))
    });
}

fn record_verdict(rel: &Related, copy_events: usize) -> String {
    let mut parts = Vec::new();
    match rel.row {
        Some(r) => parts.push(format!(
            "app server row {} ({}{})",
            rel.row_name(),
            r.conversation_version.as_deref().unwrap_or("no version"),
            r.execution_status
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default()
        )),
        None if rel.rows.is_some() => parts.push("no app server row".into()),
        None => {}
    }
    if rel.store.is_some() {
        let legacy: usize = rel.legacy.iter().map(|c| c.ids().len()).sum();
        parts.push(match (copy_events, legacy) {
            (0, 0) => "no event copy".into(),
            (n, 0) => format!("{} in the copy", checks::plural(n, "event", "events")),
            (n, l) => format!(
                "{} in the copy, {l} in the old v1/events layout",
                checks::plural(n, "event", "events")
            ),
        });
    }
    parts.push("no agent-server folder among the PATHs".into());
    parts.join("; ")
}
