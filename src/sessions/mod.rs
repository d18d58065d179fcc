//! The core every JSONL session format shares (issue 26: Claude Code
//! sessions in `src/claude/`, Codex rollouts in `src/codex/`): reading a
//! file into lines and records ([`read`]), listing a store's files without
//! following a link ([`list`]), finding the invoking user's own stores with
//! no PATH ([`discover`]), the report of a file that cannot be read
//! ([`unreadable`]), and the repair run: plan, prove, back up, write,
//! manifest, undo ([`repair`]). What differs — a line's record, the view the
//! client resends, the checks, the edits — is the format's, behind the
//! traits [`read::Record`] and [`repair::Adapter`].

pub mod checks;
pub mod discover;
pub mod list;
pub mod read;
pub mod repair;

pub use read::{Jsonl, Line, LineKind};

use std::path::Path;

use crate::report::{ConversationReport, LoadFailure};
use crate::store::fsread::ReadError;

/// How a format names itself in a report.
pub struct Words {
    /// `claude-code`, `codex`: the report's server kind.
    pub tag: &'static str,
    /// `Claude Code`, `Codex`.
    pub client: &'static str,
    /// `session`, `rollout`.
    pub unit: &'static str,
    /// `the session file`, `the rollout`.
    pub file: &'static str,
    /// The load error's exception when the file cannot be read.
    pub unreadable: &'static str,
}

/// What a report is asked for: the checks selected, and `--events`' rows.
pub struct Ask<'a> {
    pub selected: &'a dyn Fn(&str) -> bool,
    pub event_list: bool,
}

/// The report of one file, as every renderer shows it, from the format's
/// `load` and `report`. A file that cannot be read is a report with a load
/// error (what is wrong with the file: a link, a FIFO, too large), and a
/// scan error (permission, I/O) is one of `access_errors`; `id` is the id
/// such a report carries.
pub fn analyze<A>(
    words: &Words,
    path: &Path,
    display: String,
    ask: &Ask,
    id: fn(&Path) -> String,
    load: fn(&Path) -> Result<A, ReadError>,
    report: fn(A, &Path, ConversationReport, &Ask) -> ConversationReport,
) -> ConversationReport {
    let mut r = ConversationReport::record(display, String::new(), words.tag.into());
    r.id_dashed = None;
    match load(path) {
        Ok(a) => report(a, path, r, ask),
        Err(ReadError::Access { message, .. }) => {
            r.access_errors.push(message);
            r.events.agent_view = None;
            r
        }
        Err(ReadError::File(u)) => {
            r.id = id(path);
            r.events.agent_view = None;
            r.load_error = Some(LoadFailure {
                exception: words.unreadable,
                message: format!("{} cannot be read: {u}", words.file),
            });
            r.verdict = format!(
                "{} cannot resume this {}: the file cannot be read",
                words.client, words.unit
            );
            r
        }
    }
}

/// A file's name without its extension.
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
