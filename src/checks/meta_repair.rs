//! What the repairs of `meta-divergence` and `meta-duplicate` share:
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

use super::Ctx;
use crate::edit::Proposals;
use crate::secrets::{credential_slots, secret_form, SecretForm};
use crate::store::Doc;

pub(super) const REL: &str = "meta.json";

pub(super) fn display_pointer(p: &str) -> String {
    p.trim_start_matches('/').replace('/', ".")
}

/// Credential slots of meta.json's `agent` whose only real copy is meta.json.
pub(super) fn only_copies(meta: &Value, base: &Value) -> Vec<String> {
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
pub(super) fn source<'a>(ctx: &'a Ctx, p: &mut Proposals, meta: &Value) -> Option<&'a Value> {
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
pub(super) fn slim(ctx: &Ctx) -> bool {
    ctx.version_given && !ctx.version.meta_owns_agent()
}
