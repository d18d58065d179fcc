//! `convo-doctor repair PATH` for the JSONL session formats (Claude Code
//! sessions, Codex rollouts): each file's edits planned and proven by its
//! format ([`Adapter::plan`]), then written through the same backup,
//! manifest and atomic write as a folder's repair ([`crate::fix::persist`]),
//! so `undo RUN-ID` puts it back. The write re-checks what the format asks
//! ([`Adapter::busy`]: a client writing the file now makes it refuse).

use super::pipeline::Selected;
use super::ExitStatus;
use crate::cli::{RepairArgs, RepairFormat};
use crate::fix::persist::{self, Run};
use crate::render;
use crate::render::output::Output;
use crate::sessions::list::Listing;
use crate::sessions::repair::{Adapter, Summary};

/// `repair` of JSONL session stores: `None` when no PATH is one (the
/// OpenHands repair runs), else the run over all of them; a mix of formats
/// is refused. With no PATH, the invoking user's own stores
/// ([`crate::sessions::discover`]) when no OpenHands store is found.
pub fn jsonl(args: &RepairArgs, selected: &Selected) -> anyhow::Result<Option<ExitStatus>> {
    if args.paths.is_empty() {
        return own(args, selected).map(Some);
    }
    let codex: Vec<_> = args.paths.iter().map(|p| crate::codex::shape(p)).collect();
    if !args.paths.is_empty() && codex.iter().all(Option::is_some) {
        let mut all = Listing::default();
        for (p, s) in args.paths.iter().zip(&codex) {
            let l = crate::codex::sessions(p, s.as_ref().expect("all are"));
            if l.files.is_empty() && l.errors.is_empty() {
                all.errors
                    .push(format!("no Codex rollout in `{}`", p.display()));
            }
            all.extend(l);
        }
        return run::<crate::codex::repair::Rollouts>(args, without_archived(all), selected)
            .map(Some);
    }
    if codex.iter().any(Option::is_some) {
        anyhow::bail!("give Codex rollouts and other conversations to separate `repair` runs");
    }
    let claude: Vec<_> = args.paths.iter().map(|p| crate::claude::shape(p)).collect();
    if !args.paths.is_empty() && claude.iter().all(Option::is_some) {
        let mut all = Listing::default();
        for (p, s) in args.paths.iter().zip(&claude) {
            let l = crate::claude::sessions(p, s.as_ref().expect("all are"));
            if l.files.is_empty() && l.errors.is_empty() {
                all.errors
                    .push(format!("no Claude Code session in `{}`", p.display()));
            }
            all.extend(l);
        }
        return run::<crate::claude::repair::Sessions>(args, all, selected).map(Some);
    }
    if claude.iter().any(Option::is_some) {
        anyhow::bail!(
            "give Claude Code sessions and OpenHands conversations to separate `repair` runs"
        );
    }
    Ok(None)
}

/// `repair` with no PATH: the invoking user's own Claude Code sessions or
/// Codex rollouts, found as `diagnose` finds them
/// ([`crate::sessions::discover`]: the same trust rules as the OpenHands
/// store discovery), each place said; one format a run (the outputs of two
/// would not make one document), so finding both is refused, naming them.
fn own(args: &RepairArgs, selected: &Selected) -> anyhow::Result<ExitStatus> {
    use crate::sessions::discover::{looked, not_places, Format};
    let env = crate::store::discover::Env::here();
    let mut places = Vec::new();
    let (mut claude, mut codex) = (Listing::default(), Listing::default());
    if let Some(n) = not_places(&env) {
        render::note(&n);
    }
    for l in looked(&env) {
        render::note(&l.describe());
        let Some(found) = l.found else { continue };
        if found.files.is_empty() {
            continue;
        }
        places.push(l.path.display().to_string());
        match l.format {
            Format::ClaudeCode => claude.extend(found),
            Format::Codex => codex.extend(found),
        }
    }
    match (claude.files.is_empty(), codex.files.is_empty()) {
        (false, true) => run::<crate::claude::repair::Sessions>(args, claude, selected),
        (true, false) => {
            run::<crate::codex::repair::Rollouts>(args, without_archived(codex), selected)
        }
        (false, false) => anyhow::bail!(
            "no PATH given, and this user has both Claude Code sessions and Codex rollouts ({}): give the one to repair as PATH",
            places.join(", ")
        ),
        (true, true) => anyhow::bail!(
            "no PATH given, and no Claude Code session or Codex rollout of this user was found (see the notes); give the conversations to repair as PATH"
        ),
    }
}

/// The Codex rollouts to repair: those `codex archive` moved to
/// `archived_sessions` are diagnosed, never repaired (read only), a note
/// says how many.
fn without_archived(mut l: Listing) -> Listing {
    let before = l.files.len();
    l.files.retain(|f| !crate::codex::state::is_archived(f));
    let n = before - l.files.len();
    if n > 0 {
        l.notes.push(format!(
            "{} in archived_sessions not repaired: archived rollouts are read only (`codex unarchive <id>` brings one back)",
            crate::checks::plural(n, "rollout", "rollouts")
        ));
    }
    l
}

