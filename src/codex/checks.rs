//! The Codex checks: declared like every other check (id, text, repair;
//! listed in [`crate::checks::REGISTRY`] so `explain`, `--only`, the docs and
//! `--help` know them), run on a rollout by [`run`], not on an OpenHands
//! folder (their [`Check::run`] finds nothing there).

use crate::checks::{Applicability, Finding, Repair, Severity};
use crate::sessions::checks::session_check;

use super::session::{LineKind, Rollout};
use super::view::{NoResume, View};

session_check! {
    MissingSessionMeta,
    MISSING_SESSION_META = "codex-missing-session-meta",
    summary: "Codex: the rollout does not start with a session_meta the client can read, so `codex resume` fails",
    explain: "Codex reads a rollout's first line as its `session_meta` (the session's \
id, start time, working directory, originator and version). Measured with \
the real client (0.171.0, fixtures/codex/sessions): without it, with it on \
a later line, with one of `id`, `timestamp`, `cwd`, `originator`, \
`cli_version` missing, or with an `id` other than the file name's, `codex \
exec resume` fails (\"failed to read session metadata\", \"thread source \
changed\") and nothing is resent. When the rollout has no `session_meta` \
line at all, the repair writes one back as line 1 from what the rollout \
still holds: the id and start time of its file name, the working directory \
of its first `turn_context`, the provider of its settings; originator \
`convo-doctor` and version `unknown` (the client accepts both and resends \
the whole history). See docs/codex.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::State,
        what: "Codex rollouts: write a session_meta line back as line 1, rebuilt from the file name (id, start time) and the rollout's own turn_context (working directory)",
        guards: "the rollout has no session_meta line at all; its file name is `rollout-<time>-<uuid>.jsonl`; a `turn_context` or settings event names the working directory; the rebuilt rollout resumes (proven by its view) and every other line is kept byte for byte",
        planner: None,
    },
}

session_check! {
    InvalidLine,
    INVALID_LINE = "codex-invalid-line",
    summary: "Codex: a rollout line is not a JSON object (the client skips it; as the first line it cannot resume)",
    explain: "A line of a Codex rollout that is not a JSON object (a write cut short, \
bytes from elsewhere). Measured with the real client (0.171.0): it skips the \
line and resumes without that record (an item cut short is not resent); \
when the line comes before the `session_meta` (the first line), the client \
cannot resume at all (\"failed to parse first rollout record\"). The repair \
sets the line aside: it leaves the rollout and is kept in the run's backup, \
so a rollout whose first line was the bad one resumes again, whole. See \
docs/codex.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::Index,
        what: "Codex rollouts: set the line aside (out of the rollout, kept in the run's backup)",
        guards: "the line is not a JSON object (the client skips it already, or cannot start because of it); every other line is kept byte for byte",
        planner: None,
    },
}

session_check! {
    DuplicateLine,
    DUPLICATE_LINE = "codex-duplicate-line",
    summary: "Codex: a rollout line written twice, byte for byte (an item is resent twice; a session_meta again drops the history before it)",
    explain: "A line of a Codex rollout that is byte for byte an earlier line (a write \
repeated). Measured with the real client (0.171.0): a `response_item` \
written twice (a user message, a call, an output) is resent twice; a \
`session_meta` written again starts the history over, so every item before \
it is not resent (an error: \"resume sends N of M items\"); a `compacted` \
record written again starts the history over from the copy (an error when \
items written between them are lost). Other records written twice change \
nothing the client resends. The repair drops the later \
copy. See docs/codex.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::Index,
        what: "Codex rollouts: drop the later copy of a line written twice",
        guards: "the line is byte for byte an earlier line of the rollout (a response item, a session_meta, an event); every other line is kept byte for byte",
        planner: None,
    },
}

session_check! {
    UnpairedCall,
    UNPAIRED_CALL = "codex-unpaired-call",
    summary: "Codex: a tool output without its call (the client drops it) or a call without its output (the client answers it itself)",
    explain: "A `function_call_output` whose `function_call` is not resent before it, \
or a call with no output (a record lost, an interrupted turn). Measured with \
the real client (0.171.0): it drops such an output from what it resends, \
and resends a call without output with an answer of its own. No automatic \
repair: what the tool said is not in the rollout. See docs/codex.md.",
    repair: Repair::manual(
        "what the tool said is not in the rollout; the client already answers or drops it",
    ),
}

