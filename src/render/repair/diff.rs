//! How `repair --dry-run` shows a change: the unified diff for reading
//! (JSON pretty-printed, event content masked) and the patch of the real
//! bytes (`--diff-format patch`).

use std::io::{self, Write};

use owo_colors::OwoColorize;
use serde_json::Value;
use similar::TextDiff;

use crate::fix::{Edit, Plan};
use crate::render::sanitize;

/// Pretty-print JSON for display so a one-line event shows as readable lines;
/// anything that is not JSON is shown as it is.
pub(super) fn display_text(bytes: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default() + "\n",
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Keys of an event whose strings a diff shows as they are: what
/// convo-doctor itself reads (ids, kinds, links, times) and the structural
/// `role`/`type`/`tool_name`, never content.
const SHOWN_KEYS: &[&str] = &[
    "id",
    "kind",
    "source",
    "parent_id",
    "timestamp",
    "tool_call_id",
    "action_id",
    "key",
    "role",
    "type",
    "tool_name",
];

/// An event's value with every string that is unchanged between `v` and
/// `other` (and not under a [`SHOWN_KEYS`] key) replaced by its length, so a
/// diff's context never prints event content; changed values stay.
fn mask(v: &Value, other: Option<&Value>, key: Option<&str>) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), mask(x, other.and_then(|o| o.get(k)), Some(k))))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| mask(x, other.and_then(|o| o.get(i)), key))
                .collect(),
        ),
        Value::String(_) if key.is_some_and(|k| SHOWN_KEYS.contains(&k)) => v.clone(),
        Value::String(_) if other != Some(v) => v.clone(),
        Value::String(s) => Value::String(format!("<{} characters hidden>", s.chars().count())),
        _ => v.clone(),
    }
}

/// The before/after texts of an edit as a diff shows them.
fn shown_texts(edit: &Edit, show_content: bool) -> (String, String) {
    if !show_content && edit.rel.starts_with("events/") {
        if let (Ok(b), Ok(a)) = (
            serde_json::from_slice::<Value>(&edit.before),
            serde_json::from_slice::<Value>(&edit.after),
        ) {
            let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
            return (
                pretty(&mask(&b, Some(&a), None)),
                pretty(&mask(&a, Some(&b), None)),
            );
        }
        let hidden = |b: &[u8]| format!("<{} bytes of event content hidden>\n", b.len());
        return (hidden(&edit.before), hidden(&edit.after));
    }
    (display_text(&edit.before), display_text(&edit.after))
}

/// A unified diff of one edit with `a/` and `b/` headers. The path is
/// escaped first, so a newline in a folder name cannot forge a line.
pub fn diff(edit: &Edit, shown_path: &str, color: bool, show_content: bool) -> String {
    let (old, new) = shown_texts(edit, show_content);
    let d = TextDiff::from_lines(&old, &new);
    let shown_path = sanitize(shown_path);
    let a = format!("a/{shown_path}");
    let b = format!("b/{shown_path}");
    let text = d
        .unified_diff()
        .context_radius(3)
        .header(&a, &b)
        .to_string();
    let mut out = String::new();
    for line in text.lines() {
        let line = sanitize(line);
        let painted = if !color {
            line
        } else if line.starts_with("+++") || line.starts_with("---") {
            line.bold().to_string()
        } else if line.starts_with('+') {
            line.green().to_string()
        } else if line.starts_with('-') {
            line.red().to_string()
        } else if line.starts_with("@@") {
            line.cyan().to_string()
        } else {
            line
        };
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

/// `repair --dry-run --diff-format patch`: a unified diff of the real bytes
/// of every file the plan edits, with `a/<conversation>/<file>` headers, so
/// `patch -p1` or `git apply` run from the folder holding the conversation
/// makes the same edits. Exact or nothing: the conversation gets no patch
/// (and the reason comes back) when the plan renames, quarantines or
/// creates event files, when a file is not UTF-8, when a line would be
/// changed by redaction or escaping (a secret, a control character), or
/// when an event file would be printed without `show_content`.
pub fn patch(w: &mut dyn Write, p: &Plan, show_content: bool) -> io::Result<Option<String>> {
    if !p.has_changes() {
        return Ok(None);
    }
    let why = |s: String| Ok(Some(format!("{}: no patch: {s}", sanitize(&p.display))));
    if !p.moves.is_empty() || !p.creates.is_empty() {
        return why(
            "the repair renames, quarantines or creates event files, which a patch cannot carry exactly; run `repair` itself"
                .into(),
        );
    }
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-+:=@%,/".contains(c))
    };
    let conv = p
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !plain(&conv) {
        return why("the folder's name is not plain enough for a patch header".into());
    }
    let mut out = String::new();
    for e in &p.edits {
        if !plain(&e.rel) {
            return why(format!(
                "`{}` is not plain enough for a patch header",
                sanitize(&e.rel)
            ));
        }
        if e.rel.starts_with("events/") && !show_content {
            return why(format!(
                "{}: the patch would print event content; add --show-content",
                e.rel
            ));
        }
        let (Ok(before), Ok(after)) = (
            std::str::from_utf8(&e.before),
            std::str::from_utf8(&e.after),
        ) else {
            return why(format!("{}: not UTF-8 text", e.rel));
        };
        let text = TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("a/{conv}/{}", e.rel),
                &format!("b/{conv}/{}", e.rel),
            )
            .to_string();
        for line in text.lines() {
            if p.redactor.redact(line) != line
                || crate::secrets::redact_all(line) != line
                || sanitize(line) != line
            {
                return why(format!(
                    "{}: a line of it holds a secret or a control character that output never shows, so a patch cannot be exact; see the unified diff",
                    e.rel
                ));
            }
        }
        out.push_str(&text);
    }
    w.write_all(out.as_bytes())?;
    Ok(None)
}
