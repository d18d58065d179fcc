//! `convo-doctor completions SHELL` and `convo-doctor man [COMMAND]`: both
//! generated from the clap definitions, so they never drift from the CLI.

use clap::CommandFactory;

use super::ExitStatus;
use crate::cli::Cli;
use crate::fix::persist;
use crate::render;

fn print(bytes: Vec<u8>) -> anyhow::Result<ExitStatus> {
    match render::out(&String::from_utf8_lossy(&bytes)) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => super::diagnose::broken_pipe_or_error(e),
    }
}

/// The completion script for `shell`: clap_complete's, then mended where
/// its static generators fall short (tests/completions.rs runs the bash,
/// zsh and fish scripts in real interactive sessions):
/// - check ids complete inside the comma lists of `--only` and `--skip`
///   (`--only false-root,ind` → `false-root,index-gap`);
/// - `explain` offers the check ids (fish: clap offers the values of
///   options only);
/// - `undo` offers the run ids that `convo-doctor __complete-runs` prints
///   ([`run_ids`]: only the trusted runs, only ids of the run-id alphabet)
///   for the `--backup-dir` on the line, else the default root. The script
///   never lists the backup root itself, and hands the ids to the shell as
///   data: bash appends each that starts with the word to COMPREPLY (never
///   through `compgen -W`, which expands what it is given), zsh `compadd`s
///   them, fish offers a command substitution's lines.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut offered(), "convo-doctor", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let ids: Vec<&str> = crate::checks::REGISTRY.iter().map(|c| c.id()).collect();
    let ids = ids.join(" ");
    let text = match shell {
        clap_complete::Shell::Bash => bash(text, &ids),
        clap_complete::Shell::Zsh => zsh(text, &ids),
        clap_complete::Shell::Fish => fish(text, &ids),
        _ => text,
    };
    text.into_bytes()
}

/// The command line as completions offer it: clap_complete writes hidden
/// subcommands too, so they are left out here (`__complete-runs`).
fn offered() -> clap::Command {
    let cli = Cli::command();
    let shown = clap::Command::new("convo-doctor")
        .args(cli.get_arguments().cloned())
        .subcommands(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    // the derive's `version`: the package's
    match cli.get_version() {
        Some(_) => shown.version(env!("CARGO_PKG_VERSION")),
        None => shown,
    }
}

/// Replace every `from` in `text` by `to`, expecting it `n` times: a
/// clap_complete that writes its scripts differently fails the tests here
/// (and in tests/completions.rs), not silently in a user's shell.
fn replace_n(text: &str, from: &str, to: &str, n: usize) -> String {
    debug_assert_eq!(text.matches(from).count(), n, "{from}");
    text.replace(from, to)
}

/// bash and zsh alike: `~` at the start of the `--backup-dir` typed
/// (`root`) is `$HOME`; nothing else of it is expanded.
const SH_TILDE: &str = r#"    [[ $root == \~ || $root == \~/* ]] && root=$HOME${root#\~}"#;

/// The bash helpers, defined before clap's function.
const BASH_HELPERS: &str = r#"# convo-doctor: check ids inside a comma list, and repair run ids.
__convo_doctor_check_list() {
    local head=""
    [[ $1 == *,* ]] && head="${1%,*},"
    COMPREPLY=($(compgen -P "${head}" -W "@IDS@" -- "${1##*,}"))
}
# The run ids `convo-doctor __complete-runs` prints that start with $1,
# appended to COMPREPLY as they are (never through `compgen -W`).
__convo_doctor_runs() {
    local cur=$1 root="" i id
    for (( i = 1; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == --backup-dir ]]; then
            root=${COMP_WORDS[i+1]}
            [[ $root == = ]] && root=${COMP_WORDS[i+2]}
        elif [[ ${COMP_WORDS[i]} == --backup-dir=?* ]]; then
            root=${COMP_WORDS[i]#--backup-dir=}
        fi
    done
@TILDE@
    set --
    [[ -n $root ]] && set -- --backup-dir "$root"
    while IFS= read -r id; do
        [[ $id == "$cur"* ]] && COMPREPLY+=("$id")
    done < <(command convo-doctor __complete-runs "$@" 2>/dev/null)
}

"#;

fn bash(text: String, ids: &str) -> String {
    // clap_complete's bash generator names the state of a subcommand in
    // two ways for a hyphenated binary: `convo__doctor__subcmd__diagnose`
    // where it tracks the words typed, `convo__subcmd__doctor__subcmd__diagnose`
    // where it offers the flags, so no subcommand flag ever completed.
    // One spelling for both.
    let text = text.replace("convo__subcmd__doctor", "convo__doctor");
    // --only/--skip of diagnose and of repair.
    let text = replace_n(
        &text,
        &format!("COMPREPLY=($(compgen -W \"{ids}\" -- \"${{cur}}\"))"),
        "__convo_doctor_check_list \"${cur}\"",
        4,
    );
    // undo's words: its flags, then the run ids, wherever its flags are
    // offered (the first word after `undo`, and any word not an option's
    // value).
    let offer = "COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )";
    let mut in_undo = false;
    let mut runs = 0;
    let text: String = text
        .split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with("convo__doctor__subcmd__") {
                in_undo = line.trim() == "convo__doctor__subcmd__undo)";
            }
            match line.strip_suffix('\n') {
                Some(l) if in_undo && l.trim() == offer => {
                    runs += 1;
                    let indent = &l[..l.len() - l.trim_start().len()];
                    format!("{line}{indent}__convo_doctor_runs \"${{cur}}\"\n")
                }
                _ => line.to_string(),
            }
        })
        .collect();
    debug_assert_eq!(runs, 2, "undo's words in the bash script");
    BASH_HELPERS
        .replace("@IDS@", ids)
        .replace("@TILDE@", SH_TILDE)
        + &text
}

