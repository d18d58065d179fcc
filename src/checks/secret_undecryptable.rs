//! `secret-undecryptable` (warning): an encrypted value in meta.json or
//! base_state.json that no key the operator gave can decrypt; "not checked"
//! (info) when no key is given. Values are never printed, only their places.

use std::sync::OnceLock;

use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Check, Ctx, Finding, Repair, Severity};

/// The check's id: stable, kebab-case; scripts depend on it.
pub const ID: &str = "secret-undecryptable";

pub struct SecretUndecryptable;

/// `FERNET_TOKEN_PREFIX` of `openhands.sdk.utils.cipher`.
const PREFIX: &str = "gAAAAA";

/// The keys the server would have, from the same environment variables:
/// `OH_SECRET_KEY` (blank = unset) and `OH_PREVIOUS_SECRET_KEYS` (a JSON
/// list, or `OH_PREVIOUS_SECRET_KEYS_0`, `_1`, …). Each is turned into its
/// Fernet key as `Cipher._derive_fernet` does: `sha256(key)`, whose first
/// half signs and second half encrypts. Only the derived keys are kept.
pub struct Keys {
    pub current: Option<[u8; 32]>,
    pub previous: Vec<[u8; 32]>,
}

fn derive(k: &str) -> [u8; 32] {
    Sha256::digest(k.as_bytes()).into()
}

impl Keys {
    pub fn from_vars(current: Option<String>, previous: Vec<String>) -> Keys {
        let current = current.filter(|k| !k.trim().is_empty());
        let mut prev: Vec<String> = Vec::new();
        // `Cipher.__init__`: blank entries and repeats of the current key dropped
        for k in previous {
            if !k.trim().is_empty() && Some(&k) != current.as_ref() && !prev.contains(&k) {
                prev.push(k);
            }
        }
        Keys {
            current: current.as_deref().map(derive),
            previous: prev.iter().map(|k| derive(k)).collect(),
        }
    }

    pub fn from_env() -> Keys {
        let current = std::env::var("OH_SECRET_KEY").ok();
        let mut previous = Vec::new();
        match std::env::var("OH_PREVIOUS_SECRET_KEYS") {
            Ok(s) => match serde_json::from_str::<Vec<String>>(&s) {
                Ok(list) => previous = list,
                Err(_) => previous.push(s),
            },
            Err(_) => {
                for i in 0.. {
                    match std::env::var(format!("OH_PREVIOUS_SECRET_KEYS_{i}")) {
                        Ok(k) => previous.push(k),
                        Err(_) => break,
                    }
                }
            }
        }
        Keys::from_vars(current, previous)
    }

    /// Which key decrypts `token`: 0 the current one, i+1 previous key i.
    pub fn which(&self, token: &[u8]) -> Option<usize> {
        self.current
            .iter()
            .chain(self.previous.iter())
            .position(|k| verifies(token, k))
    }
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(Keys::from_env)
}

/// `Fernet._get_unverified_token_data`: urlsafe base64, version byte 0x80,
/// then 8 bytes of time, a 16-byte IV, whole AES blocks, a 32-byte HMAC.
pub fn token_data(s: &str) -> Option<Vec<u8>> {
    let data = base64::engine::general_purpose::URL_SAFE.decode(s).ok()?;
    let ok = data.len() >= 1 + 8 + 16 + 16 + 32
        && (data.len() - (1 + 8 + 16 + 32)) % 16 == 0
        && data[0] == 0x80;
    ok.then_some(data)
}

/// `Fernet._verify_signature`: HMAC-SHA256 under the signing half of the
/// key. A token that passes it decrypts (the padding check after it fails
/// only for tokens forged with the key itself).
fn verifies(data: &[u8], key: &[u8; 32]) -> bool {
    let (body, sig) = data.split_at(data.len() - 32);
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key[..16]) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(sig).is_ok()
}

