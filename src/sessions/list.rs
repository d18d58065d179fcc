//! The session files below a folder, found without following a link: what
//! every JSONL format's store listing shares. An entry named like a session
//! that is a link, a FIFO or another special file is passed over with a
//! note naming it, and so is a link to a folder, as the folder reader's
//! discovery does with a linked conversation
//! ([`crate::store::discover::find`]); nothing is opened in a way that
//! blocks. A file given as PATH itself is read by the format, and a link or
//! a FIFO there is the report's load error.

use std::path::{Path, PathBuf};

/// The session files a PATH holds, and what the listing met.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<PathBuf>,
    /// Folders that could not be listed (errors of the scan).
    pub errors: Vec<String>,
    /// Links not followed.
    pub notes: Vec<String>,
}

/// How a format names its files and how deep its folders go.
pub struct Rule<'a> {
    /// Whether an entry's name makes it a session file (read or not).
    pub named: &'a dyn Fn(&str) -> bool,
    /// Whether a regular file not `named` is one all the same: its name
    /// could be, and it reads like one (Codex: a `*.jsonl` not named
    /// `rollout-*`).
    pub sniffed: &'a dyn Fn(&str, &Path) -> bool,
    /// Names starting with a dot are passed over.
    pub skip_hidden: bool,
    /// Files directly in the folder walked count (else only in its
    /// folders: `~/.claude/projects` holds project folders).
    pub files_at_top: bool,
}

impl Listing {
    /// The session files of `dir`, `depth` levels of folders down at most,
    /// in name order; `limit` (when not 0) stops at that many.
    pub fn walk(&mut self, dir: &Path, depth: usize, rule: &Rule, limit: usize) {
        self.walk_at(dir, depth, rule, limit, true)
    }

    fn walk_at(&mut self, dir: &Path, depth: usize, rule: &Rule, limit: usize, top: bool) {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                self.errors.push(format!(
                    "cannot list `{}`: {}",
                    dir.display(),
                    crate::store::fsread::os_words(&e)
                ));
                return;
            }
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        let files_here = !top || rule.files_at_top;
        for e in entries {
            if limit > 0 && self.files.len() >= limit {
                return;
            }
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if rule.skip_hidden && name.starts_with('.') {
                continue;
            }
            if t.is_dir() {
                if depth > 0 {
                    self.walk_at(&p, depth - 1, rule, limit, false);
                }
            } else if t.is_symlink() && std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) {
                if depth > 0 {
                    self.notes.push(format!(
                        "`{}` is a symbolic link to a directory and was not followed",
                        p.display()
                    ));
                }
            } else if !files_here {
                continue;
            } else if t.is_file() {
                if (rule.named)(&name) || (rule.sniffed)(&name, &p) {
                    self.files.push(p);
                }
            } else if (rule.named)(&name) {
                // a link, a FIFO, a socket named like a session: passed
                // over, and said
                let what = std::fs::symlink_metadata(&p)
                    .ok()
                    .and_then(|m| crate::store::fsread::file_kind(&m))
                    .unwrap_or("special file");
                self.notes.push(if what == "symbolic link" {
                    format!("`{}` is a symbolic link and was not followed", p.display())
                } else {
                    format!(
                        "`{}` is a {what}, not a regular file: passed over",
                        p.display()
                    )
                });
            }
        }
    }

    /// Add another listing.
    pub fn extend(&mut self, other: Listing) {
        self.files.extend(other.files);
        self.errors.extend(other.errors);
        self.notes.extend(other.notes);
    }
}

/// The folder a store keeps its sessions in (`~/.claude/projects`, a
/// `CODEX_HOME`'s `sessions`), when it is a link: the note that says it is
/// not followed.
pub fn linked_folder(dir: &Path) -> Option<String> {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.file_type().is_symlink())
        .then(|| {
            format!(
                "`{}` is a symbolic link and was not followed",
                dir.display()
            )
        })
}
