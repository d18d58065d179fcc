//! Repair to a fixpoint: plan on the folder, apply the plan to an in-memory
//! overlay, analyse the result and plan again, until no planner proposes a
//! change it may make (as `ruff --fix` re-lints, and e2fsck's passes each
//! see what the one before left). Guards are evaluated on the state of the
//! current pass, so "close the gap first" and "decide the duplicate first"
//! resolve within one run.
//!
//! The engine knows no check: it asks the registry's gates whether the
//! conversation may be repaired at all, runs every selected planner, and
//! orders their changes by the phase each check declares
//! ([`schedule`]). Each pass must clear the findings its changes claim; the
//! final state is proven once against the original folder ([`prove`]). A
//! check whose repair fails a proof is held back and the run starts again
//! without it; what is then left says why ([`left`]).
//!
//! Long because: the run's entry (`plan`) and the pass record it proves
//! are one idea; scheduling, the proof and what is left are split out.
//!

mod left;
mod prove;
mod schedule;

use std::collections::{BTreeMap, HashSet};

use super::{Plan, RepairOptions};
use crate::analysis::Analysis;
use crate::checks;
use crate::edit::{Change, Leave, Proposals, Refusal, Refused};
use crate::report::{self, ConversationReport};
use crate::store::conversation::{stamp_at, Overlay, RecordCache};
use crate::store::fsread::DirFd;
use crate::version::Version;

/// Passes after which the engine stops and says so (a fixpoint is normally
/// reached in one to three).
pub const MAX_PASSES: usize = 8;
/// Fresh starts, each with one more check's repair held back.
const MAX_RESTARTS: usize = 6;

/// What one pass saw and proposed.
struct Pass {
    report: ConversationReport,
    /// Ids on the agent's branch, when the conversation loads.
    branch: Option<Vec<String>>,
    /// Current names of the log's events the SDK cannot read.
    unreadable: HashSet<String>,
    /// The tool calls left open on the agent's branch.
    open: Vec<OpenCall>,
    /// base_state.json's status lets a call wait at the branch's end
    /// (`Ctx::may_have_pending_call`).
    may_pend: bool,
    /// The gate that holds on what this pass read, if any.
    gate: Option<Refused>,
    changes: Vec<Change>,
    left: Vec<Leave>,
    notes: Vec<String>,
}

struct Setup<'a> {
    dir: &'a DirFd,
    /// The first read's parsed event files: later passes re-read only what
    /// they changed.
    cache: RecordCache,
    display: &'a str,
    opts: &'a RepairOptions<'a>,
    version: Version,
    given: bool,
}

/// A tool call no later event of the agent's branch answers (see
/// [`checks::tool_calls::open_calls`]), by current file names.
struct OpenCall {
    /// The action's id and its file.
    action: String,
    file: String,
    /// The file of the event after it on the branch.
    next: Option<String>,
    /// The file of a readable answer off the branch.
    answer_elsewhere: Option<String>,
}

/// A check whose repair failed a proof, and why.
struct Offence {
    checks: Vec<&'static str>,
    why: String,
    /// Every check whose changes the failed attempt made (empty when the
    /// attempt did not reach its end).
    ran: Vec<&'static str>,
}

