//! `stale-running` (info): execution_status is `running` but nothing runs it.

use serde_json::Value;

use super::live_lease::model_state;
use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::server::lease::Lease;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "stale-running";

pub struct StaleRunning;

impl Check for StaleRunning {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "base_state.json says `running` but no server holds the conversation: the last run crashed"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json `execution_status` is \"running\" while no live
  owner_lease.json says a server owns the folder (no lease, an expired one,
  or one whose owner pid is gone on this host: the model of `live-lease`).

Why it matters
  The process that ran the agent stopped without finishing the turn (a crash,
  an OOM kill, a power loss). At its next start the agent-server marks the
  conversation `error` and appends a recovery AgentErrorEvent for the first
  unfinished tool call; an SDK-only resume continues from `running`. Before
  #4488 that recovery error could be attached to the wrong event (see
  `misparented-recovery-error`).

Repair
  The agent-server makes this recovery itself at its next start. Where
  that does not happen (a stale lease the server keeps taking for live,
  SDK#4893; or the folder is being examined away from its server), `repair
  --unsafe-fixes` makes the same change the server's own crash recovery
  makes (event_service.py): `execution_status` becomes `error` and, when
  the first tool call of the log that nothing answers is not answered by any
  result either, an AgentErrorEvent \"A restart occurred while this tool was
  in progress...\" answering it is appended, parented to that action
  (#4488), and becomes the HEAD. Only for agent-server folders (with
  meta.json): an SDK process, which holds no lease, may be running an
  SDK-only one. Unsafe because the run's end is declared, not observed."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Unsafe,
            what: "the agent-server's own crash recovery: `execution_status` becomes `error`, and the first tool call nothing answers gets the server's \"A restart occurred\" AgentErrorEvent, parented to its action and made the HEAD",
            guards: "no live lease; meta.json present (an agent-server folder); a contiguous log every event of which the SDK reads (gaps and unreadable events are repaired first, in the same run); unsafe because the run's end is declared, not observed",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if !ctx.running() {
            return;
        }
        let lease = match model_state(ctx) {
            Lease::Live(..) => return,
            Lease::None => String::new(),
            Lease::Unparsable(_) => {
                " (owner_lease.json is unreadable, which the server treats as stale)".into()
            }
            Lease::Expired(p) => format!(
                " (the lease of instance `{}` expired at {})",
                ctx.quote(&p.owner),
                crate::server::lease::when(p.expires_at)
            ),
            Lease::DeadOwner(p) => format!(
                " (the lease names pid {} on this host, which is gone)",
                p.pid.unwrap_or(0)
            ),
        };
        let when = if crate::server::era(ctx.version) == crate::server::Era::Eager {
            "at its next start"
        } else {
            "at its next start (1.37+ hydrate every `running` conversation at startup)"
        };
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            "base_state.json",
            format!("execution_status is `running` but no server holds the conversation{lease}: the last run ended in a crash; the agent-server marks it `error` and recovers it {when}"),
        ));
    }
}

/// What the agent-server writes after a crash (event_service.py).
const RESTART_ERROR: &str = "A restart occurred while this tool was in progress. This may indicate a fatal memory error or system crash. The tool execution was interrupted and did not complete.";

/// The agent-server's crash recovery, made on disk.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::placeholder::derived_id;
    use crate::edit::{Action, Safety};
    if !ctx.running() || matches!(model_state(ctx), Lease::Live(..)) {
        return;
    }
    const REL: &str = "base_state.json";
    if !ctx.conv.meta.exists() {
        p.leave(
            REL,
            "an SDK-only conversation (no meta.json): an SDK process, which holds no lease, may be running it",
        );
        return;
    }
    let n = ctx.reader.len();
    if ctx.index.gap_at.is_some() || !ctx.index.duplicate_idx.is_empty() {
        p.leave(
            REL,
            "the log's index must be contiguous first (an index gap or a doubled index is repaired first)",
        );
        return;
    }
    if (0..n).any(|i| ctx.reader.read(i).is_err()) {
        p.leave(
            REL,
            "the server's recovery reads every event: the events it cannot read are set aside first",
        );
        return;
    }
    // get_unmatched_actions over the whole log (what the server's recovery
    // reads), the first of them
    let all: Vec<usize> = (0..n).collect();
    let first = super::tool_calls::unmatched(ctx, &all).first().copied();
    // whether it is open waits on which id is the event's (in this run,
    // when `filename-id-mismatch` may settle it)
    if let Some(first) = first.filter(|&a| {
        super::tool_calls::id_unsettled(ctx, a) && p.selected(super::filename_id_mismatch::ID)
    }) {
        p.leave(
            REL,
            format!(
                "the tool call of event {} looks unanswered, but its JSON id and file name disagree: the crash recovery is planned once its id is settled",
                super::ix(first)
            ),
        );
        return;
    }
    p.set(
        REL,
        "/execution_status",
        Value::from(super::status::ERROR),
        Safety::Unsafe,
        "execution_status: running → error (what the agent-server's crash recovery sets)".into(),
    );
    let Some(first) = first else {
        return;
    };
    let Some(tc) = ctx
        .reader
        .read(first)
        .ok()
        .and_then(|a| a.tool_call_id().map(String::from))
    else {
        return;
    };
    if super::tool_calls::observed_by_call(ctx, &all, &tc) {
        return;
    }
    let Some((tool_name, _)) = super::tool_calls::call_of(ctx, first) else {
        p.leave(
            REL,
            "the unanswered action has no `tool_name` to answer it with",
        );
        return;
    };
    let action_id = ctx.reader.id(first);
    let mut seed = ctx.conv.folder.as_bytes().to_vec();
    seed.extend_from_slice(b"/crash-recovery/");
    seed.extend_from_slice(action_id.as_bytes());
    let id = derived_id(&seed);
    let ts = super::tool_calls::newest_timestamp(ctx);
    let text =
        super::tool_calls::error_event(&id, &ts, action_id, (&tool_name, &tc), RESTART_ERROR);
    let name = crate::store::event::canonical_name(n as u64, &id);
    let like = match n.checked_sub(1) {
        Some(last) => ctx.event_path(last),
        None => REL.to_string(),
    };
    p.push(
        format!("events/{name}"),
        Action::Create { bytes: text, like },
        Safety::Unsafe,
        format!(
            "answer tool call `{}` of event {} with the agent-server's crash-recovery AgentErrorEvent ({id}), as the new HEAD",
            ctx.quote(&tc),
            super::ix(first)
        ),
    );
    p.set(
        REL,
        "/leaf_event_id",
        Value::from(id),
        Safety::Unsafe,
        "the HEAD moves to the recovery error (the server appends it through the conversation)"
            .into(),
    );
    super::drop_count_markers(ctx, p);
}
