//! Find the conversations under a PATH: PATH itself when it is one, else
//! every conversation folder below it (a store). Symbolic links are never
//! followed; nested `subagents/<hex>/` conversations are found too. A folder
//! of a store named like a conversation id that holds none of a
//! conversation's files (emptied down to nothing) is listed too, so the
//! `empty-conversation` check can report it instead of it vanishing.
//!
//! Long because: every discovery rule (places, owners, links, nesting) is
//! decided here, once.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use walkdir::WalkDir;

use super::conversation::is_conversation_dir;

/// Where deleted conversations are moved to; never scanned.
pub const TRASH: &str = ".trash";

#[derive(Debug, Default)]
pub struct Discovery {
    /// Conversation folders, sorted by path.
    pub conversations: Vec<PathBuf>,
    /// Things passed over, each a sentence naming the path.
    pub notes: Vec<String>,
    /// Whether PATH was itself a conversation (rather than a store).
    pub single: bool,
    /// Folders below PATH this user may not list, or that an I/O error kept
    /// from being listed (`cannot read `DIR` as uid N: Permission denied`):
    /// errors of the scan (exit 2), not notes, since a conversation may be
    /// in them.
    pub errors: Vec<String>,
    /// When no conversation was found: what PATH holds instead, as a phrase
    /// ("an empty directory", "3 symbolic links, which are never followed").
    pub instead: Option<String>,
}

/// Walk `root`. Errors only when `root` itself cannot be read (or listed);
/// the error names the path and keeps the OS error as its source.
pub fn find(root: &Path) -> anyhow::Result<Discovery> {
    let md =
        std::fs::metadata(root).with_context(|| format!("cannot read `{}`", root.display()))?;
    if !md.is_dir() {
        bail!("`{}` is not a directory", root.display());
    }
    let mut out = Discovery::default();
    let mut seen = Seen::default();
    if is_conversation_dir(root) {
        out.single = true;
        out.conversations.push(root.to_path_buf());
        nested(root, &mut out);
        return Ok(out);
    }
    let mut it = WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
        .into_iter();
    while let Some(entry) = it.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e.path().unwrap_or(root).to_path_buf();
                let denied = e
                    .io_error()
                    .and_then(|io| super::fsread::access_error(&path, io));
                if e.depth() == 0 {
                    // PATH itself cannot be listed: an unreadable PATH
                    let io = e.into_io_error();
                    return Err(match (denied, io) {
                        (Some(msg), _) => anyhow::anyhow!(msg),
                        (None, Some(io)) => anyhow::Error::new(io)
                            .context(format!("cannot read `{}`", root.display())),
                        (None, None) => anyhow::anyhow!("cannot read `{}`", root.display()),
                    });
                }
                match denied {
                    Some(msg) => out.errors.push(msg),
                    None => out.notes.push(format!(
                        "`{}` was skipped: {}",
                        path.display(),
                        walk_reason(&e)
                    )),
                }
                seen.unlisted.insert(path);
                seen.unreadable += 1;
                continue;
            }
        };
        let ft = entry.file_type();
        if entry.depth() == 1 {
            seen.entries += 1;
        }
        if ft.is_symlink() {
            seen.links += 1;
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                out.notes.push(format!(
                    "`{}` is a symbolic link to a directory and was not followed",
                    entry.path().display()
                ));
            }
            continue;
        }
        if !ft.is_dir() {
            seen.files += 1;
            if entry.depth() == 1 && is_event_name(&entry.file_name().to_string_lossy()) {
                seen.event_files += 1;
            }
            continue;
        }
        seen.dirs += 1;
        let name = entry.file_name().to_string_lossy();
        if name == ".convo-doctor" {
            it.skip_current_dir();
            continue;
        }
        if name == TRASH {
            out.notes.push(format!(
                "`{}` holds deleted conversations and was passed over",
                entry.path().display()
            ));
            it.skip_current_dir();
            continue;
        }
        if is_conversation_dir(entry.path()) {
            out.conversations.push(entry.path().to_path_buf());
            nested(entry.path(), &mut out);
            it.skip_current_dir();
        } else if is_conversation_id(&name) {
            seen.id_named.push(entry.path().to_path_buf());
        }
    }
    out.conversations.sort();
    // An id-named folder is a conversation emptied down to nothing when it
    // sits where conversations sit (directly in PATH, or next to one) and
    // has no conversation below it (a folder that only groups conversations,
    // as a per-user layout would, has some).
    let parents: std::collections::HashSet<&Path> = out
        .conversations
        .iter()
        .filter_map(|c| c.parent())
        .collect();
    let emptied: Vec<PathBuf> = seen
        .id_named
        .iter()
        // a folder this user cannot list is an error above, not an empty one
        .filter(|d| !seen.unlisted.contains(*d))
        .filter(|d| {
            let placed = d.parent().is_some_and(|p| p == root || parents.contains(p));
            let at = out
                .conversations
                .partition_point(|c| c.as_path() < d.as_path());
            let holds = out.conversations.get(at).is_some_and(|c| c.starts_with(d));
            placed && !holds
        })
        .cloned()
        .collect();
    out.conversations.extend(emptied);
    out.conversations.sort();
    // (when a folder could not be listed, the errors say why nothing was
    // found: no "holds no conversation" on top of them)
    if out.conversations.is_empty() && out.errors.is_empty() {
        out.instead = Some(seen.describe(root));
    }
    Ok(out)
}

