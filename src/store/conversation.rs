//! A conversation directory as it is on disk: the two state files, the lease,
//! and every entry of `events/`, each read once.
//!
//! Long because: the folder read, the overlay and the record cache share one
//! read path.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rayon::prelude::*;
use serde_json::Value;

use crate::version::Version;

use super::event::{
    counts_as_event_file, invalid, parse_event, parse_event_for, parse_event_name, EventRecord,
    Unreadable,
};
use super::fsread::{access_error, io_reason, DirFd, Meta, ReadError};

/// The journal `repair` keeps in a conversation folder while it changes
/// more than one file there, removed when the last change is verified: if it
/// is still there, a run was interrupted half-way (`interrupted-repair`).
/// The SDK and the agent-server never read it (they read `base_state.json`,
/// `meta.json`, `owner_lease.json` and `events/event-*.json`).
pub const REPAIR_JOURNAL: &str = ".convo-doctor-repair.json";

/// A JSON state file (`base_state.json`, `meta.json`, `owner_lease.json`).
#[derive(Debug)]
pub enum Doc {
    Missing,
    Unreadable(Unreadable),
    Present(Value),
}

impl Doc {
    pub fn value(&self) -> Option<&Value> {
        match self {
            Doc::Present(v) => Some(v),
            _ => None,
        }
    }
    pub fn exists(&self) -> bool {
        !matches!(self, Doc::Missing)
    }
}

/// One entry of `events/` whose name matches the SDK's event-name rule.
#[derive(Debug)]
pub struct EventFile {
    /// The file name: inline up to 54 bytes (a canonical name with a
    /// UUID is 53 or 54), no heap block.
    pub name: super::event::Text<54>,
    pub idx: u64,
    /// Position in the directory listing (`os.listdir` order, which decides
    /// which of two files with the same index the SDK keeps).
    pub listing_pos: usize,
    pub record: Result<EventRecord, Unreadable>,
    pub mtime: Option<SystemTime>,
    /// How many bytes were read.
    pub size: u64,
}

impl EventFile {
    /// The event id spelled in the file name (what the SDK's index uses):
    /// part of `name` (which matched the SDK's name rule), not a copy.
    pub fn name_id(&self) -> &str {
        self.name
            .strip_suffix(".json")
            .and_then(|r| r.strip_prefix("event-"))
            .and_then(|r| r.split_once('-'))
            .map_or("", |(_, id)| id)
    }
}

/// An `events/` entry that `_count_events_on_disk` counts but the name rule rejects.
#[derive(Debug)]
pub struct StrayFile {
    pub name: String,
    /// Whether it holds a readable event (content the SDK will never show).
    pub record: Option<EventRecord>,
}

#[derive(Debug, Default)]
pub struct EventDir {
    pub exists: bool,
    /// Set when `events/` exists but cannot be listed.
    pub error: Option<String>,
    /// Files (or `events/` itself) this user may not read, or that an I/O
    /// error kept from being read: scan errors, see [`Conversation::access_errors`].
    pub access_errors: Vec<String>,
    /// Matching files, in listing order.
    pub files: Vec<EventFile>,
    pub stray: Vec<StrayFile>,
    /// Every other entry name (sidecars, temp files, junk), sorted.
    pub other: BTreeSet<String>,
    /// Files whose names start `event-` and end `.json` (`on_disk`).
    pub on_disk: usize,
}

