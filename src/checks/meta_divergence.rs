//! `meta-divergence`: a field duplicated in meta.json and base_state.json
//! holds different values in the two files.

use serde_json::Value;

use super::{meta_repair, Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::edit::{Proposals, Safety};
use crate::secrets::CREDENTIAL_FIELDS;
use std::collections::HashSet;

use crate::secrets::{credential_slots, escape_pointer, secret_form, Redactor, SecretForm};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "meta-divergence";

pub struct MetaDivergence;

/// Fields both files carry: (meta.json key, base_state.json key).
/// From the models: `StoredConversation` (meta) ∩ `ConversationState`, checked
/// against 1.58.2 (`id` aside; `agent` only before 1.43).
pub const DUPLICATED: &[(&str, &str)] = &[
    ("agent", "agent"),
    ("workspace", "workspace"),
    ("max_iterations", "max_iterations"),
    ("stuck_detection", "stuck_detection"),
    ("confirmation_policy", "confirmation_policy"),
    ("security_analyzer", "security_analyzer"),
    ("hook_config", "hook_config"),
    ("tags", "tags"),
];

/// One differing leaf: JSON pointer below the field, meta value, base value.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    pub field: &'static str,
    pub pointer: String,
    pub meta: Option<Value>,
    pub base: Option<Value>,
}

fn absent(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

fn diff(
    field: &'static str,
    path: &mut String,
    m: Option<&Value>,
    b: Option<&Value>,
    slots: &HashSet<String>,
    out: &mut Vec<Divergence>,
) {
    // meta.json is written without exclude_none, base_state.json with it:
    // a null and a missing key are the same value.
    if absent(m) && absent(b) {
        return;
    }
    // A credential is compared by its form, never by ciphertext: two Fernet
    // tokens of one secret differ, and a redacted copy next to a real one is
    // a lost secret (the repair keeps the real one), not configuration drift.
    // Only two different plaintext values diverge.
    if slots.contains(path.as_str()) {
        let plain = |v: Option<&Value>| v.is_some_and(|v| secret_form(v) == SecretForm::Plaintext);
        if plain(m) && plain(b) && m != b {
            out.push(Divergence {
                field,
                pointer: path.clone(),
                meta: m.cloned(),
                base: b.cloned(),
            });
        }
        return;
    }
    match (m, b) {
        (Some(Value::Object(mo)), Some(Value::Object(bo))) => {
            let mut keys: Vec<&String> = mo.keys().collect();
            keys.extend(bo.keys().filter(|k| !mo.contains_key(*k)));
            for k in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                diff(field, path, mo.get(k), bo.get(k), slots, out);
                path.truncate(len);
            }
        }
        (Some(mv), Some(bv)) if numbers_equal(mv, bv) || mv == bv => {}
        _ => out.push(Divergence {
            field,
            pointer: path.clone(),
            meta: m.cloned(),
            base: b.cloned(),
        }),
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => a.is_number() && b.is_number() && x == y,
        _ => false,
    }
}

/// Every divergence between the duplicated fields, plus secret names.
pub fn divergences(meta: &Value, base: &Value) -> Vec<Divergence> {
    let mut out = Vec::new();
    let slots: HashSet<String> = credential_slots(meta)
        .into_iter()
        .chain(credential_slots(base))
        .map(|(p, _)| p)
        .collect();
    for &(mk, bk) in DUPLICATED {
        if mk == "agent" && absent(meta.get("agent")) {
            continue; // slim meta.json: nothing duplicated
        }
        let mut path = format!("/{mk}");
        diff(mk, &mut path, meta.get(mk), base.get(bk), &slots, &mut out);
    }
    // meta.json `secrets` ↔ base_state.json `secret_registry.secret_sources`:
    // compare which names exist (values are encrypted or redacted).
    let names = |v: Option<&Value>| -> Vec<String> {
        let mut n: Vec<String> = v
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        n.sort();
        n
    };
    let m = names(meta.get("secrets"));
    let b = names(base.pointer("/secret_registry/secret_sources"));
    if m != b {
        out.push(Divergence {
            field: "secrets",
            pointer: "/secrets".into(),
            meta: Some(Value::from(m)),
            base: Some(Value::from(b)),
        });
    }
    out
}

