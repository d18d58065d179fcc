//! `not-listed` (warning; error when it breaks the whole list): the
//! agent-server release judged for (`--server-version`) does not list this
//! conversation. The rules are in `crate::server`.

use super::{Check, Ctx, Finding, Repair, Severity};
use crate::server::{self, lease, Inputs, LoadFailure, Verdict};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::store::conversation::Overlay;
use crate::version::Version;
use crate::view::{LoadError, Loaded};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "not-listed";

pub struct NotListed;

/// The listing verdict for this conversation and release.
pub fn verdict(ctx: &Ctx) -> Verdict {
    let conv = ctx.conv;
    let parent = conv.dir.parent().unwrap_or(&conv.dir);
    let ids = server::store_ids(parent);
    let env = lease::Env::here(ctx.now);
    verdict_with(ctx, &ids, &env)
}

/// [`verdict`] with the store pre-pass and the lease environment given (tests).
pub fn verdict_with(ctx: &Ctx, ids: &server::StoreIds, env: &lease::Env) -> Verdict {
    let quote = |s: &str| ctx.quote(s);
    let inputs = inputs(ctx, env, &quote);
    let mut v = server::judge(ctx.conv, ids, &inputs);
    if let Some(sorted) = eager_sort_breaks(ctx, ids, env, &v) {
        v = sorted;
    }
    // debug builds (the tests, the fuzzers) hold every verdict to the load verdict
    if cfg!(debug_assertions) {
        if let Err(e) = server::consistent(&v, &inputs) {
            panic!("internal inconsistency in {}: {e}", ctx.conv.dir.display());
        }
    }
    v
}

/// ≤ 1.36 sorts the conversations it started by `created_at`: this one
/// started with a naive date (listed, or started afresh under the id in
/// its meta.json) and another started one with an aware date make the
/// search fail (`server::breaks_sort`). Whether another folder starts is
/// its own verdict, computed as for this one (only for a naive folder,
/// once per folder and run).
fn eager_sort_breaks(
    ctx: &Ctx,
    ids: &server::StoreIds,
    env: &lease::Env,
    v: &Verdict,
) -> Option<Verdict> {
    if server::era(ctx.version) != server::Era::Eager || !starts(v) {
        return None;
    }
    if !ctx
        .conv
        .meta
        .value()
        .is_some_and(server::meta::naive_created_at)
    {
        return None;
    }
    let other = ids.entries.iter().find(|e| {
        e.name != ctx.conv.folder
            && e.created_naive == Some(false)
            && started(&ids.dir.join(&e.name), ctx.version, ids, env)
    })?;
    let quote = |s: &str| ctx.quote(s);
    let sorted = server::breaks_sort(&other.name, true, server::Era::Eager, &quote);
    if v.listed == Some(true) {
        return Some(sorted);
    }
    // started afresh elsewhere: this folder stays unlisted, and breaks the search
    let mut v = v.clone();
    v.breaks_search = true;
    v.why = format!("{}; and {}", v.why, sorted.why);
    Some(v)
}

/// An eager release starts a conversation from this folder's meta.json:
/// this one, or a fresh one under the id its meta.json carries.
fn starts(v: &Verdict) -> bool {
    v.listed == Some(true) || v.rule == "folder-not-id"
}

/// Whether an eager release starts a conversation from folder `dir`,
/// memoised per run.
fn started(
    dir: &std::path::Path,
    version: Version,
    ids: &server::StoreIds,
    env: &lease::Env,
) -> bool {
    type Memo = Mutex<HashMap<(PathBuf, Version), bool>>;
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let key = (dir.to_path_buf(), version);
    let memo = MEMO.get_or_init(Default::default);
    if let Some(&b) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return b;
    }
    let l = Loaded::load(dir, version, &Overlay::new());
    let other = Ctx::new(&l.conv, &l.index, &l.views, version);
    let quote = |s: &str| other.quote(s);
    let listed = starts(&server::judge(&l.conv, ids, &inputs(&other, env, &quote)));
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, listed);
    listed
}

