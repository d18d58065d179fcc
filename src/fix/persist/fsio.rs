//! Descriptor-relative file operations: no link is ever followed, no FIFO
//! ever blocks a read, no read is unbounded.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};

use super::{crash_point, temp_name};

pub(super) fn errno(e: rustix::io::Errno) -> io::Error {
    e.into()
}

pub(super) fn is_dir(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

pub(super) fn kind_of(st: &Stat) -> &'static str {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        _ => "a device or special file",
    }
}

pub(super) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Open the directory `name` below `parent`, refusing a link.
pub(super) fn open_dir_at<Fd: AsFd>(parent: Fd, name: &str) -> io::Result<OwnedFd> {
    rfs::openat(parent, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::other(format!("`{name}` is a link or not a directory"))
        } else {
            errno(e)
        }
    })
}

/// Open a directory by absolute path; the last component must not be a link.
pub(super) fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    rfs::openat(rfs::CWD, path, DIR_FLAGS, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::other("it is a link or not a directory")
        } else {
            errno(e)
        }
    })
}

/// Open the directory at the absolute `path` from `/`, one component at a
/// time, each with `O_NOFOLLOW|O_DIRECTORY` relative to the one before: no
/// link anywhere on the way is followed (not only in the last component),
/// and `visit` sees each directory as opened (its path and `fstat`), so an
/// ownership check is made on what was opened, never on a path looked up
/// again. A `.` or `..` component is refused.
pub(crate) fn walk_nofollow(
    path: &Path,
    mut visit: impl FnMut(&Path, &Stat) -> Result<(), String>,
) -> Result<OwnedFd, String> {
    use std::path::Component;
    if !path.is_absolute() {
        return Err(format!("`{}` is not an absolute path", path.display()));
    }
    let mut here =
        rfs::openat(rfs::CWD, "/", DIR_FLAGS, Mode::empty()).map_err(|e| e.to_string())?;
    let mut at = std::path::PathBuf::from("/");
    let st = rfs::fstat(&here).map_err(|e| e.to_string())?;
    visit(&at, &st)?;
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(name) => {
                at.push(name);
                here = rfs::openat(&here, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
                    if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
                        format!("`{}` is a symbolic link or not a directory", at.display())
                    } else {
                        format!("`{}`: {}", at.display(), errno(e))
                    }
                })?;
                let st = rfs::fstat(&here).map_err(|e| e.to_string())?;
                visit(&at, &st)?;
            }
            _ => return Err(format!("`{}` has a `.` or `..` component", path.display())),
        }
    }
    Ok(here)
}

/// [`walk_nofollow`] without a check on the way.
pub(super) fn open_dir_nofollow(path: &Path) -> Result<OwnedFd, String> {
    walk_nofollow(path, |_, _| Ok(()))
}

/// Split a relative path into checked components: no empty, `.` or `..`
/// component, not absolute.
pub(super) fn components(rel: &str) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.is_empty()
        || parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0'))
    {
        return Err(format!("`{rel}` is not a plain relative path"));
    }
    Ok(parts)
}

/// The directory holding `rel` below `root` (each step opened without
/// following links) and the file name.
pub(super) fn open_parent<Fd: AsFd>(root: Fd, rel: &str) -> io::Result<(OwnedFd, String)> {
    let parts = components(rel).map_err(io::Error::other)?;
    let (name, dirs) = parts.split_last().expect("at least one component");
    let mut dir = rfs::openat(root, ".", DIR_FLAGS, Mode::empty()).map_err(errno)?;
    for d in dirs {
        dir = open_dir_at(&dir, d)?;
    }
    Ok((dir, name.to_string()))
}