fn run_pass(a: &Analysis, s: &Setup, blocked: &BTreeMap<&'static str, String>) -> Pass {
    let mut ctx = a.ctx(s.given);
    // the backups `interrupted-repair` may name in an `undo` command
    ctx.runs = Some(crate::fix::persist::run_repaired);
    let all = |_: &str| true;
    let report_opts = report::Options {
        version: s.version,
        version_given: s.given,
        selected: &all,
        event_list: false,
    };
    let report = report::analyze_ctx(&ctx, s.display.to_string(), &report_opts);
    let branch = ctx.views.agent.as_ref().ok().map(|b| {
        b.iter()
            .map(|&i| ctx.reader.id(i).to_string())
            .collect::<Vec<_>>()
    });
    let open = match &ctx.views.agent {
        Ok(b) => checks::tool_calls::open_calls(&ctx, b)
            .into_iter()
            .map(|o| OpenCall {
                action: ctx.reader.id(o.action).to_string(),
                file: ctx.event_path(o.action),
                next: o.next.map(|i| ctx.event_path(i)),
                answer_elsewhere: o.answer_elsewhere.map(|i| ctx.event_path(i)),
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    let unreadable = (0..ctx.reader.len())
        .filter(|&i| ctx.reader.read(i).is_err())
        .map(|i| ctx.event_path(i))
        .collect();
    let mut p = Proposals::new(s.opts.selected);
    for check in checks::REGISTRY {
        let repair = check.repair();
        let Some(planner) = repair.planner else {
            continue;
        };
        if (s.opts.selected)(check.id()) && !blocked.contains_key(check.id()) {
            p.begin(check.id(), repair.phase);
            planner(&ctx, &mut p);
        }
    }
    Pass {
        report,
        branch,
        unreadable,
        open,
        gate: checks::gate(&ctx),
        may_pend: ctx.may_have_pending_call(),
        changes: p.changes,
        left: p.left,
        notes: p.notes,
    }
}

/// Plan the repair of one conversation, held open as `dir` (every read and
/// the proof go through it; `persist::apply` writes through it). Writes
/// nothing.
pub fn plan(dir: &DirFd, display: String, opts: &RepairOptions) -> Plan {
    let p = plan_once(dir, display.clone(), opts);
    // an unsafe run that can prove no change does what a safe run proves:
    // it never does less (the trial rule below recovers most such runs;
    // this is the floor under it)
    let proof_failed = p
        .refused
        .as_ref()
        .is_none_or(|r| matches!(r.kind, Refusal::Proof));
    if !opts.unsafe_fixes || p.has_changes() || !proof_failed {
        return p;
    }
    let safe = RepairOptions {
        unsafe_fixes: false,
        ..*opts
    };
    let mut s = plan_once(dir, display, &safe);
    if !s.has_changes() {
        return p;
    }
    s.notes.push(
        "no set of unsafe repairs could be proven safe here; only what a safe run proves is made (each unsafe repair left says why)"
            .into(),
    );
    // what both runs leave says why the unsafe run could not make it
    for l in p.left {
        if let Some(x) = s
            .left
            .iter_mut()
            .find(|x| x.check == l.check && x.file == l.file)
        {
            *x = l;
        }
    }
    s
}

fn plan_once(dir: &DirFd, display: String, opts: &RepairOptions) -> Plan {
    let version = opts.version();
    let stamp_before = stamp_at(dir);
    let first = Analysis::load_at(dir, version, &Overlay::new(), None);
    let s = Setup {
        dir,
        cache: RecordCache::of(&first.conv),
        display: &display,
        opts,
        version,
        given: opts.server_version.is_some(),
    };
    let none = BTreeMap::new();
    // pass 0 is planned once; a fresh start holds checks back from it
    let p0 = run_pass(&first, &s, &none);
    let mut plan = Plan {
        dir: dir.path().to_path_buf(),
        root: dir.clone(),
        display: display.clone(),
        edits: Vec::new(),
        moves: Vec::new(),
        creates: Vec::new(),
        left: Vec::new(),
        refused: None,
        notes: Vec::new(),
        redactor: p0.report.redactor.clone(),
        before: empty_report(),
        after: None,
        unsafe_made: Vec::new(),
        passes: 0,
    };
    // a folder not wholly read, or one a check's gate holds, is never
    // repaired
    let refused = match first.conv.access_errors.first() {
        Some(first) => Some(Refused::new(
            Refusal::Unreadable,
            format!("{first}; a folder not wholly read is never repaired"),
        )),
        None => p0.gate.clone(),
    };
    if let Some(refused) = refused {
        plan.refused = Some(refused);
        plan.before = p0.report;
        plan.left = left::unfixed(&plan, opts.selected);
        return plan;
    }
    let mut blocked: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut restarts = 0;
    // unsafe checks held back on trial (see below)
    let mut trial: Option<Vec<&'static str>> = None;
    let reached = loop {
        let attempt = schedule::fixpoint(&s, &p0, &blocked).and_then(|r| {
            prove::prove(&p0, &r)
                .map_err(|off| Offence {
                    ran: r.v.checks_that_ran(),
                    ..off
                })
                .map(|()| r)
        });
        match attempt {
            Ok(r) => break Some(r),
            Err(off) => {
                let mut fresh: Vec<&'static str> = off
                    .checks
                    .iter()
                    .copied()
                    .filter(|c| !blocked.contains_key(c))
                    .collect();
                // of several to blame, the unsafe repairs go first: what the
                // safe ones do alone is what a safe run would prove, so an
                // unsafe run never does less than it
                let is_unsafe = |c: &&'static str| {
                    checks::find(c)
                        .is_some_and(|k| k.repair().applicability == checks::Applicability::Unsafe)
                };
                let unsafe_ones: Vec<&'static str> =
                    fresh.iter().copied().filter(is_unsafe).collect();
                if opts.unsafe_fixes && !unsafe_ones.is_empty() && unsafe_ones.len() < fresh.len() {
                    fresh = unsafe_ones;
                } else if opts.unsafe_fixes && unsafe_ones.is_empty() {
                    // only safe repairs blamed, unsafe ones made beside
                    // them: the unsafe ones are held back first, on trial
                    // (the safe ones alone are what a safe run proves);
                    // the same safe ones blamed without them ends the
                    // trial: the unsafe ones come back, the safe ones wait
                    match trial.take() {
                        None => {
                            let ran: Vec<&'static str> = off
                                .ran
                                .iter()
                                .copied()
                                .filter(|c| is_unsafe(c) && !blocked.contains_key(c))
                                .collect();
                            if !ran.is_empty() && restarts < MAX_RESTARTS {
                                for &c in &ran {
                                    blocked.insert(c, off.why.clone());
                                }
                                trial = Some(ran);
                                restarts += 1;
                                continue;
                            }
                        }
                        Some(tried) => {
                            for c in tried {
                                blocked.remove(c);
                            }
                        }
                    }
                }
                if fresh.is_empty() || restarts == MAX_RESTARTS {
                    plan.refused = Some(Refused::new(
                        Refusal::Proof,
                        format!("{}; nothing was changed", off.why),
                    ));
                    break None;
                }
                for c in fresh {
                    blocked.insert(c, off.why.clone());
                }
                restarts += 1;
            }
        }
    };
    plan.notes = p0.notes.clone();
    let Some(mut r) = reached else {
        plan.before = p0.report;
        plan.left = left::unfixed(&plan, opts.selected);
        return plan;
    };
    let last = r.last.take();
    let fin = last.as_ref().unwrap_or(&p0);
    for n in &fin.notes {
        if !plan.notes.contains(n) {
            plan.notes.push(n.clone());
        }
    }
    if r.bound_hit {
        plan.notes.push(format!(
            "the repair stopped after {MAX_PASSES} passes with more still proposed; run `repair` again on the result"
        ));
    }
    plan.passes = r.passes;
    let seen = |rel: &str| s.cache.seen(rel);
    match r.v.composite(&seen) {
        Ok((edits, moves, creates)) => {
            plan.edits = edits;
            plan.moves = moves;
            plan.creates = creates;
        }
        Err(why) => {
            plan.refused = Some(Refused::new(
                Refusal::Proof,
                format!("{why}; nothing was changed"),
            ));
        }
    }
    // What is left: the last pass's leaves, the unsafe changes not
    // consented to, the repairs held back, then every other finding.
    let left = left::left_by_run(fin, opts, &blocked);
    plan.unsafe_made = left::unsafe_made(&r.v.touched);
    let changes = plan.has_changes();
    if changes {
        for e in &plan.edits {
            if let Ok(v) = serde_json::from_slice(&e.after) {
                plan.redactor.learn(&v);
            }
        }
        // The proof read the folder again: if it saw a writer (a gate holds
        // on its read), or the folder is no longer what the plan was made
        // from, the proof is about a moment that never existed as a whole.
        crate::fix::persist::pause_point("before-proof");
        let moved = stamp_at(dir) != stamp_before;
        if moved || fin.gate.is_some() {
            plan.refused = Some(Refused::new(
                Refusal::Busy,
                "the conversation changed while the repair was being proven (a writer is active); nothing was changed; run again when it is idle",
            ));
        }
    }
    plan.left = left;
    if changes {
        if let Some(l) = last {
            plan.after = Some(l.report);
        }
    }
    plan.before = p0.report;
    let more = left::unfixed(&plan, opts.selected);
    plan.left.extend(more);
    plan
}

fn empty_report() -> ConversationReport {
    ConversationReport {
        path: String::new(),
        id: String::new(),
        id_dashed: None,
        server_version: String::new(),
        listed: None,
        events: report::EventCounts {
            on_disk: 0,
            log_length: 0,
            ui_view: 0,
            agent_view: None,
            orphaned: 0,
        },
        load_error: None,
        verdict: String::new(),
        findings: Vec::new(),
        event_list: None,
        redactor: Default::default(),
        tree: None,
        access_errors: Vec::new(),
        appserver: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conversation of `n` events copied from the clean-tree fixture (its
    /// system prompt, then its user message again and again), each
    /// message's parent an id no file holds.
    fn dangling(n: usize) -> tempfile::TempDir {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/clean-tree");
        let conv = std::fs::read_dir(&fixture)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap();
        let mut names: Vec<_> = std::fs::read_dir(conv.join("events"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("event-")
            })
            .collect();
        names.sort();
        let text = |i: usize| std::fs::read_to_string(&names[i]).unwrap();
        let field = |t: &str, k: &str| {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            v[k].as_str().unwrap().to_string()
        };
        let (system, message) = (text(0), text(1));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(conv.file_name().unwrap());
        std::fs::create_dir_all(dir.join("events")).unwrap();
        std::fs::copy(conv.join("base_state.json"), dir.join("base_state.json")).unwrap();
        let (sys_id, msg_id, parent) = (
            field(&system, "id"),
            field(&message, "id"),
            field(&message, "parent_id"),
        );
        std::fs::write(
            dir.join(format!("events/event-00000-{sys_id}.json")),
            &system,
        )
        .unwrap();
        for i in 1..n {
            let id = format!("e0000000-0000-4000-8000-{i:012}");
            let lost = format!("f0000000-0000-4000-8000-{i:012}");
            let t = message.replace(&msg_id, &id).replace(&parent, &lost);
            std::fs::write(dir.join(format!("events/event-{i:05}-{id}.json")), t).unwrap();
        }
        tmp
    }

    /// Every parent of a log dangling: the repair re-links each event, and
    /// asks the disk about each file a bounded number of times (it once
    /// asked about every finding's file for every change: n² `stat`s).
    /// Counted, not timed.
    #[test]
    fn relinking_every_event_asks_the_disk_a_bounded_number_of_times() {
        let n = 300;
        let tmp = dangling(n);
        let conv = std::fs::read_dir(tmp.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let dir = DirFd::open(&conv).unwrap();
        let all = |_: &str| true;
        let opts = RepairOptions {
            server_version: None,
            selected: &all,
            unsafe_fixes: true,
        };
        super::super::state::DISK_ASKS.with(|c| c.set(0));
        let plan = plan(&dir, conv.display().to_string(), &opts);
        let asks = super::super::state::DISK_ASKS.with(|c| c.get());
        assert_eq!(plan.refused, None);
        let parent = |b: &[u8]| -> Option<String> {
            let v: serde_json::Value = serde_json::from_slice(b).ok()?;
            Some(v.get("parent_id")?.as_str()?.to_string())
        };
        let relinked = plan
            .edits
            .iter()
            .filter(|e| parent(&e.before) != parent(&e.after))
            .count();
        assert_eq!(relinked, n - 1, "every event but the first is re-linked");
        assert!(asks <= 3 * n as u64, "{asks} disk lookups for {n} events");
    }
}
