//! `plaintext-secret`: a credential stored in the clear in base_state.json
//! or meta.json (neither the SDK's redaction `**********` nor a Fernet
//! token). No automatic repair: re-encrypting needs the server's key. That
//! no secret reaches any output is tests/secrets.rs's subject.

use serde_json::json;

use super::common::{self, Conv};
use super::{fixture_conv, found, plan};

/// A canary credential: its bytes must never be printed.
const KEY: &str = "sk-canary-plaintext-0123456789abcdef";

/// A conversation whose agent's LLM holds `api_key`.
fn with_api_key(api_key: &str) -> Conv {
    let c = Conv::new(json!({}));
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(c.path().join("base_state.json")).unwrap()).unwrap();
    state["agent"]["llm"]["api_key"] = json!(api_key);
    std::fs::write(c.path().join("base_state.json"), state.to_string()).unwrap();
    c
}

#[test]
fn the_fixtures_clear_keys_are_warnings() {
    for name in ["plaintext-secret", "plaintext-extra-header"] {
        assert_eq!(
            found(&fixture_conv(name), "plaintext-secret"),
            ["warning"],
            "{name}"
        );
    }
    assert!(found(&fixture_conv("clean-tree"), "plaintext-secret").is_empty());
}

/// A clear key is found; the redaction and a Fernet token are not.
#[test]
fn a_clear_key_is_found_and_a_redacted_or_encrypted_one_is_not() {
    assert_eq!(
        found(with_api_key(KEY).path(), "plaintext-secret"),
        ["warning"]
    );
    for kept in [
        "**********",
        "gAAAAABmZ2FuYXJ5LWZlcm5ldC10b2tlbi1ub3QtYS1yZWFsLW9uZQ==",
    ] {
        assert!(
            found(with_api_key(kept).path(), "plaintext-secret").is_empty(),
            "{kept}"
        );
    }
}

/// The finding names the JSON path and never the key; no repair is planned
/// even with `--unsafe-fixes`.
#[test]
fn the_path_is_named_the_key_never_and_nothing_is_repaired() {
    let c = with_api_key(KEY);
    let (_, out, err) = common::run(&["diagnose", common::s(c.path())], &[]);
    assert!(out.contains("at /agent/llm/api_key"), "{out}");
    assert!(!out.contains(KEY) && !err.contains(KEY), "{out}{err}");
    let (_, out) = plan(c.path(), "plaintext-secret", &["--unsafe-fixes"]);
    assert!(
        out.contains("nothing to repair") && out.contains("left: plaintext-secret ×1 (manual)"),
        "{out}"
    );
    assert!(!out.contains(KEY), "{out}");
}