#[derive(Debug)]
pub struct Conversation {
    pub dir: PathBuf,
    /// The folder as it was opened and read: every file was read relative
    /// to this descriptor, and a repair proves and writes through it
    /// (`None` when the folder could not be opened at all).
    pub root: Option<DirFd>,
    /// The folder name (for agent-server folders, the 32-hex conversation id).
    pub folder: String,
    pub base_state: Doc,
    pub base_state_mtime: Option<SystemTime>,
    pub meta: Doc,
    pub lease: Doc,
    /// convo-doctor's own journal of a repair in progress
    /// ([`REPAIR_JOURNAL`]): present only if a repair run was interrupted
    /// (or is running now).
    pub journal: Doc,
    pub events: EventDir,
    /// Top-level entries of the conversation folder, sorted.
    pub entries: BTreeSet<String>,
    /// Something changed while the folder was being read, or a writer held
    /// the SDK's lock meanwhile: the findings may describe a moment that
    /// never existed as a whole.
    pub changed_during_read: bool,
    /// What this user may not read here (`cannot read `PATH` as uid N:
    /// Permission denied`), or what an I/O error kept from being read: the
    /// folder may be fine for its owner, so these are errors of the scan,
    /// and the findings describe a folder that was not wholly read.
    pub access_errors: Vec<String>,
    /// The planned contents it was read with (a repair's later passes):
    /// [`Conversation::bytes`] reads through it.
    pub overlay: Overlay,
    /// Its `events/` folder as it was opened and listed (each component
    /// without following a link): a file of the log is read again through
    /// it, not through the path from `root`.
    pub events_root: Option<DirFd>,
}

impl Conversation {
    /// The bytes of `rel` (relative to the folder) as this reading sees
    /// them: a repair's planned contents first, a renamed file's source, no
    /// file for one taken out; otherwise what is on disk (a regular file, no
    /// link followed, bounded). Planners read through it, so every guard sees
    /// the state of the pass that plans.
    pub fn bytes(&self, rel: &str) -> Option<Vec<u8>> {
        if let Some(b) = self.overlay.files.get(rel) {
            return Some(b.clone());
        }
        if self.overlay.gone.contains(rel) && !self.overlay.renamed.contains_key(rel) {
            return None;
        }
        self.read_file(self.overlay.source(rel))
            .ok()
            .map(|(b, _)| b)
    }
}

/// Whether another process holds the SDK's event-log lock right now. Opens
/// the lock file read-only with `O_NOFOLLOW|O_NONBLOCK` (never creates it,
/// never follows a link, never blocks on a FIFO), checks with `fstat` that
/// it is a regular file, and tries a shared flock, released at once: a
/// writer appending an event holds it exclusively.
fn writer_active(dir: &DirFd) -> bool {
    use rustix::fs::{FlockOperation, OFlags};
    let Ok(fd) = dir.open_file("events/.eventlog.lock", OFlags::RDONLY | OFlags::NONBLOCK) else {
        return false;
    };
    let regular = rustix::fs::fstat(&fd)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file());
    if !regular {
        return false;
    }
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = rustix::fs::flock(&fd, FlockOperation::Unlock);
            false
        }
        Err(e) => e == rustix::io::Errno::WOULDBLOCK,
    }
}

