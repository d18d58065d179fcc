//! With no PATH: the invoking user's own JSONL session stores, looked for
//! under the rules the OpenHands store discovery uses
//! ([`crate::store::discover`]): the home is the environment's (`HOME`), a
//! place an environment variable names (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`)
//! is trusted as a PATH given, and a default place (`~/.codex`,
//! `~/.claude/projects`) is read only when root or this user owns every part
//! of it, links included ([`crate::store::discover::passed_over`]); no link
//! is followed below it ([`super::list`]).

use std::path::{Path, PathBuf};

use super::list::Listing;
use crate::store::discover::Env;

/// The JSONL session formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    ClaudeCode,
    Codex,
}

/// One place looked at, and what was found there.
#[derive(Debug)]
pub struct Looked {
    pub format: Format,
    /// The client and why this place (`Codex ($CODEX_HOME)`).
    pub what: String,
    pub path: PathBuf,
    /// Why a default place was passed over.
    pub passed_over: Option<String>,
    /// `None`: not there (or not a folder), or passed over.
    pub found: Option<Listing>,
}

/// The places: each client's variable, else its default below the home.
pub fn places(env: &Env) -> Vec<(Format, String, PathBuf, bool)> {
    let mut out = Vec::new();
    let rel = |p: &str| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            env.cwd.join(p)
        }
    };
    match ((env.var)("CLAUDE_CONFIG_DIR"), &env.home) {
        (Some(d), _) => out.push((
            Format::ClaudeCode,
            "Claude Code ($CLAUDE_CONFIG_DIR/projects)".into(),
            rel(&d).join("projects"),
            true,
        )),
        (None, Some(h)) => out.push((
            Format::ClaudeCode,
            "Claude Code (default)".into(),
            h.join(".claude").join("projects"),
            false,
        )),
        (None, None) => {}
    }
    match ((env.var)("CODEX_HOME"), &env.home) {
        (Some(d), _) => out.push((Format::Codex, "Codex ($CODEX_HOME)".into(), rel(&d), true)),
        (None, Some(h)) => out.push((
            Format::Codex,
            "Codex (default)".into(),
            h.join(".codex"),
            false,
        )),
        (None, None) => {}
    }
    out
}

/// What [`places`] could not look in: the home defaults when HOME is not
/// set and no variable names the place.
pub fn not_places(env: &Env) -> Option<String> {
    let claude = (env.var)("CLAUDE_CONFIG_DIR").is_none();
    let codex = (env.var)("CODEX_HOME").is_none();
    if env.home.is_some() || !(claude || codex) {
        return None;
    }
    let missed: Vec<&str> = [
        (claude, "~/.claude/projects (Claude Code)"),
        (codex, "~/.codex (Codex)"),
    ]
    .iter()
    .filter(|(m, _)| *m)
    .map(|(_, w)| *w)
    .collect();
    Some(format!(
        "HOME is not set: {} not looked in",
        missed.join(" and ") + if missed.len() == 1 { " was" } else { " were" }
    ))
}

/// Look at every place.
pub fn looked(env: &Env) -> Vec<Looked> {
    places(env)
        .into_iter()
        .map(|(format, what, path, given)| {
            let passed_over = crate::store::discover::passed_over(&path, given);
            let found = match passed_over {
                Some(_) => None,
                None => std::fs::symlink_metadata(&path)
                    .is_ok_and(|m| m.is_dir())
                    .then(|| list(format, &path)),
            };
            Looked {
                format,
                what,
                path,
                passed_over,
                found,
            }
        })
        .collect()
}

/// The files of a store: a Claude Code projects folder, a `CODEX_HOME`.
fn list(format: Format, path: &Path) -> Listing {
    match format {
        Format::ClaudeCode => crate::claude::sessions(path, &crate::claude::Shape::Projects),
        // a CODEX_HOME with no sessions yet holds no rollout (not an error)
        Format::Codex if std::fs::symlink_metadata(path.join("sessions")).is_err() => {
            Listing::default()
        }
        Format::Codex => crate::codex::sessions(path, &crate::codex::Shape::Home),
    }
}

impl Looked {
    /// One line for the report's notes: where, what, what was found.
    pub fn describe(&self) -> String {
        let (one, many) = match self.format {
            Format::ClaudeCode => ("session", "sessions"),
            Format::Codex => ("rollout", "rollouts"),
        };
        let at = format!("looked in {} for {}", self.path.display(), self.what);
        match (&self.passed_over, &self.found) {
            (Some(why), _) => format!("{at}: passed over ({why})"),
            (None, None) => format!("{at}: not there"),
            (None, Some(l)) => format!(
                "{at}: {} {}",
                l.files.len(),
                if l.files.len() == 1 { one } else { many }
            ),
        }
    }
}