/// A short, one-line rendering of a value for a message: every secret the
/// redactor knows (and any found inside the value) is redacted *before* it
/// is clipped, so a clip never leaves part of one.
pub fn short_with(v: &Option<Value>, redactor: &Redactor) -> String {
    let s = match v {
        None | Some(Value::Null) => return "(absent)".to_string(),
        Some(v) => serde_json::to_string(v).unwrap_or_default(),
    };
    let mut own = redactor.clone();
    if let Some(v) = v {
        own.learn(v);
    }
    crate::text::clip(&own.redact(&s), 59)
}

impl Check for MetaDivergence {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "meta.json and base_state.json disagree on a field they both store"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A field stored in both meta.json (the agent-server's record) and
  base_state.json (the SDK's state) with different values: `agent` (before
  1.43), `workspace`, `max_iterations`, `stuck_detection`,
  `confirmation_policy`, `security_analyzer`, `hook_config`, `tags`, and the
  names of `secrets`. A null in meta.json equals a missing key in
  base_state.json. Credentials are never compared by value.

Why it matters
  Changes made while the conversation runs (an LLM switch, a confirmation
  policy change) reach base_state.json only. At the next use the server takes
  meta.json's copy: for the agent on servers before 1.43 (#4032, the reverted
  LLM timeout), and for the other fields on every server up to 1.58 (#4810).
  The stale copy silently wins.

Repair
  `repair` rewrites the diverging fields of meta.json from base_state.json
  (the source of truth), never replacing a real secret with a redacted one;
  with `--server-version` 1.43 or newer it drops meta.json's `agent` instead."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "rewrite each diverging value of meta.json from base_state.json, the source of truth; a credential inside an LLM object whose settings are synced follows them when base_state.json holds a real one",
            guards: "base_state.json parses and has `agent.kind`; secret *names* that differ are left to a human",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let (Some(meta), Some(base)) = (ctx.conv.meta.value(), ctx.conv.base_state.value()) else {
            return;
        };
        let divs = divergences(meta, base);
        let trusted = base
            .pointer("/agent/kind")
            .and_then(Value::as_str)
            .is_some();
        for d in &divs {
            // From 1.43 the server reads the agent from base_state.json only:
            // a stale copy in meta.json is harmless there (meta-duplicate).
            let (sev, wins) = if d.field == "agent" && !ctx.version.meta_owns_agent() {
                (
                    Severity::Info,
                    "servers from 1.43 use base_state.json's agent; servers before 1.43 would take meta.json's",
                )
            } else {
                (
                    Severity::Warning,
                    "at the next use the server takes meta.json's stale copy",
                )
            };
            out.push(
                Finding::new(
                    self.id(),
                    sev,
                    "meta.json",
                    format!(
                        "{}: meta.json has {}, base_state.json has {}; {wins}",
                        ctx.quote(&d.pointer.trim_start_matches('/').replace('/', ".")),
                        short_with(&d.meta, &ctx.redactor),
                        short_with(&d.base, &ctx.redactor),
                    ),
                )
                .fixable(trusted && d.field != "secrets"),
            );
        }
    }
}

