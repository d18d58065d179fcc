//! The completion scripts and man pages, exercised by the programs that use
//! them. Completions, twice: the functions called directly (bash runs the
//! generated function the way `complete -F` does, fish answers `complete
//! -C`), then real interactive bash, zsh (compinit) and fish sessions under
//! tmux, where keys are typed, TAB pressed and the completed line read back.
//! A test whose shell (or tmux) is not installed prints `SKIP` and the reason,
//! and passes; under CI (`CONVO_DOCTOR_CI=1`, set by .ci/run, which installs
//! them) it fails instead. Man pages are rendered and, when `man` is
//! installed (the same rule), formatted by `man -l` with warnings on.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{installed, output};

fn bin(args: &[&str]) -> (i32, String, String) {
    common::run(args, &[])
}

/// Run a shell's command; its stdout, once it exited 0.
fn shell_out(cmd: &mut Command) -> String {
    let (code, out, err) = output(cmd);
    assert_eq!(code, 0, "{cmd:?}: {err}");
    out
}

fn script(dir: &Path, shell: &str) -> std::path::PathBuf {
    let (code, out, err) = bin(&["completions", shell]);
    assert_eq!(code, 0, "{err}");
    let path = dir.join(format!("convo-doctor.{shell}"));
    std::fs::write(&path, out).unwrap();
    path
}

/// What bash's programmable completion offers for `line` (the last word is
/// the one being completed): the script is sourced, the function registered
/// for `convo-doctor` is looked up with `complete -p` and called with the
/// arguments and COMP_* variables bash gives it.
fn bash_complete(script: &Path, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let program = format!(
        r#"source '{}' || exit 3
spec=$(complete -p convo-doctor) || exit 4
fn=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
"$fn" convo-doctor "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script.display()
    );
    shell_out(Command::new("bash").args(["--norc", "--noprofile", "-c", &program]))
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommand_flags_and_check_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "bash");
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--fo"]),
        ["--format"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--only", "fal"]),
        ["false-root"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--skip", "meta-d"]),
        ["meta-divergence", "meta-duplicate"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "explain", "false-"]),
        ["false-root"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "repair", "--only", "stale-l"]),
        ["stale-leaf"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "undo", "--li"]),
        ["--list"]
    );
    // Inside a comma list: the ids typed stay, the last one completes.
    assert_eq!(
        bash_complete(
            &s,
            &["convo-doctor", "diagnose", "--only", "false-root,ind"]
        ),
        ["false-root,index-gap"]
    );
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "diagnose", "--skip", "a,b,meta-d"]),
        ["a,b,meta-divergence", "a,b,meta-duplicate"]
    );
    // The subcommands themselves.
    assert_eq!(bash_complete(&s, &["convo-doctor", "dia"]), ["diagnose"]);
    // Every id of the registry is offered after --only.
    let all = bash_complete(&s, &["convo-doctor", "diagnose", "--only", ""]);
    for c in convo_doctor::checks::REGISTRY {
        assert!(all.iter().any(|w| w == c.id()), "{} not offered", c.id());
    }
}