/// What a walk met, to say what a PATH holds when it holds no conversation.
#[derive(Default)]
struct Seen {
    /// Entries directly in PATH.
    entries: usize,
    links: usize,
    files: usize,
    dirs: usize,
    unreadable: usize,
    /// Folders whose listing failed.
    unlisted: std::collections::HashSet<PathBuf>,
    /// Files directly in PATH named like event files.
    event_files: usize,
    /// Folders named like a conversation id that are not conversations.
    id_named: Vec<PathBuf>,
}

impl Seen {
    fn describe(&self, root: &Path) -> String {
        let events_dir = root.file_name().is_some_and(|n| n == "events") || self.event_files > 0;
        if events_dir {
            return "an events/ folder; did you mean its parent?".into();
        }
        if self.entries == 0 && self.unreadable > 0 {
            return "a directory that cannot be listed (see the notes)".into();
        }
        if self.entries == 0 {
            return "an empty directory".into();
        }
        if self.links > 0 {
            return format!(
                "{}, which {} never followed",
                count(self.links, "symbolic link", "symbolic links"),
                if self.links == 1 { "is" } else { "are" }
            );
        }
        if self.unreadable > 0 && self.files == 0 && self.dirs == 0 {
            return format!(
                "{} that cannot be read (see the notes)",
                count(self.unreadable, "entry", "entries")
            );
        }
        format!(
            "{} and {}, none of them a conversation (a folder holding base_state.json, meta.json or events/)",
            count(self.files, "file", "files"),
            count(self.dirs, "folder", "folders")
        )
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `event-<digits>-<anything>.json`, as the SDK names event files.
fn is_event_name(name: &str) -> bool {
    name.strip_prefix("event-")
        .and_then(|r| r.strip_suffix(".json"))
        .is_some_and(|r| {
            r.split('-')
                .next()
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// A conversation id as the agent-server names folders (32 hex digits,
/// `uuid.hex`) or as a UUID with dashes.
pub fn is_conversation_id(name: &str) -> bool {
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    match name.len() {
        32 => hex(name),
        36 => {
            let parts: Vec<&str> = name.split('-').collect();
            parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| hex(p))
        }
        _ => false,
    }
}

/// `subagents/<id>/` conversations inside a conversation.
fn nested(conv: &Path, out: &mut Discovery) {
    let sub = conv.join("subagents");
    // Never through a link: `subagents -> ..` would list (and loop over)
    // folders outside PATH.
    match std::fs::symlink_metadata(&sub) {
        Ok(md) if md.is_dir() => {}
        Ok(md) if md.file_type().is_symlink() => {
            out.notes.push(format!(
                "`{}` is a symbolic link and was not followed",
                sub.display()
            ));
            return;
        }
        _ => return,
    }
    let rd = match std::fs::read_dir(&sub) {
        Ok(rd) => rd,
        Err(e) => {
            out.errors.extend(super::fsread::access_error(&sub, &e));
            return;
        }
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
    {
        if is_conversation_dir(&p) {
            dirs.push(p);
        } else if let Err(e) = std::fs::read_dir(&p) {
            // a sub-agent folder this user cannot look into
            out.errors.extend(super::fsread::access_error(&p, &e));
        }
    }
    dirs.sort();
    for d in dirs {
        out.conversations.push(d.clone());
        nested(&d, out);
    }
}

fn walk_reason(e: &walkdir::Error) -> String {
    match e.io_error() {
        Some(io) => super::fsread::io_reason(io),
        None => e.to_string(),
    }
}

// ---- where OpenHands products keep conversations (`diagnose` with no PATH)

/// What kind of store a place is, by the product that writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// The SDK's own layout (the OpenHands CLI, SDK scripts): base_state.json
    /// and events/, no meta.json by design, no agent-server listing.
    Sdk,
    /// An agent-server's conversations directory (meta.json in each folder).
    AgentServer,
}

/// One place looked at.
#[derive(Clone, Debug)]
pub struct Place {
    /// The product and why this place (`OpenHands CLI ($OPENHANDS_CONVERSATIONS_DIR)`).
    pub what: String,
    pub path: PathBuf,
    pub kind: StoreKind,
    /// Named by an environment variable the operator set (trusted as a PATH
    /// given on the command line is); else a default place, read only when
    /// [`trusted`] says so.
    pub given: bool,
}

/// A place and what was found there.
#[derive(Debug)]
pub struct Looked {
    pub place: Place,
    /// `None`: not there (or not a directory), or passed over.
    pub found: Option<Discovery>,
    /// Why a default place was passed over ([`trusted`]).
    pub passed_over: Option<String>,
}

/// Reads an environment variable (unset or empty: `None`).
pub type VarFn = Box<dyn Fn(&str) -> Option<String>>;

/// The environment `looked` reads: variables, home, working directory and
/// the temporary directory (given, so tests use a fake HOME).
pub struct Env {
    pub var: VarFn,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    pub tmp: PathBuf,
}

impl Env {
    pub fn here() -> Env {
        Env {
            var: Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            tmp: std::env::temp_dir(),
        }
    }
}

/// The places, environment variables first, then each product's default:
/// the agent-server (`OH_CONVERSATIONS_PATH`, else `workspace/conversations`
/// below its working directory), the OpenHands CLI
/// (`OPENHANDS_CONVERSATIONS_DIR`, `$OPENHANDS_PERSISTENCE_DIR/conversations`,
/// `~/.openhands/conversations`), Agent Canvas
/// (`~/.openhands/agent-canvas/conversations`), and the agent-servers the
/// app server starts as processes (`$TMPDIR/openhands-sandboxes/<sandbox>/
/// workspace/conversations`).
pub fn places(env: &Env) -> Vec<Place> {
    let mut out = Vec::new();
    let mut add = |what: String, path: PathBuf, kind: StoreKind, given: bool| {
        if !out.iter().any(|p: &Place| p.path == path) {
            out.push(Place {
                what,
                path,
                kind,
                given,
            });
        }
    };
    let rel = |p: &str| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            env.cwd.join(p)
        }
    };
    if let Some(p) = (env.var)("OH_CONVERSATIONS_PATH") {
        add(
            "agent-server ($OH_CONVERSATIONS_PATH)".into(),
            rel(&p),
            StoreKind::AgentServer,
            true,
        );
    }
    if let Some(p) = (env.var)("OPENHANDS_CONVERSATIONS_DIR") {
        add(
            "OpenHands CLI ($OPENHANDS_CONVERSATIONS_DIR)".into(),
            rel(&p),
            StoreKind::Sdk,
            true,
        );
    }
    if let Some(p) = (env.var)("OPENHANDS_PERSISTENCE_DIR") {
        add(
            "OpenHands CLI ($OPENHANDS_PERSISTENCE_DIR/conversations)".into(),
            rel(&p).join("conversations"),
            StoreKind::Sdk,
            true,
        );
    }
    if let Some(home) = &env.home {
        let oh = home.join(".openhands");
        add(
            "OpenHands CLI (default)".into(),
            oh.join("conversations"),
            StoreKind::Sdk,
            false,
        );
        add(
            "Agent Canvas (default)".into(),
            oh.join("agent-canvas").join("conversations"),
            StoreKind::AgentServer,
            false,
        );
    }
    add(
        "agent-server (default, relative to the working directory)".into(),
        env.cwd.join("workspace").join("conversations"),
        StoreKind::AgentServer,
        false,
    );
    let sandboxes = env.tmp.join("openhands-sandboxes");
    if let Ok(rd) = std::fs::read_dir(&sandboxes) {
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path().join("workspace").join("conversations"))
            .collect();
        dirs.sort();
        for d in dirs {
            add(
                "agent-server of an app server process sandbox".into(),
                d,
                StoreKind::AgentServer,
                false,
            );
        }
    }
    out
}

/// What [`places`] could not turn into a place, each a note: the home
/// defaults when HOME is not set, and the app server's process sandboxes'
/// folder when it is not there or holds no sandbox.
pub fn not_places(env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    if env.home.is_none() {
        out.push("HOME is not set: ~/.openhands/conversations (OpenHands CLI), ~/.openhands/agent-canvas/conversations (Agent Canvas) and ~/.openhands (the app server's database and event copy) were not looked in".to_string());
    }
    let sandboxes = env.tmp.join("openhands-sandboxes");
    let what = "for the agent-servers an app server runs as processes";
    match std::fs::read_dir(&sandboxes) {
        Ok(mut rd) => {
            if !rd.any(|e| e.is_ok_and(|e| e.file_type().is_ok_and(|t| t.is_dir()))) {
                out.push(format!(
                    "looked in {} {what}: no sandbox folder in it",
                    sandboxes.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(format!(
            "looked in {} {what}: not there",
            sandboxes.display()
        )),
        Err(e) => out.push(format!(
            "looked in {} {what}: cannot be listed ({})",
            sandboxes.display(),
            super::fsread::os_words(&e)
        )),
    }
    out
}

/// Look at every place; a place that is not a directory is `found: None`,
/// and so is a default place [`trusted`] refuses (with the reason).
pub fn looked(env: &Env) -> Vec<Looked> {
    places(env)
        .into_iter()
        .map(|place| {
            let passed_over = passed_over(&place.path, place.given);
            let found = passed_over
                .is_none()
                .then(|| std::fs::metadata(&place.path).ok())
                .flatten()
                .filter(|m| m.is_dir())
                .and_then(|_| find(&place.path).ok());
            Looked {
                place,
                found,
                passed_over,
            }
        })
        .collect()
}

/// Why this user passes over a place: `None` for a place named by an
/// environment variable (`given`: trusted as a PATH on the command line
/// is) or one [`trusted`] lets this user read; else the reason. The one
/// rule of every store discovery with no PATH (OpenHands folders, Claude
/// Code and Codex sessions).
pub fn passed_over(path: &Path, given: bool) -> Option<String> {
    let uid = rustix::process::geteuid().as_raw();
    match given {
        true => None,
        false => trusted(path, uid).err(),
    }
}

/// Whether a place nobody named may be read by `uid`: every component from
/// `/` down is owned by root or `uid`, a symbolic link included (its target
/// is then checked the same way), and none below a folder everybody may
/// write to unless that folder has the sticky bit (where nobody can rename
/// or remove another user's entry, and every entry is then owned by root or
/// `uid` as above). A place that is not there is fine: there is nothing to
/// read. Else the reason, naming the part.
pub fn trusted(path: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;
    fn parts(p: &Path) -> impl Iterator<Item = std::ffi::OsString> + '_ {
        p.components().rev().filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
    }
    let cannot = |p: &Path, e: &std::io::Error| {
        format!(
            "`{}` cannot be read: {}",
            p.display(),
            super::fsread::os_words(e)
        )
    };
    let mut todo: Vec<std::ffi::OsString> = parts(path).collect();
    let mut at = PathBuf::from("/");
    let mut open_parent: Option<PathBuf> = None;
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        if let Some(parent) = open_parent.take() {
            return Err(format!(
                "`{}` may be written by anybody and has no sticky bit: nothing below it is trusted",
                parent.display()
            ));
        }
        let next = at.join(&name);
        let md = match std::fs::symlink_metadata(&next) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(cannot(&next, &e)),
        };
        let link = md.file_type().is_symlink();
        if md.uid() != 0 && md.uid() != uid {
            return Err(format!(
                "`{}` is {} owned by uid {}, neither root nor this user: not followed",
                next.display(),
                if link { "a symbolic link" } else { "a folder" },
                md.uid()
            ));
        }
        if link {
            links += 1;
            if links > 40 {
                return Err(format!("`{}`: too many symbolic links", path.display()));
            }
            let target = std::fs::read_link(&next).map_err(|e| cannot(&next, &e))?;
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            todo.extend(parts(&target));
            continue;
        }
        if md.mode() & 0o1002 == 0o002 {
            open_parent = Some(next.clone());
        }
        at = next;
    }
    Ok(())
}

impl Looked {
    /// One line for the report's notes: where, what it is, what was found.
    pub fn describe(&self) -> String {
        let p = &self.place;
        if let Some(why) = &self.passed_over {
            return format!(
                "looked in {} for {}: passed over ({why})",
                p.path.display(),
                p.what
            );
        }
        match &self.found {
            None => format!("looked in {} for {}: not there", p.path.display(), p.what),
            Some(d) => {
                let with_meta = d
                    .conversations
                    .iter()
                    .filter(|c| c.join("meta.json").exists())
                    .count();
                let n = d.conversations.len();
                let kind = match (p.kind, with_meta) {
                    (StoreKind::Sdk, _) => {
                        "an SDK-layout store: no meta.json by design".to_string()
                    }
                    (StoreKind::AgentServer, 0) if n > 0 => {
                        "no folder has a meta.json: an SDK-layout store".to_string()
                    }
                    (StoreKind::AgentServer, m) => {
                        format!("an agent-server store, {m} with meta.json")
                    }
                };
                format!(
                    "looked in {} for {}: {} ({kind})",
                    p.path.display(),
                    p.what,
                    count(n, "conversation", "conversations")
                )
            }
        }
    }
}

/// The app server's persistence directory (`OH_PERSISTENCE_DIR`, else
/// `FILE_STORE_PATH` when the file store is local, else `~/.openhands`):
/// where its SQLite database and filesystem event copy are by default.
pub fn app_server_dir(env: &Env) -> Option<(PathBuf, String)> {
    if let Some(p) = (env.var)("OH_PERSISTENCE_DIR") {
        return Some((PathBuf::from(p), "$OH_PERSISTENCE_DIR".into()));
    }
    let store = (env.var)("SHARED_EVENT_STORAGE_PROVIDER")
        .or_else(|| (env.var)("FILE_STORE"))
        .unwrap_or_default()
        .to_lowercase();
    if !matches!(store.as_str(), "aws" | "s3" | "gcp" | "google_cloud") {
        if let Some(p) = (env.var)("FILE_STORE_PATH") {
            return Some((PathBuf::from(p), "$FILE_STORE_PATH".into()));
        }
    }
    env.home
        .as_ref()
        .map(|h| (h.join(".openhands"), "default".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_root_keeps_the_os_error_as_its_source() {
        let e = find(Path::new("/nonexistent/convo-doctor-store")).unwrap_err();
        let io = e
            .root_cause()
            .downcast_ref::<std::io::Error>()
            .expect("the io::Error is kept");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        let text = format!("{e:#}");
        assert!(text.starts_with("cannot read `/nonexistent/convo-doctor-store`: "));
        assert!(text.contains("No such file or directory"), "{text}");
    }

    #[test]
    fn conversation_ids() {
        assert!(is_conversation_id("0123456789abcdef0123456789abcdef"));
        assert!(is_conversation_id("01234567-89ab-cdef-0123-456789abcdef"));
        assert!(!is_conversation_id("0123456789abcdef0123456789abcdeg"));
        assert!(!is_conversation_id("lost+found"));
        assert!(!is_conversation_id("01234567-89ab-cdef-0123456789abcdef0"));
    }

    #[test]
    fn event_file_names() {
        assert!(is_event_name("event-00001-abc.json"));
        assert!(!is_event_name("event-x-abc.json"));
        assert!(!is_event_name("base_state.json"));
    }
}
