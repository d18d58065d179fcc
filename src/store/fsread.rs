//! Careful file reading: never follow a symlink, never open a FIFO or a
//! socket, never read more than a fixed limit.

use std::fs::{self, File, Metadata};
use std::io::Read;
use std::path::Path;

use super::event::Unreadable;

/// The largest file convo-doctor reads (events with huge tool outputs exist;
/// 256 MiB is far beyond any seen, and bounds memory).
pub const READ_LIMIT: u64 = 256 * 1024 * 1024;

/// What kind of thing a directory entry is, from `lstat` (links not followed).
pub fn file_kind(md: &Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let ft = md.file_type();
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("directory")
    } else if ft.is_symlink() {
        Some("symbolic link")
    } else if ft.is_fifo() {
        Some("FIFO")
    } else if ft.is_socket() {
        Some("socket")
    } else {
        Some("device or special file")
    }
}

fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK | O_NOFOLLOW: if the entry was swapped for a FIFO or a
    // link after we looked at it, opening must neither block nor follow.
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
}

/// Read a regular file (not through a link) into memory.
pub fn read_regular(path: &Path) -> Result<(Vec<u8>, Metadata), Unreadable> {
    let md = fs::symlink_metadata(path).map_err(|e| Unreadable::Io(io_reason(&e)))?;
    if let Some(what) = file_kind(&md) {
        return Err(Unreadable::NotAFile(what));
    }
    if md.len() > READ_LIMIT {
        return Err(Unreadable::TooLarge(md.len()));
    }
    read_opened(path)
}

/// [`read_regular`] for a path its directory listing (`d_type`) already
/// showed to be a regular file: the `lstat` is skipped. Opening still
/// neither follows a link nor blocks on a FIFO, and the opened file must be
/// a regular file within the read limit, so an entry swapped after the
/// listing is refused the same way.
pub fn read_listed_regular(path: &Path) -> Result<(Vec<u8>, Metadata), Unreadable> {
    read_opened(path)
}

fn read_opened(path: &Path) -> Result<(Vec<u8>, Metadata), Unreadable> {
    let mut f = open_nonblocking(path).map_err(|e| Unreadable::Io(io_reason(&e)))?;
    let md2 = f.metadata().map_err(|e| Unreadable::Io(io_reason(&e)))?;
    if let Some(what) = file_kind(&md2) {
        return Err(Unreadable::NotAFile(what));
    }
    if md2.len() > READ_LIMIT {
        return Err(Unreadable::TooLarge(md2.len()));
    }
    let mut buf = Vec::with_capacity(md2.len() as usize);
    (&mut f)
        .take(READ_LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Unreadable::Io(io_reason(&e)))?;
    if buf.len() as u64 > READ_LIMIT {
        return Err(Unreadable::TooLarge(buf.len() as u64));
    }
    Ok((buf, md2))
}

/// A short, stable reason for an I/O error (no OS error numbers).
pub fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::NotFound => "it vanished while being read".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}
