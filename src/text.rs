//! Small helpers for untrusted text quoted in messages.

/// At most `max` characters of `s` (cut on a character boundary, never inside
/// one), with the full length appended when it was cut, so a 50 MB `kind` or
/// id read from a file cannot flood a report.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// The length quoted values are clipped to.
pub const QUOTE_MAX: usize = 100;

/// The `undo` command for a run as an operator pastes it, with
/// `--backup-dir` when the run is not under the default backup root.
/// Callers pass text already made safe for where it is printed.
pub fn undo_command(run_id: &str, backup_dir: Option<&str>) -> String {
    match backup_dir {
        Some(dir) => format!(
            "convo-doctor undo --backup-dir {} {}",
            shell_quote(dir),
            shell_quote(run_id)
        ),
        None => format!("convo-doctor undo {}", shell_quote(run_id)),
    }
}

/// `s` as one POSIX shell word: unchanged when it is plain, else in single
/// quotes (a command printed for pasting: the undo hint, `undo --list`).
pub fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Escape control, bidi and zero-width characters from untrusted text (file
/// names, kinds, values) so nothing read from disk can drive the terminal.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A character that must not reach a terminal raw: C0/C1 controls and DEL,
/// bidi overrides and isolates, zero-width characters, the BOM, and the
/// line/paragraph separators.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2028}' | '\u{2029}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("/var/b-1"), "/var/b-1");
        assert_eq!(shell_quote("/my backups"), "'/my backups'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn undo_commands_name_the_backup_dir_only_when_given() {
        assert_eq!(undo_command("r-1", None), "convo-doctor undo r-1");
        assert_eq!(
            undo_command("r-1", Some("/my backups")),
            "convo-doctor undo --backup-dir '/my backups' r-1"
        );
    }

    #[test]
    fn clips_on_character_boundaries() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc… (4 bytes)");
        assert_eq!(clip("ééé", 2), "éé… (6 bytes)");
        assert_eq!(clip("", 0), "");
        assert_eq!(clip("😀😀", 1), "😀… (8 bytes)");
    }
}
