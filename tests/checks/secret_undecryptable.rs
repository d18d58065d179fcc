//! `secret-undecryptable`: Fernet tokens in meta.json and base_state.json
//! that no key given in the environment decrypts (the SDK would silently
//! replace them with None). No repair: configure the key. Both tests moved
//! here from tests/listing.rs.

use serde_json::Value;

use super::common;
use super::listing_fixture::{manifest, root};

/// The key chain: a conversation the real 1.58.2 server wrote with
/// OH_SECRET_KEY; the real SDK Cipher's verdict per key configuration is in
/// the manifest (how many tokens decrypt, how many under the current key).
/// convo-doctor, given the same environment variables, reports exactly the
/// tokens that do not decrypt (warning) and those only a previous key
/// decrypts (info), says "skipped" without a key, and never prints a token
/// or a key.
#[test]
fn secrets_are_checked_against_the_keys_given_and_never_printed() {
    let m = manifest();
    let sec = &m["secrets"];
    let folder = sec["folders"][0]["folder"].as_str().unwrap();
    let dir = root().join(sec["store"].as_str().unwrap()).join(folder);
    let dir_s = dir.to_string_lossy().into_owned();
    let cipher = sec["cipher"].as_object().unwrap();
    let total: u64 = cipher.values().map(|r| r["tokens"].as_u64().unwrap()).sum();
    assert!(total >= 1, "the fixture holds encrypted values");
    let (k1, k2) = ("convo-doctor-fixture-key-1", "convo-doctor-fixture-key-2");
    let findings = |envs: &[(&str, &str)]| -> Vec<Value> {
        let (_, out, _) = common::run(&["diagnose", &dir_s, "--format", "json"], envs);
        for leak in ["gAAAAA", k1, k2] {
            assert!(!out.contains(leak), "`{leak}` in the output");
        }
        let doc: Value = serde_json::from_str(&out).unwrap();
        doc["conversations"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "secret-undecryptable")
            .cloned()
            .collect()
    };
    let none = findings(&[("OH_SECRET_KEY", ""), ("OH_PREVIOUS_SECRET_KEYS", "[]")]);
    assert_eq!(none.len(), 1, "{none:?}");
    assert_eq!(none[0]["severity"], "info");
    assert!(none[0]["message"]
        .as_str()
        .unwrap()
        .contains(&format!("{total} encrypted values not checked (skipped)")));

    let configs: [(&str, Vec<(&str, &str)>); 3] = [
        ("current", vec![("OH_SECRET_KEY", k1)]),
        ("other", vec![("OH_SECRET_KEY", k2)]),
        (
            "rotated",
            vec![
                ("OH_SECRET_KEY", k2),
                (
                    "OH_PREVIOUS_SECRET_KEYS",
                    "[\"convo-doctor-fixture-key-1\"]",
                ),
            ],
        ),
    ];
    let mut seen_bad = false;
    let mut seen_old = false;
    for (name, envs) in &configs {
        let got = findings(envs);
        for (key, row) in cipher {
            let file = key.rsplit('/').next().unwrap();
            let tokens = row["tokens"].as_u64().unwrap();
            let dec = row[name]["decrypt"].as_u64().unwrap();
            let bad = tokens - dec;
            let old = dec - row[name]["current_key"].as_u64().unwrap();
            let warn = got
                .iter()
                .find(|f| f["file"] == file && f["severity"] == "warning");
            let info = got
                .iter()
                .find(|f| f["file"] == file && f["severity"] == "info");
            if bad > 0 {
                seen_bad = true;
                let msg = warn.unwrap_or_else(|| panic!("{name} {file}: {got:?}"))["message"]
                    .as_str()
                    .unwrap();
                assert!(
                    msg.starts_with(&format!("{bad} of {tokens} encrypted values")),
                    "{name}: {msg}"
                );
            } else {
                assert!(warn.is_none(), "{name} {file}: {warn:?}");
            }
            if old > 0 {
                seen_old = true;
                let msg = info.unwrap_or_else(|| panic!("{name} {file}: {got:?}"))["message"]
                    .as_str()
                    .unwrap();
                assert!(
                    msg.starts_with(&format!(
                        "{old} encrypted values decrypt only with a previous key"
                    )),
                    "{name}: {msg}"
                );
            } else {
                assert!(info.is_none(), "{name} {file}: {info:?}");
            }
        }
    }
    assert!(
        seen_bad && seen_old,
        "the real Cipher's verdicts cover both cases"
    );
}

/// A conversation written inside a Docker-runtime container is encrypted
/// with its own runtime key, not the host's OH_SECRET_KEY: not reported as
/// undecryptable, but as skipped; its container paths are not flagged.
#[test]
fn docker_runtime_conversations_are_not_blamed_for_their_own_key() {
    let m = manifest();
    let sec = &m["secrets"];
    let folder = sec["folders"][0]["folder"].as_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp.path().join(folder);
    common::copy_tree(
        &root().join(sec["store"].as_str().unwrap()).join(folder),
        &conv,
    );
    let path = conv.join("base_state.json");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["persistence_dir"] = Value::from(format!("/var/openhands/conversations/{folder}"));
    state["workspace"]["working_dir"] = Value::from("/workspace");
    std::fs::write(&path, serde_json::to_string(&state).unwrap()).unwrap();
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(conv.join("meta.json")).unwrap()).unwrap();
    meta["workspace"]["working_dir"] = Value::from("/workspace");
    std::fs::write(
        conv.join("meta.json"),
        serde_json::to_string(&meta).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(conv.join("bash_events")).unwrap();
    let (_, out, _) = common::run(
        &["diagnose", &conv.to_string_lossy(), "--format", "json"],
        &[("OH_SECRET_KEY", "convo-doctor-fixture-key-2")],
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let findings = doc["conversations"][0]["findings"].as_array().unwrap();
    let sec: Vec<&Value> = findings
        .iter()
        .filter(|f| f["check"] == "secret-undecryptable")
        .collect();
    assert_eq!(sec.len(), 1, "{findings:?}");
    assert_eq!(sec[0]["severity"], "info");
    assert!(sec[0]["message"]
        .as_str()
        .unwrap()
        .contains("Docker-runtime container"));
    assert!(
        findings.iter().all(|f| f["severity"] == "info"),
        "container paths flagged: {findings:?}"
    );
}
