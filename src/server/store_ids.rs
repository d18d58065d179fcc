//! The store-wide pre-pass: which folder of a conversations directory carries
//! which id in its meta.json, in the order `Path.iterdir()` lists them (the
//! order decides which of two records wins), read once per directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::Value;

use crate::validate::scalar::{self, Tz};

/// One entry of the conversations directory that has a meta.json.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    /// meta.json `id`, canonical hex; `None` when it cannot be read as a UUID.
    pub id: Option<String>,
    /// meta.json `created_at` as pydantic makes it: `Some(true)` a naive
    /// datetime (no timezone), `Some(false)` an aware one (or absent: the
    /// default is `utc_now()`), `None` unparseable.
    pub created_naive: Option<bool>,
}

/// Every folder of a conversations directory that holds a meta.json, with
/// only its `id` and `created_at`, in directory-listing order.
#[derive(Debug, Default)]
pub struct StoreIds {
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
}

impl StoreIds {
    /// Read `dir`: `iterdir()` order, `meta_file.exists()` (links followed,
    /// as Python does), and only meta.json's `id` and `created_at`.
    pub fn read(dir: &Path) -> StoreIds {
        #[derive(serde::Deserialize)]
        struct IdOnly {
            id: Option<Value>,
            created_at: Option<Value>,
        }
        let mut entries = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let meta = e.path().join("meta.json");
                if !std::fs::metadata(&meta).is_ok_and(|m| m.is_file()) {
                    if std::fs::metadata(&meta).is_ok() {
                        entries.push(Entry {
                            name,
                            id: None,
                            created_naive: None,
                        });
                    }
                    continue;
                }
                let doc = crate::store::fsread::read_regular(&meta)
                    .ok()
                    .and_then(|(b, _)| serde_json::from_slice::<IdOnly>(&b).ok());
                let created_naive = match doc.as_ref().map(|m| &m.created_at) {
                    None => None,
                    Some(None) => Some(false),
                    Some(Some(v)) => scalar::serde::datetime(v).ok().map(|tz| tz == Tz::Naive),
                };
                let id = doc
                    .and_then(|m| m.id)
                    .and_then(|v| scalar::serde::uuid(&v).ok());
                entries.push(Entry {
                    name,
                    id,
                    created_naive,
                });
            }
        }
        StoreIds {
            dir: dir.to_path_buf(),
            entries,
        }
    }

    /// Other folders whose meta.json carries `id`, in listing order.
    pub fn others_with(&self, id: &str, not: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.name != not && e.id.as_deref() == Some(id))
            .collect()
    }

    /// Another folder's `file`, parsed: `Some(None)` when it does not exist,
    /// `None` when it cannot be read or parsed.
    pub fn read_json(&self, folder: &str, file: &str) -> Option<Option<Value>> {
        match std::fs::read(self.dir.join(folder).join(file)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
            Err(_) => None,
            Ok(b) => serde_json::from_slice(&b).ok().map(Some),
        }
    }

    /// Every folder (this one included) whose meta.json carries `id`.
    pub fn all_with(&self, id: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.id.as_deref() == Some(id))
            .collect()
    }
}

type Cache = Mutex<HashMap<PathBuf, (Option<SystemTime>, Arc<StoreIds>)>>;

/// The pre-pass of `dir`, read once per process (and again when the
/// directory's own mtime changes, i.e. a folder was added, removed or renamed).
pub fn store_ids(dir: &Path) -> Arc<StoreIds> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let mtime = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, ids)) = map.get(dir) {
        if *t == mtime && mtime.is_some() {
            return ids.clone();
        }
    }
    let ids = Arc::new(StoreIds::read(dir));
    map.insert(dir.to_path_buf(), (mtime, ids.clone()));
    ids
}