session_check! {
    StateParity,
    STATE_PARITY = "codex-state-parity",
    summary: "Codex: a rollout the state database has no row for (the picker and `resume --last` pass it over), or a row naming a rollout that is gone (the client cannot resume the thread)",
    explain: "Codex indexes its rollouts in a state database (`$CODEX_HOME/state_<n>.sqlite`, \
table `threads`, column `rollout_path`); `codex doctor` checks that parity and \
repairs nothing. Measured with the real client (0.171.0, fixtures/codex/state): \
a rollout without a row is not listed from the database (the app server's \
`thread/list` reading the database only), `codex exec resume --last` passes it \
over, and `codex doctor` warns (a warning); resume by its id, or a listing \
that scans the rollouts, finds it and writes the row back. The repair writes \
that row, as the client writes it (every column derived from the rollout's \
`session_meta`, first `turn_context`, first user message and last token \
count), in one transaction, with a backup of the database and its side files \
(`convo-doctor undo` puts every file back byte for byte), refused while a \
client has the database open. A row whose `rollout_path` is gone makes `codex \
exec resume <id>` fail (\"no rollout found for thread id\") even when the \
rollout is elsewhere in the sessions tree (an error on that rollout); a row \
whose rollout is nowhere is a thread the client cannot resume (an error, \
reported under the path the row names). Those rows are not repaired: what \
they hold (a name, a pin) is nowhere else; the client's own `codex delete \
--force <id>` removes one (measured), or, with the client stopped, `UPDATE \
threads SET rollout_path = '<path>' WHERE id = '<id>'` points it at the \
rollout. See docs/codex.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::Index,
        what: "Codex state database: insert the row a rollout lacks, as the client writes it (one transaction; the database and its side files backed up)",
        guards: "the rollout's session_meta names its file name's id and says its source, provider and working directory, and a turn_context its sandbox and approval policies; the table has the columns the client's schema has; no process has the database open (the lock SQLite holds on its -shm) and no client writes the thread; the database's files are as read right before the write, regular files of one link; each row is read back inside the transaction; every file keeps its owner and mode. A row naming a rollout that is gone is left to the operator",
        planner: None,
    },
}

/// The state database's findings on one rollout.
pub fn state(p: &super::state::Parity, path: &std::path::Path) -> Option<Finding> {
    use super::state::Parity;
    match p {
        Parity::Listed => None,
        Parity::NoRow { db } if super::state::is_archived(path) => Some(Finding::new(
            STATE_PARITY,
            Severity::Warning,
            db.display().to_string(),
            "the state database has no row for this archived rollout: `codex doctor` counts a missing archived row (0.171.0); archived rollouts are diagnosed, not repaired".into(),
        )),
        Parity::NoRow { db } => Some(Finding::new(
            STATE_PARITY,
            Severity::Warning,
            db.display().to_string(),
            "the state database has no row for this rollout: the client (0.171.0) does not list it from the database, `codex exec resume --last` passes it over and `codex doctor` warns; resume by its id still finds it. The repair writes the row the client writes".into(),
        )),
        Parity::Unread { db, why } => Some(Finding::new(
            STATE_PARITY,
            Severity::Warning,
            db.display().to_string(),
            format!("the state database cannot be read ({why}): its rows were not compared with this rollout"),
        )),
        Parity::Gone { db, named } => Some(Finding::new(
            STATE_PARITY,
            Severity::Error,
            db.display().to_string(),
            format!(
                "the thread's row names `{}`, which is gone: the client (0.171.0) cannot resume this thread (\"no rollout found for thread id\") although this rollout is here; with the client stopped, point the row at `{}`, or remove it with `codex delete --force <id>`",
                named.display(),
                path.display()
            ),
        )),
    }
}

/// The later copies of lines written twice: (line, its first copy).
pub fn duplicates(r: &Rollout) -> Vec<(usize, usize)> {
    let mut seen: std::collections::HashMap<&[u8], usize> = Default::default();
    let mut out = Vec::new();
    for (i, l) in r.lines.iter().enumerate() {
        if matches!(l.kind, LineKind::Blank) {
            continue;
        }
        let t = r.text(i);
        match seen.get(t) {
            Some(&j) => out.push((i, j)),
            None => {
                seen.insert(t, i);
            }
        }
    }
    out
}

