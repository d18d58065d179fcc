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
//!   CREDENTIAL, KEY, PASSWORD, SECRET, SESSION, TOKEN, case-insensitive);
//! - URL credentials (`https://user:PASS@host`, `redact_url_credentials_in_text`)
//!   and token query values (`?access_token=`, `SENSITIVE_URL_PARAMS` or
//!   `is_secret_key`, `redact_url_params`), learned from the state files and
//!   matched in any text.
//!
//! One set of learned secrets serves the whole run (every conversation).
//!
//! Long because: where the SDK keeps secrets and the one redaction layer are kept together, so what is learned and what is redacted cannot drift; about 140 lines are tests.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{OnceLock, RwLock};

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

/// Query parameter names whose values the SDK always redacts in URLs
/// (`SENSITIVE_URL_PARAMS` of `openhands/sdk/utils/redact.py`, compared
/// lowercased), besides every name `is_secret_key` flags.
pub const SENSITIVE_URL_PARAMS: &[&str] = &[
    "tavilyapikey",
    "apikey",
    "api_key",
    "token",
    "access_token",
    "secret",
    "key",
];

/// Every secret learned during this run, from every conversation read: one
/// set for the whole process, so a key learned in one conversation is
/// redacted wherever it appears later. Indexed by the first 6 bytes (the
/// few shorter credentials are tried apart), so redacting a text costs one hash lookup
/// per byte however many secrets are known.
#[derive(Default)]
struct Known {
    all: HashSet<String>,
    /// first 6 bytes → the secrets starting with them, longest first.
    by_prefix: HashMap<[u8; 6], Vec<String>>,
    /// Credentials shorter than 6 bytes (3 to 5: [`remember_credential`]),
    /// longest first: too short to index, and few.
    short: Vec<String>,
    /// Which first two bytes start a secret (65,536 flags, empty until a
    /// secret is learned): most positions of a text are ruled out without
    /// hashing.
    first2: Vec<bool>,
}

fn known() -> &'static RwLock<Known> {
    static KNOWN: OnceLock<RwLock<Known>> = OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

fn prefix(b: &[u8]) -> [u8; 6] {
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}

/// The redaction layer: a handle on the run's one set of learned secrets.
/// `redact` replaces every learned value (raw or JSON-escaped), every
/// Fernet token, the credentials of any `http(s)://user:pass@` URL and the
/// value of any token-like query parameter, in any text.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    _run: (),
}

impl Redactor {
    /// Remember every secret-looking string in a JSON document: each value of
    /// a credential slot (what `plaintext-secret` inspects), each string under
    /// a key the SDK's `is_secret_key` flags, each Fernet token, and the
    /// credentials and token parameters of every URL.
    pub fn learn(&mut self, v: &Value) {
        let mut found = Vec::new();
        for (_, slot) in credential_slots(v) {
            if let Value::String(s) = slot {
                found.push(s.clone());
            }
        }
        learn_walk(v, None, &mut found);
        remember(found);
    }

    /// Text with every known secret, every Fernet token and every URL
    /// credential or token parameter replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        redact_text(text)
    }
}

/// Remember secrets, raw and as JSON spells them inside a string. Values
/// shorter than 6 characters are not remembered (replacing every `true` or
/// `abc` in a report would garble it, and protects little).
fn remember(found: Vec<String>) {
    remember_min(found, 6)
}

/// Remember a credential convo-doctor itself was given or found (a
/// database password from `--db`, `PGPASSWORD` or a password file): it is
/// replaced wherever it would appear, down to 3 characters long (a shorter
/// one would garble the report; it is never written into a report by
/// convo-doctor's own code either).
pub fn remember_credential(s: &str) {
    remember_min(vec![s.to_string()], 3)
}

fn remember_min(found: Vec<String>, min: usize) {
    let mut forms = Vec::new();
    for s in found {
        if s.len() < min || s == SDK_REDACTED {
            continue;
        }
        if let Ok(esc) = serde_json::to_string(&s) {
            let inner = &esc[1..esc.len() - 1];
            if inner != s {
                forms.push(inner.to_string());
            }
        }
        forms.push(s);
    }
    if forms.is_empty() {
        return;
    }
    {
        let k = known().read().unwrap_or_else(|e| e.into_inner());
        forms.retain(|f| !k.all.contains(f));
    }
    if forms.is_empty() {
        return;
    }
    let mut k = known().write().unwrap_or_else(|e| e.into_inner());
    for f in forms {
        if k.first2.is_empty() {
            k.first2 = vec![false; 1 << 16];
        }
        let b = f.as_bytes();
        k.first2[(b[0] as usize) << 8 | b[1] as usize] = true;
        if k.all.insert(f.clone()) {
            let list = match f.len() {
                0..6 => &mut k.short,
                _ => k.by_prefix.entry(prefix(f.as_bytes())).or_default(),
            };
            list.push(f);
            list.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        }
    }
}

