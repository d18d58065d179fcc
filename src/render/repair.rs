//! Output of `repair` and `undo`: per conversation its header, the changes
//! (each drawn by [`diff`]), then what was (or would be) fixed, what is left
//! and why.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use owo_colors::OwoColorize;

pub mod diff;
pub mod json;

use diff::display_text;
pub use diff::{diff, patch};

use super::sanitize;
use crate::fix::persist::{ManifestEntry, Restored};
use crate::fix::Plan;

/// Everything about one conversation's plan. `prefix` is the conversation's
/// path relative to the PATH given (empty when PATH is the conversation).
#[allow(clippy::too_many_arguments)]
pub fn plan(
    w: &mut dyn Write,
    p: &Plan,
    prefix: &str,
    dry_run: bool,
    applied: Option<&Result<Vec<String>, String>>,
    color: bool,
    show_content: bool,
    diffs: bool,
) -> io::Result<()> {
    let mut s = String::new();
    let changing = p.has_changes() && !matches!(applied, Some(Err(_)));
    let failed = matches!(applied, Some(Err(_)));
    if !changing && !failed && p.left.is_empty() && p.notes.is_empty() && p.refused.is_none() {
        return Ok(()); // nothing to say about a healthy conversation
    }
    let head = if color {
        sanitize(&p.display).bold().to_string()
    } else {
        sanitize(&p.display)
    };
    let _ = writeln!(s, "{head}");
    // the diffs under their own conversation's header
    if changing && diffs {
        for e in &p.edits {
            let shown = if prefix.is_empty() {
                e.rel.clone()
            } else {
                format!("{prefix}/{}", e.rel)
            };
            s.push_str(&diff(e, &shown, color, show_content));
        }
        // new files, then renames and quarantines, as `git diff` shows them
        for c in &p.creates {
            let shown = if prefix.is_empty() {
                c.rel.clone()
            } else {
                format!("{prefix}/{}", c.rel)
            };
            let _ = writeln!(s, "new file    {}", sanitize(&shown));
            for line in display_text(&c.bytes).lines() {
                let _ = writeln!(s, "+{}", sanitize(line));
            }
        }
        for m in &p.moves {
            let shown = |rel: &str| {
                sanitize(&if prefix.is_empty() {
                    rel.to_string()
                } else {
                    format!("{prefix}/{rel}")
                })
            };
            match &m.to {
                Some(to) => {
                    let _ = writeln!(s, "rename from {}", shown(&m.rel));
                    let _ = writeln!(s, "rename to   {}", shown(to));
                }
                None => {
                    let _ = writeln!(
                        s,
                        "quarantine  {} ({} bytes, sha256 {}) -> the run's backup",
                        shown(&m.rel),
                        m.bytes.as_ref().map_or(0, Vec::len),
                        &m.sha256[..16]
                    );
                }
            }
        }
    }
    let verb = if dry_run { "would fix" } else { "fixed" };
    if let Some(Err(why)) = applied {
        let _ = writeln!(s, "  not applied: {}", sanitize(why));
    }
    if let Some(r) = &p.refused {
        let _ = writeln!(s, "  refused: {}", sanitize(&r.why));
    } else if !matches!(applied, Some(Err(_))) {
        for m in &p.moves {
            let checks = if m.checks.is_empty() {
                "-".to_string()
            } else {
                m.checks.join(",")
            };
            let _ = writeln!(
                s,
                "  {verb:<9} [{checks}] {}: {}",
                sanitize(&m.rel),
                sanitize(&m.what)
            );
        }
        for c in &p.creates {
            let _ = writeln!(
                s,
                "  {verb:<9} [{}] {}: {}",
                c.checks.join(","),
                sanitize(&c.rel),
                sanitize(&c.what)
            );
        }
        for e in &p.edits {
            for what in &e.what {
                let _ = writeln!(
                    s,
                    "  {verb:<9} [{}] {}: {}",
                    e.checks.join(","),
                    sanitize(&e.rel),
                    sanitize(what)
                );
            }
        }
    }
    for l in &p.left {
        let _ = writeln!(
            s,
            "  {}[{}] {}: {}",
            if l.needs_unsafe {
                "unsafe    "
            } else {
                "left      "
            },
            l.check,
            sanitize(&l.file),
            sanitize(&l.why)
        );
    }
    for n in &p.notes {
        let _ = writeln!(s, "  note      {}", sanitize(n));
    }
    if changing {
        if let Some(after) = &p.after {
            let _ = writeln!(s, "  → after repair: {}", sanitize(&after.verdict));
        }
    }
    s.push('\n');
    w.write_all(p.redactor.redact(&s).as_bytes())
}

