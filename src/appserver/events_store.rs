//! The app server's copy of each conversation's events, pushed by the
//! agent-server's webhook (`POST /webhooks/events/{id}` → `save_event`): one
//! object per event, `<prefix>/[<user_id>/]v1_conversations/<conversation
//! hex>/<event id hex>.json`, no index (openhands-ai 1.2.0+;
//! `EventServiceBase.get_conversation_path`). The prefix is the persistence
//! directory for `FilesystemEventService`, `users` in a bucket for
//! `AwsEventService` (1.6.0+) and `GoogleCloudEventService` (1.2.0+).
//! Before 1.2.0 the filesystem copy was `<persistence_dir>/v1/events/<dashed
//! uuid>/<YYYYMMDDHHMMSS>_<Kind>_<event hex>` and nothing migrated it.
//!
//! Read only. Object stores are listed page by page (`object_store` follows
//! the continuation tokens), one conversation at a time.
//!
//! Long because: the three backends of the event copy (a folder, S3, GCS) share one listing and reading walk and its limits; about 40 lines are tests.

use std::sync::Arc;

use anyhow::{bail, Context};
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt};

use super::is_hex32;
use super::odd_keys::{Connector, OddKeys};
use crate::store::fsread::DirFd;

pub use super::store_spec::{Backend, StoreSpec, BUCKET_PREFIX, V1_DIR};

/// How many keys `AwsEventService._search_paths` sees: one
/// `list_objects_v2` call, no continuation token.
pub const S3_PAGE: usize = 1000;

/// One conversation's copy under one user segment (or in the old layout).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CopyRef {
    /// 32-hex conversation id.
    pub hex: String,
    /// The `<user_id>` segment, `None` for `<prefix>/v1_conversations/`.
    pub user: Option<String>,
    /// The pre-1.2.0 layout `v1/events/<dashed uuid>/`: the folder name.
    pub legacy: Option<String>,
}

/// What a copy holds, from its listing.
#[derive(Debug, Default, Clone)]
pub struct CopyEvents {
    /// Event ids (hex, lower case, no dashes), sorted.
    pub ids: Vec<String>,
    /// Every key under the conversation's prefix (what a listing returns).
    pub keys: usize,
    /// Names that are not `<event id>.json` (or, in the old layout,
    /// `<ts>_<Kind>_<hex>`).
    pub other: Vec<String>,
}

/// Every copy the store holds, and what was passed over.
#[derive(Debug, Default)]
pub struct Listing {
    /// Sorted by id, then user segment.
    pub copies: Vec<CopyRef>,
    pub notes: Vec<String>,
}

enum Inner {
    /// The persistence directory, opened once and held: everything below it
    /// is reached from this descriptor one component at a time, never
    /// through a link (`crate::store::fsread::DirFd`), as conversation
    /// folders are.
    Fs(DirFd),
    Object {
        rt: tokio::runtime::Runtime,
        store: Arc<dyn ObjectStore>,
        /// What the client's listings passed over.
        odd: OddKeys,
    },
}

/// An opened `--events-store`.
pub struct EventStore {
    pub spec: StoreSpec,
    inner: Inner,
}

impl EventStore {
    /// Open it (object stores: credentials from the standard chains, see
    /// docs/appserver.md). Errors name the store.
    pub fn open(spec: StoreSpec) -> anyhow::Result<EventStore> {
        let inner = match &spec {
            StoreSpec::Fs(p) => {
                let md = std::fs::metadata(p)
                    .with_context(|| format!("cannot read `{}`", p.display()))?;
                if !md.is_dir() {
                    bail!("`{}` is not a directory", p.display());
                }
                // the folder the operator named (a link there is theirs)
                Inner::Fs(DirFd::open(p).with_context(|| format!("cannot read `{}`", p.display()))?)
            }
            StoreSpec::S3 { bucket, .. } => {
                let odd = OddKeys::default();
                Inner::Object {
                    rt: runtime()?,
                    store: Arc::new(s3(bucket, &odd)?),
                    odd,
                }
            }
            StoreSpec::Gcs { bucket, .. } => {
                let odd = OddKeys::default();
                Inner::Object {
                    rt: runtime()?,
                    store: Arc::new(gcs(bucket, &odd)?),
                    odd,
                }
            }
        };
        Ok(EventStore { spec, inner })
    }

