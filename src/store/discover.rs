//! Find the conversations under a PATH: PATH itself when it is one, else
//! every conversation folder below it (a store). Symbolic links are never
//! followed; nested `subagents/<hex>/` conversations are found too.

use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use super::conversation::is_conversation_dir;

#[derive(Debug, Default)]
pub struct Discovery {
    /// Conversation folders, sorted by path.
    pub conversations: Vec<PathBuf>,
    /// Things passed over, each a sentence naming the path.
    pub notes: Vec<String>,
    /// Whether PATH was itself a conversation (rather than a store).
    pub single: bool,
}

/// Walk `root`. Errors only when `root` itself cannot be read.
pub fn discover(root: &Path) -> Result<Discovery, String> {
    let md = std::fs::metadata(root).map_err(|e| {
        format!(
            "`{}` cannot be read: {}",
            root.display(),
            super::fsread::io_reason(&e)
        )
    })?;
    if !md.is_dir() {
        return Err(format!("`{}` is not a directory", root.display()));
    }
    let mut out = Discovery::default();
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
                let p = e
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                out.notes
                    .push(format!("`{p}` was skipped: {}", walk_reason(&e)));
                continue;
            }
        };
        let ft = entry.file_type();
        if ft.is_symlink() {
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                out.notes.push(format!(
                    "`{}` is a symbolic link to a directory and was not followed",
                    entry.path().display()
                ));
            }
            continue;
        }
        if !ft.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if name == ".convo-doctor" {
            it.skip_current_dir();
            continue;
        }
        if is_conversation_dir(entry.path()) {
            out.conversations.push(entry.path().to_path_buf());
            nested(entry.path(), &mut out);
            it.skip_current_dir();
        }
    }
    out.conversations.sort();
    Ok(out)
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
    let Ok(rd) = std::fs::read_dir(&sub) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| is_conversation_dir(p))
        .collect();
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
