//! `plaintext-secret`: a credential stored in the clear.

use super::{plural, Check, Ctx, Finding, Repair, Severity};
use crate::secrets::{credential_slots, secret_form, SecretForm};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "plaintext-secret";

pub struct PlaintextSecret;

impl Check for PlaintextSecret {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "A credential is stored in the clear (not redacted, not encrypted)"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  A value under a credential key (`api_key`, `aws_access_key_id`,
  `aws_secret_access_key`, `aws_session_token`, `llm_api_key`,
  `secret_sources.<NAME>.value`, meta.json `secrets.<NAME>.value`, MCP
  `env`/`headers`, an LLM's `extra_headers`, which the SDK persists verbatim,
  so a bearer token there is never redacted) in base_state.json or meta.json that is neither the SDK's
  redaction `**********` nor a Fernet token (`gAAAAA...`).

Why it matters
  Anyone who can read the folder, or a trajectory download made before
  1.37.1, gets the key. Run the agent-server with OH_SECRET_KEY so secrets are
  encrypted at rest.

Output
  convo-doctor never prints a secret: only the JSON path, and at most a short
  fingerprint so two copies can be compared.

Repair
  None automatic (re-encrypting needs the server's key)."
    }

    fn repair(&self) -> Repair {
        Repair::manual("re-encrypting needs the server's key")
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        for (file, doc) in [
            ("base_state.json", &ctx.conv.base_state),
            ("meta.json", &ctx.conv.meta),
        ] {
            let Some(v) = doc.value() else { continue };
            let paths: Vec<String> = credential_slots(v)
                .into_iter()
                .filter(|(_, val)| secret_form(val) == SecretForm::Plaintext)
                .map(|(p, _)| ctx.quote(&p))
                .collect();
            if paths.is_empty() {
                continue;
            }
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                file,
                format!(
                    "{} stored in plain text at {}",
                    plural(paths.len(), "credential is", "credentials are"),
                    paths.join(", ")
                ),
            ));
        }
    }
}