/// `check ×n (label)` items (the label left out when empty), most first,
/// then by id.
fn by_count<'a>(items: impl IntoIterator<Item = (&'a str, usize, &'a str)>) -> String {
    let mut v: Vec<(&str, usize, &str)> = items.into_iter().filter(|x| x.1 > 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)).then(a.2.cmp(b.2)));
    v.iter()
        .map(|(c, n, label)| match *label {
            "" => format!("{c} ×{n}"),
            l => format!("{c} ×{n} ({l})"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the closing `left:` line names a reason.
fn reason_label(reason: &str) -> &str {
    match reason {
        "unsafe-not-requested" => "unsafe: --unsafe-fixes",
        "not-selected" => "not selected: --only",
        "no-repair" => "no repair applies",
        other => other,
    }
}

/// The closing lines of a repair run: what changed (or would), then per
/// check what was fixed, refused and left, and why.
pub fn finish(w: &mut dyn Write, sum: &json::Summary) -> io::Result<()> {
    let dry_run = sum.run.dry_run;
    let t = &sum.totals;
    let (files, conversations, failed) = (t.files, t.conversations, t.failed);
    let mut s = String::new();
    match (dry_run, files) {
        (_, 0) if failed > 0 => {
            let _ = writeln!(s, "nothing was changed");
        }
        (_, 0) => {
            let _ = writeln!(s, "nothing to repair");
        }
        (true, _) => {
            let _ = writeln!(
                s,
                "would change {files} file{} in {conversations} conversation{}; run without --dry-run to apply",
                if files == 1 { "" } else { "s" },
                if conversations == 1 { "" } else { "s" }
            );
        }
        (false, _) => {
            let _ = writeln!(
                s,
                "changed {files} file{} in {conversations} conversation{}",
                if files == 1 { "" } else { "s" },
                if conversations == 1 { "" } else { "s" }
            );
        }
    }
    // The pasteable command is never redacted after it is built (a learned
    // "secret" spanning its quotes could unquote it): the text before and
    // after it is redacted on its own, and the line is printed only when
    // redaction leaves it as it is.
    let head = std::mem::take(&mut s);
    let mut hint = String::new();
    if let (Some(id), Some(dir)) = (&sum.run.id, &sum.run.backup_dir) {
        let line = format!(
            "backups: {} (undo with `{}`)\n",
            sanitize(dir),
            undo_hint(id, dir)
        );
        hint = if crate::secrets::redact_all(&line) == line {
            line
        } else {
            crate::secrets::redact_all(&format!(
                "backups: {} (run {id}: its undo command is not printed, as redaction would change it)\n",
                sanitize(dir)
            ))
        };
    }
    // what the changes serve, then what they clear besides (a HEAD
    // pointing at a renamed event): diagnose's fixable counts both
    let fixed = by_count(sum.by_check.iter().map(|(c, n)| (*c, n.fixed(), "")));
    let cleared_n: usize = sum.by_check.values().map(|n| n.cleared).sum();
    let cleared = by_count(sum.by_check.iter().map(|(c, n)| (*c, n.cleared, "")));
    let also = match cleared_n {
        0 => String::new(),
        n => format!(" (+{n} cleared by those repairs: {cleared})"),
    };
    if !fixed.is_empty() || cleared_n > 0 {
        let _ = writeln!(
            s,
            "{}: {}{also}",
            if dry_run { "would fix" } else { "fixed" },
            if fixed.is_empty() {
                "nothing itself"
            } else {
                fixed.as_str()
            }
        );
    }
    let conversations_with = |n: usize, what: &str, checks: &BTreeMap<&str, usize>| {
        let convs = format!("{n} conversation{}", if n == 1 { "" } else { "s" });
        let list = by_count(checks.iter().map(|(c, k)| (*c, *k, "")));
        if list.is_empty() {
            format!("{what}: {convs} (see \"{what}\" above)\n")
        } else {
            format!("{what}: {list} in {convs} (see \"{what}\" above)\n")
        }
    };
    if failed > 0 {
        s.push_str(&conversations_with(
            failed,
            "not applied",
            &sum.refused_by_status.1,
        ));
    }
    if t.refused > 0 {
        // by why: a lease or a half-made folder refuses a conversation
        // whatever its findings
        let why: Vec<String> = sum
            .refused_because
            .iter()
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        let n = t.refused;
        let _ = writeln!(
            s,
            "refused: {n} conversation{} ({}) (see \"refused\" above)",
            if n == 1 { "" } else { "s" },
            why.join(", ")
        );
    }
    let left = by_count(
        sum.left_reasons
            .iter()
            .map(|((c, r), n)| (*c, *n, reason_label(r))),
    );
    if !left.is_empty() {
        let _ = writeln!(s, "left: {left}");
    }
    if sum.scan.errors > 0 {
        let _ = writeln!(s, "{}", super::errors_line(sum.scan.errors));
    }
    let out = crate::secrets::redact_all(&head) + &hint + &crate::secrets::redact_all(&s);
    w.write_all(out.as_bytes())?;
    w.flush()
}

/// One line per file `undo` handled.
pub fn undo(w: &mut dyn Write, results: &[(ManifestEntry, Restored)]) -> io::Result<()> {
    let mut s = String::new();
    for (e, r) in results {
        let path = format!("{}/{}", e.conversation.display(), e.file);
        let line = match r {
            Restored::Restored => format!("restored  {path}"),
            Restored::Removed => format!("removed   {path} (the repair created it)"),
            Restored::AlreadyOriginal => format!("unchanged {path} (already the original)"),
            Restored::AlreadyGone => {
                format!("unchanged {path} (already gone: the repair created it)")
            }
            Restored::Refused(why) => format!("refused   {path}: {why}"),
        };
        let _ = writeln!(s, "{}", sanitize(&crate::secrets::redact_all(&line)));
    }
    w.write_all(s.as_bytes())?;
    w.flush()
}

/// The `undo` command for a run, as it can be pasted: with `--backup-dir`
/// (shell-quoted) unless the run sits under the default backup root.
fn undo_hint(id: &str, run_dir: &str) -> String {
    let root = std::path::Path::new(run_dir).parent();
    let default = crate::fix::persist::default_backup_root().ok();
    let dir = root
        .filter(|r| default.as_deref() != Some(*r))
        .map(|r| sanitize(&r.display().to_string()));
    crate::text::undo_command(id, dir.as_deref())
}