#[test]
fn declared_ids_do_not_change_the_unknown_check_error() {
    for args in [
        &["diagnose", "--only", "nope", "fixtures"][..],
        &["diagnose", "--skip", "nope", "fixtures"][..],
        &["explain", "nope"][..],
    ] {
        let (code, out, err) = bin(args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(out, "");
        assert!(
            err.contains("unknown check `nope` (run `convo-doctor explain` for the list)"),
            "{args:?}: {err}"
        );
    }
    // And --help does not grow a list of thirty ids.
    let (_, help, _) = bin(&["diagnose", "--help"]);
    assert!(!help.contains("possible values: changed-during-read"));
}

#[test]
fn fish_completes_subcommand_flags_and_check_ids() {
    if !installed("fish") {
        common::skip_unless_ci(
            "fish_completes_subcommand_flags_and_check_ids",
            "fish is not installed",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "fish");
    let ask = |line: &str| -> Vec<String> {
        shell_out(Command::new("fish").args([
            "--no-config",
            "-c",
            &format!("source '{}'; complete -C '{line}'", s.display()),
        ]))
        .lines()
        // fish prints "candidate<TAB>description".
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect()
    };
    assert_eq!(ask("convo-doctor diagnose --fo"), ["--format"]);
    assert_eq!(ask("convo-doctor diagnose --only fal"), ["false-root"]);
    assert_eq!(ask("convo-doctor explain false-"), ["false-root"]);
    assert_eq!(
        ask("convo-doctor diagnose --skip false-root,ind"),
        ["false-root,index-gap"]
    );
    assert_eq!(
        ask("convo-doctor repair --only=false-root,stale-l"),
        ["--only=false-root,stale-leaf"]
    );
}

#[test]
fn zsh_script_loads_and_declares_check_ids() {
    if !installed("zsh") {
        common::skip_unless_ci(
            "zsh_script_loads_and_declares_check_ids",
            "zsh is not installed",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), "zsh");
    // zsh parses it (-n: no execution) ...
    shell_out(Command::new("zsh").args(["-f", "-n", s.to_str().unwrap()]));
    // ... and compinit loads it from fpath as the `_convo-doctor` function.
    std::fs::rename(&s, tmp.path().join("_convo-doctor")).unwrap();
    let out = shell_out(Command::new("zsh").args([
        "-f",
        "-c",
        &format!(
            "fpath=('{}' $fpath); autoload -Uz compinit; compinit -u -D; \
             print -r -- $_comps[convo-doctor]",
            tmp.path().display()
        ),
    ]));
    assert_eq!(out.trim(), "_convo-doctor");
    let text = std::fs::read_to_string(tmp.path().join("_convo-doctor")).unwrap();
    assert!(text.contains("false-root") && text.contains("--only"));
}

// --- Real interactive sessions --------------------------------------------
//
// Each shell runs interactively in a tmux pane (a private server on a socket
// in a temp dir, killed on drop): keys are typed with `send-keys`, TAB is
// pressed, and the command line is read back with `capture-pane`, polled for
// a few seconds at most. This is what a user's TAB does: readline (bash), ZLE
// with compinit (zsh) and fish's own reader, each loading the script as an
// install would.

const PROMPT: &str = "READY> ";

/// The command line being edited: the last line of the pane that starts
/// with the prompt, without it (blanks around kept out).
fn line(screen: &str) -> Option<String> {
    screen
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(PROMPT.trim_end()))
        .map(|l| l.trim().to_string())
}

/// How long one completion may take to show (polled every 50 ms).
const WAIT: Duration = Duration::from_secs(10);

struct Tmux {
    tmp: tempfile::TempDir,
    sock: PathBuf,
}

impl Tmux {
    /// A detached session running the command line `setup` returns (it
    /// writes what the shell needs into the session's folder), started in
    /// that folder, in a clean environment: HOME, XDG_* and ZDOTDIR inside that folder, the binary's
    /// folder first on PATH. None, after a SKIP line, without tmux or the
    /// shell (a failure under CI).
    fn start(test: &str, shell: &str, setup: impl FnOnce(&Path) -> Vec<String>) -> Option<Tmux> {
        for program in ["tmux", shell] {
            if !installed(program) {
                common::skip_unless_ci(test, &format!("{program} is not installed"));
                return None;
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("sock");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let argv = setup(tmp.path());
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_convo-doctor"))
            .parent()
            .unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        );
        shell_out(
            Command::new("tmux")
                .arg("-S")
                .arg(&sock)
                .args([
                    "-f",
                    "/dev/null",
                    "new-session",
                    "-d",
                    "-x",
                    "200",
                    "-y",
                    "50",
                    "-c",
                ])
                .arg(tmp.path())
                .arg("--")
                .args(&argv)
                .env_clear()
                .env("PATH", path)
                .env("HOME", &home)
                .env("SHELL", "/bin/sh")
                .env("TERM", "xterm-256color")
                .env("LANG", "C.UTF-8")
                .env("XDG_STATE_HOME", tmp.path().join("state"))
                .env("XDG_DATA_HOME", tmp.path().join("data"))
                .env("XDG_CONFIG_HOME", tmp.path().join("config"))
                .env("ZDOTDIR", tmp.path()),
        );
        let t = Tmux { tmp, sock };
        t.wait_for_prompt();
        Some(t)
    }

    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    fn tmux(&self, args: &[&str]) -> String {
        shell_out(Command::new("tmux").arg("-S").arg(&self.sock).args(args))
    }

    /// The pane's text, wrapped lines joined.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J"])
    }

    /// Whether the pane shows an empty prompt and nothing else, so what a
    /// case lists is all that is on the screen.
    fn at_empty_prompt(&self) -> bool {
        let screen = self.screen();
        let lines: Vec<&str> = screen
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect();
        lines == [PROMPT.trim_end()]
    }

    fn wait_for_prompt(&self) {
        let start = Instant::now();
        while !self.at_empty_prompt() {
            if start.elapsed() > WAIT {
                panic!(
                    "no prompt within {WAIT:?}; the pane shows:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Type `typed`, press TAB (`tabs` times) and wait until the command line
    /// reads `expected` and the pane shows each of `listed` (the candidates a
    /// shell lists below the line); then cancel the line (Ctrl-C) for the
    /// next case.
    fn complete(&self, typed: &str, tabs: usize, expected: &str, listed: &[&str]) {
        self.tab_until(
            typed,
            tabs,
            |screen| {
                line(screen).as_deref() == Some(expected)
                    && listed.iter().all(|w| screen.contains(w))
            },
            &format!("the line {expected:?} with {listed:?} listed"),
        );
    }

    /// Type `typed`, press TAB (`tabs` times) and wait until the pane
    /// satisfies `done` (described by `what` when it never does); the pane
    /// then, after the line is cancelled (Ctrl-C) for the next case.
    fn tab_until(
        &self,
        typed: &str,
        tabs: usize,
        done: impl Fn(&str) -> bool,
        what: &str,
    ) -> String {
        self.tmux(&["send-keys", "-l", typed]);
        for _ in 0..tabs {
            self.tmux(&["send-keys", "Tab"]);
        }
        let start = Instant::now();
        let screen = loop {
            let screen = self.screen();
            if done(&screen) {
                break screen;
            }
            if start.elapsed() > WAIT {
                panic!("`{typed}` + TAB: not {what}; the pane shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.cancel_line();
        screen
    }

    /// Ctrl-C (cancel the line) and Ctrl-L (clear the screen) until an
    /// empty prompt alone shows: zsh may still be in its completion widget
    /// when the completed line is drawn, and a SIGINT then only ends the
    /// widget; more of them at an empty prompt are harmless.
    fn cancel_line(&self) {
        let start = Instant::now();
        loop {
            self.tmux(&["send-keys", "C-c"]);
            self.tmux(&["send-keys", "C-l"]);
            let sent = Instant::now();
            while sent.elapsed() < Duration::from_secs(1) {
                if self.at_empty_prompt() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if start.elapsed() > WAIT {
                panic!(
                    "no empty prompt after Ctrl-C, Ctrl-L; the pane shows:\n{}",
                    self.screen()
                );
            }
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("kill-server")
            .output();
    }
}

/// A real repair run of a copy of fixtures/false-root, its backups under
/// `backup_dir` (or the default root below `state`, as XDG_STATE_HOME):
/// the run id `undo --list` prints for it, and beside it a folder that is
/// not a run (no manifest.json) named like the id but for its last
/// character, which `undo` must not offer.
fn repair_run(state: &Path, backup_dir: Option<&Path>) -> String {
    let (_tmp, store, _) = common::fixture_copy("false-root");
    let state = state.to_str().unwrap();
    let mut args = vec!["repair", store.to_str().unwrap()];
    let mut list = vec!["undo", "--list"];
    if let Some(d) = backup_dir {
        for a in [&mut args, &mut list] {
            a.extend(["--backup-dir", d.to_str().unwrap()]);
        }
    }
    let env = [("XDG_STATE_HOME", state)];
    let (code, _, err) = common::run(&args, &env);
    assert_eq!(code, 0, "repair: {err}");
    let (code, out, err) = common::run(&list, &env);
    assert_eq!(code, 0, "undo --list: {err}");
    let id = out
        .lines()
        .find_map(|l| l.split("can be undone: convo-doctor undo ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no undoable run listed: {out}"))
        .to_string();
    let root = backup_dir.map_or_else(
        || Path::new(state).join("convo-doctor/backups"),
        Path::to_path_buf,
    );
    let decoy = format!("{}_", &id[..id.len() - 1]);
    std::fs::create_dir_all(root.join(decoy)).unwrap();
    id
}

/// Beside the trusted run `run` under `root`, run folders no completion may
/// offer, each holding a copy of the run's manifest.json: one whose name a
/// shell would expand into a command (`…-1$(touch${IFS}PWNED)`, which
/// creates `PWNED` in the shell's folder) and, as root, one with a run id's
/// name that another user (uid 65534) owns. Their names.
fn hostile_runs(root: &Path, run: &str) -> Vec<String> {
    use std::os::unix::fs::DirBuilderExt;
    let manifest = std::fs::read(root.join(run).join("manifest.json")).unwrap();
    let mut names = vec!["20261202T000000Z-1$(touch${IFS}PWNED)".to_string()];
    if common::is_root("hostile_runs (a run folder another user owns)") {
        names.push("20261202T000000Z-65534".into());
    }
    for name in &names {
        let dir = root.join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), &manifest).unwrap();
    }
    if let Some(theirs) = names.get(1) {
        common::chown_tree(&root.join(theirs), common::NOBODY);
    }
    names
}

/// The words of `screen` shaped like a run id (`YYYYMMDDTHHMMSSZ-…`), as
/// a shell shows candidates (or the one it put on the line).
fn run_like_words(screen: &str) -> Vec<&str> {
    screen
        .split_whitespace()
        .filter(|w| {
            let b = w.as_bytes();
            b.len() > 9 && b[..8].iter().all(u8::is_ascii_digit) && b[8] == b'T'
        })
        .collect()
}

/// `convo-doctor __complete-runs`, which the scripts run at TAB after
/// `undo`: the ids of the runs `undo --list` calls trusted, one a line, and
/// nothing else: not a folder whose name is not a run id, not a run folder
/// or a backup root another user owns. Hidden from --help, the man pages and
/// the completions.
#[test]
fn complete_runs_prints_only_trusted_run_ids_and_is_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let backups = tmp.path().join("backups");
    let b = backups.to_str().unwrap();
    let run = repair_run(&state, Some(&backups));
    let hostile = hostile_runs(&backups, &run);
    let (code, out, err) = bin(&["__complete-runs", "--backup-dir", b]);
    assert_eq!(
        (code, out, err),
        (0, format!("{run}\n"), String::new()),
        "{hostile:?}"
    );
    // without --backup-dir: the default root
    let default_run = repair_run(&state, None);
    let (code, out, _) = common::run(
        &["__complete-runs"],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    assert_eq!((code, out), (0, format!("{default_run}\n")));
    // no backup root yet: nothing to offer
    let none = tmp.path().join("none");
    let (code, out, _) = bin(&["__complete-runs", "--backup-dir", none.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""));
    // a backup root another user owns, holding a copy of the trusted run
    if common::is_root("complete_runs_prints_only_trusted_run_ids_and_is_hidden (their root)") {
        let theirs = tmp.path().join("theirs");
        common::copy_tree(&backups.join(&run), &theirs.join(&run));
        std::fs::set_permissions(&theirs, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        common::chown_tree(&theirs, common::NOBODY);
        let (code, out, err) = bin(&["__complete-runs", "--backup-dir", theirs.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert!(err.contains("owned by uid 65534, not by you"), "{err}");
    }
    // hidden: not in --help, `help`, the man pages or the completions
    for args in [&["--help"][..], &["help"], &["man"]] {
        let (code, out, _) = bin(args);
        assert_eq!(code, 0, "{args:?}");
        assert!(
            out.contains("undo") && !out.replace("\\-", "-").contains("complete-runs"),
            "{args:?}: {out}"
        );
    }
    let (code, _, err) = bin(&["man", "__complete-runs"]);
    assert_eq!(code, 2, "{err}");
    for (rel, bytes) in convo_doctor::commands::packaged::packaged_files() {
        assert!(!rel.contains("complete-runs"), "{rel}");
        if rel.starts_with("share/man/") {
            assert!(
                !String::from_utf8_lossy(&bytes).contains("complete\\-runs"),
                "{rel}"
            );
        }
    }
    let s = script(tmp.path(), "bash");
    assert_eq!(
        bash_complete(&s, &["convo-doctor", "_"]),
        Vec::<String>::new()
    );
    let all = bash_complete(&s, &["convo-doctor", ""]);
    assert!(
        all.contains(&"undo".to_string()) && !all.iter().any(|w| w.contains("complete-runs")),
        "{all:?}"
    );
}

/// The cases every shell is asked, as (typed, TABs, the line after, per
/// shell): `--fo` → `--format`, check ids after `--only` and inside its
/// comma list, `explain`'s id, and `undo`'s run ids from the default backup
/// root and from `--backup-dir`.
fn session_cases(t: &Tmux, shell: &str) {
    let state = t.dir().join("state");
    let other = t.dir().join("other");
    let run = repair_run(&state, None);
    let other_run = repair_run(&state, Some(&other));
    let other = other.to_str().unwrap();
    // zsh completes `--format=` (clap declares `--format=[...]`) and shows
    // the comma that may follow a list item (removed if a space is typed);
    // bash and fish end an item with a space (not kept in `line`).
    let (eq, comma) = if shell == "zsh" { ("=", ",") } else { ("", "") };
    let cases = [
        ("diagnose --fo", format!("diagnose --format{eq}")),
        (
            "diagnose --only fal",
            format!("diagnose --only false-root{comma}"),
        ),
        (
            "diagnose --only false-root,ind",
            format!("diagnose --only false-root,index-gap{comma}"),
        ),
        (
            "diagnose --skip index-gap,fal",
            format!("diagnose --skip index-gap,false-root{comma}"),
        ),
        (
            "repair --only meta-dup",
            format!("repair --only meta-duplicate{comma}"),
        ),
        ("explain index-", "explain index-gap".into()),
        (
            &format!("undo {}", &run[..run.len() - 2]),
            format!("undo {run}"),
        ),
    ];
    for (typed, expected) in &cases {
        t.complete(
            &format!("convo-doctor {typed}"),
            1,
            &format!("convo-doctor {expected}"),
            &[],
        );
    }
    t.complete(
        &format!(
            "convo-doctor undo --backup-dir {other} {}",
            &other_run[..other_run.len() - 2]
        ),
        1,
        &format!("convo-doctor undo --backup-dir {other} {other_run}"),
        &[],
    );
    // TAB after `--backup-dir DIR `, DIR holding hostile run folders: the
    // trusted run alone is offered (put on the line, or listed with the
    // flags: bash on the second TAB), and no name was expanded.
    let hostile = hostile_runs(Path::new(other), &other_run);
    let screen = t.tab_until(
        &format!("convo-doctor undo --backup-dir {other} "),
        if shell == "bash" { 2 } else { 1 },
        |screen| run_like_words(screen).contains(&other_run.as_str()),
        &format!("{other_run} offered"),
    );
    for dir in [t.dir(), Path::new(".")] {
        assert!(
            !dir.join("PWNED").exists(),
            "TAB ran the command in a run folder's name; the pane showed:\n{screen}"
        );
    }
    assert_eq!(
        run_like_words(&screen),
        [other_run.as_str()],
        "only the trusted run may be offered, not one of {hostile:?}; the pane showed:\n{screen}"
    );
    // `explain` and nothing typed: the ids are listed (bash on the second
    // TAB), the line unchanged.
    t.complete(
        "convo-doctor explain ",
        if shell == "bash" { 2 } else { 1 },
        "convo-doctor explain",
        &[
            "false-root",
            "index-gap",
            "stale-leaf",
            "secret-undecryptable",
        ],
    );
    // Two ids share the prefix: the line keeps it and both are listed
    // (bash lists on the second TAB).
    t.complete(
        "convo-doctor diagnose --skip false-root,meta-d",
        if shell == "bash" { 2 } else { 1 },
        "convo-doctor diagnose --skip false-root,meta-d",
        &["meta-divergence", "meta-duplicate"],
    );
}

/// A session of `shell` started by `setup` (which writes what it needs in
/// the session's folder and returns the command line), asked every case.
fn session(shell: &str, setup: impl FnOnce(&Path) -> Vec<String>) {
    if let Some(t) = Tmux::start(&format!("{shell}_session"), shell, setup) {
        session_cases(&t, shell);
    }
}

#[test]
fn bash_session_completes_flags_ids_in_lists_and_run_ids() {
    session("bash", |dir| {
        let s = script(dir, "bash");
        let rc = dir.join("bashrc");
        std::fs::write(&rc, format!("PS1='{PROMPT}'\nsource '{}'\n", s.display())).unwrap();
        [
            "bash",
            "--noprofile",
            "--rcfile",
            rc.to_str().unwrap(),
            "-i",
        ]
        .map(String::from)
        .to_vec()
    });
}

#[test]
fn zsh_session_with_compinit_completes_flags_ids_in_lists_and_run_ids() {
    session("zsh", |dir| {
        // Installed as a user would: `_convo-doctor` in a folder of fpath,
        // found by compinit (ZDOTDIR is `dir`; -d skips the system rc files).
        let fpath = dir.join("zfunc");
        std::fs::create_dir_all(&fpath).unwrap();
        std::fs::rename(script(dir, "zsh"), fpath.join("_convo-doctor")).unwrap();
        std::fs::write(
            dir.join(".zshrc"),
            format!(
                "PS1='{PROMPT}'\nfpath=('{}' $fpath)\nautoload -Uz compinit\ncompinit -u -D\n",
                fpath.display()
            ),
        )
        .unwrap();
        ["zsh", "-d", "-i"].map(String::from).to_vec()
    });
}

#[test]
fn fish_session_completes_flags_ids_in_lists_and_run_ids() {
    session("fish", |dir| {
        let s = script(dir, "fish");
        // No autosuggestion: its grey text would read as part of the line.
        let init = format!(
            "set -g fish_greeting; set -g fish_autosuggestion_enabled 0; \
             function fish_prompt; printf '{PROMPT}'; end; source '{}'",
            s.display()
        );
        ["fish", "--no-config", "-i", "-C", &init]
            .map(String::from)
            .to_vec()
    });
}

/// The pages `convo-doctor man [COMMAND]` prints: the main one and one per
/// command.
const PAGES: &[&str] = &[
    "",
    "diagnose",
    "repair",
    "undo",
    "explain",
    "completions",
    "man",
];

fn page(name: &str) -> String {
    let args: Vec<&str> = std::iter::once("man")
        .chain((!name.is_empty()).then_some(name))
        .collect();
    let (code, out, err) = bin(&args);
    assert_eq!(code, 0, "man {name}: {err}");
    out
}

/// The text of section `title` (up to the next `.SH`), roff escapes kept.
fn section<'a>(roff: &'a str, title: &str) -> &'a str {
    let heads = [format!(".SH {title}\n"), format!(".SH \"{title}\"\n")];
    let start = heads
        .iter()
        .find_map(|h| roff.find(h.as_str()).map(|i| i + h.len()))
        .unwrap_or_else(|| panic!("no section {title}"));
    let rest = &roff[start..];
    &rest[..rest.find("\n.SH ").unwrap_or(rest.len())]
}

#[test]
fn man_pages_have_the_usual_sections() {
    for name in PAGES {
        let roff = page(name);
        for title in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXIT STATUS",
            "ENVIRONMENT",
            "FILES",
            "EXAMPLES",
            "SEE ALSO",
        ] {
            assert!(
                !section(&roff, title).trim().is_empty(),
                "man {name}: {title}"
            );
        }
        let env = section(&roff, "ENVIRONMENT");
        for var in [
            "NO_COLOR",
            "XDG_STATE_HOME",
            "HOME",
            "OH_SECRET_KEY",
            "OH_PREVIOUS_SECRET_KEYS",
        ] {
            assert!(env.contains(&format!("\\fB{var}\\fR")), "man {name}: {var}");
        }
        let files = section(&roff, "FILES");
        assert!(files.contains("manifest.json"), "man {name}");
        assert!(files.contains("convo\\-doctor/backups"), "man {name}");
        // Exit codes 0 and 2 are documented on every page.
        let exit = section(&roff, "EXIT STATUS");
        assert!(
            exit.contains('0') && exit.contains('2'),
            "man {name}: {exit}"
        );
    }
    // The exit status of diagnose is the one its --help prints.
    let diagnose = page("diagnose");
    let exit = section(&diagnose, "EXIT STATUS");
    assert!(
        exit.contains("findings at or above \\-\\-fail\\-on"),
        "{exit}"
    );
    assert!(section(&page("repair"), "REPAIRS").contains("false\\-root"));
}

/// Every example in the man pages is a command line the CLI accepts (a
/// renamed flag would fail here).
#[test]
fn man_page_examples_parse() {
    use clap::Parser;
    let mut seen = 0;
    for name in PAGES {
        let roff = page(name);
        for line in section(&roff, "EXAMPLES").lines() {
            let line = line.replace("\\-", "-");
            if !line.starts_with("convo-doctor ") {
                continue;
            }
            let line = line.split(['|', '>']).next().unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Err(e) = convo_doctor::cli::Cli::try_parse_from(&words) {
                panic!("man {name}: `{line}` does not parse: {e}");
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} examples");
}

/// `man -l` (groff underneath) formats every page without a warning.
#[test]
fn man_renders_pages_without_warnings() {
    if !installed("man") || !installed("groff") {
        common::skip_unless_ci(
            "man_renders_pages_without_warnings",
            "man or groff is not installed",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for name in PAGES {
        let path = tmp.path().join("page.1");
        std::fs::write(&path, page(name)).unwrap();
        let out = Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "man {name}: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("EXIT STATUS") && text.contains("OH_SECRET_KEY"),
            "man {name}"
        );
    }
}

/// README.md promises that a test passed over says SKIP in `cargo test`'s
/// output: run one of these tests as `cargo test` does (its output
/// captured), with no shell on PATH, and read the line on its stderr.
#[test]
fn a_skipped_test_says_skip_in_cargo_tests_output() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["fish_completes_subcommand_flags_and_check_ids", "--exact"])
        .env("PATH", "/nonexistent")
        .env_remove("CONVO_DOCTOR_CI")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        err.contains("SKIP fish_completes_subcommand_flags_and_check_ids: fish is not installed")
            || stdout.contains(
                "SKIP fish_completes_subcommand_flags_and_check_ids: fish is not installed"
            ),
        "stdout: {stdout}\nstderr: {err}"
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// ... and that under CI (`CONVO_DOCTOR_CI=1`, as .ci/run sets it) the same
/// missing shell fails the test instead.
#[test]
fn a_missing_shell_fails_under_ci() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["fish_completes_subcommand_flags_and_check_ids", "--exact"])
        .env("PATH", "/nonexistent")
        .env("CONVO_DOCTOR_CI", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains(
            "fish_completes_subcommand_flags_and_check_ids must run in CI: fish is not installed"
        ),
        "{all}"
    );
    assert!(all.contains("1 failed"), "{all}");
}

/// packaging/convo_doctor.data/data/ (what the wheel installs beside the
/// binary) is exactly what the binary generates: every man page and the
/// bash, zsh and fish completions. `UPDATE_DOCS=1 cargo test --test
/// completions` rewrites it.
#[test]
fn packaged_man_pages_and_completions_match_the_binary() {
    let root = common::repo().join("packaging/convo_doctor.data/data");
    let want = convo_doctor::commands::packaged::packaged_files();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let _ = std::fs::remove_dir_all(&root);
        for (rel, bytes) in &want {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
    }
    let got = common::files(&root);
    let names: Vec<&String> = got.keys().collect();
    let mut wanted: Vec<&String> = want.iter().map(|(r, _)| r).collect();
    wanted.sort();
    assert_eq!(
        names, wanted,
        "(UPDATE_DOCS=1 cargo test --test completions)"
    );
    for (rel, bytes) in &want {
        assert!(
            &got[rel] == bytes,
            "{rel} differs from the binary's (UPDATE_DOCS=1 cargo test --test completions)"
        );
    }
    // ...and the same as `convo-doctor man diagnose` prints
    let (code, out, _) = output(
        std::process::Command::new(env!("CARGO_BIN_EXE_convo-doctor")).args(["man", "diagnose"]),
    );
    assert_eq!(code, 0);
    assert_eq!(
        out.as_bytes(),
        &got["share/man/man1/convo-doctor-diagnose.1"][..]
    );
}
