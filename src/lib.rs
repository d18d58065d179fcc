//! convo-doctor: diagnose and repair OpenHands conversation directories.
//!
//! Layers, each using only the ones above it:
//! store (what is on disk) → view (what the agent and the UI see) →
//! edit (what a repair may propose) → checks (findings, and each check's
//! planned repair) → analysis and report → fix (the repair engine) → render
//! (the only code that prints).
//! `batch` runs the report over many conversations (in parallel, in order).

pub mod analysis;
pub mod appserver;
pub mod batch;
pub mod checks;
pub mod claude;
pub mod cli;
pub mod clock;
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
pub mod store;
pub mod text;
pub mod validate;
pub mod version;
pub mod view;

use commands::ExitStatus;

/// Run a parsed command line. Failures that end a command arrive here as
/// `anyhow` errors (context naming the path, the OS error kept as the
/// source) and are printed once, as ripgrep's binary does.
pub fn run(mut cli: cli::Cli) -> ExitStatus {
    // the interrupted-repair check asks the engine whether a run is kept
    runs::set_lookup(fix::persist::run_repaired);
    let color = cli.color.enabled();
    // --quiet: nothing on stderr either when the run ends with 0
    let quiet = match &cli.command {
        cli::Command::Diagnose(a) => a.quiet,
        cli::Command::Repair(a) => a.quiet,
        _ => false,
    };
    if quiet {
        render::hold_messages();
    }
    known_rules(&mut cli.command);
    let result = match &cli.command {
        cli::Command::Diagnose(args) => commands::diagnose::diagnose(args, color),
        cli::Command::Explain(args) => Ok(commands::explain::explain(args.check.as_deref())),
        cli::Command::Repair(args) => Ok(commands::repair::repair(args, color)),
        cli::Command::Undo(args) if args.list => commands::undo_list::list(args),
        cli::Command::Undo(args) => Ok(commands::repair::undo(args)),
        cli::Command::Completions(args) => Ok(commands::completions::completions(args.shell)),
        cli::Command::Man(args) => Ok(commands::completions::man(args.command.as_deref())),
        cli::Command::CompleteRuns(args) => {
            Ok(commands::completions::run_ids(args.backup_dir.as_deref()))
        }
    };
    let status = result.unwrap_or_else(|e| {
        render::fail(&e);
        ExitStatus::Error
    });
    render::release_messages(status != ExitStatus::Success);
    status
}

/// A `--server-version` newer than any release this build knows is judged by
/// the newest known rules: say so on stderr, and report the rules used.
fn known_rules(command: &mut cli::Command) {
    let v = match command {
        cli::Command::Diagnose(a) => a.server_version.as_mut(),
        cli::Command::Repair(a) => a.server_version.as_mut(),
        _ => None,
    };
    if let Some(v) = v {
        let used = version::rules_for(*v);
        if used != *v {
            render::warning(&format!(
                "server version {v} is newer than any release this build knows; applying the rules of {used}, the newest known"
            ));
            *v = used;
        }
    }
}
