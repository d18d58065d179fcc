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

use super::{patch, Edits, Left, Plan, RepairOptions};
use crate::checks::meta_divergence::{divergences, short};
use crate::checks::Ctx;
use crate::secrets::{credential_slots, secret_form, SecretForm, CREDENTIAL_FIELDS};
use crate::store::Doc;
use crate::version::Version;

const REL: &str = "meta.json";

fn left(plan: &mut Plan, check: &'static str, why: String) {
    plan.left.push(Left {
        check,
        file: REL.into(),
        why,
    });
}

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

pub fn plan(ctx: &Ctx, opts: &RepairOptions, edits: &mut Edits, plan: &mut Plan) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let base = match &ctx.conv.base_state {
        Doc::Present(v) => v,
        _ => {
            let has_work = meta.get("agent").is_some_and(|a| !a.is_null());
            if has_work {
                left(
                    plan,
                    "meta-duplicate",
                    "refused: base_state.json is missing or unreadable, so meta.json's agent may be the only copy".into(),
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
        left(
            plan,
            "meta-divergence",
            "refused: base_state.json has no `agent.kind`; it cannot be trusted as the source of truth".into(),
        );
        return;
    }
    let path = ctx.conv.dir.join(REL);
    let Ok(original) = std::fs::read(&path) else {
        return;
    };
    let mut text = String::from_utf8_lossy(&original).into_owned();
    let slim = opts
        .server_version
        .is_some_and(|v| v >= Version::new(1, 43, 0));
    let has_agent = meta.get("agent").is_some_and(|a| !a.is_null());

    // Secrets only meta.json still holds are kept, and said.
    let kept = only_copies(meta, base);
    for k in &kept {
        plan.notes.push(format!(
            "meta.json holds the only real copy of {k} (base_state.json has only the redacted placeholder); it is kept"
        ));
    }

    if slim && has_agent && (opts.selected)("meta-duplicate") {
        if kept.is_empty() {
            match patch::remove(&text, "/agent") {
                Ok(t) => {
                    text = t;
                    edits.record(
                        REL,
                        &original,
                        text.clone(),
                        "meta-duplicate",
                        "drop meta.json's copy of the agent (servers from 1.43 read it from base_state.json)".into(),
                    );
                }
                Err(e) => left(
                    plan,
                    "meta-duplicate",
                    format!("meta.json cannot be patched safely: {e}"),
                ),
            }
        } else {
            left(
                plan,
                "meta-duplicate",
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
            left(
                plan,
                "meta-divergence",
                "the secret names differ between meta.json `secrets` and base_state.json \
                 `secret_registry`; their values cannot be copied safely, so this needs a human"
                    .into(),
            );
            continue;
        }
        let new = d.base.clone().unwrap_or(Value::Null);
        match patch::set(&text, &d.pointer, &new) {
            Ok(t) => {
                text = t;
                edits.record(
                    REL,
                    &original,
                    text.clone(),
                    "meta-divergence",
                    format!(
                        "{}: {} → {} (from base_state.json)",
                        display_pointer(&d.pointer),
                        short(&d.meta),
                        short(&d.base)
                    ),
                );
                // A credential next to a synced value follows it, when
                // base_state.json holds a real one (an LLM switch changes both).
                sync_sibling_credentials(&d.pointer, meta, base, &mut text, &original, edits, plan);
            }
            Err(e) => left(
                plan,
                "meta-divergence",
                format!(
                    "{}: cannot be patched safely: {e}",
                    display_pointer(&d.pointer)
                ),
            ),
        }
    }
}

fn sync_sibling_credentials(
    pointer: &str,
    meta: &Value,
    base: &Value,
    text: &mut String,
    original: &[u8],
    edits: &mut Edits,
    plan: &mut Plan,
) {
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
        let p = format!("{parent}/{field}");
        let mv = meta.pointer(&p);
        if secret_form(bv) == SecretForm::Redacted || mv == Some(bv) {
            continue;
        }
        // Already synced by an earlier divergence in the same object?
        let current: Option<Value> = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.pointer(&p).cloned());
        if current.as_ref() == Some(bv) {
            continue;
        }
        match patch::set(text, &p, bv) {
            Ok(t) => {
                *text = t;
                edits.record(
                    REL,
                    original,
                    text.clone(),
                    "meta-divergence",
                    format!(
                        "{}: the credential follows its LLM settings (from base_state.json)",
                        display_pointer(&p)
                    ),
                );
            }
            Err(e) => left(
                plan,
                "meta-divergence",
                format!("{}: {e}", display_pointer(&p)),
            ),
        }
    }
}
