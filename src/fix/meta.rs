//! meta.json against base_state.json (the source of truth):
//! - **sync** (any server): rewrite meta.json's diverging duplicated values
//!   from base_state.json, so the stale copy can no longer win;
//! - **slim** (declared server ≥ 1.43): also drop meta.json's `agent`, which
//!   those servers no longer read (`workspace` and the rest stay: they are
//!   still required).
//!
//! A real secret (a Fernet token or a plaintext value) is never replaced by
//! the `**********` placeholder, and never dropped when meta.json holds its
//! only copy.

use serde_json::Value;

use super::{Edits, Op, Plan, RepairOptions};
use crate::checks::meta_divergence::{divergences, short_with};
use crate::checks::Ctx;
use crate::secrets::{credential_slots, secret_form, SecretForm, CREDENTIAL_FIELDS};
use crate::store::Doc;
use crate::version::Version;

const REL: &str = "meta.json";

fn display_pointer(p: &str) -> String {
    p.trim_start_matches('/').replace('/', ".")
}

/// Credential slots of meta.json's `agent` whose only real copy is meta.json.
fn only_copies(meta: &Value, base: &Value) -> Vec<String> {
    let Some(agent) = meta.get("agent") else {
        return Vec::new();
    };
    credential_slots(agent)
        .into_iter()
        .filter(|(_, v)| secret_form(v) != SecretForm::Redacted)
        .filter(|(p, _)| {
            base.get("agent")
                .and_then(|a| a.pointer(p))
                .is_none_or(|b| secret_form(b) == SecretForm::Redacted)
        })
        .map(|(p, _)| format!("agent{}", p.replace('/', ".")))
        .collect()
}

/// `meta-duplicate`'s planner: the same pass as `meta-divergence` (one
/// rewrite of meta.json), run here only when that check is not selected.
pub fn plan_duplicate(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, out: &mut Plan) {
    if !(opts.selected)("meta-divergence") {
        self::plan(ctx, opts, edits, out);
    }
}

pub fn plan(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let has_agent = meta.get("agent").is_some_and(|a| !a.is_null());
    let base = match &ctx.conv.base_state {
        Doc::Present(v) => v,
        _ => {
            if has_agent {
                plan.leave(
                    "meta-duplicate",
                    REL,
                    "refused: base_state.json is missing or unreadable, so meta.json's agent may be the only copy",
                );
            }
            return;
        }
    };
    if base
        .pointer("/agent/kind")
        .and_then(Value::as_str)
        .is_none()
    {
        plan.leave(
            "meta-divergence",
            REL,
            "refused: base_state.json has no `agent.kind`; it cannot be trusted as the source of truth",
        );
        return;
    }
    let slim = opts
        .server_version
        .is_some_and(|v| v >= Version::new(1, 43, 0));

    // Secrets only meta.json still holds are kept, and said.
    let kept = only_copies(meta, base);
    for k in &kept {
        plan.notes.push(format!(
            "meta.json holds the only real copy of {k} (base_state.json has only the redacted placeholder); it is kept"
        ));
    }

    if slim && has_agent && (opts.selected)("meta-duplicate") {
        if kept.is_empty() {
            let what = "drop meta.json's copy of the agent (servers from 1.43 read it from base_state.json)";
            if let Err(why) = edits.patch(REL, "/agent", Op::Remove, "meta-duplicate", what.into())
            {
                plan.leave("meta-duplicate", REL, why);
            }
        } else {
            plan.leave(
                "meta-duplicate",
                REL,
                format!(
                    "not slimmed: meta.json's agent holds the only real copy of {}",
                    kept.join(", ")
                ),
            );
        }
    } else if has_agent && !slim {
        plan.notes.push(
            "meta.json's copy of the agent is kept and synced (servers before 1.43 require it); \
             with `--server-version 1.43.0` or newer, repair drops it instead"
                .into(),
        );
    }

    if !(opts.selected)("meta-divergence") {
        return;
    }
    for d in divergences(meta, base) {
        // A server of 1.43 or newer never reads meta.json's agent: leave it
        // (dropped above when that is safe) rather than rewrite it.
        if slim && d.field == "agent" {
            continue;
        }
        if d.field == "secrets" {
            plan.leave(
                "meta-divergence",
                REL,
                "the secret names differ between meta.json `secrets` and base_state.json \
                 `secret_registry`; their values cannot be copied safely, so this needs a human",
            );
            continue;
        }
        let what = format!(
            "{}: {} → {} (from base_state.json)",
            display_pointer(&d.pointer),
            short_with(&d.meta, &ctx.redactor),
            short_with(&d.base, &ctx.redactor)
        );
        let new = d.base.clone().unwrap_or(Value::Null);
        match edits.patch(REL, &d.pointer, Op::Set(new), "meta-divergence", what) {
            // A credential next to a synced value follows it, when
            // base_state.json holds a real one (an LLM switch changes both).
            Ok(()) => sync_sibling_credentials(&d.pointer, base, edits, plan),
            Err(why) => plan.leave(
                "meta-divergence",
                REL,
                format!("{}: {why}", display_pointer(&d.pointer)),
            ),
        }
    }
}

fn sync_sibling_credentials(pointer: &str, base: &Value, edits: &mut Edits, plan: &mut Plan) {
    let Some((parent, _)) = pointer.rsplit_once('/') else {
        return;
    };
    let Some(base_obj) = base.pointer(parent).and_then(Value::as_object) else {
        return;
    };
    for &field in CREDENTIAL_FIELDS {
        let Some(bv) = base_obj.get(field) else {
            continue;
        };
        if secret_form(bv) == SecretForm::Redacted {
            continue;
        }
        let p = format!("{parent}/{field}");
        // Equal already (on disk, or synced by an earlier value)?
        if edits
            .planned(REL)
            .and_then(|v| v.pointer(&p).cloned())
            .as_ref()
            == Some(bv)
        {
            continue;
        }
        let what = format!(
            "{}: the credential follows its LLM settings (from base_state.json)",
            display_pointer(&p)
        );
        if let Err(why) = edits.patch(REL, &p, Op::Set(bv.clone()), "meta-divergence", what) {
            plan.leave(
                "meta-divergence",
                REL,
                format!("{}: {why}", display_pointer(&p)),
            );
        }
    }
}
