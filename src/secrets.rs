//! Secrets: where they sit in the state files, and the one redaction layer
//! every output passes through.
//!
//! Rules (from the SDK: `utils/redact.py`, `llm/llm.py`, and the agent-server's
//! trajectory redaction `_secret_redaction.py`):
//! - any string starting `gAAAAA` is a Fernet token (recoverable ciphertext);
//! - the LLM credential fields `api_key`, `aws_access_key_id`,
//!   `aws_secret_access_key`, `aws_session_token` and `llm_api_key`;
//! - `secret_sources.<NAME>.value` (base_state.json) and `secrets.<NAME>.value`
//!   (meta.json); values under `env` / `environment` / `headers` maps, and
//!   under an LLM's `extra_headers` (persisted verbatim by the SDK);
//! - any key the SDK's `is_secret_key` flags (AUTHORIZATION, COOKIE,
//!   CREDENTIAL, KEY, PASSWORD, SECRET, SESSION, TOKEN, case-insensitive).

use std::borrow::Cow;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub const FERNET_PREFIX: &str = "gAAAAA";
/// `REDACTED_SECRET_VALUE`: what the SDK writes when it has no cipher.
pub const SDK_REDACTED: &str = "**********";

/// `LLM_SECRET_FIELDS` plus the settings-level `llm_api_key` alias.
pub const CREDENTIAL_FIELDS: &[&str] = &[
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "llm_api_key",
];

const SECRET_KEY_PATTERNS: &[&str] = &[
    "AUTHORIZATION",
    "COOKIE",
    "CREDENTIAL",
    "KEY",
    "PASSWORD",
    "SECRET",
    "SESSION",
    "TOKEN",
];
const REDACT_ALL_KEYS: &[&str] = &["environment", "env", "headers"];

/// The SDK's `is_secret_key`.
pub fn is_secret_key(key: &str) -> bool {
    let up = key.to_ascii_uppercase();
    SECRET_KEY_PATTERNS.iter().any(|p| up.contains(p))
}

/// A header or variable name that carries a credential: the SDK's patterns
/// without SESSION (`x-litellm-session-id` holds the conversation id).
pub fn is_credential_name(key: &str) -> bool {
    let up = key.to_ascii_uppercase();
    SECRET_KEY_PATTERNS
        .iter()
        .filter(|p| **p != "SESSION")
        .any(|p| up.contains(p))
}

pub fn is_fernet(s: &str) -> bool {
    s.starts_with(FERNET_PREFIX)
}

/// How a secret-bearing value is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretForm {
    /// `""`, `null` or the SDK's `**********`: nothing to protect (or lost).
    Redacted,
    Fernet,
    Plaintext,
}

pub fn secret_form(v: &Value) -> SecretForm {
    match v {
        Value::String(s) if s.is_empty() || s == SDK_REDACTED => SecretForm::Redacted,
        Value::String(s) if is_fernet(s) => SecretForm::Fernet,
        Value::String(_) => SecretForm::Plaintext,
        _ => SecretForm::Redacted,
    }
}

/// JSON pointer (RFC 6901) of every value that holds a credential, with the
/// value: the places `plaintext-secret` inspects.
pub fn credential_slots(root: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    walk_slots(root, &mut String::new(), None, &mut out);
    out
}

/// Escape a key for a JSON pointer (RFC 6901).
pub fn escape_pointer(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

fn walk_slots<'v>(
    v: &'v Value,
    path: &mut String,
    parent_key: Option<&str>,
    out: &mut Vec<(String, &'v Value)>,
) {
    let Value::Object(m) = v else {
        if let Value::Array(a) = v {
            for (i, item) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                walk_slots(item, path, None, out);
                path.truncate(len);
            }
        }
        return;
    };
    for (k, child) in m {
        let len = path.len();
        path.push('/');
        path.push_str(&escape_pointer(k));
        let slot = CREDENTIAL_FIELDS.contains(&k.as_str())
            // secret_sources.<NAME>.value / secrets.<NAME>.value
            || (k == "value" && path_has_secret_map(path))
            || parent_key.is_some_and(|p| REDACT_ALL_KEYS.contains(&p))
            || (parent_key.is_some_and(|p| p.ends_with("_headers")) && is_credential_name(k))
            || (parent_key == Some("secrets") && child.is_string());
        if slot && child.is_string() {
            out.push((path.clone(), child));
        } else {
            walk_slots(child, path, Some(k), out);
        }
        path.truncate(len);
    }
}

fn path_has_secret_map(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 3 && matches!(parts[parts.len() - 3], "secret_sources" | "secrets")
}

/// A short, non-reversible fingerprint so two copies can be compared.
pub fn fingerprint(secret: &str) -> String {
    let d = Sha256::digest(secret.as_bytes());
    d[..3].iter().map(|b| format!("{b:02x}")).collect()
}

pub fn placeholder(secret: &str) -> String {
    format!("[REDACTED:{}]", fingerprint(secret))
}

