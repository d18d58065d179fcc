//! What the Codex client resends when it resumes a rollout (`codex exec
//! resume <id>`), measured with the real client (0.171.0; see
//! docs/codex.md and fixtures/codex/):
//! - the first line that is not blank must be a `session_meta` whose payload
//!   has `id` (the id of the file name), `timestamp`, `cwd`, `originator`
//!   and `cli_version`; otherwise the client cannot resume at all;
//! - lines that are not JSON objects, records of other types and
//!   `response_item`s whose payload is no item are skipped;
//! - a `session_meta` line after the first starts the history again: the
//!   items before it are not resent;
//! - every other item is resent in file order, a line written twice twice;
//! - a `compacted` record starts the history over: from its
//!   `replacement_history`, the last one's; one without (an older
//!   client's) keeps the real user messages so far and adds its summary
//!   (one with `replacement_history_metadata` but no replacement is not
//!   read at all);
//! - a tool output whose call is not resent before it is dropped; a call
//!   without its output is resent and answered by the client itself;
//! - the client diffs the context it sends against the last full
//!   `world_state` snapshot (a `compacted` record clears it): with none
//!   left while the history holds its skills context and no compaction
//!   restarted it, it declares that context again, one item of its own
//!   more (its world-state replay in `rollout_reconstruction.rs`; the
//!   section's previous state `Unknown`, not `Absent`).

use super::session::{Item, LineKind, Rollout};

/// Why the client cannot resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoResume {
    /// No line but blank ones.
    Empty,
    /// The first line is not a JSON object.
    FirstInvalid,
    /// The first line is a record but not a `session_meta`.
    NoMeta { later: Option<usize> },
    /// The `session_meta` lacks fields the client needs.
    MetaFields(Vec<&'static str>),
    /// The `session_meta` names another id than the file name.
    OtherId { meta: String, file: String },
}

impl NoResume {
    pub fn words(&self) -> String {
        match self {
            NoResume::Empty => "the rollout holds no line".into(),
            NoResume::FirstInvalid => "its first line is not a JSON object".into(),
            NoResume::NoMeta { later: None } => "it has no session_meta line".into(),
            NoResume::NoMeta { later: Some(_) } => "its session_meta is not its first line".into(),
            NoResume::MetaFields(f) => format!("its session_meta lacks {}", f.join(", ")),
            NoResume::OtherId { .. } => {
                "its session_meta names another id than its file name".into()
            }
        }
    }
}

pub struct View {
    /// Line index of the first non-blank line (the `session_meta` when the
    /// rollout resumes).
    pub first: Option<usize>,
    pub no_resume: Option<NoResume>,
    /// Every `response_item` line the client reads as an item.
    pub items: Vec<usize>,
    /// The lines of items the client resends, in order.
    pub resent: Vec<usize>,
    /// A later `session_meta` line that restarted the history (the last).
    pub restart: Option<usize>,
    /// Items before `restart`, not resent.
    pub cut: Vec<usize>,
    /// Items a compaction summarised: before the last one with a
    /// replacement history and not in it, or left out when a compaction
    /// without one rebuilt the history (file order).
    pub summarised: Vec<usize>,
    /// Outputs dropped because their call is not resent before them.
    pub orphan_outputs: Vec<usize>,
    /// Calls resent without their output (the client answers them).
    pub unanswered: Vec<usize>,
    /// The last `compacted` record that rebuilt the history: the last
    /// with a replacement history (where the history starts over), or a
    /// later one without (an older client's: the user messages so far and
    /// its summary).
    pub compaction: Option<usize>,
    /// Items of its replacement history that are no line of the rollout
    /// (the summary, context the client rebuilt): resent, not counted in
    /// lines.
    pub replaced_extra: usize,
    /// Whether a full `world_state` snapshot is left once the client
    /// replays them in file order (a `compacted` record clears it, a patch
    /// keeps it).
    pub world_state: bool,
    /// The client declares its context again (one item of its own more):
    /// no snapshot is left, no compaction starts the history and a resent
    /// line holds the skills context the snapshot would have described.
    pub redeclared: bool,
    /// `resent` as a set, for [`View::is_resent`].
    resent_set: std::collections::HashSet<usize>,
}

