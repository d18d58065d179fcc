//! Careful file reading: never follow a symlink, never open a FIFO or a
//! socket, never read more than a fixed limit.
//!
//! Long because: every careful-read rule (no link, no FIFO, bounded, owner)
//! lives in one place.

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

// ---------------------------------------------------------------------------
// Reading below a directory held open.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};

/// A directory opened once and held: everything below it is read relative
/// to the descriptor (`openat`), every component without following a link,
/// so what was read, proven and written is the one folder opened, whatever
/// happens to the path meanwhile. `path` is how it is shown (and how a
/// manifest names it); it is never opened again to reach the folder.
#[derive(Clone, Debug)]
pub struct DirFd {
    fd: Arc<OwnedFd>,
    path: PathBuf,
    /// The operator's PATH this folder was reached from, held, and the
    /// components from it (each opened without following a link): how
    /// [`DirFd::reached_again`] checks that the path still leads here.
    from: Option<(Arc<OwnedFd>, Vec<std::ffi::OsString>)>,
}

/// What `lstat` (or `fstat`) says of an entry, for the store model.
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    pub kind: FileType,
    pub len: u64,
    pub mtime: Option<SystemTime>,
    pub dev: u64,
    pub ino: u64,
}

impl Meta {
    fn of(st: &Stat) -> Meta {
        let mtime = (st.st_mtime >= 0).then(|| {
            std::time::UNIX_EPOCH
                + std::time::Duration::new(st.st_mtime as u64, st.st_mtime_nsec as u32)
        });
        Meta {
            kind: FileType::from_raw_mode(st.st_mode),
            len: st.st_size as u64,
            mtime,
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
    /// As `std::fs::Metadata::modified`.
    pub fn modified(&self) -> std::io::Result<SystemTime> {
        self.mtime
            .ok_or_else(|| std::io::Error::other("no modification time"))
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn is_file(&self) -> bool {
        self.kind == FileType::RegularFile
    }
    pub fn is_dir(&self) -> bool {
        self.kind == FileType::Directory
    }
    /// What it is when it is not a regular file (as [`file_kind`]).
    pub fn kind_name(&self) -> Option<&'static str> {
        match self.kind {
            FileType::RegularFile => None,
            FileType::Directory => Some("directory"),
            FileType::Symlink => Some("symbolic link"),
            FileType::Fifo => Some("FIFO"),
            FileType::Socket => Some("socket"),
            _ => Some("device or special file"),
        }
    }
}

const HOLD: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

fn io_err(e: rustix::io::Errno) -> std::io::Error {
    e.into()
}

/// Open `name` below `dir` as a held directory, never through a link.
fn hold_below<Fd: AsFd>(dir: Fd, name: &std::ffi::OsStr) -> std::io::Result<OwnedFd> {
    let fd = rfs::openat(dir, name, HOLD | OFlags::NOFOLLOW, Mode::empty()).map_err(io_err)?;
    // O_PATH|O_NOFOLLOW opens a link itself: it must be a directory
    let st = rfs::fstat(&fd).map_err(io_err)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Err(std::io::Error::other(format!(
            "`{}` is a symbolic link or not a directory, which is not followed",
            name.to_string_lossy()
        )));
    }
    Ok(fd)
}

impl DirFd {
    /// Open a folder the operator named (a link in it is followed: they
    /// named it) and hold it.
    pub fn open(path: &Path) -> std::io::Result<DirFd> {
        let fd = rfs::openat(rfs::CWD, path, HOLD, Mode::empty()).map_err(io_err)?;
        let fd = Arc::new(fd);
        Ok(DirFd {
            fd: fd.clone(),
            path: path.to_path_buf(),
            from: Some((fd, Vec::new())),
        })
    }