    pub fn backend(&self) -> Backend {
        self.spec.backend()
    }

    fn prefix(&self) -> String {
        match &self.spec {
            StoreSpec::Fs(_) => String::new(),
            StoreSpec::S3 { prefix, .. } | StoreSpec::Gcs { prefix, .. } => prefix.clone(),
        }
    }

    /// The key (or path below the persistence directory) of a copy, with a
    /// trailing slash.
    fn copy_key(&self, c: &CopyRef) -> String {
        let mut parts: Vec<&str> = Vec::new();
        let prefix = self.prefix();
        if !prefix.is_empty() {
            parts.push(&prefix);
        }
        match &c.legacy {
            Some(dir) => {
                parts.extend(["v1", "events", dir.as_str()]);
            }
            None => {
                if let Some(u) = &c.user {
                    parts.push(u);
                }
                parts.extend([V1_DIR, c.hex.as_str()]);
            }
        }
        parts.join("/")
    }

    /// Where a copy is, as reports name it.
    pub fn locate(&self, c: &CopyRef) -> String {
        match &self.spec {
            StoreSpec::Fs(p) => format!("{}/", p.join(self.copy_key(c)).display()),
            StoreSpec::S3 { bucket, .. } => format!("s3://{bucket}/{}/", self.copy_key(c)),
            StoreSpec::Gcs { bucket, .. } => format!("gs://{bucket}/{}/", self.copy_key(c)),
        }
    }

    /// Child "directories" of `key` (common prefixes of a `/`-delimited
    /// listing, every page), by name.
    fn dirs(&self, key: &str) -> anyhow::Result<Vec<String>> {
        match &self.inner {
            Inner::Fs(root) => {
                let shown = root.path().join(key);
                let entries = match root.list(key) {
                    Ok(v) => v,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => {
                        return Err(e).with_context(|| format!("cannot list `{}`", shown.display()))
                    }
                };
                let mut out = Vec::new();
                for (name, ft) in entries {
                    // never through a link: folders only, as the listing
                    // (or `lstat`) says
                    let is_dir = match ft {
                        Some(ft) => ft == rustix::fs::FileType::Directory,
                        None => {
                            let rel = if key.is_empty() {
                                name.clone()
                            } else {
                                format!("{key}/{name}")
                            };
                            root.lstat(&rel).is_ok_and(|m| m.is_dir())
                        }
                    };
                    if is_dir {
                        out.push(name);
                    }
                }
                out.sort();
                Ok(out)
            }
            Inner::Object { rt, store, .. } => {
                let prefix = (!key.is_empty()).then(|| Key::from_iter(key.split('/')));
                let res = rt
                    .block_on(store.list_with_delimiter(prefix.as_ref()))
                    .map_err(|e| self.failed(e, "cannot list", &self.show_key(key)))?;
                let mut out: Vec<String> = res
                    .common_prefixes
                    .iter()
                    .filter_map(|p| p.filename().map(str::to_string))
                    .collect();
                out.sort();
                Ok(out)
            }
        }
    }

    /// For the filesystem copy: whether `key` is a folder (false: there is
    /// nothing there), or the note saying it was passed over (a link, which
    /// is never followed, or anything else that is not a folder). Object
    /// stores have no links: always true.
    fn fs_folder(&self, key: &str) -> Result<bool, String> {
        let Inner::Fs(root) = &self.inner else {
            return Ok(true);
        };
        match root.lstat(key) {
            Ok(m) if m.is_dir() => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Ok(m) => Err(format!(
                "`{}` is a {}, never followed: passed over",
                root.path().join(key).display(),
                m.kind_name().unwrap_or("file, not a folder")
            )),
            Err(e) => Err(format!(
                "`{}` was passed over: {}",
                root.path().join(key).display(),
                crate::store::fsread::os_words(&e)
            )),
        }
    }