/// Every string that looks like a Fernet token, with its JSON path.
fn tokens<'a>(v: &'a Value, path: &mut Vec<String>, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) if s.starts_with(PREFIX) => out.push((path.join("."), s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                tokens(x, path, out);
                path.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                path.push(k.clone());
                tokens(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

impl Check for SecretUndecryptable {
    fn id(&self) -> &'static str {
        ID
    }

    fn summary(&self) -> &'static str {
        "An encrypted secret that none of the keys given (OH_SECRET_KEY, OH_PREVIOUS_SECRET_KEYS) decrypts"
    }

    fn explain(&self) -> &'static str {
        "\
What it finds
  Fernet tokens (`gAAAAA…`) in meta.json and base_state.json (API keys,
  secrets) that no key given in the environment decrypts. Give the same
  variables the server reads: OH_SECRET_KEY, and OH_PREVIOUS_SECRET_KEYS (a
  JSON list, or OH_PREVIOUS_SECRET_KEYS_0, _1, …; 1.58.2 key rotation). The
  keys are derived as the SDK's Cipher does (sha256 of the key) and each
  token's HMAC is checked; values are never decrypted into the output, and
  never printed: the finding names their places only. Values that only a
  previous key decrypts are reported as info (the server re-encrypts them
  under the current key at the next save). Without OH_SECRET_KEY the check
  says it was skipped (a server without OH_SECRET_KEY falls back to its
  first session API key: pass that one). A conversation written inside a
  Docker-runtime container (1.52+; persistence_dir under
  /var/openhands/conversations) is encrypted with its own runtime key, kept
  in <persistence>/runtime-control/<id>.json under the host key: its values
  are reported as skipped, not as undecryptable.

Why it matters
  The SDK replaces a value it cannot decrypt with None, with only a log
  warning: the agent silently loses that credential, and the next save
  writes the loss to disk. One folder can hold values under different keys
  after a rotation; a key dropped from the configuration loses them.

Repair
  None: configure the key that encrypted them (as OH_PREVIOUS_SECRET_KEYS
  when it is an old one), or enter the secret again."
    }

    fn repair(&self) -> Repair {
        Repair::manual(
            "a value no configured key decrypts cannot be recovered by convo-doctor: configure the key that wrote it (OH_PREVIOUS_SECRET_KEYS), or enter the secret again",
        )
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let keys = keys();
        let in_container = docker_runtime(ctx);
        let mut skipped = 0;
        let mut first_file = None;
        for (file, doc) in [
            ("meta.json", &ctx.conv.meta),
            ("base_state.json", &ctx.conv.base_state),
        ] {
            let Some(v) = doc.value() else { continue };
            let mut found = Vec::new();
            tokens(v, &mut Vec::new(), &mut found);
            let found: Vec<(String, Vec<u8>)> = found
                .into_iter()
                .filter_map(|(p, s)| token_data(s).map(|d| (p, d)))
                .collect();
            if found.is_empty() {
                continue;
            }
            first_file.get_or_insert(file);
            if keys.current.is_none() || in_container {
                skipped += found.len();
                continue;
            }
            let (mut bad, mut old) = (Vec::new(), Vec::new());
            for (p, d) in &found {
                match keys.which(d) {
                    None => bad.push(ctx.quote(p)),
                    Some(0) => {}
                    Some(_) => old.push(ctx.quote(p)),
                }
            }
            if !bad.is_empty() {
                out.push(Finding::new(
                    self.id(),
                    Severity::Warning,
                    file,
                    format!(
                        "{} of {} encrypted values decrypt with neither OH_SECRET_KEY nor any OH_PREVIOUS_SECRET_KEYS ({}): the SDK loads each as None and the agent loses it",
                        bad.len(),
                        found.len(),
                        clip_list(&bad)
                    ),
                ));
            }
            if !old.is_empty() {
                out.push(Finding::new(
                    self.id(),
                    Severity::Info,
                    file,
                    format!(
                        "{} encrypted values decrypt only with a previous key ({}): the server re-encrypts them under OH_SECRET_KEY at the next save; keep that key in OH_PREVIOUS_SECRET_KEYS until then",
                        old.len(),
                        clip_list(&old)
                    ),
                ));
            }
        }
        if skipped > 0 && in_container {
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                first_file.unwrap_or("base_state.json"),
                format!(
                    "{skipped} encrypted values not checked (skipped): written inside a Docker-runtime container (persistence_dir under {CONTAINER_CONVERSATIONS}), so they are under the conversation's own key, kept in <persistence>/runtime-control/<id>.json, not under OH_SECRET_KEY"
                ),
            ));
        } else if skipped > 0 {
            out.push(Finding::new(
                self.id(),
                Severity::Info,
                first_file.unwrap_or("base_state.json"),
                format!(
                    "{skipped} encrypted values not checked (skipped): no OH_SECRET_KEY in the environment; give the server's OH_SECRET_KEY (and OH_PREVIOUS_SECRET_KEYS) to check that they decrypt"
                ),
            ));
        }
    }
}

/// `_CONVERSATIONS_DIR` of `docker_runtime/registry.py` (1.52+): where a
/// conversation's folder is mounted inside its runtime container.
const CONTAINER_CONVERSATIONS: &str = "/var/openhands/conversations";

/// A conversation a Docker runtime container wrote: its server ran with
/// `OH_CONVERSATIONS_PATH=/var/openhands/conversations` and the
/// per-conversation `OH_SECRET_KEY` of its runtime identity.
fn docker_runtime(ctx: &Ctx) -> bool {
    ctx.conv
        .base_state
        .value()
        .and_then(|b| b.get("persistence_dir"))
        .and_then(Value::as_str)
        .is_some_and(|p| {
            p == CONTAINER_CONVERSATIONS || p.starts_with("/var/openhands/conversations/")
        })
}

fn clip_list(v: &[String]) -> String {
    if v.len() <= 4 {
        v.join(", ")
    } else {
        format!("{}, and {} more", v[..4].join(", "), v.len() - 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_decides_and_keys_follow_the_cipher_rules() {
        // A token built by hand with the SDK's layout, signed with sha256("k1")[..16].
        let k1 = derive("k1");
        let mut data = vec![0x80u8];
        data.extend_from_slice(&[0, 0, 0, 0, 0x60, 0, 0, 0]);
        data.extend_from_slice(&[7u8; 16]); // IV
        data.extend_from_slice(&[9u8; 16]); // one block
        let mut mac = Hmac::<Sha256>::new_from_slice(&k1[..16]).unwrap();
        mac.update(&data);
        data.extend_from_slice(&mac.finalize().into_bytes());
        let text = base64::engine::general_purpose::URL_SAFE.encode(&data);
        assert!(text.starts_with(PREFIX));
        let parsed = token_data(&text).unwrap();
        let only_new = Keys::from_vars(Some("k2".into()), vec![]);
        let rotated = Keys::from_vars(Some("k2".into()), vec!["".into(), "k1".into(), "k2".into()]);
        assert_eq!(only_new.which(&parsed), None);
        assert_eq!(rotated.which(&parsed), Some(1));
        assert_eq!(
            rotated.previous.len(),
            1,
            "blank and current-key repeats dropped"
        );
        assert_eq!(
            Keys::from_vars(Some("k1".into()), vec![]).which(&parsed),
            Some(0)
        );
        assert!(Keys::from_vars(Some("  ".into()), vec![]).current.is_none());
        assert!(token_data("gAAAAAnot-a-token").is_none());
    }
}
