//! `--format json` (one document, streamed) and `--format jsonl`.

use std::io::{self, Write};

use super::{Renderer, Summary};
use crate::report::ConversationReport;
use crate::secrets::redact_all;

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

/// JSON text that cannot drive a terminal when printed raw: serde escapes
/// C0 controls, and this escapes what it leaves (DEL, C1 controls such as
/// U+009B CSI, bidi and zero-width characters) as `\uXXXX`. Such characters
/// can only occur inside strings, where the escape means the same.
pub fn json_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(super::is_unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if super::is_unsafe_char(c) {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A JSON object with `"schema_version"` added as its last key: every line
/// of JSONL says which schema it follows, and still starts `{"path":` (so
/// sorting the lines sorts them by path) or `{"summary":`.
pub fn versioned(object: &str) -> String {
    match object.strip_suffix('}') {
        Some(head) if head.len() > 1 => format!("{head},\"schema_version\":{SCHEMA_VERSION}}}"),
        Some(_) => format!("{{\"schema_version\":{SCHEMA_VERSION}}}"),
        None => object.to_string(),
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
        let text = json_safe(&r.redactor.redact(&text)).into_owned();
        if self.lines {
            writeln!(w, "{}", versioned(&text))?;
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
        let summary = json_safe(&redact_all(&to_json(s)?)).into_owned();
        if self.lines {
            writeln!(
                w,
                "{{\"summary\":{summary},\"schema_version\":{SCHEMA_VERSION}}}"
            )?;
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