    fn show_key(&self, key: &str) -> String {
        match &self.spec {
            StoreSpec::Fs(p) => p.join(key).display().to_string(),
            StoreSpec::S3 { bucket, .. } => format!("s3://{bucket}/{key}"),
            StoreSpec::Gcs { bucket, .. } => format!("gs://{bucket}/{key}"),
        }
    }

    /// Every copy: `<prefix>/v1_conversations/<hex>/`,
    /// `<prefix>/<user>/v1_conversations/<hex>/` and the old
    /// `<prefix>/v1/events/<uuid>/`.
    pub fn list(&self) -> anyhow::Result<Listing> {
        let prefix = self.prefix();
        let join = |a: &str, b: &str| {
            if a.is_empty() {
                b.to_string()
            } else {
                format!("{a}/{b}")
            }
        };
        let mut out = Listing::default();
        let top = self.dirs(&prefix)?;
        let mut not_ids = 0usize;
        let mut add_v1 = |out: &mut Listing, user: Option<&str>, names: Vec<String>| {
            for hex in names {
                if is_hex32(&hex) {
                    out.copies.push(CopyRef {
                        hex: hex.to_ascii_lowercase(),
                        user: user.map(str::to_string),
                        legacy: None,
                    });
                } else {
                    not_ids += 1;
                }
            }
        };
        // The user segments: every other top-level folder holding v1_conversations/.
        let users: Vec<&String> = top.iter().filter(|d| *d != V1_DIR && *d != "v1").collect();
        let user_lists: Vec<(String, Vec<String>)> = match &self.inner {
            Inner::Fs(_) => {
                let mut lists = Vec::new();
                for u in &users {
                    let k = join(&join(&prefix, u), V1_DIR);
                    match self.fs_folder(&k) {
                        Ok(true) => lists.push(((*u).clone(), self.dirs(&k)?)),
                        Ok(false) => {}
                        Err(note) => out.notes.push(note),
                    }
                }
                lists
            }
            Inner::Object { rt, store, .. } => {
                // many users: list their folders 16 at a time
                let jobs = users.iter().map(|u| {
                    let k = join(&join(&prefix, u), V1_DIR);
                    let store = store.clone();
                    let u = (*u).clone();
                    async move {
                        let p = Key::from_iter(k.split('/'));
                        let r = store.list_with_delimiter(Some(&p)).await;
                        (u, k, r)
                    }
                });
                let done: Vec<_> = rt.block_on(
                    futures_util::stream::iter(jobs)
                        .buffer_unordered(16)
                        .collect::<Vec<_>>(),
                );
                let mut lists = Vec::new();
                for (u, k, r) in done {
                    let r = r.map_err(|e| self.failed(e, "cannot list", &self.show_key(&k)))?;
                    let names = r
                        .common_prefixes
                        .iter()
                        .filter_map(|p| p.filename().map(str::to_string))
                        .collect();
                    lists.push((u, names));
                }
                lists
            }
        };
        if top.iter().any(|d| d == V1_DIR) {
            let names = self.dirs(&join(&prefix, V1_DIR))?;
            add_v1(&mut out, None, names);
        }
        for (u, names) in user_lists {
            add_v1(&mut out, Some(&u), names);
        }
        let legacy = join(&join(&prefix, "v1"), "events");
        let legacy_dirs = match top.iter().any(|d| d == "v1") {
            false => Vec::new(),
            true => match self.fs_folder(&legacy) {
                Ok(_) => self.dirs(&legacy)?,
                Err(note) => {
                    out.notes.push(note);
                    Vec::new()
                }
            },
        };
        {
            for dir in legacy_dirs {
                match super::uuid_hex(&dir) {
                    Some(hex) => out.copies.push(CopyRef {
                        hex,
                        user: None,
                        legacy: Some(dir),
                    }),
                    None => not_ids += 1,
                }
            }
        }
        if not_ids > 0 {
            out.notes.push(format!(
                "{not_ids} folder(s) of the events store `{}` are not named like a conversation id and were passed over",
                self.spec.display()
            ));
        }
        out.copies.sort();
        Ok(out)
    }

