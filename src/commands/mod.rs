//! One module per subcommand.

pub mod completions;
pub mod diagnose;
pub mod explain;
pub mod repair;
pub mod undo_list;

/// How a command ended; mapped to the process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: nothing at or above the threshold.
    Success,
    /// 1: findings at or above the threshold.
    Findings,
    /// 2: usage error or unreadable input.
    Error,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Findings => 1,
            ExitStatus::Error => 2,
        }
    }
}

/// Validate `--only` / `--skip` ids and build the selection predicate.
pub fn select(
    only: &[String],
    skip: &[String],
) -> anyhow::Result<impl Fn(&str) -> bool + Send + Sync> {
    for id in only.iter().chain(skip) {
        if crate::checks::find(id).is_none() {
            anyhow::bail!("unknown check `{id}` (run `convo-doctor explain` for the list)");
        }
    }
    let only = only.to_vec();
    let skip = skip.to_vec();
    Ok(move |id: &str| {
        (only.is_empty() || only.iter().any(|o| o == id)) && !skip.iter().any(|s| s == id)
    })
}
