//! `convo-doctor completions SHELL` and `convo-doctor man [COMMAND]`: both
//! generated from the clap definitions, so they never drift from the CLI.

use clap::CommandFactory;

use super::ExitStatus;
use crate::cli::Cli;
use crate::render;

fn print(bytes: Vec<u8>) -> ExitStatus {
    match render::out(&String::from_utf8_lossy(&bytes)) {
        Ok(()) => ExitStatus::Success,
        Err(e) => super::diagnose::broken_pipe_or_error(e),
    }
}

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "convo-doctor", &mut buf);
    if shell == clap_complete::Shell::Bash {
        // clap_complete's bash generator names the state of a subcommand in
        // two ways for a hyphenated binary: `convo__doctor__subcmd__diagnose`
        // where it tracks the words typed, `convo__subcmd__doctor__subcmd__diagnose`
        // where it offers the flags, so no subcommand flag ever completed.
        // One spelling for both (tests/completions.rs runs the script in bash).
        let text = String::from_utf8_lossy(&buf).replace("convo__subcmd__doctor", "convo__doctor");
        buf = text.into_bytes();
    }
    if shell == clap_complete::Shell::Fish {
        // clap_complete's fish generator offers the possible values of
        // options only, not of positionals: `explain CHECK` by hand.
        let ids: Vec<&str> = crate::checks::REGISTRY.iter().map(|c| c.id()).collect();
        buf.extend_from_slice(
            format!(
                "complete -c convo-doctor -n \"__fish_convo_doctor_using_subcommand explain\" -f -a \"{}\"\n",
                ids.join(" ")
            )
            .as_bytes(),
        );
    }
    buf
}

pub fn completions(shell: clap_complete::Shell) -> ExitStatus {
    print(script(shell))
}

/// The man page (roff) of `convo-doctor`, or of one of its subcommands
/// (`convo-doctor-diagnose(1)` and so on).
pub fn page(command: Option<&str>) -> Result<Vec<u8>, String> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let cmd = match command {
        None => cmd,
        Some(name) => cmd
            .get_subcommands()
            .find(|s| s.get_name() == name)
            .cloned()
            .ok_or_else(|| format!("no command `{name}` (see `convo-doctor --help`)"))?,
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .map_err(|e| e.to_string())?;
    Ok(buf)
}

/// The names of the man pages `page` can print, main page first.
pub fn pages() -> Vec<Option<String>> {
    std::iter::once(None)
        .chain(
            Cli::command()
                .get_subcommands()
                .map(|s| Some(s.get_name().to_string())),
        )
        .collect()
}

pub fn man(command: Option<&str>) -> ExitStatus {
    match page(command) {
        Ok(bytes) => print(bytes),
        Err(e) => {
            render::error(&e);
            ExitStatus::Error
        }
    }
}
