//! The command line (clap derive). Knows nothing but arguments.
//!
//! Long because: every option of every command is declared here with its help text, in one place (`--help`, the man pages and the completion scripts are generated from it).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::batch::shard::Shard;
use crate::render::{ColorChoice, Format};
use crate::version::Version;

const EXIT_CODES: &str = "\
Exit status:
  0  no finding at or above --fail-on (default: warning)
  1  findings at or above --fail-on
  2  usage error, a PATH (or --db, --events-store) that cannot be read or
     holds no conversation, or no PATH and none found where OpenHands keeps
     them (unless --allow-empty), a file or folder below a PATH this user may
     not read, or an internal error on some conversation (the others are
     still scanned)";

#[derive(Debug, Parser)]
#[command(
    name = "convo-doctor",
    version,
    about = "Diagnose and repair OpenHands conversation directories",
    long_about = "Diagnose and repair the conversation directories that the OpenHands agent SDK \
and agent-server persist on disk (base_state.json, meta.json, events/). It reads them exactly as \
the SDK does, shows what the agent sees against what the UI lists, and explains every difference.",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// When to use colour in human output (NO_COLOR is honoured by `auto`).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report what is wrong with conversations (read-only).
    #[command(after_long_help = EXIT_CODES)]
    Diagnose(DiagnoseArgs),
    /// Repair what can be repaired: safe repairs always, unsafe ones with
    /// --unsafe-fixes.
    ///
    /// Each check's repair (safe, unsafe, or none and why) is listed under
    /// "Repairs" at the end of `convo-doctor repair --help`, and in the
    /// REPAIRS section of convo-doctor-repair(1).
    #[command(after_long_help = crate::checks::repairs::help_text(REPAIR_EXIT_CODES))]
    Repair(RepairArgs),
    /// Restore the files a repair run changed (unless they changed since).
    Undo(UndoArgs),
    /// Explain a check: what it finds, why it matters, how it is repaired.
    Explain(ExplainArgs),
    /// Print a shell completion script to stdout.
    Completions(CompletionsArgs),
    /// Print a man page (roff) to stdout: convo-doctor(1), or with a
    /// COMMAND, convo-doctor-COMMAND(1).
    Man(ManArgs),
    /// For the completion scripts, hidden: the ids of the repair runs
    /// `undo` would trust under the backup root, one a line.
    #[command(name = "__complete-runs", hide = true)]
    CompleteRuns(CompleteRunsArgs),
}

const REPAIR_EXIT_CODES: &str = "\
Exit status:
  --dry-run: 0 nothing to change; 1 changes pending (diff printed) or refused
  otherwise: 0 nothing at or above --fail-on remains; 1 findings remain
  2: usage error, or a PATH that cannot be read
The same for every --format.";

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Conversation directories, or stores holding them; Claude Code
    /// sessions or Codex rollouts. With none: this user's own Claude Code
    /// or Codex sessions (one of the two a run).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Show what would change (in human output, the diff of every file), and
    /// write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Output format: `human`, or per conversation the changes planned or
    /// applied and the findings left and refused, with their reasons, as
    /// `json` (one document) or `jsonl` (one line per conversation, then a
    /// summary line); no diffs, no event content.
    #[arg(long, value_enum, default_value_t = RepairFormat::Human)]
    pub format: RepairFormat,

    #[command(flatten)]
    pub rules: RulesArgs<RepairWords>,

    #[command(flatten)]
    pub scan: ScanArgs<RepairWords>,

    /// Report only the conversations with something planned, applied,
    /// refused or failed (the summary still counts them all).
    #[arg(long)]
    pub changes_only: bool,

    #[command(flatten)]
    pub run: RunArgs<RepairWords>,

    /// Also make the unsafe repairs (the agent loses sight of something: a
    /// quarantined event, a probable false root re-linked). Without it they
    /// are listed, not made.
    #[arg(long)]
    pub unsafe_fixes: bool,

    /// Deprecated: the old name of --unsafe-fixes.
    #[arg(long, hide = true)]
    pub accept_ambiguous: bool,

    #[command(flatten)]
    pub backup: BackupArgs<RepairWords>,

    /// Show event content in diffs (by default an event's unchanged strings,
    /// except ids, kinds, sources and timestamps, are shown as their length).
    #[arg(long)]
    pub show_content: bool,

    /// With --dry-run, the diff's form: `unified` (JSON pretty-printed and
    /// event content masked, for reading) or `patch` (the files' real bytes,
    /// on stdout alone, for `patch -p1` or `git apply` run from the folder
    /// holding the conversation; needs --show-content for event files;
    /// everything else goes to stderr).
    #[arg(long, value_enum, default_value_t = DiffFormat::Unified, requires = "dry_run")]
    pub diff_format: DiffFormat,
}

