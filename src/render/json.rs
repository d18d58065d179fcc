//! `--format json` (one document, streamed) and `--format jsonl`.

use std::io::{self, Write};

use super::{Renderer, Summary};
use crate::report::ConversationReport;

pub const SCHEMA_VERSION: u32 = 1;

pub struct Json {
    lines: bool,
    count: usize,
}

impl Json {
    pub fn document() -> Self {
        Json {
            lines: false,
            count: 0,
        }
    }
    pub fn lines() -> Self {
        Json {
            lines: true,
            count: 0,
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> io::Result<String> {
    serde_json::to_string(v).map_err(io::Error::other)
}

impl Renderer for Json {
    fn conversation(&mut self, w: &mut dyn Write, r: &ConversationReport) -> io::Result<()> {
        // Serialized text passes through the conversation's redactor (which
        // also knows the JSON-escaped spelling of each secret).
        let text = to_json(r)?;
        let text = r.redactor.redact(&text);
        if self.lines {
            writeln!(w, "{text}")?;
        } else {
            if self.count == 0 {
                write!(
                    w,
                    "{{\"schema_version\":{SCHEMA_VERSION},\"conversations\":["
                )?;
            } else {
                write!(w, ",")?;
            }
            write!(w, "{text}")?;
        }
        self.count += 1;
        Ok(())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let summary = to_json(s)?;
        if self.lines {
            writeln!(w, "{{\"summary\":{summary}}}")?;
        } else {
            if self.count == 0 {
                write!(
                    w,
                    "{{\"schema_version\":{SCHEMA_VERSION},\"conversations\":["
                )?;
            }
            writeln!(w, "],\"summary\":{summary}}}")?;
        }
        w.flush()
    }
}
