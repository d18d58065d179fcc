//! `interrupted-repair` (error): a convo-doctor repair run stopped half-way
//! through this conversation (its journal is still there).

use serde_json::Value;

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::edit::{Refusal, Refused};
use crate::store::conversation::{Doc, REPAIR_JOURNAL};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "interrupted-repair";

pub struct InterruptedRepair;

impl Check for InterruptedRepair {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "a convo-doctor repair run stopped half-way through this conversation: undo it, then repair again"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  The journal `.convo-doctor-repair.json` in the conversation folder.
  `repair` writes it (after every backup copy is made and verified, before
  the first change) when it changes more than one file of a conversation,
  and removes it once the last change is verified. If it is still there,
  the run was killed, lost power, or stopped on an error between two of its
  changes (or it is running right now).

Why it matters
  A quarantine takes several steps (the bad file out, later files
  renumbered, its child re-linked, an orphaned tool call answered): a
  folder stopped between two of them is neither the original nor the
  repair. It may load, but the tool call may be left unanswered (the agent
  would run it again on resume) or a child may point at an event not yet
  written. Repairing such a folder afresh would build on the half-made
  state and give another result than the planned repair.

  `undo` keeps the same journal (its `operation` is `undo`) while it puts
  more than one file of a conversation back, for the same reason: a folder
  half undone is neither the repair nor the original (a placeholder removed
  before the file it stood for is back leaves a gap in the index, which a
  fresh repair would close differently).

Repair
  None automatic: `repair` refuses this conversation. The journal names
  the run and its backup folder; `convo-doctor undo --backup-dir DIR RUN`
  puts every file back as it was before that run (name for name, byte for
  byte) and removes the journal (for an interrupted undo, running it again
  finishes it); run `repair` again afterwards. The command is printed with
  the journal's backup folder only when that folder is one `undo` trusts,
  holding that run, which repaired this very folder: the journal is the
  folder owner's to write, and nothing a stranger wrote goes into a command
  to paste. The SDK never reads the journal: it is safe to leave while
  deciding."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "undo the interrupted run (`convo-doctor undo --backup-dir DIR RUN`, as the finding says), then repair again",
        )
    }

    /// A run stopped half-way blocks every repair: a fresh one would build
    /// on the half-made state.
    fn gate(&self, ctx: &Ctx) -> Option<Refused> {
        ctx.conv.journal.exists().then(|| Refused::new(
            Refusal::Interrupted,
            "a convo-doctor repair run stopped half-way through this conversation (see `interrupted-repair`): undo that run first, then repair again",
        ))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let journal = &ctx.conv.journal;
        if !journal.exists() {
            return;
        }
        let field = |k: &str| {
            journal
                .value()
                .and_then(|j| j.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let run = field("run_id").filter(|id| crate::runs::valid_run_id(id));
        let dir = field("backup_dir").filter(|d| !d.is_empty() && d.len() <= 4096);
        // The journal is the folder owner's to write: its backup folder goes
        // into a command only once it is vouched for (a backup folder undo
        // trusts, holding that run, which repaired this very folder), and
        // only when no redaction touches the command (a printed command is
        // never changed after it is quoted).
        let how = match (&run, &dir) {
            (Some(run), Some(dir)) => match vouched_command(ctx, run, dir) {
                Some(cmd) => format!("`{cmd}` puts every file back as it was before that run"),
                None => format!(
                    "`convo-doctor undo --backup-dir DIR {run}`, with DIR the backup folder that run used, puts every file back as it was (the folder the journal names is not printed: it is not a backup folder undo trusts here that holds this run of this conversation; `convo-doctor undo --list --backup-dir DIR` shows the runs of a folder)"
                ),
            },
            (Some(run), None) => format!(
                "`convo-doctor undo {run}` (with the --backup-dir that run used) puts every file back as it was"
            ),
            _ => "the journal does not say which run: `convo-doctor undo --list` shows the runs kept".into(),
        };
        let what = match (journal, &run) {
            (Doc::Unreadable(_), _) => " (the journal is unreadable)".to_string(),
            (_, Some(run)) => format!(" (run {run})"),
            _ => String::new(),
        };
        // an undo keeps the same journal while it puts more than one file back
        let message = if field("operation").as_deref() == Some("undo") {
            format!(
                "a convo-doctor undo{what} stopped half-way through this conversation: some of its files were put back, some not; running it again finishes it: {how}; then repair again if needed"
            )
        } else {
            format!(
                "a convo-doctor repair{what} stopped half-way through this conversation: some of its changes were made, some not; {how}; then repair again"
            )
        };
        out.push(Finding::new(
            self.id(),
            Severity::Error,
            REPAIR_JOURNAL,
            message,
        ));
    }
}

/// The `undo` command for `run` with the journal's backup folder `dir`, if
/// `dir` is vouched for: a backup folder `undo` would trust (the invoking
/// user's, private, no link on the way) holding run `run`, whose manifest
/// names this very conversation folder (device and inode), and the command
/// is one no redaction changes.
fn vouched_command(ctx: &Ctx, run: &str, dir: &str) -> Option<String> {
    if !std::path::Path::new(dir).is_absolute() {
        return None;
    }
    // the folder as it was read (never its path looked up again)
    let here = ctx.conv.root.as_ref()?.dev_ino().ok()?;
    let repaired = ctx.runs?;
    if !repaired(std::path::Path::new(dir), run, here) {
        return None;
    }
    let default = crate::runs::default_backup_root().ok();
    let shown = (default.as_deref() != Some(std::path::Path::new(dir))).then_some(dir);
    let cmd = crate::text::undo_command(run, shown);
    let untouched = |s: &str| {
        ctx.redactor.redact(s) == s
            && crate::secrets::redact_all(s) == s
            && crate::text::sanitize(s) == s
    };
    untouched(&cmd).then_some(cmd)
}