    /// The folder at `rel` below this one (each component opened without
    /// following a link), shown as `path`.
    pub fn open_below(&self, rel: &Path, path: &Path) -> std::io::Result<DirFd> {
        let mut here: Option<OwnedFd> = None;
        let mut names = Vec::new();
        for c in rel.components() {
            let std::path::Component::Normal(name) = c else {
                return Err(std::io::Error::other(format!(
                    "`{}` is not a plain relative path",
                    rel.display()
                )));
            };
            here = Some(match &here {
                None => hold_below(&*self.fd, name)?,
                Some(d) => hold_below(d, name)?,
            });
            names.push(name.to_owned());
        }
        let Some(fd) = here else {
            return Ok(self.clone());
        };
        let from = self.from.as_ref().map(|(base, pre)| {
            let mut all = pre.clone();
            all.extend(names);
            (base.clone(), all)
        });
        Ok(DirFd {
            fd: Arc::new(fd),
            path: path.to_path_buf(),
            from,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Device and inode of the folder held.
    pub fn dev_ino(&self) -> std::io::Result<(u64, u64)> {
        let st = rfs::fstat(&*self.fd).map_err(io_err)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// The folder held, opened for reading (listing, fsync, flock): `.`
    /// relative to the descriptor, the same directory whatever the path
    /// names now.
    pub fn reopen(&self) -> std::io::Result<OwnedFd> {
        rfs::openat(
            &*self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io_err)
    }

    /// Whether the operator's PATH still leads to this very folder (the
    /// same components from the PATH held, none of them a link now): false
    /// when a folder on the way was replaced, or swapped for a link, since
    /// it was opened.
    pub fn reached_again(&self) -> bool {
        let Some((base, names)) = &self.from else {
            return false;
        };
        let mut here: Option<OwnedFd> = None;
        for name in names {
            let next = match &here {
                None => hold_below(&**base, name),
                Some(d) => hold_below(d, name),
            };
            match next {
                Ok(fd) => here = Some(fd),
                Err(_) => return false,
            }
        }
        let now = match &here {
            None => rfs::fstat(&**base),
            Some(d) => rfs::fstat(d),
        };
        match (now, rfs::fstat(&*self.fd)) {
            (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
            _ => false,
        }
    }

    /// The directory holding `rel` (each folder on the way opened without
    /// following a link) and the last component.
    fn parent_of<'a>(&self, rel: &'a str) -> std::io::Result<(Option<OwnedFd>, &'a str)> {
        let mut parts = rel.split('/').collect::<Vec<_>>();
        let name = parts.pop().unwrap_or_default();
        if name.is_empty()
            || parts
                .iter()
                .chain([&name])
                .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return Err(std::io::Error::other(format!(
                "`{rel}` is not a plain relative path"
            )));
        }
        let mut here: Option<OwnedFd> = None;
        for d in parts {
            here = Some(match &here {
                None => hold_below(&*self.fd, std::ffi::OsStr::new(d))?,
                Some(x) => hold_below(x, std::ffi::OsStr::new(d))?,
            });
        }
        Ok((here, name))
    }

    fn at<T>(
        &self,
        rel: &str,
        f: impl FnOnce(BorrowedFd<'_>, &str) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let (dir, name) = self.parent_of(rel)?;
        match &dir {
            Some(d) => f(d.as_fd(), name),
            None => f(self.fd.as_fd(), name),
        }
    }

    /// The folder `rel` is reached through and its name there: `events`
    /// (held once by the caller, without following a link) for a file of
    /// the log, this folder otherwise. A log of many events is read and
    /// `stat`ed through `events` many times while a repair is planned: one
    /// system call each, not one more per path component.
    pub fn route<'a>(&'a self, events: Option<&'a DirFd>, rel: &'a str) -> (&'a DirFd, &'a str) {
        match (events, rel.strip_prefix("events/")) {
            (Some(ev), Some(name)) if !name.contains('/') => (ev, name),
            _ => (self, rel),
        }
    }

    /// `lstat` of `rel` (a link is not followed).
    pub fn lstat(&self, rel: &str) -> std::io::Result<Meta> {
        self.at(rel, |d, n| {
            rfs::statat(d, n, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| Meta::of(&st))
                .map_err(io_err)
        })
    }

    /// `stat` of `rel`, following a link in its last component (only ever
    /// to tell what the SDK's own listing would take it for).
    pub fn stat(&self, rel: &str) -> std::io::Result<Meta> {
        self.at(rel, |d, n| {
            rfs::statat(d, n, AtFlags::empty())
                .map(|st| Meta::of(&st))
                .map_err(io_err)
        })
    }

    /// Open `rel` with `flags` (`O_NOFOLLOW` added).
    pub fn open_file(&self, rel: &str, flags: OFlags) -> std::io::Result<OwnedFd> {
        self.at(rel, |d, n| {
            rfs::openat(
                d,
                n,
                flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(io_err)
        })
    }

    /// The entries of the folder `rel` ("" for this one), with the type the
    /// listing gives (`d_type`; `None` when it does not say).
    pub fn list(&self, rel: &str) -> std::io::Result<Vec<(String, Option<FileType>)>> {
        let dir = if rel.is_empty() {
            self.reopen()?
        } else {
            let held = self.at(rel, |d, n| hold_below(d, std::ffi::OsStr::new(n)))?;
            rfs::openat(
                &held,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(io_err)?
        };
        let mut out = Vec::new();
        for ent in rfs::Dir::read_from(&dir).map_err(io_err)? {
            let ent = ent.map_err(io_err)?;
            let name = ent.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let ft = ent.file_type();
            out.push((name, (ft != FileType::Unknown).then_some(ft)));
        }
        Ok(out)
    }

    /// Read the regular file `rel`, like [`read_regular_checked`]:
    /// `lstat` first (unless `listed_regular`: the listing said it is a
    /// regular file), then opened `O_NOFOLLOW|O_NONBLOCK`, checked with
    /// `fstat`, read within the limit.
    pub fn read_regular(
        &self,
        rel: &str,
        listed_regular: bool,
    ) -> Result<(Vec<u8>, Meta), ReadError> {
        let shown = self.path.join(rel);
        let io = |e: std::io::Error| ReadError::io(&shown, &e);
        let file = |u: Unreadable| ReadError::File(u);
        if !listed_regular {
            let md = self.lstat(rel).map_err(io)?;
            if let Some(what) = md.kind_name() {
                return Err(file(Unreadable::NotAFile(what)));
            }
            if md.len > READ_LIMIT {
                return Err(file(Unreadable::TooLarge(md.len)));
            }
        }
        let fd = self
            .open_file(rel, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(io)?;
        let md = Meta::of(&rfs::fstat(&fd).map_err(|e| io(io_err(e)))?);
        if let Some(what) = md.kind_name() {
            return Err(file(Unreadable::NotAFile(what)));
        }
        if md.len > READ_LIMIT {
            return Err(file(Unreadable::TooLarge(md.len)));
        }
        let mut buf = Vec::with_capacity(md.len as usize);
        File::from(fd)
            .take(READ_LIMIT + 1)
            .read_to_end(&mut buf)
            .map_err(io)?;
        if buf.len() as u64 > READ_LIMIT {
            return Err(file(Unreadable::TooLarge(buf.len() as u64)));
        }
        Ok((buf, md))
    }
}
