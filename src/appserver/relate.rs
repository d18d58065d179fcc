//! Join the app server's rows and event copies with the agent-server folders
//! by conversation id: each conversation's three sides, [`Related`], which the
//! checks' `run_related` read (`crate::report::appserver` runs them).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::SystemTime;

use super::db::{self, DbSpec, Row, Rows};
use super::events_store::{norm_id, Backend, CopyEvents, CopyRef, EventStore, StoreSpec};
use crate::store::Conversation;

/// Kinds the agent-server's event service publishes to its subscribers (so
/// its webhook posts them and the copy keeps them) without ever writing them
/// to the conversation's `events/`: not an extra event of the copy.
/// (Seen with the real agent-server: fixtures/appserver/manifest.json
/// `webhook_only_kinds`.)
pub const WEBHOOK_ONLY_KINDS: &[&str] = &[crate::kinds::STATE_UPDATE];

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
                id: norm_id(f.name_id()),
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
            .map(|f| norm_id(f.name_id()))
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

impl Sources {
    /// Read the rows and list the copies. Errors name the source.
    pub fn open(
        db: Option<&DbSpec>,
        store: Option<&StoreSpec>,
        limits: &db::Limits,
    ) -> anyhow::Result<Sources> {
        let mut notes = Vec::new();
        let rows = match db {
            Some(spec) => {
                if let DbSpec::Postgres(pg) = spec {
                    notes.extend(pg.notes.iter().cloned());
                }
                let rows = db::read(spec, limits)?;
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

    /// A side that holds nothing while another holds conversations: an
    /// events store with no copy while the database lists conversations or
    /// folders exist, a table with no row while folders or copies exist.
    /// Never the truth to compare against (a mount that failed, the wrong
    /// bucket, prefix or database): one error naming it, instead of a
    /// finding on every conversation.
    pub fn empty_side(&self, folders: usize) -> Option<String> {
        let rows = self.rows.as_ref().map(|r| r.by_id.len() + r.bad_ids.len());
        let folders_said = match folders {
            0 => None,
            n => Some(crate::checks::plural(
                n,
                "conversation folder",
                "conversation folders",
            )),
        };
        if let Some(store) = self.store.as_ref().filter(|_| self.copies.is_empty()) {
            let others = [
                rows.filter(|&n| n > 0).map(|n| {
                    format!(
                        "the database lists {}",
                        crate::checks::plural(n, "conversation", "conversations")
                    )
                }),
                folders_said.clone().map(|f| format!("{f} were found")),
            ];
            let others: Vec<String> = others.into_iter().flatten().collect();
            if !others.is_empty() {
                let why = match store.backend() {
                    super::events_store::Backend::Fs => "a mount that failed, or not the app server's persistence directory (FILE_STORE_PATH, which holds v1_conversations/)?",
                    _ => "the wrong bucket or prefix (the app server's FILE_STORE_PATH; the prefix defaults to `users`)?",
                };
                return Some(format!(
                    "the events store {} holds no conversation's events, while {}: {why} Nothing was compared",
                    store.spec.display(),
                    others.join(" and ")
                ));
            }
        }
        let copies = (!self.copies.is_empty()).then(|| {
            crate::checks::plural(
                self.copies.len(),
                "conversation copy",
                "conversation copies",
            ) + " in the events store"
        });
        if let (Some(0), Some(db)) = (rows, &self.rows) {
            let others: Vec<String> = [folders_said, copies].into_iter().flatten().collect();
            if !others.is_empty() {
                return Some(format!(
                    "the app server database {} has no row in conversation_metadata, while there are {}: the wrong database (the app server's DB_NAME, or its persistence directory's openhands.db)? Nothing was compared",
                    db.display,
                    others.join(" and ")
                ));
            }
        }
        None
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
}

/// The id a folder is related by: its name when that is a conversation id
/// (the agent-server reads and writes `<conversations>/<id hex>`), else the
/// id its files carry.
pub fn folder_id(conv: &Conversation, report_id: &str) -> String {
    super::uuid_hex(&conv.folder)
        .or_else(|| super::uuid_hex(report_id))
        .unwrap_or_else(|| conv.folder.clone())
}
