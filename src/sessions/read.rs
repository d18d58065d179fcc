//! A JSONL session file read into lines and records: bounded, without
//! following a link or blocking on a FIFO (the folder reader's
//! [`read_regular_checked`](crate::store::fsread::read_regular_checked)),
//! every secret-looking value learned by the redactor as it is parsed. What
//! a record holds is the format's ([`Record`]); the lines, their byte ranges
//! and the lines that are no record are the same for every format.

use std::path::Path;

use serde_json::{Map, Value};

use crate::secrets::Redactor;
use crate::store::fsread::{self, ReadError};

/// What a format reads out of one JSON object line.
pub trait Record: Sized {
    /// The record of the object `o` (the line's value `v`), its secrets
    /// learned by `redactor`.
    fn parse(o: &Map<String, Value>, v: &Value, redactor: &mut Redactor) -> Self;
    /// Why a line that is not JSON is not (the JSON ending early is said
    /// the same way by every format).
    fn not_json(e: &serde_json::Error) -> String;
}

/// What one line of the file is.
#[derive(Clone, Debug)]
pub enum LineKind<R> {
    Record(Box<R>),
    /// Empty or only white space.
    Blank,
    /// Not a JSON object: the client skips it. `truncated` when it is the
    /// last line and has no newline after it (a write cut short).
    Invalid {
        reason: String,
        truncated: bool,
    },
}

#[derive(Clone, Debug)]
pub struct Line<R> {
    /// 1-based line number.
    pub no: usize,
    /// Byte range in the file (without the newline).
    pub start: usize,
    pub end: usize,
    pub kind: LineKind<R>,
}

impl<R> Line<R> {
    pub fn record(&self) -> Option<&R> {
        match &self.kind {
            LineKind::Record(r) => Some(r),
            _ => None,
        }
    }
}

/// A session file as read.
pub struct Jsonl<R> {
    pub lines: Vec<Line<R>>,
    /// The file's bytes, for a repair's rewrite and proof.
    pub bytes: Vec<u8>,
    pub redactor: Redactor,
}

impl<R> Jsonl<R> {
    /// The records, with their line indices.
    pub fn records(&self) -> impl DoubleEndedIterator<Item = (usize, &R)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.record().map(|r| (i, r)))
    }

    /// A line's bytes (without its newline).
    pub fn text(&self, i: usize) -> &[u8] {
        &self.bytes[self.lines[i].start..self.lines[i].end]
    }

    /// "line 42", for line index `i`.
    pub fn line_name(&self, i: usize) -> String {
        format!("line {}", self.lines[i].no)
    }

    /// The lines that are no JSON object: (line index, reason, cut short).
    pub fn invalid(&self) -> impl Iterator<Item = (usize, &str, bool)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match &l.kind {
                LineKind::Invalid { reason, truncated } => Some((i, reason.as_str(), *truncated)),
                _ => None,
            })
    }
}

/// Read and parse a session file. A scan error (permission, I/O) or what is
/// wrong with the file itself (a link, a FIFO, too large) is the caller's
/// to report.
pub fn read<R: Record>(path: &Path) -> Result<Jsonl<R>, ReadError> {
    let (bytes, _) = fsread::read_regular_checked(path)?;
    Ok(parse(bytes))
}

/// Parse a session's bytes (one JSON record a line), in one pass.
pub fn parse<R: Record>(bytes: Vec<u8>) -> Jsonl<R> {
    let mut redactor = Redactor::default();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut no = 0;
    while start < bytes.len() {
        no += 1;
        let (end, next, newline) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(n) => (start + n, start + n + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let kind = parse_line(&bytes[start..end], !newline, &mut redactor);
        lines.push(Line {
            no,
            start,
            end,
            kind,
        });
        start = next;
    }
    Jsonl {
        lines,
        bytes,
        redactor,
    }
}

fn parse_line<R: Record>(
    text: &[u8],
    last_unterminated: bool,
    redactor: &mut Redactor,
) -> LineKind<R> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return LineKind::Blank;
    }
    let v: Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => {
            return LineKind::Invalid {
                reason: if e.is_eof() {
                    "the JSON ends early".into()
                } else {
                    R::not_json(&e)
                },
                truncated: last_unterminated,
            }
        }
    };
    let Value::Object(o) = &v else {
        return LineKind::Invalid {
            reason: "JSON but not an object".into(),
            truncated: false,
        };
    };
    LineKind::Record(Box::new(R::parse(o, &v, redactor)))
}

/// Whether the first 64 KiB of `path` hold any of `needles` and none of
/// `never`: how a format tells its files from other JSON Lines files. The
/// file is opened without following a link or blocking on a FIFO, and must
/// be a regular file.
pub fn head_says(path: &Path, needles: &[&[u8]], never: &[&[u8]]) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::new();
    if f.take(64 * 1024).read_to_end(&mut head).is_err() {
        return false;
    }
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    needles.iter().any(|n| has(n)) && !never.iter().any(|n| has(n))
}
