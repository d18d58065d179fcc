//! `convo-doctor repair PATH` for Codex rollouts (PATHs that are rollouts,
//! sessions trees or `CODEX_HOME`): each rollout's edits planned
//! ([`crate::codex::repair`]: an invalid line set aside, the later copy of a
//! line written twice dropped, a missing `session_meta` rebuilt), proven
//! twice (every line not named by an edit kept byte for byte; the repaired
//! rollout resumes and resends at least what it did, less the copies), then
//! written through the same backup, manifest and atomic write as a Claude
//! Code session's, so `undo RUN-ID` puts it back. The write re-checks the
//! bytes it proved: a client appending to the rollout since the read (a
//! live session) makes it refuse.

use std::path::{Path, PathBuf};

use super::ExitStatus;
use crate::cli::{RepairArgs, RepairFormat};
use crate::codex::repair::{self as plan, Edit, Edited, Outcome, Summary};
use crate::codex::{self, session};
use crate::fix::persist::{self, Run};
use crate::render;
use crate::render::output::Output;

/// The bytes read and the bytes to write, and the checks that ask.
type Rewrite = (Vec<u8>, Vec<u8>, Vec<&'static str>);

/// How much of a line a diff shows.
const SHOWN: usize = 160;

fn shown(bytes: &[u8]) -> String {
    crate::text::clip(&String::from_utf8_lossy(bytes), SHOWN)
}

/// Plan one rollout: the outcome and, when there is something to write,
/// the bytes read and the bytes to write.
fn plan_one(
    path: &Path,
    dry_run: bool,
    selected: &dyn Fn(&str) -> bool,
) -> (Outcome, Option<Rewrite>) {
    let mut o = Outcome {
        path: path.display().to_string(),
        status: "unchanged",
        edits: Vec::new(),
        before: String::new(),
        after: String::new(),
        error: None,
        redactor: Default::default(),
    };
    let a = match codex::Analysis::load(path) {
        Ok(a) => a,
        Err(e) => {
            o.status = "failed";
            o.error = Some(match e {
                crate::store::fsread::ReadError::Access { message, .. } => message,
                crate::store::fsread::ReadError::File(u) => format!("cannot be read: {u}"),
            });
            return (o, None);
        }
    };
    o.redactor = a.rollout.redactor.clone();
    o.before = codex::verdict(&a);
    o.after = o.before.clone();
    if let Some(why) = live(path, &a) {
        o.status = "failed";
        o.error = Some(why);
        return (o, None);
    }
    let edits = plan::plan(&a.rollout, &a.view, a.file.as_ref(), selected);
    if edits.is_empty() {
        if !a.view.resumes() && selected(crate::codex::checks::MISSING_SESSION_META) {
            o.error = Some(
                "no session_meta can be rebuilt: that needs a file named rollout-<time>-<uuid>.jsonl, no session_meta line left in it, and a turn_context naming the working directory".into(),
            );
        }
        return (o, None);
    }
    let bytes = match plan::apply(&a.rollout, &edits) {
        Ok(b) => b,
        Err(why) => {
            o.status = "failed";
            o.error = Some(format!(
                "the edit could not be proven ({why}); nothing was changed"
            ));
            return (o, None);
        }
    };
    let file_id = a.file.as_ref().map(|f| f.0.as_str());
    if let Err(why) = plan::prove(&a.view, &edits, &bytes, file_id) {
        o.status = "failed";
        o.error = Some(format!("{why}; nothing was changed"));
        return (o, None);
    }
    let fixed = codex::Analysis::of(session::parse(bytes.clone()), path);
    o.after = codex::verdict(&fixed);
    let mut checks = Vec::new();
    for e in &edits {
        if !checks.contains(&e.check()) {
            checks.push(e.check());
        }
        o.edits.push(match e {
            Edit::Drop { at, check, why } => Edited {
                check,
                line: Some(a.rollout.lines[*at].no),
                what: why.clone(),
                removed: Some(shown(a.rollout.text(*at))),
                added: None,
            },
            Edit::Meta { line } => Edited {
                check: e.check(),
                line: None,
                what: "a session_meta rebuilt from the file name and the rollout's turn_context, written as line 1".into(),
                removed: None,
                added: Some(shown(line.as_bytes())),
            },
        });
    }
    o.status = if dry_run { "would-fix" } else { "fixed" };
    (o, Some((a.rollout.bytes, bytes, checks)))
}

/// Why the rollout may not be written now: a Codex client holds its
/// thread's writer lock.
fn live(path: &Path, a: &codex::Analysis) -> Option<String> {
    let id = a
        .file
        .as_ref()
        .map(|f| f.0.clone())
        .or_else(|| a.rollout.id())?;
    codex::state::writer_active(path, &id).then(|| {
        format!("a Codex client is writing this thread now (it holds `thread-writer-locks/{id}.lock`): nothing was changed; repair it once the client has exited")
    })
}

/// The Codex repair of `files` (every PATH was a Codex store).
pub fn repair(
    args: &RepairArgs,
    files: Vec<PathBuf>,
    errors: Vec<String>,
) -> anyhow::Result<ExitStatus> {
    let selected = super::select(&args.scan.only, &args.scan.skip)?;
    let mut w = Output::new(args.output_file.as_deref(), args.quiet)?;
    let mut sum = Summary {
        dry_run: args.dry_run,
        errors,
        ..Default::default()
    };
    let backup_root = match (&args.backup_dir, args.dry_run) {
        (Some(d), _) => Some(d.clone()),
        (None, true) => None,
        (None, false) => Some(persist::default_backup_root().map_err(anyhow::Error::msg)?),
    };
    // a backup copy inside a sessions tree would be listed as a rollout
    if let Some(root) = &backup_root {
        let abs = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        let inside = abs.ancestors().any(|a| {
            a.file_name().is_some_and(|n| n == "sessions")
                && a.parent().is_some_and(|h| {
                    h.file_name().is_some_and(|n| n == ".codex") || h.join("config.toml").is_file()
                })
        }) || files.iter().any(|f| {
            f.parent()
                .and_then(|d| std::path::absolute(d).ok())
                .is_some_and(|d| abs.starts_with(d))
        });
        if inside {
            anyhow::bail!(
                "the backup directory `{}` is inside a Codex sessions folder, where the client would list the backed-up rollouts; choose a --backup-dir outside it",
                root.display()
            );
        }
    }
    let json = args.format != RepairFormat::Human;
    let mut run: Option<Run> = None;
    let mut outcomes = Vec::new();
    for (k, f) in files.iter().enumerate() {
        sum.sessions += 1;
        let (mut o, change) = plan_one(f, args.dry_run, &selected);
        if let (Some((before, after, checks)), false) = (change, args.dry_run) {
            if run.is_none() {
                let root = backup_root.clone().unwrap_or_default();
                match Run::new(&root, persist::new_run_id()) {
                    Ok(r) => run = Some(r),
                    Err(e) => {
                        render::error(&e);
                        return Ok(w.finish(ExitStatus::Error));
                    }
                }
            }
            let r = run.as_mut().expect("made above");
            // the lock, once more right before the write
            let again = codex::Analysis::of(session::parse(before.clone()), f);
            let written = match live(f, &again) {
                Some(why) => Err(why),
                None => persist::rewrite_file(r, f, &before, &after, &checks, k + 1),
            };
            if let Err(why) = written {
                o.status = "failed";
                o.after = o.before.clone();
                o.error = Some(why);
            }
        }
        match o.status {
            "fixed" => sum.fixed += 1,
            "would-fix" => sum.would_fix += 1,
            "failed" => sum.failed += 1,
            _ => {}
        }
        if !json {
            if let Err(e) = render::codex::repair_outcome(&mut w, &o) {
                let s = super::diagnose::broken_pipe_or_error(e);
                w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
                return s;
            }
        }
        outcomes.push(o);
    }
    if let Some(r) = &run {
        r.discard_if_empty();
        if !r.manifest.files.is_empty() {
            sum.run_id = Some(r.id.clone());
            sum.backup_dir = Some(r.dir.display().to_string());
        }
    }
    let written = if json {
        render::codex::repair_json(&mut w, &outcomes, &sum, args.format == RepairFormat::Jsonl)
    } else {
        render::codex::repair_summary(&mut w, &sum)
    };
    if let Err(e) = written {
        let s = super::diagnose::broken_pipe_or_error(e);
        w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
        return s;
    }
    let pending = outcomes.iter().any(|o| o.status == "would-fix");
    let status = if !sum.errors.is_empty() || sum.failed > 0 {
        ExitStatus::Error
    } else if pending {
        ExitStatus::Findings
    } else {
        ExitStatus::Success
    };
    Ok(w.finish(status))
}