impl View {
    pub fn resumes(&self) -> bool {
        self.no_resume.is_none()
    }

    /// Whether line index `i` is resent (in O(1)).
    pub fn is_resent(&self, i: usize) -> bool {
        self.resent_set.contains(&i)
    }

    /// The items of the client's own resume sends beyond those a whole
    /// rollout leads it to send: an answer to each call without its
    /// output, the compaction's items that are no line, the context it
    /// declares again.
    pub fn own_items(&self) -> usize {
        self.unanswered.len() + self.replaced_extra + usize::from(self.redeclared)
    }

    /// "the client adds N items of its own: …", when it adds any.
    pub fn own_words(&self) -> Option<String> {
        if self.own_items() == 0 {
            return None;
        }
        let mut what = Vec::new();
        match self.unanswered.len() {
            0 => {}
            1 => what.push("an answer to a call without its output".to_string()),
            n => what.push(format!("{n} answers to calls without their output")),
        }
        if self.replaced_extra > 0 {
            what.push(format!(
                "{} of the compaction's replacement",
                self.replaced_extra
            ));
        }
        if self.redeclared {
            what.push("its context declared again (no world_state snapshot is left)".into());
        }
        Some(format!(
            "the client adds {} of its own: {}",
            crate::checks::plural(self.own_items(), "item", "items"),
            what.join(", ")
        ))
    }
}