/// The zsh helpers, defined before the script's last lines (which call or
/// register `_convo-doctor`).
const ZSH_HELPERS: &str = r#"(( $+functions[_convo-doctor_runs] )) ||
_convo-doctor_runs() {
    # convo-doctor: the repair run ids `convo-doctor __complete-runs` prints.
    local root=${(Q)opt_args[--backup-dir]}
@TILDE@
    local -a args runs
    [[ -n $root ]] && args=(--backup-dir "$root")
    runs=( ${(f)"$(command convo-doctor __complete-runs $args 2>/dev/null)"} )
    compadd -a runs
}

"#;
fn zsh(text: String, ids: &str) -> String {
    // `_sequence` completes each item of a comma list.
    let text = replace_n(
        &text,
        &format!(":CHECK:({ids})'"),
        &format!(":CHECK:_sequence compadd - {ids}'"),
        4,
    );
    // undo's positional (`'::run_id -- HELP:_default' \`): the run ids.
    let mut runs = 0;
    let text: String = text
        .split_inclusive('\n')
        .map(|line| match line.strip_suffix(":_default' \\\n") {
            Some(head) if line.starts_with("'::run_id -- ") => {
                runs += 1;
                format!("{head}:_convo-doctor_runs' \\\n")
            }
            _ => line.to_string(),
        })
        .collect();
    debug_assert_eq!(runs, 1, "undo's run_id in the zsh script");
    let tail = "\nif [ \"$funcstack[1]\" = \"_convo-doctor\" ]; then";
    match text.rfind(tail) {
        Some(at) => format!(
            "{}\n{}{}",
            &text[..at],
            ZSH_HELPERS.replace("@TILDE@", SH_TILDE),
            &text[at..]
        ),
        None => {
            debug_assert!(false, "no tail in the zsh script");
            text
        }
    }
}

