//! What a repair run did to each conversation, as data: the changes planned
//! or applied, the findings left (and why) and the findings whose repair was
//! refused. `repair --format json|jsonl` prints it (docs/output.md, "repair");
//! the human closing lines count from it too.
//!
//! Nothing here carries event content: a change is named by its file, its
//! action and the sentence the human output prints, never by its bytes.
//!
//! Long because: it is the whole `repair --format json|jsonl` schema (docs/output.md's "repair"), each type beside the outcome that fills it, so the document is read in one file.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;

use crate::checks::{self, Applicability, Severity};
use crate::fix::{LeftReason, Plan};
use crate::render::json::json_safe;

/// Bumped on a breaking change of the repair documents (fields are only
/// ever added otherwise).
pub const SCHEMA_VERSION: u32 = 1;

/// One change to one file, as a line of the human output names it.
#[derive(Debug, Serialize)]
pub struct Change {
    /// The checks it serves (empty for a stale count marker moved with a
    /// quarantine or renumbering).
    pub checks: Vec<&'static str>,
    /// Relative to the conversation folder (the name before any rename).
    pub file: String,
    /// `rewrite`, `renumber`, `move-to-quarantine` or `create`.
    pub action: &'static str,
    /// The new name of a `renumber`; null otherwise.
    pub to: Option<String>,
    /// `safe`, or `unsafe` (made only with `--unsafe-fixes`).
    pub applicability: &'static str,
    /// What changes, in words (the human output's sentence).
    pub what: String,
}

/// A finding no repair of this run addresses.
#[derive(Debug, Serialize)]
pub struct LeftFinding {
    pub check: &'static str,
    pub file: String,
    pub severity: Option<Severity>,
    /// `manual`, `no-repair`, `unsafe-not-requested` or `not-selected`.
    pub reason: &'static str,
    /// The human output's reason.
    pub why: String,
}

/// A finding whose repair was refused or not applied.
#[derive(Debug, Serialize)]
pub struct RefusedFinding {
    pub check: &'static str,
    pub file: String,
    pub severity: Option<Severity>,
    /// The guard or error, as the human output says it.
    pub reason: String,
}

/// Per check: findings fixed (`planned` on a dry run, `applied` otherwise),
/// cleared as a side effect of other checks' repairs, left and refused.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Counts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<usize>,
    /// Findings of this check that no change serves but that the run's
    /// changes clear all the same (would clear, on a dry run).
    pub cleared: usize,
    pub left: usize,
    pub refused: usize,
}

impl Counts {
    fn empty(dry_run: bool) -> Counts {
        Counts {
            planned: dry_run.then_some(0),
            applied: (!dry_run).then_some(0),
            cleared: 0,
            left: 0,
            refused: 0,
        }
    }

    /// Findings fixed (or that would be).
    pub fn fixed(&self) -> usize {
        self.planned.or(self.applied).unwrap_or(0)
    }

    fn add_fixed(&mut self, n: usize) {
        if let Some(p) = self.planned.as_mut() {
            *p += n;
        }
        if let Some(a) = self.applied.as_mut() {
            *a += n;
        }
    }

    fn add(&mut self, o: &Counts) {
        self.add_fixed(o.fixed());
        self.cleared += o.cleared;
        self.left += o.left;
        self.refused += o.refused;
    }
}

/// One conversation of a repair run.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub path: String,
    pub id: String,
    /// `unchanged` (nothing to change), `planned` (dry run), `applied`,
    /// `refused` (nothing may be written: `refusal` says why) or `failed`
    /// (applying failed and nothing was changed: `refusal` says why).
    pub status: &'static str,
    /// Dry run: the changes that would be made.
    pub planned: Vec<Change>,
    /// Real run: the changes made.
    pub applied: Vec<Change>,
    pub left: Vec<LeftFinding>,
    pub refused: Vec<RefusedFinding>,
    /// Why nothing was written to this conversation, if so.
    pub refusal: Option<String>,
    /// The kind of refusal (`in-use`, `interrupted`, `busy`, `unreadable`,
    /// `proof`), when the plan was refused.
    pub refusal_kind: Option<crate::fix::Refusal>,
    /// Files changed (or that would be).
    pub files: usize,
    pub notes: Vec<String>,
    /// The verdict before the repair, and after it (null when nothing
    /// changes).
    pub verdict: String,
    pub verdict_after: Option<String>,
    /// Findings per check: fixed (`planned`/`applied`), `left`, `refused`.
    pub by_check: BTreeMap<&'static str, Counts>,
}