fn learn_walk(v: &Value, key: Option<&str>, found: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            let by_key = key.is_some_and(|k| {
                k != "key" && k != "kind" && (is_secret_key(k) || CREDENTIAL_FIELDS.contains(&k))
            });
            if by_key || is_fernet(s) {
                found.push(s.clone());
            }
            if s.contains("://") || s.contains('=') {
                url_secrets(s, |r| found.push(s[r].to_string()));
            }
        }
        Value::Array(a) => a.iter().for_each(|x| learn_walk(x, key, found)),
        Value::Object(m) => {
            for (k, x) in m {
                let under_all = key.is_some_and(|p| REDACT_ALL_KEYS.contains(&p));
                let eff = if under_all { "secret" } else { k.as_str() };
                learn_walk(x, Some(eff), found);
            }
        }
        _ => {}
    }
}

/// Whether a URL query parameter's value is a secret (the SDK's
/// `redact_url_params` rule).
pub fn is_secret_param(name: &str) -> bool {
    SENSITIVE_URL_PARAMS.contains(&name.to_ascii_lowercase().as_str()) || is_secret_key(name)
}

/// Call `each` with the byte range of every secret in URLs of `text`:
/// - the userinfo of `http://` / `https://` URLs (the SDK's
///   `_EMBEDDED_URL_CREDENTIALS_RE`, `(https?://)[^/@\s]+@`, case-insensitive,
///   and never across a `"`, so redacting serialized JSON keeps it valid);
/// - the value of each `?name=` / `&name=` query parameter whose name
///   [`is_secret_param`] flags (up to `&`, `#`, a quote, a bracket,
///   a backslash or white space).
fn url_secrets(text: &str, mut each: impl FnMut(std::ops::Range<usize>)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let scheme = if rest.len() >= 8 && rest[..8].eq_ignore_ascii_case(b"https://") {
            8
        } else if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"http://") {
            7
        } else {
            0
        };
        if scheme > 0 {
            let start = i + scheme;
            let mut k = start;
            // `"` also ends it (never raw in a URL): redacting serialized
            // JSON must stay inside one string
            while k < b.len() && !matches!(b[k], b'/' | b'@' | b'"') && !is_space(text, k) {
                k += 1;
            }
            if k < b.len() && b[k] == b'@' && k > start {
                each(start..k);
                i = k + 1;
                continue;
            }
            i = start;
            continue;
        }
        if matches!(b[i], b'?' | b'&') {
            let ns = i + 1;
            let mut k = ns;
            while k < b.len()
                && (b[k].is_ascii_alphanumeric() || matches!(b[k], b'_' | b'-' | b'.'))
            {
                k += 1;
            }
            if k > ns && k < b.len() && b[k] == b'=' && is_secret_param(&text[ns..k]) {
                let vs = k + 1;
                let mut e = vs;
                while e < b.len()
                    && !matches!(
                        b[e],
                        b'&' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'\\' | b')' | b']' | b'`'
                    )
                    && !is_space(text, e)
                {
                    e += 1;
                }
                if e > vs {
                    each(vs..e);
                }
                i = e.max(k + 1);
                continue;
            }
        }
        i += 1;
    }
}

fn is_space(text: &str, at: usize) -> bool {
    let c = text.as_bytes()[at];
    if c.is_ascii() {
        return c.is_ascii_whitespace();
    }
    text.is_char_boundary(at) && text[at..].chars().next().is_some_and(char::is_whitespace)
}

/// Replace the URL secrets of `text` (see [`url_secrets`]).
fn redact_urls(text: &str) -> Cow<'_, str> {
    let mut ranges = Vec::new();
    url_secrets(text, |r| ranges.push(r));
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in ranges {
        // ranges end on ASCII delimiters or the end, and start after ASCII
        if !(text.is_char_boundary(r.start) && text.is_char_boundary(r.end)) {
            continue;
        }
        out.push_str(&text[last..r.start]);
        out.push_str(&placeholder(&text[r.clone()]));
        last = r.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Replace every learned secret in `text` (one hash lookup per byte).
fn redact_known(text: &str) -> Cow<'_, str> {
    let k = known().read().unwrap_or_else(|e| e.into_inner());
    let min = if k.short.is_empty() { 6 } else { 3 };
    if k.all.is_empty() || text.len() < min {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let (mut i, mut last) = (0, 0);
    while i + min <= b.len() {
        if !k.first2[(b[i] as usize) << 8 | b[i + 1] as usize] {
            i += 1;
            continue;
        }
        let long = match i + 6 <= b.len() {
            true => k.by_prefix.get(&prefix(&b[i..])),
            false => None,
        };
        let hit = long
            .into_iter()
            .flatten()
            .chain(&k.short)
            .find(|s| b[i..].starts_with(s.as_bytes()));
        if let Some(hit) = hit {
            // a learned value is valid UTF-8 and starts with a lead
            // byte, so `i` and `i + len` are character boundaries
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[last..i]);
            o.push_str(&placeholder(hit));
            i += hit.len();
            last = i;
            continue;
        }
        i += 1;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[last..]);
            Cow::Owned(o)
        }
    }
}