const FISH_HELPERS: &str = r#"# convo-doctor: check ids inside a comma list, and repair run ids.
function __fish_convo_doctor_check_list
    set -l token (commandline -ct | string replace -r -- '^--[a-z-]+=' '')
    set -l head (string match -r -- '^.*,' $token)
    for id in @IDS@
        printf '%s%s\n' "$head" $id
    end
end
function __fish_convo_doctor_runs
    # the repair run ids `convo-doctor __complete-runs` prints
    set -l words (commandline -opc)
    set -l root
    for i in (seq (count $words))
        if test "$words[$i]" = --backup-dir
            set root $words[(math $i + 1)]
        else if string match -q -- '--backup-dir=*' $words[$i]
            set root (string replace -- '--backup-dir=' '' $words[$i])
        end
    end
    set -l args
    if test -n "$root"
        set args --backup-dir (string replace -r -- '^~(?=/|$)' $HOME $root)
    end
    command convo-doctor __complete-runs $args 2>/dev/null
end
"#;

fn fish(text: String, ids: &str) -> String {
    // clap writes the ids as `-a "id\t'' id\t'' ..."` (one per line): the
    // options' value lists become the comma-aware function.
    let mut text = text;
    let mut replaced = 0;
    for opt in ["only", "skip"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(&format!(" -l {opt} ")) {
            let at = from + at;
            let Some(a) = text[at..].find(" -a \"") else {
                break;
            };
            let a = at + a + " -a \"".len();
            let Some(close) = text[a..].find('"') else {
                break;
            };
            let close = a + close;
            text.replace_range(a..close, "(__fish_convo_doctor_check_list)");
            replaced += 1;
            from = a;
        }
    }
    debug_assert_eq!(replaced, 4, "fish --only/--skip");
    let mut text = FISH_HELPERS.replace("@IDS@", ids) + &text;
    // `explain CHECK` and `undo RUN_ID`: positionals, by hand.
    text.push_str(&format!(
        "complete -c convo-doctor -n \"__fish_convo_doctor_using_subcommand explain\" -f -a \"{ids}\"\n"
    ));
    text.push_str(
        "complete -c convo-doctor -n \"__fish_convo_doctor_using_subcommand undo\" -f -a \"(__fish_convo_doctor_runs)\" -d 'repair run'\n",
    );
    text
}

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitStatus> {
    print(script(shell))
}

/// `convo-doctor __complete-runs [--backup-dir DIR]`, hidden, which the
/// bash, zsh and fish scripts run at TAB after `undo`: the ids of the runs
/// under the backup root (`DIR`, else `persist::default_backup_root`) that
/// `undo --list` calls trusted (`persist::trusted_run_ids`), one a line;
/// nothing read from disk reaches a shell otherwise. Exit 2, with the
/// reason on stderr (which the scripts discard), for a root `undo` would
/// not trust.
pub fn run_ids(backup_dir: Option<&std::path::Path>) -> anyhow::Result<ExitStatus> {
    let ids = match backup_dir {
        Some(d) => persist::trusted_run_ids(d),
        None => persist::default_backup_root().and_then(|d| persist::trusted_run_ids(&d)),
    };
    let ids = ids.map_err(anyhow::Error::msg)?;
    match render::runs::ids(&mut std::io::stdout().lock(), &ids) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => super::diagnose::broken_pipe_or_error(e),
    }
}

