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

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Something about the file itself (a link, a FIFO, too large, gone
    /// while being read): a finding about the conversation.
    File(Unreadable),
    /// This user may not read it, or the disk failed: the file may well be
    /// fine, so this is an error of the scan, never a finding. `message`
    /// names the path, the uid and the OS's words; `reason` is the short
    /// reason an [`Unreadable`] carries.
    Access { message: String, reason: String },
}

impl From<ReadError> for Unreadable {
    fn from(e: ReadError) -> Unreadable {
        match e {
            ReadError::File(u) => u,
            ReadError::Access { reason, .. } => Unreadable::Io(reason),
        }
    }
}

impl ReadError {
    fn io(path: &Path, e: &std::io::Error) -> ReadError {
        match access_error(path, e) {
            Some(message) => ReadError::Access {
                message,
                reason: io_reason(e),
            },
            None => ReadError::File(Unreadable::Io(io_reason(e))),
        }
    }
}

/// The scan error for `e` met on `path`, when `e` says nothing about the
/// file itself: permission denied (`cannot read `PATH` as uid N: Permission
/// denied`: another user, such as the server's, may read it fine) or an I/O
/// failure of the disk or the network file system (`Input/output error`,
/// a stale NFS handle, a FUSE mount gone). `None` for every other error
/// (a file that vanished while being read is a race, not a scan error).
pub fn access_error(path: &Path, e: &std::io::Error) -> Option<String> {
    let p = path.display();
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        let uid = rustix::process::geteuid().as_raw();
        return Some(format!("cannot read `{p}` as uid {uid}: {}", os_words(e)));
    }
    let errno = rustix::io::Errno::from_io_error(e)?;
    [
        rustix::io::Errno::IO,
        rustix::io::Errno::STALE,
        rustix::io::Errno::NOTCONN,
    ]
    .contains(&errno)
    .then(|| format!("cannot read `{p}`: {}", os_words(e)))
}

/// The OS's own words for `e` ("Permission denied"), without the error number.
pub fn os_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Read a regular file (not through a link) into memory.
pub fn read_regular(path: &Path) -> Result<(Vec<u8>, Metadata), Unreadable> {
    read_regular_checked(path).map_err(Unreadable::from)
}

/// [`read_regular`], telling a scan error (permission, I/O) apart from what
/// is wrong with the file.
pub fn read_regular_checked(path: &Path) -> Result<(Vec<u8>, Metadata), ReadError> {
    let md = fs::symlink_metadata(path).map_err(|e| ReadError::io(path, &e))?;
    if let Some(what) = file_kind(&md) {
        return Err(ReadError::File(Unreadable::NotAFile(what)));
    }
    if md.len() > READ_LIMIT {
        return Err(ReadError::File(Unreadable::TooLarge(md.len())));
    }
    read_opened(path)
}

/// [`read_regular_checked`] for a path its directory listing (`d_type`)
/// already showed to be a regular file: the `lstat` is skipped. Opening
/// still neither follows a link nor blocks on a FIFO, and the opened file
/// must be a regular file within the read limit, so an entry swapped after
/// the listing is refused the same way.
pub fn read_listed_regular(path: &Path) -> Result<(Vec<u8>, Metadata), ReadError> {
    read_opened(path)
}

fn read_opened(path: &Path) -> Result<(Vec<u8>, Metadata), ReadError> {
    let io = |e: std::io::Error| ReadError::io(path, &e);
    let file = |u: Unreadable| ReadError::File(u);
    let mut f = open_nonblocking(path).map_err(io)?;
    let md2 = f.metadata().map_err(io)?;
    if let Some(what) = file_kind(&md2) {
        return Err(file(Unreadable::NotAFile(what)));
    }
    if md2.len() > READ_LIMIT {
        return Err(file(Unreadable::TooLarge(md2.len())));
    }
    let mut buf = Vec::with_capacity(md2.len() as usize);
    (&mut f)
        .take(READ_LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > READ_LIMIT {
        return Err(file(Unreadable::TooLarge(buf.len() as u64)));
    }
    Ok((buf, md2))
}

/// A short, stable reason for an I/O error (no OS error numbers).
pub fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::NotFound => "it vanished while being read".into(),
        _ => os_words(e),
    }
}