/// Output format of `repair`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RepairFormat {
    /// Diffs, what was (or would be) fixed, what is left and why, a summary
    /// by check.
    Human,
    /// One JSON document: {"schema_version", "conversations", "summary"}.
    Json,
    /// One JSON object per line per conversation, then a {"summary"} line.
    Jsonl,
}

/// How `repair --dry-run` shows a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// For reading: JSON pretty-printed, event content masked.
    Unified,
    /// For `patch -p1` / `git apply`: the real bytes, or no patch at all.
    Patch,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The run id printed by `repair` (`--list` shows them).
    #[arg(
        required_unless_present_any = ["list", "prune"],
        default_value = "",
        hide_default_value = true
    )]
    pub run_id: String,

    #[command(flatten)]
    pub backup: BackupArgs<UndoWords>,

    /// List the repair runs under the backup directory, oldest first, with
    /// what each changed and whether it can still be undone; restore nothing.
    #[arg(long, conflicts_with = "run_id")]
    pub list: bool,

    /// With --list: `human`, or `json` (one document: the backup directory
    /// and, per run, its id, creation time, files, conversations, state and
    /// the command that undoes it).
    #[arg(long, value_enum, default_value_t = ListFormat::Human, requires = "list")]
    pub format: ListFormat,

    /// Remove the run folders older than --older-than from the backup
    /// directory: only folders that are yours, private (0700) and not links,
    /// with a manifest you own. A run that can still be undone is kept
    /// unless --force; restore nothing.
    #[arg(long, conflicts_with_all = ["run_id", "list"], requires = "older_than")]
    pub prune: bool,

    /// With --prune: the age (e.g. 30d, 12h, 1h30m) from which a run is
    /// removed, measured from the last write of its manifest.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "prune")]
    pub older_than: Option<std::time::Duration>,

    /// With --prune: remove old runs that can still be undone too (their
    /// backup is the only copy of the bytes the repair replaced).
    #[arg(long, requires = "prune")]
    pub force: bool,

    /// Say what would be done, and change nothing: with a run id, what
    /// `undo` would do with each file; with --prune, what would be removed.
    #[arg(long, conflicts_with = "list")]
    pub dry_run: bool,
}

/// Output format of `undo --list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One line per run.
    Human,
    /// One JSON document: {"schema_version", "backup_dir", "runs"}.
    Json,
}

/// Severity threshold for a non-zero exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Info,
    Warning,
    Error,
    /// Always exit 0 when the scan completes.
    Never,
}

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Conversation directories, or stores holding them (e.g. the agent-server's
    /// conversations directory). Symbolic links below a PATH are not followed.
    /// None: look where OpenHands products keep conversations (the
    /// environment variables first, then the defaults) and say where.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The app server's database, to relate its rows (`conversation_metadata`)
    /// to the folders: `sqlite:PATH` (default `~/.openhands/openhands.db`) or
    /// `postgres://USER[:PASS]@HOST[:PORT]/DB` (read only; docs/appserver.md).
    /// Give Postgres's password through `PGPASSWORD` or `~/.pgpass`
    /// (`PGPASSFILE`), as for psql, not in the URL: a command line is
    /// visible to every local user.
    #[arg(long, value_name = "sqlite:PATH|postgres://...", value_parser = parse_db)]
    pub db: Option<crate::appserver::db::DbSpec>,

    /// Give up on the database when it answers nothing for this long:
    /// connecting (the server's greeting and authentication included), each
    /// statement (Postgres's `statement_timeout`), SQLite's locks and
    /// queries.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub db_timeout: std::time::Duration,

    /// The app server's copy of the events: its persistence directory (which
    /// holds `v1_conversations/`), `s3://BUCKET[/PREFIX]` or
    /// `gs://BUCKET[/PREFIX]` (prefix default `users`); read only.
    #[arg(long, value_name = "PATH|s3://BUCKET[/PREFIX]|gs://BUCKET[/PREFIX]", value_parser = parse_events_store)]
    pub events_store: Option<crate::appserver::events_store::StoreSpec>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// List every event: index, kind, source, parent, whether the agent sees it.
    #[arg(long)]
    pub events: bool,

    /// Draw each conversation's event tree, root first: the agent's branch
    /// as the trunk, the events it does not see collapsed by reason, long
    /// runs collapsed (human format; `--format markdown` always draws it).
    #[arg(long)]
    pub tree: bool,

    #[command(flatten)]
    pub rules: RulesArgs<DiagnoseWords>,

    #[command(flatten)]
    pub scan: ScanArgs<DiagnoseWords>,

    /// Leave out of the report the conversations with nothing at or above
    /// --fail-on (with `never`: nothing above info); one that cannot load is
    /// always shown. The summary still counts them all.
    #[arg(long)]
    pub hide_clean: bool,

    #[command(flatten)]
    pub run: RunArgs<DiagnoseWords>,
}

