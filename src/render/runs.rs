//! `undo --list`: one line per repair run.

use std::io::{self, Write};
use std::path::Path;

use super::sanitize;

/// Whether a run can still be undone. Ordered: a run is as undoable as its
/// least undoable file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunState {
    /// Every file already holds its original bytes.
    Undone,
    /// Every file still holds what the repair wrote.
    Undoable,
    /// A file changed since (or is gone): undo restores nothing it would lose.
    ChangedSince,
}

pub struct RunSummary {
    pub run_id: String,
    pub created: String,
    pub files: usize,
    pub conversations: usize,
    pub state: RunState,
}

pub fn list(
    w: &mut dyn Write,
    root: &Path,
    runs: &[RunSummary],
    backup_dir: Option<&Path>,
) -> io::Result<()> {
    if runs.is_empty() {
        writeln!(
            w,
            "no repair runs under {}",
            sanitize(&root.display().to_string())
        )?;
        return w.flush();
    }
    writeln!(
        w,
        "{:<28} {:<21} {:>5} {:>13}  state",
        "run id", "created", "files", "conversations"
    )?;
    let dir_arg = backup_dir
        .map(|d| {
            format!(
                " --backup-dir {}",
                shell_quote(&sanitize(&d.display().to_string()))
            )
        })
        .unwrap_or_default();
    for r in runs {
        let id = sanitize(&r.run_id);
        let state = match r.state {
            RunState::Undoable => format!("can be undone: convo-doctor undo {id}{dir_arg}"),
            RunState::Undone => "undone (the files hold their originals)".to_string(),
            RunState::ChangedSince => {
                "a file changed since the repair: undo refuses to overwrite it".to_string()
            }
        };
        writeln!(
            w,
            "{:<28} {:<21} {:>5} {:>13}  {state}",
            id,
            sanitize(&r.created),
            r.files,
            r.conversations
        )?;
    }
    writeln!(w, "backups: {}", sanitize(&root.display().to_string()))?;
    w.flush()
}

/// A word a POSIX shell reads back as itself (a hint must work when pasted).
pub(crate) fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("/var/b-1"), "/var/b-1");
        assert_eq!(shell_quote("/my backups"), "'/my backups'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
