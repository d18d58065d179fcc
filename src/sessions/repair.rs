//! What a JSONL session format brings to `repair` ([`Adapter`]: plan and
//! prove one file's edits) and what the run says of each file ([`Outcome`])
//! and of the whole ([`Summary`]), the same for every format; the run itself
//! (backup, manifest, atomic write, undo) is
//! [`crate::commands::repair_sessions`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The bytes read, the bytes to write, and the checks that ask.
pub type Rewrite = (Vec<u8>, Vec<u8>, Vec<&'static str>);

/// What a format's repair does to one file: its edits (as JSON shows them,
/// under their own key) and how the human output shows each.
pub trait Changes: Serialize + Default {
    type Item;
    fn items(&self) -> &[Self::Item];
    /// One edit, a line or more, through `r` (redact and sanitize).
    fn human(item: &Self::Item, w: &mut dyn Write, r: &dyn Fn(&str) -> String) -> io::Result<()>;
    fn is_empty(&self) -> bool {
        self.items().is_empty()
    }
}

/// What became of one file.
#[derive(Debug, Serialize)]
pub struct Outcome<C> {
    pub path: String,
    /// `fixed`, `would-fix` (dry run), `unchanged`, `failed`.
    pub status: &'static str,
    #[serde(flatten)]
    pub changes: C,
    /// The verdict before and after ("resume sends N of M …").
    pub before: String,
    pub after: String,
    pub error: Option<String>,
    #[serde(skip)]
    pub redactor: crate::secrets::Redactor,
}

impl<C: Default> Outcome<C> {
    /// Nothing done yet to `path`.
    pub fn new(path: &Path) -> Outcome<C> {
        Outcome {
            path: path.display().to_string(),
            status: "unchanged",
            changes: C::default(),
            before: String::new(),
            after: String::new(),
            error: None,
            redactor: Default::default(),
        }
    }

    /// The file could not be read: why.
    pub fn unread(mut self, e: crate::store::fsread::ReadError) -> Outcome<C> {
        self.status = "failed";
        self.error = Some(match e {
            crate::store::fsread::ReadError::Access { message, .. } => message,
            crate::store::fsread::ReadError::File(u) => format!("cannot be read: {u}"),
        });
        self
    }

    /// Refused: why (nothing changed).
    pub fn failed(mut self, why: String) -> Outcome<C> {
        self.status = "failed";
        self.error = Some(why);
        self
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub sessions: usize,
    pub fixed: usize,
    /// Files `--dry-run` would fix.
    pub would_fix: usize,
    pub failed: usize,
    pub run_id: Option<String>,
    pub backup_dir: Option<String>,
    pub dry_run: bool,
    pub errors: Vec<String>,
}

/// What a format brings to the repair run.
pub trait Adapter {
    /// `Claude Code`, `Codex`.
    const CLIENT: &'static str;
    /// `session`, `sessions` / `rollout`, `rollouts`.
    const UNITS: (&'static str, &'static str);
    /// The folder the client lists its files from (`projects folder`,
    /// `sessions folder`): a backup inside it is refused.
    const STORE: &'static str;
    type Changes: Changes;

    /// Whether the backup root `abs` lies where the client would list the
    /// backed-up copies (`files` are the files to repair).
    fn backup_inside(abs: &Path, files: &[PathBuf]) -> bool;

    /// Plan and prove one file: the outcome and, when there is something
    /// to write, what to write.
    fn plan(
        path: &Path,
        dry_run: bool,
        selected: &dyn Fn(&str) -> bool,
    ) -> (Outcome<Self::Changes>, Option<Rewrite>);

    /// Why the file read as `before` may not be written now (a client
    /// writing it), asked again right before the write.
    fn busy(_path: &Path, _before: &[u8]) -> Option<String> {
        None
    }

    /// What is written beside the files (the Codex state database's rows
    /// for its rollouts), planned once the files' own writes are done: an
    /// outcome each (its path the index's), and the write to make, not made
    /// in a dry run.
    fn beside(
        _files: &[PathBuf],
        _selected: &dyn Fn(&str) -> bool,
    ) -> Vec<(Outcome<Self::Changes>, Option<Beside>)> {
        Vec::new()
    }
}

/// A write beside the files ([`Adapter::beside`]): made in the run, its
/// backup folder numbered by the `usize`.
pub type Beside = Box<dyn FnOnce(&mut crate::fix::persist::Run, usize) -> Result<(), String>>;