/// Which checks and which conversations a scan takes (`diagnose` and
/// `repair`): declared once, each command's help in its own words
/// ([`Words`]).
#[derive(Debug, Args)]
pub struct ScanArgs<W: Words> {
    #[arg(long, help = W::ONLY, value_delimiter = ',', value_name = "CHECK", value_parser = CheckId, hide_possible_values = true)]
    pub only: Vec<String>,

    #[arg(long, help = W::SKIP, value_delimiter = ',', value_name = "CHECK", value_parser = CheckId, hide_possible_values = true)]
    pub skip: Vec<String>,

    #[arg(long, help = W::SINCE, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "changed_since")]
    pub since: Option<std::time::Duration>,

    #[arg(long, help = W::CHANGED_SINCE, value_name = "FILE")]
    pub changed_since: Option<PathBuf>,

    #[arg(long, help = W::SHARD, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,

    #[arg(long = "id", help = W::ID, value_name = "ID", value_parser = crate::batch::ids::parse)]
    pub ids: Vec<crate::batch::ids::IdArg>,

    #[arg(long, help = W::ALLOW_EMPTY)]
    pub allow_empty: bool,

    #[arg(skip)]
    words: std::marker::PhantomData<W>,
}

/// The rules a scan judges by (`diagnose` and `repair`): the server
/// version's, and the severity from which a finding fails the run.
#[derive(Debug, Args)]
pub struct RulesArgs<W: Words> {
    #[arg(long, help = W::SERVER_VERSION, value_name = "X.Y.Z", value_parser = parse_version)]
    pub server_version: Option<Version>,

    #[arg(long, help = W::FAIL_ON, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,

    #[arg(skip)]
    words: std::marker::PhantomData<W>,
}

/// How a scan runs and where its report goes (`diagnose` and `repair`).
#[derive(Debug, Args)]
pub struct RunArgs<W: Words> {
    #[arg(long, short = 'j', help = W::JOBS, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    #[arg(long, short = 'q', help = W::QUIET)]
    pub quiet: bool,

    #[arg(long, short = 'o', help = W::OUTPUT_FILE, value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    #[arg(skip)]
    words: std::marker::PhantomData<W>,
}

/// Where the repair runs' backups are (`repair` writes them, `undo` and
/// `__complete-runs` read them): declared once, each command's help in its
/// own words ([`BackupWords`]).
#[derive(Debug, Args)]
pub struct BackupArgs<W: BackupWords> {
    #[arg(long = "backup-dir", help = W::BACKUP_DIR, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    #[arg(skip)]
    words: std::marker::PhantomData<W>,
}

/// How a command's help says `--backup-dir` ([`BackupArgs`]), as [`Words`].
pub trait BackupWords: std::fmt::Debug + Clone + Send + Sync + 'static {
    const BACKUP_DIR: &'static str;
}

impl BackupWords for RepairWords {
    const BACKUP_DIR: &'static str = "Where backups go (default: $XDG_STATE_HOME/convo-doctor/backups or ~/.local/state/convo-doctor/backups)";
}

/// `undo`'s words.
#[derive(Debug, Clone)]
pub struct UndoWords;