/// The man page (roff) of `convo-doctor`, or of one of its subcommands
/// (`convo-doctor-diagnose(1)` and so on): clap_mangen's NAME, SYNOPSIS,
/// DESCRIPTION, OPTIONS and COMMANDS, then the sections a man page is
/// expected to have (EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, SEE ALSO),
/// written here from the same constants `--help` prints.
pub fn page(command: Option<&str>) -> Result<Vec<u8>, String> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let top = cmd.clone();
    let cmd = match command {
        None => cmd,
        Some(name) => cmd
            .get_subcommands()
            .find(|s| s.get_name() == name && !s.is_hide_set())
            .cloned()
            .ok_or_else(|| format!("no command `{name}` (see `convo-doctor --help`)"))?,
    };
    let after = cmd
        .get_after_long_help()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let (extra, exit) = match after.split_once("Exit status:\n") {
        Some((extra, exit)) => (extra.trim_end().to_string(), exit.to_string()),
        None => (after.trim_end().to_string(), String::new()),
    };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    let io = |e: std::io::Error| e.to_string();
    man.render_title(&mut buf).map_err(io)?;
    man.render_name_section(&mut buf).map_err(io)?;
    man.render_synopsis_section(&mut buf).map_err(io)?;
    man.render_description_section(&mut buf).map_err(io)?;
    man.render_options_section(&mut buf).map_err(io)?;
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut buf).map_err(io)?;
    }
    let mut roff = String::new();
    if !extra.is_empty() {
        // `repair`: the list of repairs its --help ends with.
        let (title, body) = extra.split_once(":\n").unwrap_or(("NOTES", &extra));
        if title.starts_with("Repairs") {
            section(&mut roff, "REPAIRS");
            paragraph(
                &mut roff,
                "Safe repairs are always made; unsafe ones only with --unsafe-fixes (without it they are listed, not made).",
            );
        } else {
            section(&mut roff, &title.to_uppercase());
        }
        verbatim(&mut roff, body);
    }
    section(&mut roff, "EXIT STATUS");
    verbatim(&mut roff, &exit_status(command, &exit));
    section(&mut roff, "ENVIRONMENT");
    for (name, text) in ENVIRONMENT {
        item(&mut roff, name, text);
    }
    section(&mut roff, "FILES");
    for (name, text) in FILES {
        item(&mut roff, name, text);
    }
    section(&mut roff, "EXAMPLES");
    for (what, line) in examples(command) {
        paragraph(&mut roff, what);
        verbatim(&mut roff, line);
    }
    section(&mut roff, "SEE ALSO");
    let mut see: Vec<String> = std::iter::once("convo-doctor".to_string())
        .chain(
            top.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| format!("convo-doctor-{}", s.get_name())),
        )
        .filter(|p| *p != man.get_filename().trim_end_matches(".1"))
        .map(|p| format!("\\fB{}\\fR(1)", esc(&p)))
        .collect();
    // self-contained: the long documentation is not installed with the
    // binary, so the page says where it is rather than point at a docs/
    // folder the reader does not have
    see.push(
        "\\fBconvo\\-doctor explain\\fR (every check: what it finds, why it matters, how it is repaired); \
         the full documentation (output formats and the JSON schema, repairs, batch runs, safety) \
         is README.md and docs/*.md of the convo-doctor source, which a wheel does not install"
            .into(),
    );
    roff.push_str(&see.join(",\n"));
    roff.push('\n');
    buf.extend_from_slice(roff.as_bytes());
    if cmd.get_version().is_some() {
        man.render_version_section(&mut buf).map_err(io)?;
    }
    Ok(buf)
}

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "When set and not empty, --color auto prints no colour (as it does when stdout is not a terminal or TERM is dumb).",
    ),
    (
        "XDG_STATE_HOME",
        "The backup root of repair and undo is $XDG_STATE_HOME/convo-doctor/backups when it is set and not empty.",
    ),
    (
        "HOME",
        "Otherwise the backup root is $HOME/.local/state/convo-doctor/backups; with neither set, --backup-dir is required.",
    ),
    (
        "OH_SECRET_KEY",
        "The agent-server's secret key: the secret-undecryptable check tries it on the encrypted secrets of base_state.json (blank means unset). Never printed.",
    ),
    (
        "OH_PREVIOUS_SECRET_KEYS",
        "Earlier keys, a JSON list (or OH_PREVIOUS_SECRET_KEYS_0, _1, ...), tried after OH_SECRET_KEY, as the agent-server's key rotation does. Never printed.",
    ),
    (
        "OH_CONVERSATIONS_PATH, OPENHANDS_CONVERSATIONS_DIR, OPENHANDS_PERSISTENCE_DIR",
        "Where diagnose without a folder looks first: the agent-server's conversations, the OpenHands CLI's (and $OPENHANDS_PERSISTENCE_DIR/conversations), before each product's default under $HOME.",
    ),
    (
        "OH_PERSISTENCE_DIR, FILE_STORE, SHARED_EVENT_STORAGE_PROVIDER, FILE_STORE_PATH",
        "The app server's persistence directory (its SQLite database and event copy), as the app server reads them: $OH_PERSISTENCE_DIR, else $FILE_STORE_PATH when the file store is local, else ~/.openhands.",
    ),
    (
        "PGPASSWORD, PGPASSFILE, PGHOST, PGPORT, PGUSER, PGDATABASE",
        "For --db postgres://...: what the URL leaves out, as libpq (psql) takes it; the password from $PGPASSWORD, else the first matching line of $PGPASSFILE or ~/.pgpass (used only when neither group nor others may read it). Never printed.",
    ),
    (
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_S3_ENDPOINT, AWS_S3_SECURE",
        "Credentials and endpoint for an app server's event copy in S3 (the standard AWS chain; the app server's own AWS_S3_ENDPOINT and AWS_S3_SECURE are honoured). Never printed.",
    ),
    (
        "GOOGLE_APPLICATION_CREDENTIALS, STORAGE_EMULATOR_HOST",
        "Credentials for an event copy in Google Cloud Storage, or the emulator to use instead (without OAuth). Never printed.",
    ),
    (
        "TERM, COLUMNS",
        "TERM unset or dumb: no colour and no progress bar. COLUMNS: the width human output wraps at when stdout is a terminal.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "$XDG_STATE_HOME/convo-doctor/backups/, ~/.local/state/convo-doctor/backups/",
        "The default backup root (--backup-dir chooses another): one folder per repair run, named by its run id, mode 0700, holding the original of every file the run changed. It must be yours, not writable by others and not a link.",
    ),
    (
        "<backup root>/<run id>/manifest.json",
        "What the run changed: for each file its conversation, name, sha256 before and after, check ids, time and mode. undo and undo --list read it, and trust it only when it, its run folder and the root are yours, not writable by others and not links.",
    ),
    (
        "<conversation>/base_state.json, meta.json, events/event-NNNNN-<id>.json",
        "What diagnose reads and repair may rewrite (atomically, keeping owner and mode); events/.eventlog.lock is the SDK's lock, taken by repair and undo.",
    ),
];

