//! One module per subcommand. Each returns its exit status, or the error
//! that ends it: `crate::run` prints that error, once, and ends with exit
//! status 2.

pub mod complete_runs;
pub mod completions;
pub mod diagnose;
pub mod explain;
pub mod man;
pub mod packaged;
pub mod pipeline;
pub mod repair;
pub mod repair_sessions;
pub mod undo;
pub mod undo_list;

pub use crate::exit::ExitStatus;

use std::io;

use crate::checks::Severity;
use crate::cli::FailOn;

/// `unknown check `ID``, with the nearest check id when one is close
/// (`did you mean `false-root`?`, as cargo and git suggest), and where the
/// list is.
pub fn unknown_check(id: &str) -> String {
    let near = crate::checks::REGISTRY
        .iter()
        .map(|c| (strsim::jaro_winkler(id, c.id()), c.id()))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match near {
        Some((_, near)) => format!(
            "unknown check `{id}`; did you mean `{near}`? (run `convo-doctor explain` for the list)"
        ),
        None => format!("unknown check `{id}` (run `convo-doctor explain` for the list)"),
    }
}

/// Validate `--only` / `--skip` ids and build the selection predicate.
pub fn select(
    only: &[String],
    skip: &[String],
) -> anyhow::Result<impl Fn(&str) -> bool + Send + Sync> {
    for id in only.iter().chain(skip) {
        if crate::checks::find(id).is_none() {
            anyhow::bail!("{}", unknown_check(id));
        }
    }
    let only = only.to_vec();
    let skip = skip.to_vec();
    Ok(move |id: &str| {
        (only.is_empty() || only.iter().any(|o| o == id)) && !skip.iter().any(|s| s == id)
    })
}

/// The `--fail-on` threshold: the least severity that fails the run.
pub fn threshold(f: FailOn) -> Option<Severity> {
    match f {
        FailOn::Info => Some(Severity::Info),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Error => Some(Severity::Error),
        FailOn::Never => None,
    }
}

/// A closed pipe (`| head`) ends the run quietly; other write errors are
/// errors (printed once, by `crate::run`).
pub fn broken_pipe_or_error(e: io::Error) -> anyhow::Result<ExitStatus> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(ExitStatus::Success)
    } else {
        Err(anyhow::anyhow!("cannot write the report: {e}"))
    }
}

/// A conversation's first access error, with how many more it had.
pub fn scan_error(first: &str, r: &crate::report::ConversationReport) -> String {
    match r.access_errors.len() - 1 {
        0 => first.to_string(),
        n => format!(
            "{first} (and {} in `{}`)",
            crate::checks::plural(n, "more file", "more files"),
            r.path
        ),
    }
}