impl BackupWords for UndoWords {
    const BACKUP_DIR: &'static str = "The backup directory given to `repair`, if any";
}

/// `__complete-runs`'s words.
#[derive(Debug, Clone)]
pub struct CompleteRunsWords;

impl BackupWords for CompleteRunsWords {
    const BACKUP_DIR: &'static str = "The backup directory on the line being completed, if any";
}

/// `args.quiet` and `args.output_file` read as before in the Claude Code
/// and Codex repairs (`commands/repair_claude.rs`, `repair_codex.rs`);
/// the rest of the code says `args.run.quiet`.
impl std::ops::Deref for RepairArgs {
    type Target = RunArgs<RepairWords>;

    fn deref(&self) -> &Self::Target {
        &self.run
    }
}

/// How a command's help says the options it shares ([`ScanArgs`],
/// [`RulesArgs`], [`RunArgs`]): one paragraph each, no final period (as
/// clap leaves a doc comment); `-h` shows its gist ([`command`]).
pub trait Words: std::fmt::Debug + Clone + Send + Sync + 'static {
    const ONLY: &'static str;
    const SKIP: &'static str;
    const SINCE: &'static str;
    const CHANGED_SINCE: &'static str;
    const SHARD: &'static str;
    const ID: &'static str;
    const ALLOW_EMPTY: &'static str;
    const SERVER_VERSION: &'static str;
    const FAIL_ON: &'static str;
    const JOBS: &'static str;
    const QUIET: &'static str;
    const OUTPUT_FILE: &'static str;
}

/// `diagnose`'s words.
#[derive(Debug, Clone)]
pub struct DiagnoseWords;

impl Words for DiagnoseWords {
    const ONLY: &'static str =
        "Run only these checks (comma-separated ids; see `convo-doctor explain`)";
    const SKIP: &'static str = "Skip these checks (comma-separated ids)";
    const SINCE: &'static str = "Only scan conversations modified within this long (e.g. 90m, 25h, 7d, 1h30m): the folder, base_state.json, meta.json, events/ or an event file has an mtime within it";
    const CHANGED_SINCE: &'static str = "Only scan conversations modified at or after FILE's mtime (say, a file touched when the previous run started); a missing FILE means scan everything";
    const SHARD: &'static str = "Scan only shard K of N (K from 0 to N-1), split by a stable hash of the conversation id; the N outputs together cover the store once";
    const ID: &'static str = "Only this conversation (repeatable): its folder among the PATHs, its row and its event copy. The id as the UI's URL shows it, dashed as the database keeps it, or the start of either; one that names no conversation, or several, is an error naming it (exit 2). The exit status and the summary are those of the conversations named";
    const ALLOW_EMPTY: &'static str = "Accept a PATH that holds no conversation (by default that is an error, exit 2, so a failed mount in a cron job is noticed)";
    const SERVER_VERSION: &'static str = "Server/SDK version whose rules apply (name rule, leaf rule, known kinds, the pydantic models events and base_state.json must fit, which copy of a duplicated field wins). Default: the newest known, as for `repair`";
    const FAIL_ON: &'static str = "Exit 1 when a finding is at or above this severity";
    const JOBS: &'static str = "Worker threads analysing conversations (default: one per core)";
    const QUIET: &'static str = "Print nothing when the exit status is 0 (for cron, which mails what a job prints): the report, warnings and notes are held back and printed only when it is 1 or 2. No progress bar";
    const OUTPUT_FILE: &'static str = "Write the report to FILE instead of stdout, atomically: into a temporary file in FILE's folder, renamed over FILE once complete, so a reader (node_exporter's textfile collector) never sees half a report. Written whatever the exit status, once the scan has run";
}

/// `repair`'s words.
#[derive(Debug, Clone)]
pub struct RepairWords;

impl Words for RepairWords {
    const ONLY: &'static str = "Repair only these checks (comma-separated ids)";
    const SKIP: &'static str =
        "Do not repair these checks (comma-separated ids); their findings are left, as with --only";
    const SINCE: &'static str = "Only look at conversations modified within this long (e.g. 90m, 25h, 7d), as for `diagnose`";
    const CHANGED_SINCE: &'static str = "Only look at conversations modified at or after FILE's mtime (a missing FILE means all of them), as for `diagnose`";
    const SHARD: &'static str =
        "Only look at shard K of N (K from 0 to N-1), split as for `diagnose`";
    const ID: &'static str = "Only this conversation (repeatable): its folder among the PATHs, by the id its folder is named after, as the UI's URL shows it, dashed, or the start of either; one that names no folder, or several, is an error naming it (exit 2) and nothing is repaired";
    const ALLOW_EMPTY: &'static str =
        "Accept a PATH that holds no conversation (by default an error, exit 2, as for `diagnose`)";
    const SERVER_VERSION: &'static str = "The server version that will open these folders. Its rules are applied (default: the newest known, as for `diagnose`); only when it is given, and is 1.43.0 or newer, is meta.json's copy of the agent dropped. Left out, that copy is synced instead, which every server accepts (servers before 1.43 require it)";
    const FAIL_ON: &'static str = "Exit 1 when a finding at or above this severity remains";
    const JOBS: &'static str = "Worker threads reading conversations and planning their repairs (default: one per core); repairs are applied one at a time, in path order";
    const QUIET: &'static str = "Print nothing when the exit status is 0 (for cron): the report, warnings and notes are held back and printed only when it is 1 or 2 (`undo --list` still lists the run)";
    const OUTPUT_FILE: &'static str = "Write the report to FILE instead of stdout, atomically (a temporary file in FILE's folder, renamed over FILE once complete)";
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (diagnose, explain, ...).
    pub command: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct CompleteRunsArgs {
    #[command(flatten)]
    pub backup: BackupArgs<CompleteRunsWords>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The check id; without one, list every check.
    #[arg(value_parser = CheckId, hide_possible_values = true)]
    pub check: Option<String>,
}

/// A check id: accepts any string (the commands say "unknown check" in
/// their own words) but declares the ids of the registry as possible values,
/// so the generated completion scripts offer them.
#[derive(Clone, Copy, Debug)]
struct CheckId;

impl clap::builder::TypedValueParser for CheckId {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            crate::checks::REGISTRY
                .iter()
                .map(|c| clap::builder::PossibleValue::new(c.id())),
        ))
    }
}

