//! Where a report goes: stdout; with `-o FILE`, a temporary file next to
//! FILE that is renamed over it once the report is whole (a reader such as
//! node_exporter's textfile collector sees the old report or the new one,
//! never half of one); with `--quiet`, held back until the exit status is
//! known, and printed only when it is not 0 (cron mails nothing for a clean
//! run).

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit::ExitStatus;

pub struct Output {
    to: To,
}

enum To {
    Stdout(io::Stdout),
    /// `--quiet`: the report so far, in an unlinked temporary file (memory
    /// stays flat whatever the store), or in memory when none can be made.
    Held(Held),
    /// `-o FILE`: the temporary file being written, renamed to `dest` at
    /// the end.
    File {
        file: BufWriter<File>,
        tmp: PathBuf,
        dest: PathBuf,
        done: bool,
    },
}

enum Held {
    Spilled(BufWriter<File>),
    Memory(Vec<u8>),
}

/// A name no other process picks: the pid, the time and a counter.
fn unique() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{}-{nanos:09}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Create `path`, which must not exist (never through a link).
fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

impl Output {
    /// The report's destination: `file` (`-o`), else stdout, held back
    /// when `quiet`. A FILE whose folder cannot be written is an error now,
    /// before anything is scanned.
    pub fn new(file: Option<&Path>, quiet: bool) -> anyhow::Result<Output> {
        if let Some(dest) = file {
            let dir = match dest.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let name = dest
                .file_name()
                .with_context(|| format!("`{}` is not a file name", dest.display()))?;
            // hidden and not ending in `.prom`: the textfile collector
            // never reads it half-written
            let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), unique()));
            let f = create_new(&tmp, 0o666)
                .with_context(|| format!("cannot write `{}`", dest.display()))?;
            return Ok(Output {
                to: To::File {
                    file: BufWriter::new(f),
                    tmp,
                    dest: dest.to_path_buf(),
                    done: false,
                },
            });
        }
        if quiet {
            let held = std::env::temp_dir().join(format!(".convo-doctor-{}", unique()));
            let held = match create_new(&held, 0o600) {
                Ok(f) => {
                    let _ = fs::remove_file(&held);
                    Held::Spilled(BufWriter::new(f))
                }
                Err(_) => Held::Memory(Vec::new()),
            };
            return Ok(Output { to: To::Held(held) });
        }
        Ok(Output {
            to: To::Stdout(io::stdout()),
        })
    }

    /// Whether the report goes to the terminal (or pipe) as it is written.
    pub fn is_stdout(&self) -> bool {
        matches!(self.to, To::Stdout(_))
    }

    /// End the report: with `-o`, make it FILE (flushed, synced, renamed);
    /// with `--quiet`, print it unless `status` is 0. Returns the exit
    /// status: `status`, or 2 when the report could not be written.
    pub fn finish(mut self, status: ExitStatus) -> ExitStatus {
        let result = match &mut self.to {
            To::Stdout(s) => s.flush(),
            // --quiet and all is well: nothing printed
            To::Held(_) if status == ExitStatus::Success => Ok(()),
            To::Held(Held::Memory(v)) => io::stdout()
                .write_all(v)
                .and_then(|()| io::stdout().flush()),
            To::Held(Held::Spilled(w)) => (|| {
                w.flush()?;
                let f = w.get_mut();
                f.rewind()?;
                let mut out = io::stdout().lock();
                io::copy(&mut Read::by_ref(f), &mut out)?;
                out.flush()
            })(),
            To::File {
                file,
                tmp,
                dest,
                done,
            } => {
                let r = (|| {
                    file.flush()?;
                    file.get_ref().sync_all()?;
                    fs::rename(&*tmp, &*dest)
                })();
                *done = r.is_ok();
                r.map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot write `{}`: {e}", dest.display()))
                })
            }
        };
        match result {
            Ok(()) => status,
            // a reader that has seen enough (`| head`) is not a failure
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => status,
            Err(e) => {
                super::error(&format!("cannot write the report: {e}"));
                ExitStatus::Error
            }
        }
    }
}

impl Drop for Output {
    /// A report never finished (the run failed first) leaves FILE as it was.
    fn drop(&mut self) {
        if let To::File { tmp, done, .. } = &self.to {
            if !done {
                let _ = fs::remove_file(tmp);
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.to {
            To::Stdout(s) => s.write(buf),
            To::Held(Held::Spilled(w)) => w.write(buf),
            To::Held(Held::Memory(v)) => v.write(buf),
            To::File { file, .. } => file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.to {
            To::Stdout(s) => s.lock().write_all(buf),
            To::Held(Held::Spilled(w)) => w.write_all(buf),
            To::Held(Held::Memory(v)) => v.write_all(buf),
            To::File { file, .. } => file.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.to {
            To::Stdout(s) => s.flush(),
            // held or in a file: flushed once, at the end
            _ => Ok(()),
        }
    }
}