    /// An object store's error, said once: what was done, where, and why
    /// (`store_errors`); no chain of causes follows it.
    fn failed(&self, e: object_store::Error, what: &str, at: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{what} `{at}`: {}",
            super::store_errors::cause(&e, &self.spec)
        )
    }

    /// The keys every listing so far passed over because the object store
    /// client cannot name them (`odd_keys`), one scan error each, worded;
    /// each is told once.
    pub fn odd_keys(&self) -> Vec<String> {
        let Inner::Object { odd, .. } = &self.inner else {
            return Vec::new();
        };
        let mut keys = odd.take_under("");
        keys.sort();
        keys.dedup();
        keys.iter()
            .map(|k| {
                format!(
                    "the events store {}: object key `{}` cannot be read ({}): passed over",
                    self.spec.display(),
                    crate::text::sanitize(&crate::text::clip(k, crate::text::QUOTE_MAX)),
                    super::odd_keys::why(k)
                )
            })
            .collect()
    }

    /// What one copy holds (every page of its listing).
    pub fn events(&self, c: &CopyRef) -> anyhow::Result<CopyEvents> {
        let key = self.copy_key(c);
        let names: Vec<String> = match &self.inner {
            Inner::Fs(root) => root
                .list(&key)
                .with_context(|| format!("cannot list `{}`", root.path().join(&key).display()))?
                .into_iter()
                .map(|(name, _)| name)
                .collect(),
            Inner::Object { rt, store, .. } => {
                let p = Key::from_iter(key.split('/'));
                let metas: Vec<object_store::ObjectMeta> = rt
                    .block_on(store.list(Some(&p)).try_collect())
                    .map_err(|e| self.failed(e, "cannot list", &self.locate(c)))?;
                metas
                    .iter()
                    .filter_map(|m| m.location.filename().map(str::to_string))
                    .collect()
            }
        };
        let mut out = CopyEvents {
            keys: names.len(),
            ..CopyEvents::default()
        };
        for n in names {
            let id = match &c.legacy {
                None => n.strip_suffix(".json").map(norm_id),
                Some(_) => n.rsplit_once('_').map(|(_, hex)| norm_id(hex)),
            };
            match id {
                Some(id) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    out.ids.push(id)
                }
                _ => out.other.push(n),
            }
        }
        out.ids.sort();
        out.other.sort();
        Ok(out)
    }

    /// The `kind` of one event of a copy (read to tell an event the
    /// agent-server publishes without persisting it from a real extra).
    pub fn event_kind(&self, c: &CopyRef, id: &str) -> Option<String> {
        let key = format!("{}/{id}.json", self.copy_key(c));
        let bytes: Vec<u8> = match &self.inner {
            Inner::Fs(root) => {
                // opened without following a link, never blocking on a FIFO,
                // checked on the descriptor and read within the limit
                let (bytes, _) = root.read_regular(&key, false).ok()?;
                if bytes.len() > MAX_EVENT {
                    return None;
                }
                bytes
            }
            Inner::Object { rt, store, .. } => {
                let p = Key::from_iter(key.split('/'));
                // The size first, and only that many bytes asked for: an
                // object of any size the webhook's poster chose is never
                // downloaded whole (a replacement between the two calls is
                // still read no further than the range).
                let b = rt
                    .block_on(async {
                        let meta = store.head(&p).await?;
                        if meta.size == 0 || meta.size > MAX_EVENT as u64 {
                            return Ok::<_, object_store::Error>(None);
                        }
                        let opts = object_store::GetOptions {
                            range: Some(object_store::GetRange::Bounded(0..meta.size)),
                            ..Default::default()
                        };
                        store.get_opts(&p, opts).await?.bytes().await.map(Some)
                    })
                    .ok()??;
                if b.len() > MAX_EVENT {
                    return None;
                }
                b.to_vec()
            }
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        v.get("kind")?.as_str().map(str::to_string)
    }
}

