//! `convo-doctor man [COMMAND]`: the man pages, generated from the clap
//! definitions, so they never drift from the CLI.

use clap::CommandFactory;

use super::ExitStatus;
use crate::cli::Cli;

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
    super::completions::print(page(command).map_err(anyhow::Error::msg)?)
}