/// Read a regular file below `dir` (`O_NOFOLLOW|O_NONBLOCK`: a link is
/// refused and a FIFO never blocks), with its `fstat`.
pub(super) fn read_at<Fd: AsFd>(dir: Fd, name: &str) -> io::Result<(Vec<u8>, Stat)> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            io::Error::other("it is a symbolic link, which is not followed")
        } else {
            errno(e)
        }
    })?;
    let st = rfs::fstat(&fd).map_err(errno)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::other(format!(
            "it is {}, not a regular file",
            kind_of(&st)
        )));
    }
    let limit = crate::store::fsread::READ_LIMIT;
    if st.st_size as u64 > limit {
        return Err(io::Error::other("it is over the read limit"));
    }
    let mut buf = Vec::new();
    File::from(fd).take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(io::Error::other("it is over the read limit"));
    }
    Ok((buf, st))
}

/// Who owns a file and its permission bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

impl Owner {
    pub(super) fn of(st: &Stat) -> Owner {
        Owner {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode & 0o7777,
        }
    }
}

/// Write `bytes` as `name` in `dir`, atomically: a temp file created 0600
/// with `O_CREAT|O_EXCL|O_NOFOLLOW` beside it, given `owner` (fchown, then
/// fchmod, checked with fstat) before anything else can see it under the
/// final name, synced, renamed over `name` relative to the same directory
/// handle, and the directory synced. `owner: None` keeps the new file 0600
/// and owned by the invoking user.
pub(super) fn write_at(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    owner: Option<Owner>,
    hooks: bool,
) -> io::Result<()> {
    let tmp = temp_name(name, std::process::id());
    let fd = rfs::openat(
        dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(errno)?;
    let result = (|| {
        if hooks {
            crash_point("after-create");
        }
        let mut f = File::from(fd);
        f.write_all(bytes)?;
        if let Some(o) = owner {
            let st = rfs::fstat(&f).map_err(errno)?;
            if st.st_uid != o.uid || st.st_gid != o.gid {
                rfs::fchown(
                    &f,
                    Some(rustix::fs::Uid::from_raw(o.uid)),
                    Some(rustix::fs::Gid::from_raw(o.gid)),
                )
                .map_err(|e| {
                    io::Error::other(format!(
                        "cannot give the new file the original's owner {}:{} ({e}); the original was left alone",
                        o.uid, o.gid
                    ))
                })?;
            }
            // after fchown, which may clear set-id bits
            rfs::fchmod(&f, Mode::from_raw_mode(o.mode)).map_err(errno)?;
            let st = rfs::fstat(&f).map_err(errno)?;
            if Owner::of(&st) != o {
                return Err(io::Error::other(format!(
                    "the new file is {}:{} mode {:o}, not the original's {}:{} mode {:o}",
                    st.st_uid,
                    st.st_gid,
                    st.st_mode & 0o7777,
                    o.uid,
                    o.gid,
                    o.mode
                )));
            }
        }
        f.sync_all()?;
        drop(f);
        if hooks {
            crash_point("before-rename");
        }
        rfs::renameat(dir, tmp.as_str(), dir, name).map_err(errno)?;
        rfs::fsync(dir).map_err(errno)
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
    }
    result
}

/// Write `bytes` to `path` atomically, 0600 and owned by the invoking user
/// (the parent directory is opened by path; its last component must not be
/// a link).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = open_dir_path(path.parent().unwrap_or(Path::new(".")))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("no file name"))?;
    write_at(&dir, name, bytes, None, false)
}

/// Check that `dir` still is what `path` names now (walking from `/`
/// without following any link) — a write into a
/// directory that was moved away mid-repair did not land where it was meant.
pub(super) fn still_at(dir: &OwnedFd, root: &Path, rel_dir: &[&str]) -> Result<(), String> {
    let want = rfs::fstat(dir).map_err(|e| e.to_string())?;
    let moved = || {
        format!(
            "the folder was moved or replaced while it was being repaired: the new bytes went to the directory that was read, which is no longer at `{}`",
            root.display()
        )
    };
    let mut here = open_dir_nofollow(root).map_err(|_| moved())?;
    for d in rel_dir {
        here = open_dir_at(&here, d).map_err(|_| moved())?;
    }
    let now = rfs::fstat(&here).map_err(|e| e.to_string())?;
    if (now.st_dev, now.st_ino) != (want.st_dev, want.st_ino) {
        return Err(moved());
    }
    Ok(())
}

pub(super) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}
