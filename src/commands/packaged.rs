//! The files the Python wheel installs beside the binary: the man pages
//! (`man`) and the shell completions (`completions`), generated from the
//! same code as the commands that print them.

/// The files the wheel installs beside the binary, below its prefix (the
/// venv, `~/.local`, `/usr/local`): every man page and the bash, zsh and
/// fish completions, at the paths where `man` (through the `bin/` folders
/// on PATH) and the shells look. packaging/convo_doctor.data/data/ holds
/// them for maturin; tests/completions.rs keeps that folder equal to this.
pub fn packaged_files() -> Vec<(String, Vec<u8>)> {
    use clap_complete::Shell;
    let mut out = vec![
        (
            "share/bash-completion/completions/convo-doctor".to_string(),
            super::completions::script(Shell::Bash),
        ),
        (
            "share/zsh/site-functions/_convo-doctor".to_string(),
            super::completions::script(Shell::Zsh),
        ),
        (
            "share/fish/vendor_completions.d/convo-doctor.fish".to_string(),
            super::completions::script(Shell::Fish),
        ),
    ];
    for name in super::man::pages() {
        let file = match &name {
            None => "convo-doctor.1".to_string(),
            Some(n) => format!("convo-doctor-{n}.1"),
        };
        let bytes = super::man::page(name.as_deref()).expect("every subcommand has a page");
        out.push((format!("share/man/man1/{file}"), bytes));
    }
    out
}
