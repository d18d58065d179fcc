//! `convo-doctor repair PATH` for Claude Code sessions (PATHs that are
//! session files, project folders or `~/.claude/projects`): each session's
//! broken parents re-linked ([`crate::claude::repair`]), proven twice (each
//! edited line parses to its original with `parentUuid` alone changed; the
//! repaired session's walk has no broken link and resends at least what it
//! did), then written through the same backup, manifest and atomic write
//! as a folder's repair, so `undo RUN-ID` puts it back.

use std::path::{Path, PathBuf};

use super::ExitStatus;
use crate::claude::repair::{Outcome, Relinked, Summary};
use crate::claude::{self, checks::BROKEN_PARENT, repair as plan, session, view};
use crate::cli::{RepairArgs, RepairFormat};
use crate::fix::persist::{self, Run};
use crate::render;
use crate::render::output::Output;

/// The bytes read and the bytes to write.
type Rewrite = (Vec<u8>, Vec<u8>);

/// Plan one session: the outcome and, when there is something to write,
/// the bytes read and the bytes to write.
fn plan_one(path: &Path, dry_run: bool) -> (Outcome, Option<Rewrite>) {
    let mut o = Outcome {
        path: path.display().to_string(),
        status: "unchanged",
        relinked: Vec::new(),
        before: String::new(),
        after: String::new(),
        error: None,
        redactor: Default::default(),
    };
    let a = match claude::Analysis::load(path) {
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
    o.redactor = a.session.redactor.clone();
    o.before = claude::verdict(&a);
    o.after = o.before.clone();
    let relinks = plan::plan(&a.session, &a.view);
    if relinks.is_empty() {
        return (o, None);
    }
    let bytes = match plan::apply(&a.session, &relinks) {
        Ok(b) => b,
        Err(why) => {
            o.status = "failed";
            o.error = Some(format!(
                "the re-link could not be proven ({why}); nothing was changed"
            ));
            return (o, None);
        }
    };
    // the second proof: the repaired session as the client would walk it
    let fixed = claude::Analysis {
        view: view::build(&session::parse(bytes.clone())),
        session: session::parse(bytes.clone()),
    };
    let relinked: std::collections::HashSet<usize> = relinks.iter().map(|r| r.at).collect();
    let worse = fixed.view.resent.len() < a.view.resent.len()
        || fixed.view.broken.iter().any(|b| relinked.contains(&b.at));
    if worse {
        o.status = "failed";
        o.error = Some("the re-linked session would not resend more; nothing was changed".into());
        return (o, None);
    }
    o.after = claude::verdict(&fixed);
    for r in &relinks {
        let rec = a.session.lines[r.at].record().expect("a record");
        o.relinked.push(Relinked {
            line: a.session.lines[r.at].no,
            parent_was: match &rec.parent {
                session::Parent::Id(p) => Some(p.clone()),
                _ => None,
            },
            parent_now: r.to_uuid.clone(),
            to_line: r.to.map(|t| a.session.lines[t].no),
        });
    }
    o.status = if dry_run { "would-fix" } else { "fixed" };
    (o, Some((a.session.bytes, bytes)))
}

/// The Claude Code repair of `files` (every PATH was a Claude Code store).
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
    // a backup copy inside a projects folder would be listed as a session
    if let Some(root) = &backup_root {
        let abs = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        if abs
            .components()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0].as_os_str() == ".claude" && w[1].as_os_str() == "projects")
        {
            anyhow::bail!(
                "the backup directory `{}` is inside a Claude Code projects folder, where the client would list the backed-up sessions; choose a --backup-dir outside it",
                root.display()
            );
        }
    }
    let json = args.format != RepairFormat::Human;
    let mut run: Option<Run> = None;
    let mut outcomes = Vec::new();
    for (k, f) in files.iter().enumerate() {
        sum.sessions += 1;
        let (mut o, change) = if selected(BROKEN_PARENT) {
            plan_one(f, args.dry_run)
        } else {
            (plan_one(f, true).0, None)
        };
        if !selected(BROKEN_PARENT) && o.status == "would-fix" {
            o.status = "unchanged";
            o.relinked.clear();
            o.after = o.before.clone();
        }
        if let (Some((before, after)), false) = (change, args.dry_run) {
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
            if let Err(why) = persist::rewrite_file(r, f, &before, &after, &[BROKEN_PARENT], k + 1)
            {
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
            if let Err(e) = render::claude::repair_outcome(&mut w, &o) {
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
        render::claude::repair_json(&mut w, &outcomes, &sum, args.format == RepairFormat::Jsonl)
    } else {
        render::claude::repair_summary(&mut w, &sum)
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