/// The view of `r`; `file_id` is the id its file name carries, if any.
pub fn build(r: &Rollout, file_id: Option<&str>) -> View {
    let first = r
        .lines
        .iter()
        .position(|l| !matches!(l.kind, LineKind::Blank));
    let items: Vec<usize> = r
        .records()
        .filter(|(_, x)| x.kind == "response_item" && x.item.is_some())
        .map(|(i, _)| i)
        .collect();
    let metas: Vec<usize> = r
        .records()
        .filter(|(_, x)| x.kind == "session_meta")
        .map(|(i, _)| i)
        .collect();
    let no_resume = match first.map(|i| &r.lines[i].kind) {
        None => Some(NoResume::Empty),
        Some(LineKind::Invalid { .. }) => Some(NoResume::FirstInvalid),
        Some(LineKind::Record(x)) if x.kind != "session_meta" => Some(NoResume::NoMeta {
            later: metas.first().copied(),
        }),
        Some(LineKind::Record(x)) if !x.meta_missing.is_empty() => {
            Some(NoResume::MetaFields(x.meta_missing.clone()))
        }
        Some(LineKind::Record(x)) => match (x.meta_id.as_deref(), file_id) {
            (Some(m), Some(f)) if !m.eq_ignore_ascii_case(f) => Some(NoResume::OtherId {
                meta: m.to_string(),
                file: f.to_string(),
            }),
            _ => None,
        },
        // `first` is not blank
        Some(LineKind::Blank) => Some(NoResume::Empty),
    };
    let restart = metas.iter().copied().rfind(|&m| Some(m) != first);
    let replaced = r
        .records()
        .filter(|(_, x)| x.kind == "compacted" && x.replacement.is_some())
        .map(|(i, _)| i)
        .next_back()
        .filter(|&c| restart.is_none_or(|m| c > m));
    let start = replaced.or(restart);
    let after = |i: usize| start.is_none_or(|m| i > m);
    let cut: Vec<usize> = if replaced.is_some() {
        Vec::new()
    } else {
        items.iter().copied().filter(|&i| !after(i)).collect()
    };
    let restart = if replaced.is_some() { None } else { restart };
    // the history, rebuilt as the client rebuilds it: each entry a line of
    // the rollout or an item of the client's own, and what item it is
    let mut history: Vec<(Option<usize>, Item)> = Vec::new();
    let mut summarised = Vec::new();
    if let Some(rec) = replaced.and_then(|c| r.lines[c].record()) {
        // the replacement's items that are a line before it count as that
        // line resent: the lines by digest, each taken once, first written
        // first (a scan of them per item was quadratic)
        let mut by_digest: std::collections::HashMap<u64, std::collections::VecDeque<usize>> =
            Default::default();
        for &j in items.iter().filter(|&&j| !after(j)) {
            if let Some(x) = r.lines[j].record() {
                by_digest.entry(x.digest).or_default().push_back(j);
            }
        }
        for (d, it) in rec.replacement.as_deref().unwrap_or_default() {
            let Some(it) = it else { continue };
            let line = by_digest.get_mut(d).and_then(|q| q.pop_front());
            history.push((line, it.clone()));
        }
        let replayed: std::collections::HashSet<usize> =
            history.iter().filter_map(|(l, _)| *l).collect();
        summarised.extend(
            items
                .iter()
                .copied()
                .filter(|&j| !after(j) && !replayed.contains(&j)),
        );
    }
    let mut from_file = history.len();
    // then every item after the start, in file order; a compaction without
    // a replacement history keeps the real user messages so far and adds
    // its summary (an older client's; measured: fixtures/codex/fuzz/l-*)
    let mut compaction = replaced;
    for (i, x) in r.records().filter(|&(i, _)| after(i)) {
        if let Some(it) = &x.item {
            history.push((Some(i), it.clone()));
        } else if x.kind == "compacted" && x.legacy_compaction {
            let (keep, drop): (Vec<_>, Vec<_>) =
                history.drain(..).partition(|(_, it)| it.collected);
            summarised.extend(drop.into_iter().filter_map(|(l, _)| l));
            from_file = from_file.min(keep.len());
            history = keep;
            history.push((None, Item::summary()));
            compaction = Some(i);
        }
    }
    summarised.sort_unstable();
    // what is sent: a tool output of the rollout whose call is not before
    // it is dropped (the replacement's own items are sent as they are)
    let mut calls = std::collections::HashSet::new();
    let mut resent = Vec::new();
    let mut orphan_outputs = Vec::new();
    let mut replaced_extra = 0;
    for (k, (line, it)) in history.iter().enumerate() {
        if it.is_call() {
            calls.insert(it.call_id.clone());
        }
        if k >= from_file && it.is_output() && !calls.contains(&it.call_id) {
            orphan_outputs.extend(*line);
            continue;
        }
        match line {
            Some(j) => resent.push(*j),
            None => replaced_extra += 1,
        }
    }
    let answered: std::collections::HashSet<_> = resent
        .iter()
        .filter_map(|&i| r.lines[i].record()?.item.as_ref())
        .filter(|it| it.is_output())
        .map(|it| it.call_id.clone())
        .collect();
    let unanswered = resent
        .iter()
        .copied()
        .filter(|&i| {
            r.lines[i]
                .record()
                .and_then(|x| x.item.as_ref())
                .is_some_and(|it| it.is_call() && !answered.contains(&it.call_id))
        })
        .collect();
    // the world-state replay: a full snapshot sets the baseline, a
    // compaction clears it, a patch needs one (and keeps it)
    let mut world_state = false;
    for (_, x) in r.records() {
        match (x.kind.as_str(), x.world_state) {
            ("compacted", _) if x.replacement.is_some() || x.legacy_compaction => {
                world_state = false
            }
            (_, Some(true)) => world_state = true,
            _ => {}
        }
    }
    let redeclared = !world_state
        && compaction.is_none()
        && resent.iter().any(|&i| {
            r.lines[i]
                .record()
                .and_then(|x| x.item.as_ref())
                .is_some_and(|it| it.skills_context)
        });
    View {
        first,
        no_resume,
        world_state,
        redeclared,
        items,
        resent_set: resent.iter().copied().collect(),
        resent,
        restart,
        cut,
        summarised,
        orphan_outputs,
        unanswered,
        compaction,
        replaced_extra,
    }
}
