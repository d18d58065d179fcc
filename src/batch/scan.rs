//! Which conversations a run looks at: every conversation under the PATHs
//! given, each once, in path order per PATH and PATHs in the order given.
//! `diagnose` and `repair` share it, so they agree on what a PATH holds and
//! on what is a scan error.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::store::discover::find;

#[derive(Debug, Default)]
pub struct Scan {
    /// Conversation folders, with the index of the PATH each was found under.
    pub conversations: Vec<(PathBuf, usize)>,
    /// What was passed over (symbolic links, and with `allow_empty` a PATH
    /// holding no conversation), each a sentence.
    pub notes: Vec<String>,
    /// Scan errors, each a sentence naming the path: a PATH that cannot be
    /// read, a folder below it this user may not list (`cannot read `DIR`
    /// as uid N: Permission denied`), a PATH holding no conversation
    /// (unless `allow_empty`). The run exits 2.
    pub errors: Vec<String>,
}

/// Discover the conversations under `paths`. A folder reached twice (the
/// same PATH given twice, or a store and a conversation inside it) is
/// listed once, where it was first found.
pub fn discover(paths: &[PathBuf], allow_empty: bool) -> Scan {
    let mut scan = Scan::default();
    let mut seen = HashSet::new();
    for (k, path) in paths.iter().enumerate() {
        let found = match find(path) {
            Ok(found) => found,
            Err(e) => {
                scan.errors.push(format!("{e:#}"));
                continue;
            }
        };
        scan.notes.extend(found.notes);
        scan.errors.extend(found.errors);
        if let Some(instead) = found.instead {
            let msg = format!("no conversation in `{}`: found {instead}", path.display());
            if allow_empty {
                scan.notes.push(msg);
            } else {
                // only for a PATH that was read and really holds nothing: an
                // unreadable one is an error above, which no flag excuses
                scan.errors.push(format!(
                    "{msg} (pass --allow-empty if an empty PATH is expected)"
                ));
            }
        }
        for dir in found.conversations {
            let key = std::fs::symlink_metadata(&dir)
                .map(|m| (m.dev(), m.ino()))
                .ok();
            if key.is_none_or(|key| seen.insert(key)) {
                scan.conversations.push((dir, k));
            }
        }
    }
    scan
}
