//! convo-doctor: diagnose and repair OpenHands conversation directories.
//!
//! Layers, each using only the ones before it (tests/layers.rs holds the
//! order): store (what is on disk) → view (what the agent and the UI see)
//! → edit (what a repair may propose) → checks (findings, and each check's
//! planned repair) → analysis → report → fix (the repair engine) → render
//! (the only code that prints) → commands (one module per subcommand).
//! `batch` runs the report over many conversations (in parallel, in order).

pub mod analysis;
pub mod appserver;
pub mod batch;
pub mod checks;
pub mod claude;
pub mod cli;
pub mod clock;
pub mod codex;
pub mod commands;
pub mod edit;
pub mod exit;
pub mod fix;
pub mod kinds;
pub mod render;
pub mod report;
pub mod runs;
pub mod secrets;
pub mod server;
pub mod sessions;
pub mod store;
pub mod text;
pub mod validate;
pub mod version;
pub mod view;

use commands::ExitStatus;

/// Run a parsed command line. Failures that end a command arrive here as
/// `anyhow` errors (context naming the path, the OS error kept as the
/// source; a usage error as clap's) and are printed once, as ripgrep's
/// binary does, the exit status derived from the error.
pub fn run(mut cli: cli::Cli) -> ExitStatus {
    let color = cli.color.enabled();
    // the options `diagnose` and `repair` share (cli::RunArgs, RulesArgs)
    let (quiet, version) = match &mut cli.command {
        cli::Command::Diagnose(a) => (a.run.quiet, a.rules.server_version.as_mut()),
        cli::Command::Repair(a) => (a.run.quiet, a.rules.server_version.as_mut()),
        _ => (false, None),
    };
    // --quiet: nothing on stderr either when the run ends with 0
    if quiet {
        render::hold_messages();
    }
    if let Some(v) = version {
        known_rules(v);
    }
    let result = match &cli.command {
        cli::Command::Diagnose(args) => commands::diagnose::diagnose(args, color),
        cli::Command::Explain(args) => commands::explain::explain(args.check.as_deref()),
        cli::Command::Repair(args) => commands::repair::repair(args, color),
        cli::Command::Undo(args) => commands::undo::undo(args),
        cli::Command::Completions(args) => commands::completions::completions(args.shell),
        cli::Command::Man(args) => commands::man::man(args.command.as_deref()),
        cli::Command::CompleteRuns(args) => {
            commands::complete_runs::run_ids(args.backup.dir.as_deref())
        }
    };
    // the one place an error that ends a command is printed
    let status = result.unwrap_or_else(|e| {
        render::fail(&e);
        ExitStatus::of(&e)
    });
    render::release_messages(status != ExitStatus::Success);
    status
}

/// A `--server-version` newer than any release this build knows is judged by
/// the newest known rules: say so on stderr, and report the rules used.
fn known_rules(v: &mut version::Version) {
    let used = version::rules_for(*v);
    if used != *v {
        render::warning(&format!(
            "server version {v} is newer than any release this build knows; applying the rules of {used}, the newest known"
        ));
        *v = used;
    }
}