/// The listing's inputs: the load verdict `diagnose` computed for this release.
fn inputs<'a>(ctx: &Ctx, env: &'a lease::Env, quote: &'a dyn Fn(&str) -> String) -> Inputs<'a> {
    let load = ctx.load_error().map(|e| {
        let state = matches!(
            e,
            LoadError::NoBaseState
                | LoadError::BadBaseState(_)
                | LoadError::StateDecode { .. }
                | LoadError::InvalidState(_)
                | LoadError::IdMismatch { .. }
        );
        LoadFailure {
            state,
            at_start: state || !crate::view::tree::fresh_start(ctx.conv, ctx.version),
            state_invalid: matches!(e, LoadError::BadBaseState(_) | LoadError::InvalidState(_)),
            why: format!(
                "{}: {}",
                e.exception(),
                super::describe::describe_load_error(e, ctx)
            ),
        }
    });
    Inputs {
        version: ctx.version,
        load,
        running_unreadable: running_unreadable(ctx),
        env,
        quote,
    }
}

/// For a `running` conversation: the first event of the log that cannot be read.
fn running_unreadable(ctx: &Ctx) -> Option<String> {
    if !ctx.running() {
        return None;
    }
    (0..ctx.reader.len()).find_map(|i| {
        ctx.reader.read(i).err().map(|e| {
            format!(
                "{} cannot be read ({})",
                ctx.event_path(i),
                super::describe::describe_read_error(&e, ctx)
            )
        })
    })
}

impl Check for NotListed {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "The agent-server release judged for does not list this conversation, and the rule that decides it"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A conversation folder that the agent-server of `--server-version` leaves out
  of its conversation list (`GET /api/conversations/search`), with the rule of
  that release's ConversationService that drops it and the file that decides:
  - no meta.json (every release skips such a folder);
  - meta.json unreadable, or not a valid StoredConversation of that release,
    judged with the model extracted from the release, nested objects
    included (`id` not a UUID, no `workspace`, a `title` that is not a
    string, a `created_at` pydantic cannot parse, `tags` with an uppercase
    key, a `launched_agent_profile` missing its fields...; before 1.37 also
    no `agent`, which the event service is rebuilt from);
  - 1.49+: the folder name is not a UUID (`UUID(conversation_dir.name)`);
  - the folder is not named after the id in its meta.json: every release
    reads the state from `<conversations>/<id>`, not from this folder (before
    1.37 the server even creates that folder with an empty conversation);
  - before 1.37 (the startup scan starts every conversation): a lease held by
    another live server; the conversation does not load for that release
    (the same load verdict `diagnose` gives: base_state.json, the id, every
    event of the active branch); meta.json's agent is of another class than
    base_state.json's or lacks one of its tools (`agent.verify`); a `running`
    conversation with an event that cannot be read (crash recovery);
  - 1.37+: base_state.json missing (the catalog counts it, search skips it),
    not JSON, or with an `execution_status` that is not a valid status;
    valid JSON that is not a ConversationState makes the search call itself
    fail, for every conversation on the page (then the finding is an error);
  - 1.37+: base_state.json carries another UUID as its `id`: the row is
    composed from the state, so the list shows that id, never this folder;
  - every release: a meta.json `created_at` without a timezone next to
    another listed folder's aware one: sorting by `created_at` raises
    TypeError and the search fails for every conversation (an error, though
    this row alone composes);
  - when this folder's own meta.json does not file it under its name but
    another folder's valid meta.json carries its id, the server still reads
    THIS folder: listed (with the copy's title), or not, by this folder's
    own state.
  Each message names the release's file and function.

Why it matters
  \"Where did my conversation go?\": the files are there, but the UI does not
  show them. The `listed` field of each conversation (JSON) and the `listed by`
  line (human) give the verdict; it is `null` for sub-agent folders and for
  SDK-only stores where no folder has a meta.json.

Repair
  None automatic. Rename the folder to the id in its meta.json, restore a
  meta.json or base_state.json from a backup, or fix the field named; see
  `convo-doctor explain live-lease` for leases."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "the deciding rule names the file to fix; where that is a finding with its own repair (an unreadable state, a lease) that repair applies; renaming folders or rewriting meta.json ids is left to a human",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let v = verdict(ctx);
        if v.listed == Some(true) && v.breaks_search {
            // its row composes, but it makes the whole search call fail
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                v.file,
                format!(
                    "agent-server {} lists nothing while this folder is in the store [{}]: {} ({})",
                    ctx.version, v.rule, v.why, v.code
                ),
            ));
            return;
        }
        if v.listed != Some(false) {
            return;
        }
        let sev = if v.breaks_search {
            Severity::Error
        } else {
            Severity::Warning
        };
        out.push(Finding::new(
            self.id(),
            sev,
            v.file,
            format!(
                "agent-server {} does not list it [{}]: {} ({})",
                ctx.version, v.rule, v.why, v.code
            ),
        ));
    }
}