/// The redaction layer. It knows every secret value read from the
/// conversations being reported on, and replaces each (raw or JSON-escaped)
/// and every Fernet token with a placeholder, in any text.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Remember every secret-looking string in a JSON document: each value of
    /// a credential slot (what `plaintext-secret` inspects), each string under
    /// a key the SDK's `is_secret_key` flags, and each Fernet token.
    pub fn learn(&mut self, v: &Value) {
        for (_, slot) in credential_slots(v) {
            if let Value::String(s) = slot {
                self.remember(s);
            }
        }
        self.learn_walk(v, None);
        self.secrets
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.secrets.dedup();
    }

    /// Remember one secret, raw and as JSON spells it inside a string.
    /// Values shorter than 6 characters are not remembered (replacing every
    /// `true` or `abc` in a report would garble it, and protects little).
    fn remember(&mut self, s: &str) {
        if s.len() < 6 || s == SDK_REDACTED {
            return;
        }
        self.secrets.push(s.to_string());
        if let Ok(esc) = serde_json::to_string(s) {
            let inner = &esc[1..esc.len() - 1];
            if inner != s {
                self.secrets.push(inner.to_string());
            }
        }
    }

    fn learn_walk(&mut self, v: &Value, key: Option<&str>) {
        match v {
            Value::String(s) => {
                let by_key = key.is_some_and(|k| {
                    k != "key"
                        && k != "kind"
                        && (is_secret_key(k) || CREDENTIAL_FIELDS.contains(&k))
                });
                if by_key || is_fernet(s) {
                    self.remember(s);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.learn_walk(x, key)),
            Value::Object(m) => {
                for (k, x) in m {
                    let under_all = key.is_some_and(|p| REDACT_ALL_KEYS.contains(&p));
                    let eff = if under_all { "secret" } else { k.as_str() };
                    self.learn_walk(x, Some(eff));
                }
            }
            _ => {}
        }
    }

    /// Text with every known secret and every Fernet token replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), &placeholder(s)));
            }
        }
        if out.contains(FERNET_PREFIX) {
            out = Cow::Owned(redact_fernet(&out));
        }
        out
    }
}

/// Replace every `gAAAAA…` token (url-safe base64 run) in free text.
pub fn redact_fernet(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(FERNET_PREFIX) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '='))
            .unwrap_or(tail.len());
        out.push_str(&placeholder(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_every_credential_slot() {
        let v = json!({
            "agent": {"llm": {"api_key": "sk-1", "model": "m", "aws_secret_access_key": null},
                      "mcp_config": {"mcpServers": {"x": {"env": {"GITHUB_TOKEN": "ghp"}}}}},
            "secret_registry": {"secret_sources": {"GH": {"kind": "StaticSecret", "value": "v1"}}},
            "secrets": {"X": {"value": "v2", "description": null}}
        });
        let slots: Vec<String> = credential_slots(&v).into_iter().map(|(p, _)| p).collect();
        assert!(slots.contains(&"/agent/llm/api_key".to_string()));
        assert!(slots.contains(&"/agent/mcp_config/mcpServers/x/env/GITHUB_TOKEN".to_string()));
        assert!(slots.contains(&"/secret_registry/secret_sources/GH/value".to_string()));
        assert!(slots.contains(&"/secrets/X/value".to_string()));
        let v = json!({"llm": {"extra_headers": {"Authorization": "Bearer x", "x-litellm-session-id": "c0ffee"}}});
        let slots: Vec<String> = credential_slots(&v).into_iter().map(|(p, _)| p).collect();
        assert_eq!(slots, ["/llm/extra_headers/Authorization"]);
        assert!(!slots.iter().any(|p| p.ends_with("model")));
    }

    #[test]
    fn forms() {
        assert_eq!(secret_form(&json!("**********")), SecretForm::Redacted);
        assert_eq!(secret_form(&json!("gAAAAABk")), SecretForm::Fernet);
        assert_eq!(secret_form(&json!("sk-live")), SecretForm::Plaintext);
        assert_eq!(secret_form(&json!(null)), SecretForm::Redacted);
    }

    #[test]
    fn redacts_learned_values_and_any_fernet_token() {
        let mut r = Redactor::default();
        r.learn(&json!({"llm": {"api_key": "sk-UNIQUE-123", "model": "gpt"}}));
        let t = r.redact("key sk-UNIQUE-123 model gpt token gAAAAABxyz-_= end");
        assert!(!t.contains("sk-UNIQUE-123"));
        assert!(!t.contains("gAAAAABxyz"));
        assert!(t.contains("model gpt"));
        assert!(t.contains("[REDACTED:"));
        assert_eq!(placeholder("a"), placeholder("a"));
        assert_ne!(placeholder("a"), placeholder("b"));
    }

    #[test]
    fn state_update_keys_are_not_mistaken_for_secrets() {
        let mut r = Redactor::default();
        r.learn(&json!({"key": "execution_status", "kind": "ConversationStateUpdateEvent"}));
        assert_eq!(r.redact("execution_status"), "execution_status");
    }
}
