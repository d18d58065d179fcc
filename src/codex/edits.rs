//! The edits of one rollout as `repair` reports them (JSON and the human
//! diff), shared by the rollout repair and the state database's row repair.

use std::io::{self, Write};

use serde::Serialize;

use crate::sessions::repair::Changes;

/// One edit, as reported.
#[derive(Debug, Serialize)]
pub struct Edited {
    pub check: &'static str,
    /// The line dropped (numbered as in the rollout read), or `null` for a
    /// line written.
    pub line: Option<usize>,
    pub what: String,
    /// The line removed or written, as the human diff shows it (clipped;
    /// not in JSON, which carries no content).
    #[serde(skip)]
    pub removed: Option<String>,
    #[serde(skip)]
    pub added: Option<String>,
}

/// The edits of one rollout, as reported (`edits` in JSON).
#[derive(Debug, Default, Serialize)]
pub struct Edits {
    pub edits: Vec<Edited>,
}

impl Changes for Edits {
    type Item = Edited;

    fn items(&self) -> &[Edited] {
        &self.edits
    }

    /// The edit with the line it removes or writes (a diff, clipped).
    fn human(e: &Edited, w: &mut dyn Write, r: &dyn Fn(&str) -> String) -> io::Result<()> {
        match e.line {
            Some(l) => writeln!(w, "  line {l}: {} [{}]", r(&e.what), e.check)?,
            None => writeln!(w, "  {} [{}]", r(&e.what), e.check)?,
        }
        if let Some(t) = &e.removed {
            writeln!(w, "  - {}", r(t))?;
        }
        if let Some(t) = &e.added {
            writeln!(w, "  + {}", r(t))?;
        }
        Ok(())
    }
}

/// What became of one rollout.
pub type Outcome = crate::sessions::repair::Outcome<Edits>;