/// The repair of `files` (every PATH was a store of format `A`).
pub fn run<A: Adapter>(
    args: &RepairArgs,
    found: Listing,
    selected: &Selected,
) -> anyhow::Result<ExitStatus> {
    let Listing {
        files,
        errors,
        notes,
    } = found;
    for n in &notes {
        render::note(n);
    }
    let mut w = Output::new(args.output_file.as_deref(), args.quiet)?;
    let mut sum = Summary {
        dry_run: args.dry_run,
        errors,
        ..Default::default()
    };
    let backup_root = super::repair::backup::chosen(args)?;
    // a backup copy inside the store would be listed by the client
    if let Some(root) = &backup_root {
        let abs = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        if A::backup_inside(&abs, &files) {
            anyhow::bail!(
                "the backup directory `{}` is inside a {} {}, where the client would list the backed-up {}; choose a --backup-dir outside it",
                root.display(),
                A::CLIENT,
                A::STORE,
                A::UNITS.1
            );
        }
    }
    let json = args.format != RepairFormat::Human;
    let mut run: Option<Run> = None;
    let mut outcomes = Vec::new();
    for (k, f) in files.iter().enumerate() {
        sum.sessions += 1;
        let (mut o, change) = A::plan(f, args.dry_run, selected);
        if let (Some((before, after, checks)), false) = (change, args.dry_run) {
            let r = opened(&mut run, &backup_root)?;
            let written = match A::busy(f, &before) {
                Some(why) => Err(why),
                None => persist::rewrite_file(r, f, &before, &after, &checks, k + 1),
            };
            if let Err(why) = written {
                failed(&mut o, why);
            }
        }
        if let Err(e) = shown(&mut w, &mut sum, &mut outcomes, o, json) {
            let s = super::diagnose::broken_pipe_or_error(e);
            w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
            return s;
        }
    }
    // what is written beside the files (the Codex state database), once
    // their own writes are done
    for (j, (mut o, write)) in A::beside(&files, &selected).into_iter().enumerate() {
        if let Some(write) = write {
            if args.dry_run {
                o.status = "would-fix";
            } else {
                let r = opened(&mut run, &backup_root)?;
                match write(r, files.len() + 1 + j) {
                    Ok(()) => {
                        o.status = "fixed";
                        o.error = None;
                    }
                    Err(why) => failed(&mut o, why),
                }
            }
        }
        if let Err(e) = shown(&mut w, &mut sum, &mut outcomes, o, json) {
            let s = super::diagnose::broken_pipe_or_error(e);
            w.finish(*s.as_ref().unwrap_or(&ExitStatus::Error));
            return s;
        }
    }
    if let Some(r) = &run {
        r.discard_if_empty();
        if !r.manifest.files.is_empty() {
            sum.run_id = Some(r.id.clone());
            sum.backup_dir = Some(r.dir.display().to_string());
        }
    }
    let written = if json {
        render::sessions::repair_json(
            &mut w,
            &outcomes,
            |o| &o.redactor,
            &sum,
            args.format == RepairFormat::Jsonl,
        )
    } else {
        render::sessions::repair_summary(&mut w, &sum, A::CLIENT, A::UNITS)
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

/// The run this repair writes into, opened at its first write.
fn opened<'r>(
    run: &'r mut Option<Run>,
    backup_root: &Option<std::path::PathBuf>,
) -> anyhow::Result<&'r mut Run> {
    if run.is_none() {
        let root = backup_root.clone().unwrap_or_default();
        *run = Some(Run::new(&root, persist::new_run_id()).map_err(anyhow::Error::msg)?);
    }
    Ok(run.as_mut().expect("made above"))
}

/// A write that failed: nothing changed, and why.
fn failed<C>(o: &mut crate::sessions::repair::Outcome<C>, why: String) {
    o.status = "failed";
    o.after = o.before.clone();
    o.error = Some(why);
}

/// Count one outcome and show it (the human output, as it comes); `Err`:
/// the output broke.
fn shown<C: crate::sessions::repair::Changes>(
    w: &mut Output,
    sum: &mut Summary,
    outcomes: &mut Vec<crate::sessions::repair::Outcome<C>>,
    o: crate::sessions::repair::Outcome<C>,
    json: bool,
) -> std::io::Result<()> {
    match o.status {
        "fixed" => sum.fixed += 1,
        "would-fix" => sum.would_fix += 1,
        "failed" => sum.failed += 1,
        _ => {}
    }
    if !json {
        render::sessions::repair_outcome(w, &o)?;
    }
    outcomes.push(o);
    Ok(())
}
