//! `id-mismatch`: base_state.json belongs to a different conversation id.

use super::{Applicability, Check, Ctx, Finding, Repair, Severity};
use crate::view::LoadError;

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "id-mismatch";

pub struct IdMismatch;

impl Check for IdMismatch {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "base_state.json's id differs from the folder's or meta.json's conversation id"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  base_state.json's `id` (dashed UUID) differs, once dashes are removed, from
  meta.json's `id` (or, without meta.json, from the 32-hex folder name).

Why it matters
  The SDK refuses to resume (\"Conversation ID mismatch\"). A folder copied or
  renamed by hand is the usual cause; the agent-server keys its catalog by
  meta.json's id, so a renamed folder also splits into two.

Repair
  When meta.json's id and the folder's name agree and only base_state.json
  says otherwise (a copied or restored state), `repair` sets
  base_state.json's `id` to that id (safe: two records against one). Without
  meta.json the folder's name is the only witness, and a folder renamed by
  hand looks the same: `repair --unsafe-fixes` sets the id then. Otherwise
  which id is right depends on how the folder was made: a human decides."
    }

    fn repair(&self) -> Repair {
        Repair {
            applicability: Applicability::Safe,
            what: "set base_state.json's `id` to the conversation's id (dashed), when meta.json's id and the folder's name agree on it",
            guards: "meta.json's id equals the folder's name (safe); no meta.json: the folder's name alone (unsafe: a renamed folder looks the same); they differ: left to a human",
            planner: Some(plan),
            phase: crate::edit::Phase::State,
        }
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        if let Some(LoadError::IdMismatch { expected, found }) = ctx.load_error() {
            out.push(Finding::new(
                self.id(),
                Severity::Error,
                "base_state.json",
                format!(
                    "base_state.json is for conversation {}, but {} is {}; the SDK refuses to resume it",
                    ctx.quote(found),
                    id_source(ctx),
                    ctx.quote(expected)
                ),
            ));
        }
    }
}

/// Where the id the SDK is asked to resume comes from: the agent-server
/// passes meta.json's id; without meta.json, the folder name is the id.
pub fn id_source(ctx: &Ctx) -> &'static str {
    let meta_id = ctx
        .conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .is_some_and(|v| v.is_string());
    if meta_id {
        "meta.json's id"
    } else {
        "the folder's name"
    }
}

/// Set base_state.json's id to the one meta.json and the folder agree on.
fn plan(ctx: &Ctx, p: &mut crate::edit::Proposals) {
    use crate::edit::Safety;
    const REL: &str = "base_state.json";
    let Some(LoadError::IdMismatch { expected, .. }) = ctx.load_error() else {
        return;
    };
    let hex = |s: &str| s.replace('-', "").to_ascii_lowercase();
    let folder = hex(&ctx.conv.folder);
    let meta_id = ctx
        .conv
        .meta
        .value()
        .and_then(|m| m.get("id"))
        .and_then(serde_json::Value::as_str)
        .map(hex);
    let want = hex(expected);
    if want.len() != 32 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
        p.leave(REL, "the expected id is not a UUID");
        return;
    }
    let safety = match meta_id.as_deref() {
        Some(m) if m == folder && m == want => Safety::Safe,
        Some(_) => {
            p.leave(
                REL,
                "meta.json's id and the folder's name differ: which id is right depends on how the folder was made",
            );
            return;
        }
        None if folder == want => Safety::Unsafe,
        None => return,
    };
    let dashed = format!(
        "{}-{}-{}-{}-{}",
        &want[..8],
        &want[8..12],
        &want[12..16],
        &want[16..20],
        &want[20..]
    );
    p.set(
        REL,
        "/id",
        serde_json::Value::from(dashed.clone()),
        safety,
        format!("set base_state.json's id to {dashed}, the conversation's id"),
    );
}