/// Parse the process's arguments. `--help` and `--version` print and exit
/// 0, as clap does; a usage error is printed with the prefix of every other
/// error (`convo-doctor: error: …`) and exits 2.
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let parsed = command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map_err(|e| e.format(&mut command())));
    match parsed {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            crate::render::usage_error(&e);
            std::process::exit(2)
        }
    }
}

/// The command line as declared above, with `-h` cut to a screen: an
/// option whose description runs past its gist (`gist`) shows the
/// gist under `-h` and the whole of it under `--help` (clap's short and long
/// help; `-h` then ends "see more with '--help'").
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    short_help(Cli::command())
}

fn short_help(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_long_help().is_some() {
            return a;
        }
        let Some(full) = a.get_help().map(ToString::to_string) else {
            return a;
        };
        match gist(&full) {
            Some(first) => a.help(first).long_help(full),
            None => a,
        }
    })
    .mut_subcommands(short_help)
}

/// The gist of `s` for `-h`, when more follows it: up to the first end of a
/// sentence (`.` then a capital or a line break), or the first `: `, `; `
/// or ` (` (what follows them explains, lists or qualifies). `e.g. 90m`
/// ends nothing.
fn gist(s: &str) -> Option<String> {
    let b = s.as_bytes();
    for i in 0..b.len().saturating_sub(2) {
        let ends = match (b[i], b[i + 1]) {
            (b'.', b' ') => b[i + 2].is_ascii_uppercase(),
            (b'.', b'\n') => true,
            (b':' | b';', b' ') => true,
            (b' ', b'(') => true,
            _ => false,
        };
        if ends {
            let gist = s[..i].trim_end_matches('.');
            return (!gist.is_empty()).then(|| gist.to_string());
        }
    }
    None
}