fn applicability(p: &Plan, checks: &[&'static str], file: &str) -> &'static str {
    let unsafe_check = checks.iter().any(|c| {
        checks::find(c).is_some_and(|k| k.repair().applicability == Applicability::Unsafe)
    });
    // (`unsafe_made` is sorted: the engine lists it from a sorted map)
    if unsafe_check
        || p.unsafe_made
            .binary_search_by(|f| f.as_str().cmp(file))
            .is_ok()
    {
        "unsafe"
    } else {
        "safe"
    }
}

/// Every change of the plan, in the order the human output lists them.
pub fn changes(p: &Plan) -> Vec<Change> {
    let mut out = Vec::new();
    for m in &p.moves {
        out.push(Change {
            checks: m.checks.clone(),
            file: m.rel.clone(),
            action: if m.to.is_some() {
                "renumber"
            } else {
                "move-to-quarantine"
            },
            to: m.to.clone(),
            applicability: applicability(p, &m.checks, &m.rel),
            what: m.what.clone(),
        });
    }
    for c in &p.creates {
        out.push(Change {
            checks: c.checks.clone(),
            file: c.rel.clone(),
            action: "create",
            to: None,
            applicability: applicability(p, &c.checks, &c.rel),
            what: c.what.clone(),
        });
    }
    for e in &p.edits {
        for what in &e.what {
            out.push(Change {
                checks: e.checks.clone(),
                file: e.rel.clone(),
                action: "rewrite",
                to: None,
                applicability: applicability(p, &e.checks, &e.rel),
                what: what.clone(),
            });
        }
    }
    out
}

/// The highest severity of the findings before the repair, by check and
/// file.
fn severities(p: &Plan) -> HashMap<(&str, &str), Severity> {
    let mut out: HashMap<(&str, &str), Severity> = HashMap::new();
    for f in &p.before.findings {
        let s = out.entry((f.check, f.file.as_str())).or_insert(f.severity);
        *s = (*s).max(f.severity);
    }
    out
}

/// What happened to one conversation. `applied` is `persist::apply`'s
/// result (None: not applied, a dry run or nothing to change).
pub fn outcome(p: &Plan, dry_run: bool, applied: Option<&Result<Vec<String>, String>>) -> Outcome {
    let failed = match applied {
        Some(Err(why)) => Some(why.clone()),
        _ => None,
    };
    let changing = p.has_changes() && failed.is_none();
    let status = if p.refused.is_some() {
        "refused"
    } else if failed.is_some() {
        "failed"
    } else if !changing {
        "unchanged"
    } else if dry_run {
        "planned"
    } else {
        "applied"
    };
    let refused_why = p.refused.as_ref().map(|r| r.why.clone());
    let refusal = refused_why.clone().or(failed.clone());
    let mut by: BTreeMap<&'static str, Counts> = BTreeMap::new();
    let mut bump = |c: &'static str, f: &dyn Fn(&mut Counts)| {
        f(by.entry(c).or_insert_with(|| Counts::empty(dry_run)));
    };
    let mut changes_list = Vec::new();
    let mut refused = Vec::new();
    if changing {
        changes_list = changes(p);
        for (f, served) in p.cleared() {
            if served {
                bump(f.check, &|c| c.add_fixed(1));
            } else {
                bump(f.check, &|c| c.cleared += 1);
            }
        }
    } else if let Some(why) = &failed {
        // nothing was changed: the findings the plan would have cleared stay
        for (f, _) in p.cleared() {
            bump(f.check, &|c| c.refused += 1);
            refused.push(RefusedFinding {
                check: f.check,
                file: f.file.clone(),
                severity: Some(f.severity),
                reason: why.clone(),
            });
        }
    }
    let mut left = Vec::new();
    let severities = severities(p);
    let severity_of = |check: &str, file: &str| severities.get(&(check, file)).copied();
    for l in &p.left {
        if l.reason == LeftReason::Refused {
            bump(l.check, &|c| c.refused += 1);
            refused.push(RefusedFinding {
                check: l.check,
                file: l.file.clone(),
                severity: severity_of(l.check, &l.file),
                reason: refused_why.clone().unwrap_or_else(|| l.why.clone()),
            });
        } else {
            bump(l.check, &|c| c.left += 1);
            left.push(LeftFinding {
                check: l.check,
                file: l.file.clone(),
                severity: severity_of(l.check, &l.file),
                reason: l.reason.as_str(),
                why: l.why.clone(),
            });
        }
    }
    let files = if changing { p.changed_files() } else { 0 };
    let (planned, applied_list) = if dry_run {
        (changes_list, Vec::new())
    } else {
        (Vec::new(), changes_list)
    };
    Outcome {
        path: p.display.clone(),
        id: p.before.id.clone(),
        status,
        planned,
        applied: applied_list,
        left,
        refused,
        refusal,
        refusal_kind: p.refused.as_ref().map(|r| r.kind),
        files,
        notes: p.notes.clone(),
        verdict: p.before.verdict.clone(),
        verdict_after: if changing {
            p.after.as_ref().map(|a| a.verdict.clone())
        } else {
            None
        },
        by_check: by,
    }
}

/// The run, as the summary names it.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    /// The run id `undo` takes; null when nothing was written (a dry run,
    /// nothing to change).
    pub id: Option<String>,
    /// The run's backup folder; null when nothing was written.
    pub backup_dir: Option<String>,
    pub dry_run: bool,
    pub unsafe_fixes: bool,
    /// The release whose rules were applied (`--server-version`, or the
    /// newest known).
    pub server_version: String,
}