/// Events larger than this are not read for their kind.
const MAX_EVENT: usize = 64 << 20;

/// An event id as the copy names it: dashes removed, lower case.
pub fn norm_id(s: &str) -> String {
    s.chars()
        .filter(|&c| c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the object store client")
}

/// S3 through the standard chain: `AWS_*` variables (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` /
/// `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`, web identity, ECS task role),
/// else the instance metadata service; the app server's own
/// `AWS_S3_ENDPOINT` / `AWS_S3_SECURE` are honoured as its injector does.
fn s3(bucket: &str, odd: &OddKeys) -> anyhow::Result<object_store::aws::AmazonS3> {
    let mut b = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_http_connector(Connector(odd.clone()));
    let endpoint = std::env::var("AWS_ENDPOINT_URL_S3")
        .or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
        .or_else(|_| std::env::var("AWS_ENDPOINT"))
        .ok()
        .or_else(app_server_s3_endpoint);
    if let Some(e) = endpoint {
        b = b.with_allow_http(e.starts_with("http://")).with_endpoint(e);
    }
    if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
        b = b.with_region("us-east-1");
    }
    b.build()
        .map_err(|e| anyhow::anyhow!(super::without_password(&e.to_string())))
        .with_context(|| format!("cannot open s3://{bucket}"))
}

/// `_get_default_aws_endpoint_url` of the app server: `AWS_S3_ENDPOINT`,
/// https unless `AWS_S3_SECURE` is `false`.
fn app_server_s3_endpoint() -> Option<String> {
    let e = std::env::var("AWS_S3_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())?;
    let secure = std::env::var("AWS_S3_SECURE").map_or(true, |s| s.to_lowercase() == "true");
    let bare = e
        .strip_prefix("http://")
        .or_else(|| e.strip_prefix("https://"))
        .unwrap_or(&e);
    Some(if secure {
        format!("https://{bare}")
    } else {
        format!("http://{bare}")
    })
}

/// GCS through the standard chain (`GOOGLE_APPLICATION_CREDENTIALS`,
/// `GOOGLE_SERVICE_ACCOUNT*`, else the metadata server); with
/// `STORAGE_EMULATOR_HOST` set (as google-cloud-storage, which the app
/// server uses, honours it), the emulator there, without OAuth.
fn gcs(bucket: &str, odd: &OddKeys) -> anyhow::Result<object_store::gcp::GoogleCloudStorage> {
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_http_connector(Connector(odd.clone()));
    if let Ok(host) = std::env::var("STORAGE_EMULATOR_HOST") {
        let base = if host.contains("://") {
            host
        } else {
            format!("http://{host}")
        };
        let key = serde_json::json!({
            "private_key": "",
            "private_key_id": "",
            "client_email": "",
            "gcs_base_url": base.trim_end_matches('/'),
            "disable_oauth": true,
        });
        b = b
            .with_service_account_key(key.to_string())
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true));
    }
    b.build()
        .map_err(|e| anyhow::anyhow!(super::without_password(&e.to_string())))
        .with_context(|| format!("cannot open gs://{bucket}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            StoreSpec::parse("s3://b"),
            Ok(StoreSpec::S3 {
                bucket: "b".into(),
                prefix: "users".into()
            })
        );
        assert_eq!(
            StoreSpec::parse("gs://b/x/y/"),
            Ok(StoreSpec::Gcs {
                bucket: "b".into(),
                prefix: "x/y".into()
            })
        );
        assert_eq!(
            StoreSpec::parse("/p/v1_conversations"),
            Ok(StoreSpec::Fs("/p".into()))
        );
        assert!(StoreSpec::parse("s3://").is_err());
        assert!(StoreSpec::parse("ftp://u:pw@h/x")
            .unwrap_err()
            .contains("ftp://u@h/x"));
    }

    #[test]
    fn event_ids() {
        assert_eq!(
            norm_id("E0000000-0000-4000-8000-000000000001"),
            "e0000000000040008000000000000001"
        );
    }
}
