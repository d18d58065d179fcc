//! The exit status every command ends with (a leaf: the renderers that hold
//! output back until it is known use it too).

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
    /// The status a command that ends with `e` exits with: every error
    /// (bad usage, unreadable input, a report not written) is 2.
    pub fn of(_e: &anyhow::Error) -> ExitStatus {
        ExitStatus::Error
    }

    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Findings => 1,
            ExitStatus::Error => 2,
        }
    }
}