fn exit_status(command: Option<&str>, from_help: &str) -> String {
    if !from_help.trim().is_empty() {
        return from_help.trim_end().to_string();
    }
    match command {
        Some("undo") => "\
  0  every file restored (or already original); with --list, the runs listed;
     with --prune, every old run removed or kept because it can be undone
  1  a file was refused (changed since the repair, or not safe to write);
     with --prune, an old folder left (not yours, not 0700, a link, or no
     trusted manifest)
  2  usage error, no such run, or a backup root that cannot be read or
     trusted"
            .into(),
        Some("explain") => "\
  0  the explanation (or the list of checks) printed
  2  unknown check"
            .into(),
        Some("man") => "\
  0  the page printed
  2  no such command"
            .into(),
        _ => "\
  0  the script printed
  2  usage error (an unknown shell)"
            .into(),
    }
}

fn examples(command: Option<&str>) -> Vec<(&'static str, &'static str)> {
    let diagnose = vec![
        (
            "Diagnose one conversation folder:",
            "convo-doctor diagnose ~/.openhands/conversations/a5050c9292d85c568ea70f078f0dddb5",
        ),
        (
            "A nightly scan of a whole store, JSON lines, only what changed in a day:",
            "convo-doctor diagnose --format jsonl --since 25h /srv/openhands/conversations",
        ),
        (
            "Only the false-root check, hiding clean conversations:",
            "convo-doctor diagnose --only false-root --hide-clean STORE",
        ),
        (
            "The event tree of one conversation, root first:",
            "convo-doctor diagnose --tree DIR",
        ),
        (
            "A redacted report to paste into a ticket, trees as Mermaid graphs:",
            "convo-doctor diagnose --format markdown DIR > report.md",
        ),
    ];
    let repair = vec![
        (
            "See what a repair would change, writing nothing:",
            "convo-doctor repair --dry-run DIR",
        ),
        (
            "Repair, with backups; the run id to undo is printed:",
            "convo-doctor repair DIR",
        ),
        (
            "A patch of the real bytes, for patch -p1 run from the folder holding DIR:",
            "convo-doctor repair --dry-run --diff-format patch --show-content DIR > fix.patch",
        ),
        (
            "What a store repair would do, one JSON line per conversation, then a summary:",
            "convo-doctor repair --dry-run --format jsonl STORE",
        ),
    ];
    let undo = vec![
        (
            "The repair runs kept, and which can be undone:",
            "convo-doctor undo --list",
        ),
        ("Put back what a run changed:", "convo-doctor undo RUN-ID"),
        (
            "Remove runs older than 30 days, except those that can still be undone:",
            "convo-doctor undo --prune --older-than 30d",
        ),
    ];
    let explain = vec![
        ("Every check, with its id:", "convo-doctor explain"),
        (
            "What false-root finds and how it is repaired:",
            "convo-doctor explain false-root",
        ),
    ];
    match command {
        None => [&diagnose[..2], &repair[..], &undo[1..]].concat(),
        Some("diagnose") => diagnose,
        Some("repair") => repair,
        Some("undo") => undo,
        Some("explain") => explain,
        Some("completions") => vec![
            (
                "Install bash completion for the current user:",
                "convo-doctor completions bash > ~/.local/share/bash-completion/completions/convo-doctor",
            ),
            (
                "fish:",
                "convo-doctor completions fish > ~/.config/fish/completions/convo-doctor.fish",
            ),
        ],
        _ => vec![
            ("Read the page of diagnose:", "convo-doctor man diagnose | man -l -"),
        ],
    }
}

