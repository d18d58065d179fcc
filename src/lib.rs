//! convo-doctor: diagnose and repair OpenHands conversation directories.
//!
//! Layers, each using only the ones above it:
//! store (what is on disk) → view (what the agent and the UI see) →
//! checks (findings) → report → render (the only code that prints).
//! `batch` runs the report over many conversations (in parallel, in order).

pub mod batch;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod fix;
pub mod kinds;
pub mod render;
pub mod report;
pub mod secrets;
pub mod store;
pub mod text;
pub mod validate;
pub mod version;
pub mod view;

use commands::ExitStatus;

/// Run a parsed command line.
pub fn run(cli: cli::Cli) -> ExitStatus {
    let color = cli.color.enabled();
    match &cli.command {
        cli::Command::Diagnose(args) => commands::diagnose::diagnose(args, color),
        cli::Command::Explain(args) => commands::explain::explain(args.check.as_deref()),
        cli::Command::Repair(args) => commands::repair::repair(args, color),
        cli::Command::Undo(args) => commands::repair::undo(args),
        cli::Command::Completions(args) => commands::completions::completions(args.shell),
        cli::Command::Man(args) => commands::completions::man(args.command.as_deref()),
    }
}
