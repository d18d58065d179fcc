//! What a Claude Code repair did to one session, as `repair` reports it:
//! each re-link (`claude-broken-parent`) and each call answered
//! (`claude-unpaired-tool`), in JSON (`relinked`, `answered`) and in the
//! human output.

use std::io::{self, Write};

use serde::Serialize;

use super::checks::UNPAIRED_TOOL;
use crate::sessions::repair::Changes;

/// One re-link, as reported.
#[derive(Debug, Serialize)]
pub struct Relinked {
    pub line: usize,
    /// `null`, the phantom uuid, or the loop's target, as written.
    pub parent_was: Option<String>,
    /// `null` for a compaction's boundary.
    pub parent_now: Option<String>,
    /// The line of the record it now names.
    pub to_line: Option<usize>,
}

/// A call answered as the client answers one whose result was never
/// recorded (`claude-unpaired-tool`).
#[derive(Debug, Serialize)]
pub struct Answered {
    /// The line of the call (the assistant record holding the `tool_use`).
    pub line: usize,
    /// The calls answered (`tool_use` ids).
    pub tool_use_ids: Vec<String>,
    /// The line the answer is written on (after the repair).
    pub written_at: usize,
    /// The line of the record re-linked onto the answer (the call's child
    /// on the chain, as numbered before the repair), if the chain goes on.
    pub relinked_child: Option<usize>,
}

/// One edit of a session.
#[derive(Debug)]
pub enum Edit {
    Relinked(Relinked),
    Answered(Answered),
}

/// The edits of one session, as reported (`relinked` and `answered` in
/// JSON).
#[derive(Debug, Default)]
pub struct Relinks {
    pub edits: Vec<Edit>,
}

impl Relinks {
    pub fn relinked(&self) -> impl Iterator<Item = &Relinked> {
        self.edits.iter().filter_map(|e| match e {
            Edit::Relinked(r) => Some(r),
            Edit::Answered(_) => None,
        })
    }

    pub fn answered(&self) -> impl Iterator<Item = &Answered> {
        self.edits.iter().filter_map(|e| match e {
            Edit::Answered(a) => Some(a),
            Edit::Relinked(_) => None,
        })
    }
}

impl Serialize for Relinks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("relinked", &self.relinked().collect::<Vec<_>>())?;
        m.serialize_entry("answered", &self.answered().collect::<Vec<_>>())?;
        m.end()
    }
}

impl Changes for Relinks {
    type Item = Edit;

    fn items(&self) -> &[Edit] {
        &self.edits
    }

    fn human(e: &Edit, w: &mut dyn Write, r: &dyn Fn(&str) -> String) -> io::Result<()> {
        let l = match e {
            Edit::Relinked(l) => l,
            Edit::Answered(a) => {
                let ids: Vec<String> = a.tool_use_ids.iter().map(|i| r(i)).collect();
                let child = match a.relinked_child {
                    Some(c) => format!(", line {c} re-linked onto it"),
                    None => String::new(),
                };
                return writeln!(
                    w,
                    "  line {}: tool_use {} answered as interrupted (the client's own answer), written at line {}{child} [{UNPAIRED_TOOL}]",
                    a.line,
                    ids.join(", "),
                    a.written_at
                );
            }
        };
        let now = match (&l.parent_now, l.to_line) {
            (Some(p), Some(t)) => format!("\"{}\" (line {t})", r(p)),
            (Some(p), None) => format!("\"{}\"", r(p)),
            (None, _) => "null (a compaction's boundary is a root)".into(),
        };
        let was = match &l.parent_was {
            Some(p) => format!("\"{}\"", r(p)),
            None => "null".into(),
        };
        let line = l.line;
        writeln!(
            w,
            "  line {line}: parentUuid {was} -> {now} [claude-broken-parent]"
        )
    }
}