/// Totals over the run.
#[derive(Debug, Default, Serialize)]
pub struct Totals {
    /// Conversations looked at.
    pub scanned: usize,
    /// Files changed (or that would be).
    pub files: usize,
    /// Conversations changed (or that would be).
    pub conversations: usize,
    /// Conversations where applying failed (nothing changed there).
    pub failed: usize,
    /// Conversations whose repair was refused.
    pub refused: usize,
    /// Findings left (any reason).
    pub left: usize,
}

/// The run's summary: totals, and findings per check.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub run: RunInfo,
    pub totals: Totals,
    pub by_check: BTreeMap<&'static str, Counts>,
    /// Scan errors, conversations passed over, the shard (as `diagnose`'s).
    #[serde(flatten)]
    pub scan: crate::render::ScanInfo,
    /// Findings left per (check, reason), for the human closing lines.
    #[serde(skip)]
    pub left_reasons: BTreeMap<(&'static str, &'static str), usize>,
    /// Findings refused per check, of conversations whose plan was refused
    /// (`.0`) and of those where applying failed (`.1`), for the human
    /// closing lines.
    #[serde(skip)]
    pub refused_by_status: (BTreeMap<&'static str, usize>, BTreeMap<&'static str, usize>),
    /// Refused conversations by the kind of refusal.
    pub refused_because: BTreeMap<crate::fix::Refusal, usize>,
}

impl Summary {
    pub fn new(run: RunInfo) -> Summary {
        Summary {
            run,
            totals: Totals::default(),
            by_check: BTreeMap::new(),
            scan: Default::default(),
            left_reasons: BTreeMap::new(),
            refused_by_status: Default::default(),
            refused_because: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, o: &Outcome) {
        let dry_run = self.run.dry_run;
        self.totals.scanned += 1;
        self.totals.files += o.files;
        self.totals.conversations += usize::from(o.files > 0);
        self.totals.failed += usize::from(o.status == "failed");
        self.totals.refused += usize::from(o.status == "refused");
        if let Some(kind) = o.refusal_kind {
            *self.refused_because.entry(kind).or_default() += 1;
        }
        self.totals.left += o.left.len();
        for l in &o.left {
            *self.left_reasons.entry((l.check, l.reason)).or_default() += 1;
        }
        let by_status = if o.status == "failed" {
            &mut self.refused_by_status.1
        } else {
            &mut self.refused_by_status.0
        };
        for r in &o.refused {
            *by_status.entry(r.check).or_default() += 1;
        }
        for (c, n) in &o.by_check {
            self.by_check
                .entry(c)
                .or_insert_with(|| Counts::empty(dry_run))
                .add(n);
        }
    }
}

/// `--format json` (one document, streamed) or `--format jsonl`.
pub struct Writer {
    lines: bool,
    count: usize,
}

impl Writer {
    pub fn new(lines: bool) -> Writer {
        Writer { lines, count: 0 }
    }

    fn open(&mut self, w: &mut dyn Write) -> io::Result<()> {
        if !self.lines && self.count == 0 {
            write!(
                w,
                "{{\"schema_version\":{SCHEMA_VERSION},\"conversations\":["
            )?;
        }
        Ok(())
    }

    /// One conversation, redacted by its plan's redactor (the run's one set
    /// of secrets, raw and JSON-escaped).
    pub fn conversation(&mut self, w: &mut dyn Write, p: &Plan, o: &Outcome) -> io::Result<()> {
        let text = serde_json::to_string(o).map_err(io::Error::other)?;
        let text = json_safe(&p.redactor.redact(&text)).into_owned();
        if self.lines {
            writeln!(w, "{}", crate::render::json::versioned(&text))?;
        } else {
            self.open(w)?;
            if self.count > 0 {
                write!(w, ",")?;
            }
            write!(w, "{text}")?;
        }
        self.count += 1;
        if self.lines {
            w.flush()?;
        }
        Ok(())
    }

    pub fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let text = serde_json::to_string(s).map_err(io::Error::other)?;
        let summary = json_safe(&crate::secrets::redact_all(&text)).into_owned();
        if self.lines {
            writeln!(
                w,
                "{}",
                crate::render::json::versioned(&format!("{{\"summary\":{summary}}}"))
            )?;
        } else {
            self.open(w)?;
            writeln!(w, "],\"summary\":{summary}}}")?;
        }
        w.flush()
    }
}