/// Text for roff: backslashes, hyphens (so they stay ASCII `-`) and a
/// leading dot or quote, which roff would read as a request.
fn esc(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

fn section(out: &mut String, title: &str) {
    out.push_str(&format!(".SH \"{title}\"\n"));
}

fn paragraph(out: &mut String, text: &str) {
    out.push_str(".PP\n");
    out.push_str(&esc(text));
    out.push('\n');
}

fn item(out: &mut String, tag: &str, text: &str) {
    out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", esc(tag), esc(text)));
}

fn verbatim(out: &mut String, block: &str) {
    out.push_str(".PP\n.RS 4\n.nf\n");
    for line in block.lines() {
        out.push_str(&esc(line));
        out.push('\n');
    }
    out.push_str(".fi\n.RE\n");
}

/// The names of the man pages `page` can print, main page first (none for
/// a hidden subcommand).
pub fn pages() -> Vec<Option<String>> {
    std::iter::once(None)
        .chain(
            Cli::command()
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| Some(s.get_name().to_string())),
        )
        .collect()
}

pub fn man(command: Option<&str>) -> anyhow::Result<ExitStatus> {
    print(page(command).map_err(anyhow::Error::msg)?)
}

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
            script(Shell::Bash),
        ),
        (
            "share/zsh/site-functions/_convo-doctor".to_string(),
            script(Shell::Zsh),
        ),
        (
            "share/fish/vendor_completions.d/convo-doctor.fish".to_string(),
            script(Shell::Fish),
        ),
    ];
    for name in pages() {
        let file = match &name {
            None => "convo-doctor.1".to_string(),
            Some(n) => format!("convo-doctor-{n}.1"),
        };
        let bytes = page(name.as_deref()).expect("every subcommand has a page");
        out.push((format!("share/man/man1/{file}"), bytes));
    }
    out
}