/// The whole redaction, for any text: URL credentials and token parameters,
/// every secret learned so far in this run, every Fernet token.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let a = redact_urls(text);
    let b = match redact_known(&a) {
        Cow::Borrowed(_) => a,
        Cow::Owned(o) => Cow::Owned(o),
    };
    if b.contains(FERNET_PREFIX) {
        Cow::Owned(redact_fernet(&b))
    } else {
        b
    }
}

/// [`redact_text`] as an owned string.
pub fn redact_all(text: &str) -> String {
    redact_text(text).into_owned()
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

    /// A database password of 3 to 5 bytes (`PGPASSWORD=wrong`) panicked
    /// on being remembered (the 6-byte index), and must still be redacted.
    #[test]
    fn short_credentials_are_remembered_and_redacted() {
        remember_credential("qZ9x!");
        remember_credential("k7Q");
        let out = redact_text("pw qZ9x! and k7Q, k7 qZ9x");
        assert!(!out.contains("qZ9x!") && !out.contains("k7Q"), "{out}");
        assert!(out.contains(", k7 qZ9x"), "{out}");
        assert_eq!(redact_text("k7Q"), placeholder("k7Q"));
        assert_eq!(redact_text("k7"), "k7");
    }

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

    /// The SDK's own examples (`redact.py` docstrings of 1.58.2), plus the
    /// parameter names it lists.
    #[test]
    fn url_rules_are_the_sdks() {
        let r = Redactor::default();
        let t =
            r.redact("fatal: unable to access 'https://oauth2:SECRET@github.com/o/r.git/': 403");
        assert!(!t.contains("oauth2:SECRET"), "{t}");
        assert!(
            t.contains("https://[REDACTED:") && t.contains("]@github.com/o/r.git/"),
            "{t}"
        );
        for same in [
            "https://github.com/owner/repo.git",
            "git@github.com:owner/repo.git",
            "no credentials here",
            "https://example.com/search?q=hello",
            "mail me at a@b.example",
        ] {
            assert_eq!(r.redact(same), same);
        }
        let t = r.redact("https://example.com/search?q=hello&apikey=secret123");
        assert!(
            t.contains("?q=hello&apikey=[REDACTED:") && !t.contains("secret123"),
            "{t}"
        );
        for name in [
            "tavilyApiKey",
            "APIKEY",
            "api_key",
            "token",
            "Access_Token",
            "secret",
            "key",
            "x-auth-token",
            "password",
        ] {
            let t = r
                .redact(&format!("http://h/p?{name}=v4lue-x&b=2"))
                .into_owned();
            assert!(!t.contains("v4lue-x") && t.contains("&b=2"), "{name}: {t}");
        }
        assert_eq!(r.redact("http://h/p?author=ann"), "http://h/p?author=ann");
        // serialized JSON stays JSON: a match never spans two strings
        let j = r#"["http://x",{"k":"a@b"},"https://u:pw@h?token=t0k&q=1"]"#;
        let t = r.redact(j);
        let v: Value = serde_json::from_str(&t).expect("still JSON");
        assert_eq!(v[1]["k"], "a@b");
        assert!(
            !t.contains("u:pw") && !t.contains("t0k") && t.contains("&q=1"),
            "{t}"
        );
        // HTTP in capitals, credentials inside a JSON string
        let t = r.redact(r#"{"base_url":"HTTPS://u:p4ss@h/v1"}"#);
        assert!(!t.contains("u:p4ss"), "{t}");
    }

    /// One set for the run: a value learned through one handle is redacted
    /// through every other (each conversation has its own handle).
    #[test]
    fn a_secret_learned_anywhere_is_redacted_everywhere() {
        let mut a = Redactor::default();
        a.learn(&json!({"llm": {"api_key": "sk-learned-in-a-7f3e"}}));
        let b = Redactor::default();
        assert!(!b
            .redact("b quotes sk-learned-in-a-7f3e")
            .contains("sk-learned"));
        assert!(!redact_all("summary sk-learned-in-a-7f3e").contains("sk-learned"));
        // and a URL credential learned from a state file is matched later
        // even where no URL surrounds it (a clipped quote)
        a.learn(&json!({"base_url": "https://me:pw-only-in-url-91@h"}));
        assert!(!b.redact("…me:pw-only-in-url-91").contains("pw-only"));
    }

    #[test]
    fn state_update_keys_are_not_mistaken_for_secrets() {
        let mut r = Redactor::default();
        r.learn(&json!({"key": "execution_status", "kind": "ConversationStateUpdateEvent"}));
        assert_eq!(r.redact("execution_status"), "execution_status");
    }
}