/// `meta-divergence`'s planner: rewrite meta.json's diverging duplicated
/// values from base_state.json.
fn plan(ctx: &Ctx, p: &mut Proposals) {
    let Some(meta) = ctx.conv.meta.value() else {
        return;
    };
    let Some(base) = meta_repair::source(ctx, p, meta) else {
        return;
    };
    // a state the SDK refuses is not a source of truth (repaired first)
    if matches!(
        ctx.load_error(),
        Some(crate::view::LoadError::InvalidState(_))
    ) {
        p.leave(
            meta_repair::REL,
            "base_state.json does not validate (see `invalid-state`): it is not copied until it does",
        );
        return;
    }
    let slim = meta_repair::slim(ctx);
    for d in divergences(meta, base) {
        // A server of 1.43 or newer never reads meta.json's agent: leave it
        // (`meta-duplicate` drops it when that is safe) rather than rewrite
        // it.
        if slim && d.field == "agent" {
            continue;
        }
        if d.field == "secrets" {
            p.leave(
                meta_repair::REL,
                "the secret names differ between meta.json `secrets` and base_state.json \
                 `secret_registry`; their values cannot be copied safely, so this needs a human",
            );
            continue;
        }
        // base_state.json has no value there: the SDK's default applies,
        // which this tool does not know to copy
        if d.base.is_none() {
            p.leave(
                meta_repair::REL,
                format!(
                    "{}: base_state.json has no value (the SDK's default applies); meta.json's is left as it is",
                    meta_repair::display_pointer(&d.pointer)
                ),
            );
            continue;
        }
        let what = format!(
            "{}: {} → {} (from base_state.json)",
            meta_repair::display_pointer(&d.pointer),
            short_with(&d.meta, &ctx.redactor),
            short_with(&d.base, &ctx.redactor)
        );
        let new = d.base.clone().unwrap_or(Value::Null);
        p.set(meta_repair::REL, &d.pointer, new, Safety::Safe, what);
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
                c.file == meta_repair::REL
                    && matches!(&c.action, crate::edit::Action::Patch { pointer, .. } if *pointer == ptr)
            })
        {
            continue;
        }
        let what = format!(
            "{}: the credential follows its LLM settings (from base_state.json)",
            meta_repair::display_pointer(&ptr)
        );
        p.set(meta_repair::REL, &ptr, bv.clone(), Safety::Safe, what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_equals_absent_and_ciphertexts_are_not_compared() {
        let meta = json!({"agent": {"llm": {"model": "a", "timeout": 600, "api_key": "gAAAAAone", "base_url": null},
                                    "mcp_config": {"s": {"env": {"T": "gAAAAAthree"}}}},
                          "max_iterations": 500, "secrets": {}});
        let base = json!({"agent": {"llm": {"model": "a", "timeout": 600.0, "api_key": "gAAAAAtwo"},
                                    "mcp_config": {"s": {"env": {"T": "**********"}}}},
                          "max_iterations": 500});
        assert!(divergences(&meta, &base).is_empty());
    }

    #[test]
    fn two_different_plaintext_secrets_diverge() {
        let meta = json!({"agent": {"llm": {"api_key": "sk-old"}}});
        let base = json!({"agent": {"llm": {"api_key": "sk-new"}}});
        let d = divergences(&meta, &base);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].pointer, "/agent/llm/api_key");
    }

    #[test]
    fn keys_are_escaped_in_pointers() {
        let meta = json!({"tags": {"a/b": "1"}});
        let base = json!({"tags": {"a/b": "2"}});
        assert_eq!(divergences(&meta, &base)[0].pointer, "/tags/a~1b");
    }

    #[test]
    fn reports_each_differing_leaf() {
        let meta = json!({"agent": {"llm": {"model": "a", "timeout": 600}}, "tags": {"t": "1"}});
        let base = json!({"agent": {"llm": {"model": "b", "timeout": 30}}, "tags": {"t": "1"}});
        let d = divergences(&meta, &base);
        let ptrs: Vec<&str> = d.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(ptrs, ["/agent/llm/model", "/agent/llm/timeout"]);
    }

    #[test]
    fn slim_meta_is_not_a_divergence() {
        let meta = json!({"workspace": {"working_dir": "/w"}});
        let base = json!({"agent": {"llm": {}}, "workspace": {"working_dir": "/w"}});
        assert!(divergences(&meta, &base).is_empty());
    }
}