/// Modification time and size of the things a writer touches: the event
/// directory (a new file), base_state.json and meta.json.
pub fn stamp(dir: &Path) -> Vec<Option<(SystemTime, u64)>> {
    ["events", "base_state.json", "meta.json"]
        .iter()
        .map(|n| {
            fs::symlink_metadata(dir.join(n))
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

/// [`stamp`] of the folder held.
pub fn stamp_at(dir: &DirFd) -> Vec<Option<(SystemTime, u64)>> {
    ["events", "base_state.json", "meta.json"]
        .iter()
        .map(|n| dir.lstat(n).ok().and_then(|m| Some((m.mtime?, m.len))))
        .collect()
}

/// Does this directory look like a conversation?
pub fn is_conversation_dir(dir: &Path) -> bool {
    ["base_state.json", "meta.json", "events"]
        .iter()
        .any(|n| fs::symlink_metadata(dir.join(n)).is_ok())
}

/// Planned file contents that replace what is on disk (keyed by the path
/// relative to the conversation folder), so a repair can be diagnosed again
/// in memory before anything is written. A path in `files` that is not on
/// disk is added (a renamed or created file); a path in `renamed` holds the
/// bytes of the file on disk it names (a rename whose bytes stay: nothing
/// is copied into memory); a path in `gone` is left out of the listing
/// (renamed away or quarantined). `files` and `renamed` win over `gone`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Overlay {
    pub files: std::collections::HashMap<String, Vec<u8>>,
    pub renamed: std::collections::HashMap<String, String>,
    pub gone: std::collections::HashSet<String>,
    /// The modification times the files in `files` will have once written
    /// (event files first, then the state files): checks that read mtimes
    /// as evidence (`head-lag`) see the folder as it will be on disk.
    pub written_at: Option<(SystemTime, SystemTime)>,
}

impl Overlay {
    pub fn new() -> Overlay {
        Overlay::default()
    }

    pub fn get(&self, rel: &str) -> Option<&Vec<u8>> {
        self.files.get(rel)
    }

    /// Whether the overlay decides what `rel` holds (new bytes, or another
    /// file's bytes after a rename).
    pub fn contains_key(&self, rel: &str) -> bool {
        self.files.contains_key(rel) || self.renamed.contains_key(rel)
    }

    /// The file on disk whose metadata (and, unless `files` has new bytes,
    /// whose bytes) `rel` stands for.
    pub fn source<'a>(&'a self, rel: &'a str) -> &'a str {
        self.renamed.get(rel).map(String::as_str).unwrap_or(rel)
    }
}

fn read_with(
    dir: &DirFd,
    rel: &str,
    overlay: &Overlay,
) -> Result<(Vec<u8>, Option<SystemTime>), ReadError> {
    read_listed(dir, None, rel, overlay, false)
}

/// [`read_with`]; `listed_regular`: the directory listing showed a regular
/// file, so the `lstat` before opening is skipped (see `DirFd::read_regular`).
fn read_listed(
    dir: &DirFd,
    events: Option<&DirFd>,
    rel: &str,
    overlay: &Overlay,
    listed_regular: bool,
) -> Result<(Vec<u8>, Option<SystemTime>), ReadError> {
    let source = overlay.source(rel);
    if let Some(bytes) = overlay.get(rel) {
        let mtime = match overlay.written_at {
            Some((events, _)) if rel.starts_with("events/") => Some(events),
            Some((_, state)) => Some(state),
            None => dir.lstat(source).ok().and_then(|m| m.mtime),
        };
        return Ok((bytes.clone(), mtime));
    }
    let listed = listed_regular && !overlay.renamed.contains_key(rel);
    // an event file through the events/ folder held (one open per folder,
    // not one per file)
    let (held, name) = dir.route(events, source);
    held.read_regular(name, listed).map(|(b, md)| (b, md.mtime))
}

fn read_doc(
    dir: &DirFd,
    rel: &str,
    overlay: &Overlay,
    access: &mut Vec<String>,
) -> (Doc, Option<SystemTime>) {
    if overlay.gone.contains(rel) && !overlay.contains_key(rel) {
        return (Doc::Missing, None);
    }
    match read_with(dir, rel, overlay) {
        Err(ReadError::Access { message, reason }) => {
            access.push(message);
            (Doc::Unreadable(Unreadable::Io(reason)), None)
        }
        Err(ReadError::File(Unreadable::Io(_))) if dir.lstat(rel).is_err() => (Doc::Missing, None),
        Err(ReadError::File(e)) => (Doc::Unreadable(e), None),
        Ok((bytes, mtime)) => {
            if bytes.is_empty() {
                return (Doc::Unreadable(Unreadable::Empty), mtime);
            }
            let doc = match std::str::from_utf8(&bytes) {
                Err(_) => Doc::Unreadable(Unreadable::NotUtf8),
                // the SDK's parser rules (NaN, surrogates, huge integers)
                Ok(text) => match super::event::sdk_json(text)
                    .map(|t| serde_json::from_str::<Value>(&t).map_err(|e| invalid(&e)))
                {
                    Ok(Ok(v @ Value::Object(_))) => Doc::Present(v),
                    Ok(Ok(_)) => Doc::Unreadable(Unreadable::NotObject),
                    Ok(Err(e)) | Err(e) => Doc::Unreadable(e),
                },
            };
            (doc, mtime)
        }
    }
}

impl Conversation {
    /// Read a conversation folder. Never fails: every problem is recorded.
    pub fn load(dir: &Path, version: Version) -> Conversation {
        Self::load_with(dir, version, &Overlay::new())
    }

    /// [`Conversation::load`], with some files' contents replaced by `overlay`.
    pub fn load_with(dir: &Path, version: Version, overlay: &Overlay) -> Conversation {
        Self::load_cached(dir, version, overlay, None)
    }

    /// [`Conversation::load_with`], taking each event file whose bytes are
    /// still the ones on disk from `cache` (parsed by an earlier read of the
    /// same folder) instead of reading and parsing it again: a repair's
    /// passes re-read only what they changed.
    pub fn load_cached(
        dir: &Path,
        version: Version,
        overlay: &Overlay,
        cache: Option<&RecordCache>,
    ) -> Conversation {
        match DirFd::open(dir) {
            Ok(root) => Self::load_at(&root, version, overlay, cache),
            Err(e) => Self::unopened(dir, &e),
        }
    }

    /// A folder that could not be opened at all (gone, not a directory, or
    /// a folder above it this user may not enter).
    fn unopened(dir: &Path, e: &std::io::Error) -> Conversation {
        Conversation {
            dir: dir.to_path_buf(),
            root: None,
            folder: folder_name(dir),
            base_state: Doc::Missing,
            base_state_mtime: None,
            meta: Doc::Missing,
            lease: Doc::Missing,
            journal: Doc::Missing,
            events: EventDir::default(),
            entries: BTreeSet::new(),
            changed_during_read: false,
            access_errors: access_error(dir, e).into_iter().collect(),
            overlay: Overlay::new(),
            events_root: None,
        }
    }

    /// [`Conversation::load_cached`] of a folder already opened and held:
    /// every file is read relative to it, never through a link.
    pub fn load_at(
        root: &DirFd,
        version: Version,
        overlay: &Overlay,
        cache: Option<&RecordCache>,
    ) -> Conversation {
        let dir = root.path();
        let before = stamp_at(root);
        let busy_before = writer_active(root);
        let folder = folder_name(dir);
        let mut access = Vec::new();
        let (base_state, base_state_mtime) =
            read_doc(root, "base_state.json", overlay, &mut access);
        let (meta, _) = read_doc(root, "meta.json", overlay, &mut access);
        let (lease, _) = read_doc(root, "owner_lease.json", overlay, &mut access);
        let entries: BTreeSet<String> = match root.list("") {
            Ok(names) => names.into_iter().map(|(n, _)| n).collect(),
            Err(e) => {
                access.extend(access_error(dir, &e));
                BTreeSet::new()
            }
        };
        let journal = if entries.contains(REPAIR_JOURNAL) {
            read_doc(root, REPAIR_JOURNAL, overlay, &mut access).0
        } else {
            Doc::Missing
        };
        let (mut events, events_root) = read_events(root, version, overlay, cache);
        access.append(&mut events.access_errors);
        // A file that read as broken may just have been mid-write: if it is
        // no longer what was read, or anything else moved, say so.
        let rewritten = events.files.iter().any(|f| {
            f.record.is_err()
                && f.mtime.is_some()
                && !overlay.contains_key(&format!("events/{}", f.name))
                && root
                    .lstat(&format!("events/{}", f.name))
                    .is_ok_and(|m| m.is_file() && (m.len != f.size || m.mtime != f.mtime))
        });
        let changed_during_read =
            busy_before || rewritten || stamp_at(root) != before || writer_active(root);
        Conversation {
            dir: dir.to_path_buf(),
            root: Some(root.clone()),
            folder,
            base_state,
            base_state_mtime,
            meta,
            lease,
            journal,
            events,
            entries,
            changed_during_read,
            access_errors: access,
            overlay: overlay.clone(),
            events_root,
        }
    }

    /// Read the regular file `rel` of the folder as it was opened (through
    /// the descriptor held, never through a link): for a check that needs
    /// bytes the model did not keep.
    pub fn read_file(&self, rel: &str) -> Result<(Vec<u8>, Meta), Unreadable> {
        match &self.root {
            Some(root) => {
                let (dir, name) = root.route(self.events_root.as_ref(), rel);
                dir.read_regular(name, false).map_err(Unreadable::from)
            }
            None => Err(Unreadable::Io("the folder could not be opened".into())),
        }
    }
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Each event file of an earlier read, parsed, by its path relative to the
/// conversation folder: its record, modification time and size.
#[derive(Default)]
pub struct RecordCache(std::collections::HashMap<String, Cached>);

/// One cached event file: its record, modification time and size.
type Cached = (Result<EventRecord, Unreadable>, Option<SystemTime>, u64);

impl RecordCache {
    /// The size and modification time of `rel` as it was read.
    pub fn seen(&self, rel: &str) -> Option<(u64, Option<SystemTime>)> {
        self.0
            .get(rel)
            .filter(|(_, mtime, _)| mtime.is_some())
            .map(|(_, mtime, size)| (*size, *mtime))
    }

    /// What `conv` read (it must have been read without an overlay).
    pub fn of(conv: &Conversation) -> RecordCache {
        RecordCache(
            conv.events
                .files
                .iter()
                .map(|f| {
                    (
                        format!("events/{}", f.name),
                        (f.record.clone(), f.mtime, f.size),
                    )
                })
                .collect(),
        )
    }
}

/// How many entries of `events/` are read (in parallel) before they are
/// gathered: enough to keep every thread busy, few enough that the chunk
/// beside the gathered files costs little memory.
const READ_CHUNK: usize = 8192;

fn read_events(
    dir: &DirFd,
    version: Version,
    overlay: &Overlay,
    cache: Option<&RecordCache>,
) -> (EventDir, Option<DirFd>) {
    let events_dir = &dir.path().join("events");
    let wide_index = version.wide_index();
    let mut out = EventDir::default();
    match dir.lstat("events") {
        Err(_) => return (out, None),
        Ok(md) if !md.is_dir() => {
            out.exists = true;
            out.error = Some(match md.kind_name() {
                Some("symbolic link") => {
                    "`events` is a symbolic link, which is not followed".into()
                }
                Some(what) => format!("`events` is a {what}, not a directory"),
                None => "`events` is a file, not a directory".into(),
            });
            return (out, None);
        }
        Ok(_) => out.exists = true,
    }
    // with the listing's file type (d_type): a regular file needs no stat
    // to tell it is not a directory. The release's schema (compiled on its
    // first use, a few ms) is compiled meanwhile when a second thread is free.
    let held = match dir.open_below(Path::new("events"), events_dir) {
        Ok(fd) => fd,
        Err(e) => {
            out.error = Some(format!("`events/` cannot be listed: {}", io_reason(&e)));
            out.access_errors.extend(access_error(events_dir, &e));
            return (out, None);
        }
    };
    let (_, listing) = rayon::join(
        || crate::validate::schema_for(version).is_ok(),
        || held.list(""),
    );
    let listed: Vec<(String, Option<rustix::fs::FileType>)> = match listing {
        Ok(names) => names
            .into_iter()
            .filter(|(name, _)| !overlay.gone.contains(&format!("events/{name}")))
            .collect(),
        Err(e) => {
            out.error = Some(format!("`events/` cannot be listed: {}", io_reason(&e)));
            out.access_errors.extend(access_error(events_dir, &e));
            return (out, None);
        }
    };
    // files a planned repair adds (renamed or created event files), after
    // the listing
    let on_list: std::collections::HashSet<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
    let added: Vec<(String, Option<rustix::fs::FileType>)> = overlay
        .files
        .keys()
        .chain(overlay.renamed.keys())
        .filter_map(|rel| rel.strip_prefix("events/"))
        .filter(|name| !name.contains('/') && !on_list.contains(name))
        .collect::<std::collections::BTreeSet<&str>>()
        .into_iter()
        .map(|name| (name.to_string(), None))
        .collect();
    // Each entry is read and parsed on its own (in parallel on the pool the
    // caller runs in; one thread with -j1), then gathered in listing order.
    enum Entry {
        File(EventFile),
        Stray(StrayFile),
        Other(String),
    }
    let read_one = |(pos, (name, ft)): (usize, (String, Option<rustix::fs::FileType>))| {
        let rel = format!("events/{name}");
        // `_count_events_on_disk` sees a directory (or a link to one) as
        // `name/`, which does not end in `.json`: it is not counted.
        let regular = ft.is_some_and(|t| t == rustix::fs::FileType::RegularFile);
        let counted = counts_as_event_file(&name)
            && (overlay.contains_key(&rel) || regular || !dir.stat(&rel).is_ok_and(|m| m.is_dir()));
        let mut denied = None;
        let entry = match parse_event_name(&name, wide_index) {
            Some(n) => {
                let cached = (!overlay.files.contains_key(&rel))
                    .then(|| cache.and_then(|c| c.0.get(overlay.source(&rel))))
                    .flatten();
                let (record, mtime, size) = match cached {
                    Some((record, mtime, size)) => (record.clone(), *mtime, *size),
                    None => match read_listed(dir, Some(&held), &rel, overlay, regular) {
                        Ok((bytes, mtime)) => (
                            parse_event_for(&bytes, Some(version)),
                            mtime,
                            bytes.len() as u64,
                        ),
                        Err(e) => {
                            if let ReadError::Access { message, .. } = &e {
                                denied = Some(message.clone());
                            }
                            (Err(e.into()), None, 0)
                        }
                    },
                };
                Entry::File(EventFile {
                    name: name.as_str().into(),
                    idx: n.idx,
                    listing_pos: pos,
                    record,
                    mtime,
                    size,
                })
            }
            None if counts_as_event_file(&name) => {
                let record = match dir.read_regular(&rel, false) {
                    Ok((b, _)) => parse_event(&b).ok(),
                    Err(ReadError::Access { message, .. }) => {
                        denied = Some(message);
                        None
                    }
                    Err(_) => None,
                };
                Entry::Stray(StrayFile { name, record })
            }
            None => Entry::Other(name),
        };
        (counted, entry, denied)
    };
    // In chunks, each read in parallel and then moved into `out`: only one
    // chunk's entries wait beside the files (not a second copy of them all),
    // and `out.files` is sized once.
    let listed: Vec<(usize, (String, Option<rustix::fs::FileType>))> =
        listed.into_iter().chain(added).enumerate().collect();
    out.files.reserve_exact(listed.len());
    let mut listed = listed.into_iter();
    loop {
        let chunk: Vec<_> = listed.by_ref().take(READ_CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        let entries: Vec<(bool, Entry, Option<String>)> =
            chunk.into_par_iter().map(read_one).collect();
        for (counted, entry, denied) in entries {
            out.access_errors.extend(denied);
            out.on_disk += usize::from(counted);
            match entry {
                Entry::File(f) => out.files.push(f),
                Entry::Stray(f) => out.stray.push(f),
                Entry::Other(name) => {
                    out.other.insert(name);
                }
            }
        }
    }
    out.files.shrink_to_fit();
    out.stray.sort_by(|a, b| a.name.cmp(&b.name));
    (out, Some(held))
}