fn parse_version(s: &str) -> Result<Version, String> {
    s.parse()
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::batch::since::parse_duration(s)
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

/// Never an error here: clap would echo the value, which may hold a
/// password; an unusable `--db` is the run's error (exit 2), worded
/// without it.
fn parse_db(s: &str) -> Result<crate::appserver::db::DbSpec, String> {
    Ok(crate::appserver::db::DbSpec::parse(s))
}

fn parse_events_store(s: &str) -> Result<crate::appserver::events_store::StoreSpec, String> {
    crate::appserver::events_store::StoreSpec::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn short_help_is_the_gist() {
        assert_eq!(
            gist("Only this one. The rest, e.g. 90m, is long help."),
            Some("Only this one".to_string())
        );
        assert_eq!(
            gist("Scan only shard K of N (K from 0); and more"),
            Some("Scan only shard K of N".to_string())
        );
        assert_eq!(
            gist("The copy: `s3://B` or a folder"),
            Some("The copy".to_string())
        );
        assert_eq!(gist("One sentence, e.g. 90m."), None);
        assert_eq!(gist("a.b c. d"), None);
    }

    /// An option two commands share is declared once, in a flattened group
    /// ([`ScanArgs`], [`RulesArgs`], [`RunArgs`], [`BackupArgs`]), unless it
    /// only shares a name: those are listed here, each with why.
    #[test]
    fn a_shared_option_is_declared_once() {
        use clap::Args as _;
        let same_name_only = [
            "help",    // clap's own
            "format",  // diagnose's report formats, repair's, undo --list's
            "dry-run", // repair: show the diff; undo: say what would be restored
        ];
        // what a declaration is, its help aside: a hand-made copy of a
        // grouped option under another field name, or with another parser,
        // action or default, differs from the group's
        let shape = |a: &clap::Arg| {
            format!(
                "{} {:?} {:?} {:?} {:?} {:?}",
                a.get_id(),
                a.get_value_names(),
                a.get_action(),
                a.get_default_values(),
                a.get_num_args(),
                a.get_value_parser().type_id()
            )
        };
        let groups = [
            ScanArgs::<DiagnoseWords>::augment_args(clap::Command::new("x")),
            RulesArgs::<DiagnoseWords>::augment_args(clap::Command::new("x")),
            RunArgs::<DiagnoseWords>::augment_args(clap::Command::new("x")),
            BackupArgs::<UndoWords>::augment_args(clap::Command::new("x")),
        ];
        let group_shape: std::collections::HashMap<String, String> = groups
            .iter()
            .flat_map(|c| c.get_arguments())
            .filter_map(|a| Some((a.get_long()?.to_string(), shape(a))))
            .collect();
        let grouped: Vec<String> = group_shape.keys().cloned().collect();
        for g in [
            "only",
            "id",
            "server-version",
            "fail-on",
            "quiet",
            "output-file",
            "backup-dir",
        ] {
            assert!(grouped.iter().any(|x| x == g), "{g}");
        }
        let cmd = command();
        let subs: Vec<&clap::Command> = cmd.get_subcommands().collect();
        for (i, a) in subs.iter().enumerate() {
            for b in &subs[i + 1..] {
                for long in a
                    .get_arguments()
                    .filter(|x| !x.is_global_set())
                    .filter_map(|x| x.get_long())
                {
                    let shared = b.get_arguments().any(|y| y.get_long() == Some(long));
                    assert!(
                        !shared || grouped.iter().any(|g| g == long) || same_name_only.contains(&long),
                        "--{long} is declared by both `{}` and `{}`: declare it once, in a flattened group",
                        a.get_name(),
                        b.get_name()
                    );
                    let Some(want) = group_shape.get(long).filter(|_| shared) else {
                        continue;
                    };
                    for cmd in [a, b] {
                        let arg = cmd.get_arguments().find(|y| y.get_long() == Some(long));
                        assert_eq!(
                            arg.map(shape).as_ref(),
                            Some(want),
                            "`{}` declares --{long} by hand: flatten its group instead",
                            cmd.get_name()
                        );
                    }
                }
            }
        }
    }

    /// `-h` fits a screen; `--help` keeps every word of every option.
    #[test]
    fn dash_h_is_a_screen_and_dash_dash_help_the_whole() {
        for sub in ["diagnose", "repair", "undo"] {
            let mut c = command();
            let c = c.find_subcommand_mut(sub).expect("a subcommand");
            let short = c.render_help().to_string();
            let long = c.render_long_help().to_string();
            let lines = short.lines().count();
            assert!(lines <= 52, "{sub} -h is {lines} lines:\n{short}");
            assert!(long.lines().count() > lines, "{sub}: --help adds nothing");
        }
    }
}
