//! `--since DURATION` / `--changed-since FILE`: pass over conversations that
//! have not changed since a cutoff, at the cost of a few `stat`s (no reads).
//!
//! A conversation counts as modified when any of these has an mtime at or
//! after the cutoff: the conversation folder itself (a file created, deleted
//! or renamed in it), `base_state.json`, `meta.json`, the `events/` folder (an
//! event added or removed), or any entry of `events/` (an event rewritten in
//! place). The cheap ones are looked at first; the event files only when
//! those are all older. Anything that cannot be stat'ed is ignored; a
//! conversation with nothing stat-able counts as modified.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// `90s`, `45m`, `25h`, `7d`, `2w`, or a sum of them (`1h30m`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration (e.g. 90m, 25h, 7d, 1h30m)");
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut any = false;
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = num.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|x| total.checked_add(x))
            .ok_or_else(bad)?;
        num.clear();
        any = true;
    }
    if !num.is_empty() || !any {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// The cutoff of `--since`: now minus the duration.
pub fn cutoff_since(d: Duration) -> SystemTime {
    SystemTime::now()
        .checked_sub(d)
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The cutoff of `--since DURATION` or `--changed-since FILE`, if either.
pub fn cutoff(
    since: Option<Duration>,
    changed_since: Option<&Path>,
) -> anyhow::Result<Option<SystemTime>> {
    if let Some(d) = since {
        return Ok(Some(cutoff_since(d)));
    }
    match changed_since {
        Some(file) => cutoff_of_file(file),
        None => Ok(None),
    }
}

/// The cutoff of `--changed-since FILE`: its mtime; `None` (scan everything)
/// when it does not exist yet.
pub fn cutoff_of_file(file: &Path) -> anyhow::Result<Option<SystemTime>> {
    use anyhow::Context;
    match fs::metadata(file) {
        Ok(md) => md
            .modified()
            .map(Some)
            .with_context(|| format!("`{}` has no mtime", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("cannot read `{}`", file.display()))),
    }
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(p).ok()?.modified().ok()
}

/// Whether the conversation at `dir` was modified at or after `cutoff`.
pub fn modified_since(dir: &Path, cutoff: SystemTime) -> bool {
    let mut seen = false;
    for p in [
        dir.to_path_buf(),
        dir.join("base_state.json"),
        dir.join("meta.json"),
        dir.join("events"),
    ] {
        if let Some(t) = mtime(&p) {
            if t >= cutoff {
                return true;
            }
            seen = true;
        }
    }
    if let Ok(rd) = fs::read_dir(dir.join("events")) {
        for entry in rd.flatten() {
            // DirEntry::metadata does not follow links.
            if let Some(t) = entry.metadata().ok().and_then(|m| m.modified().ok()) {
                if t >= cutoff {
                    return true;
                }
            }
        }
    }
    !seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("25h").unwrap().as_secs(), 25 * 3600);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("2w").unwrap().as_secs(), 14 * 86_400);
        for bad in ["", "10", "h", "1x", "1.5h", "-1h", "99999999999999999999w"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