/// Every Codex finding of a rollout, with its view.
pub fn run(r: &Rollout, v: &View, selected: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let n = v.resent.len();
    let m = v.items.len();
    if selected(MISSING_SESSION_META) {
        if let Some(why) = &v.no_resume {
            if !matches!(why, NoResume::FirstInvalid | NoResume::Empty) {
                let at = v.first.map(|i| r.line_name(i)).unwrap_or_default();
                let more = match why {
                    NoResume::NoMeta { later: Some(j) } => {
                        format!(" (a session_meta is at {})", r.line_name(*j))
                    }
                    NoResume::OtherId { meta, file } => format!(
                        " (`{}`, the file name says `{}`)",
                        r.redactor.redact(meta),
                        r.redactor.redact(file)
                    ),
                    _ => String::new(),
                };
                out.push(Finding::new(
                    MISSING_SESSION_META,
                    Severity::Error,
                    at,
                    format!(
                        "{}{more}: the client (0.171.0) cannot resume this rollout, none of its {m} items is resent",
                        why.words()
                    ),
                ));
            }
        }
    }
    if selected(INVALID_LINE) {
        for (i, reason, truncated) in r.invalid() {
            let (sev, effect) = if Some(i) == v.first {
                (
                    Severity::Error,
                    "it is the first line: the client cannot resume this rollout".to_string(),
                )
            } else if truncated {
                (
                    Severity::Warning,
                    "the last line ends without a newline and is cut short: the record a crash was writing is lost; the client skips it".to_string(),
                )
            } else {
                (Severity::Warning, "the client skips this line".to_string())
            };
            out.push(Finding::new(
                INVALID_LINE,
                sev,
                r.line_name(i),
                format!("{reason}: {effect}"),
            ));
        }
    }
    if selected(DUPLICATE_LINE) {
        // (`cut` and `summarised` are in file order)
        let cut_before = |i: usize| v.cut.partition_point(|&k| k < i);
        for (i, j) in duplicates(r) {
            let rec = r.lines[i].record();
            let kind = rec.map(|x| x.kind.as_str()).unwrap_or("");
            let (sev, effect) = match kind {
                "session_meta" if v.resumes() => {
                    let lost = cut_before(i);
                    (
                        Severity::Error,
                        format!("the client starts the history over there: resume sends {n} of {m} items, {lost} cut off at {}", r.line_name(i)),
                    )
                }
                "compacted" if v.compaction == Some(i) => {
                    let lost = v.summarised.partition_point(|&k| k < i)
                        - v.summarised.partition_point(|&k| k <= j);
                    let sev = if lost > 0 {
                        Severity::Error
                    } else {
                        Severity::Warning
                    };
                    (
                        sev,
                        format!("the client starts the history over from this copy: {lost} items written after the first are not resent"),
                    )
                }
                "response_item" if rec.is_some_and(|x| x.item.is_some()) => {
                    let what = match rec.and_then(|x| x.item.as_ref()) {
                        Some(it) if it.kind == "message" => {
                            format!("a {} message", it.role.as_deref().unwrap_or("?"))
                        }
                        Some(it) => format!("a {}", it.kind),
                        None => "an item".into(),
                    };
                    let sev = if v.is_resent(i) {
                        Severity::Warning
                    } else {
                        Severity::Info
                    };
                    (
                        sev,
                        format!("{} is resent twice", crate::text::clip(&what, 60)),
                    )
                }
                _ => (
                    Severity::Info,
                    "it changes nothing the client resends".to_string(),
                ),
            };
            out.push(Finding::new(
                DUPLICATE_LINE,
                sev,
                r.line_name(i),
                format!("an exact copy of {}: {effect}", r.line_name(j)),
            ));
        }
    }
    if selected(UNPAIRED_CALL) && v.resumes() {
        for &i in &v.orphan_outputs {
            out.push(Finding::new(
                UNPAIRED_CALL,
                Severity::Warning,
                r.line_name(i),
                "a tool output whose call is not resent before it: the client drops it".into(),
            ));
        }
        for &i in &v.unanswered {
            out.push(Finding::new(
                UNPAIRED_CALL,
                Severity::Warning,
                r.line_name(i),
                "a tool call without its output: the client resends it with an answer of its own"
                    .into(),
            ));
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}
