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

use super::meta_divergence::{divergences, short_with};
use super::Ctx;
use crate::edit::{Proposals, Safety};
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

/// base_state.json, when it can be trusted as the source of truth; else
/// what is left and why.
fn source<'a>(ctx: &'a Ctx, p: &mut Proposals, meta: &Value) -> Option<&'a Value> {
    let has_agent = meta.get("agent").is_some_and(|a| !a.is_null());
    let base = match &ctx.conv.base_state {
        Doc::Present(v) => v,
        _ => {
            if has_agent {
                p.leave(
                    REL,
                    "refused: base_state.json is missing or unreadable, so meta.json's agent may be the only copy",
                );
            }
            return None;
        }
    };
    if base
        .pointer("/agent/kind")
        .and_then(Value::as_str)
        .is_none()
    {
        p.leave(
            REL,
            "refused: base_state.json has no `agent.kind`; it cannot be trusted as the source of truth",
        );
        return None;
    }
    // Secrets only meta.json still holds are kept, and said.
    for k in only_copies(meta, base) {
        p.note(format!(
            "meta.json holds the only real copy of {k} (base_state.json has only the redacted placeholder); it is kept"
        ));
    }
    Some(base)
}

/// Slim mode: the declared server (1.43 or newer) never reads meta.json's
/// agent, so it is dropped rather than synced.
fn slim(ctx: &Ctx) -> bool {
    ctx.version_given && ctx.version >= Version::new(1, 43, 0)
}

/// `meta-duplicate`'s planner: drop meta.json's agent when the declared
/// server no longer reads it and no secret has its only copy there.
pub fn plan_duplicate(ctx: &Ctx, p: &mut Proposals) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let has_agent = meta.get("agent").is_some_and(|a| !a.is_null());
    let Some(base) = source(ctx, p, meta) else {
        return;
    };
    if !has_agent {
        return;
    }
    if !slim(ctx) {
        p.note(
            "meta.json's copy of the agent is kept and synced (servers before 1.43 require it); \
             with `--server-version 1.43.0` or newer, repair drops it instead"
                .into(),
        );
        return;
    }
    let kept = only_copies(meta, base);
    if kept.is_empty() {
        let what =
            "drop meta.json's copy of the agent (servers from 1.43 read it from base_state.json)";
        p.drop_key(REL, "/agent", Safety::Safe, what.into());
    } else {
        p.leave(
            REL,
            format!(
                "not slimmed: meta.json's agent holds the only real copy of {}",
                kept.join(", ")
            ),
        );
    }
}

/// `meta-divergence`'s planner: rewrite meta.json's diverging duplicated
/// values from base_state.json.
pub fn plan_divergence(ctx: &Ctx, p: &mut Proposals) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let Some(base) = source(ctx, p, meta) else {
        return;
    };
    // a state the SDK refuses is not a source of truth (repaired first)
    if matches!(
        ctx.load_error(),
        Some(crate::view::LoadError::InvalidState(_))
    ) {
        p.leave(
            REL,
            "base_state.json does not validate (see `invalid-state`): it is not copied until it does",
        );
        return;
    }
    let slim = slim(ctx) && p.selected(super::meta_duplicate::ID);
    for d in divergences(meta, base) {
        // A server of 1.43 or newer never reads meta.json's agent: leave it
        // (dropped by `meta-duplicate` when that is safe) rather than
        // rewrite it.
        if slim && d.field == "agent" {
            continue;
        }
        if d.field == "secrets" {
            p.leave(
                REL,
                "the secret names differ between meta.json `secrets` and base_state.json \
                 `secret_registry`; their values cannot be copied safely, so this needs a human",
            );
            continue;
        }
        // base_state.json has no value there: the SDK's default applies,
        // which this tool does not know to copy
        if d.base.is_none() {
            p.leave(
                REL,
                format!(
                    "{}: base_state.json has no value (the SDK's default applies); meta.json's is left as it is",
                    display_pointer(&d.pointer)
                ),
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
        p.set(REL, &d.pointer, new, Safety::Safe, what);
        // A credential next to a synced value follows it, when
        // base_state.json holds a real one (an LLM switch changes both).
        sync_sibling_credentials(&d.pointer, meta, base, p);
    }
}

fn sync_sibling_credentials(pointer: &str, meta: &Value, base: &Value, p: &mut Proposals) {
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
        let ptr = format!("{parent}/{field}");
        // equal already, or set by an earlier value of this pass
        if meta.pointer(&ptr) == Some(bv)
            || p.changes.iter().any(|c| {
                c.file == REL
                    && matches!(&c.action, crate::edit::Action::Patch { pointer, .. } if *pointer == ptr)
            })
        {
            continue;
        }
        let what = format!(
            "{}: the credential follows its LLM settings (from base_state.json)",
            display_pointer(&ptr)
        );
        p.set(REL, &ptr, bv.clone(), Safety::Safe, what);
    }
}
