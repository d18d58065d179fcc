//! No secret reaches any output: a unique canary secret and a unique Fernet
//! token go into every secret-bearing place of a conversation, other values
//! diverge so findings quote values, and every command and format is run.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_convo-doctor");

fn unique() -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{:x}{:x}", t.as_nanos(), std::process::id())
}

struct Canaries {
    /// Distinct plaintext secrets, one per place (so a leak names its place).
    plain: Vec<(String, String)>,
    fernet: String,
}

impl Canaries {
    fn new() -> Self {
        Canaries {
            plain: Vec::new(),
            fernet: format!("gAAAAABp{}QmFzZTY0LXRva2VuLWNhbmFyeQ==", unique()),
        }
    }
    /// A new secret for `place`; long enough that a clipped quote would show
    /// a prefix of it.
    fn secret(&mut self, place: &str) -> String {
        let s = format!(
            "sk-CANARY-{}-{}-{}",
            self.plain.len(),
            unique(),
            "x".repeat(90)
        );
        self.plain.push((place.to_string(), s.clone()));
        s
    }
}

fn llm(c: &mut Canaries, place: &str, model: &str, timeout: u64) -> Value {
    json!({
        "model": model,
        "timeout": timeout,
        "api_key": c.secret(&format!("{place}.api_key")),
        "aws_access_key_id": c.secret(&format!("{place}.aws_access_key_id")),
        "aws_secret_access_key": c.fernet.clone(),
        "aws_session_token": c.secret(&format!("{place}.aws_session_token")),
    })
}

fn agent(c: &mut Canaries, place: &str, model: &str, timeout: u64) -> Value {
    json!({
        "kind": "Agent",
        "llm": llm(c, &format!("{place}.llm"), model, timeout),
        "condenser": {"kind": "LLMSummarizingCondenser",
                      "llm": llm(c, &format!("{place}.condenser.llm"), model, timeout)},
        "mcp_config": {"mcpServers": {
            "gh": {"command": "npx",
                   "env": {"GITHUB_TOKEN": c.secret(&format!("{place}.mcp.env")),
                           "PLAIN_LOOKING": c.secret(&format!("{place}.mcp.env2"))},
                   "headers": {"Authorization": format!("Bearer {}", c.secret(&format!("{place}.mcp.headers"))),
                               "X-Custom": c.secret(&format!("{place}.mcp.headers2"))}},
            "remote": {"url": "https://mcp.example", "headers": {"X-Api-Key": c.fernet.clone()}}
        }},
    })
}

fn secret_sources(c: &mut Canaries, place: &str) -> Value {
    json!({
        "STATIC": {"kind": "StaticSecret", "value": c.secret(&format!("{place}.STATIC.value"))},
        "ENCRYPTED": {"kind": "StaticSecret", "value": c.fernet.clone()},
        "LOOKUP": {"kind": "LookupSecret", "url": "https://vault.example/x",
                   "headers": {"Authorization": c.secret(&format!("{place}.LOOKUP.headers")),
                               "Cookie": c.secret(&format!("{place}.LOOKUP.cookie"))}},
    })
}

fn build(dir: &Path, c: &mut Canaries) {
    fs::create_dir_all(dir.join("events")).unwrap();
    let base = json!({
        "id": "01234567-89ab-cdef-0123-456789abcdef",
        "agent": agent(c, "base.agent", "model-base", 30),
        "secret_registry": {"secret_sources": secret_sources(c, "base.secret_sources")},
        "workspace": {"working_dir": "/w", "env": {"TOKEN": c.secret("base.workspace.env")}},
        "max_iterations": 50,
        "tags": {"t": "base"},
    });
    let meta = json!({
        "id": "0123456789abcdef0123456789abcdef",
        // a different agent: meta-divergence quotes the differing values
        "agent": agent(c, "meta.agent", "model-meta", 600),
        "secrets": {
            "STATIC": {"value": c.secret("meta.secrets.STATIC.value"), "description": null},
            "OTHER": {"value": c.fernet.clone()},
            "BARE": c.secret("meta.secrets.BARE"),
        },
        "workspace": {"working_dir": "/w", "env": {"TOKEN": c.secret("meta.workspace.env")}},
        "max_iterations": 500,
        "tags": {"t": "meta"},
    });
    let known = base["agent"]["llm"]["api_key"]
        .as_str()
        .unwrap()
        .to_string();
    fs::write(dir.join("base_state.json"), base.to_string()).unwrap();
    fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    let ev = |i: usize| format!("e0000000-0000-4000-8000-{i:012}");
    let events = [
        json!({"id": ev(0), "kind": "MessageEvent", "source": "user"}),
        json!({"id": ev(1), "kind": "ConversationStateUpdateEvent", "source": "environment",
               "key": "agent", "value": agent(c, "event.agent", "model-event", 5)}),
        // a known secret where a message quotes and clips a value (unknown
        // kind, source), and a Fernet token as a kind
        json!({"id": ev(2), "kind": known.clone(), "source": known.clone(), "parent_id": ev(1)}),
        json!({"id": ev(3), "kind": c.fernet.clone(), "source": "agent"}),
        // content is never quoted, even in a parse error
        json!({"id": ev(4), "kind": "ActionEvent", "action": c.secret("event.action")}),
    ];
    for (i, e) in events.iter().enumerate() {
        fs::write(
            dir.join(format!("events/event-{i:05}-{}.json", ev(i))),
            e.to_string(),
        )
        .unwrap();
    }
    // a lease naming a known secret as its host
    fs::write(
        dir.join("owner_lease.json"),
        json!({"expires_at": 9.0e15, "owner_host": known, "owner_pid": 1}).to_string(),
    )
    .unwrap();
}

fn run(args: &[&str]) -> (String, String) {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run convo-doctor");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run a command line and assert that neither any planted secret (nor any
/// 24-character piece of one) nor the Fernet token reaches stdout or stderr.
/// Returns stdout.
fn run_clean(args: &[&str], c: &Canaries) -> String {
    let (out, err) = run(args);
    for text in [&out, &err] {
        for (place, s) in &c.plain {
            let probe = &s[..24.min(s.len())];
            assert!(
                !text.contains(probe),
                "the secret at {place} leaked in `convo-doctor {}`:\n{text}",
                args.join(" ")
            );
        }
        assert!(
            !text.contains(&c.fernet[..20]),
            "a Fernet token leaked in `convo-doctor {}`:\n{text}",
            args.join(" ")
        );
    }
    out
}

#[test]
fn no_secret_reaches_any_output() {
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp.path().join("0123456789abcdef0123456789abcdef");
    let mut c = Canaries::new();
    build(&conv, &mut c);
    // a folder whose name is a Fernet token, passed as a PATH that fails
    let bad_path = tmp.path().join(format!("missing-{}", c.fernet));
    let conv_s = conv.to_str().unwrap();
    let store_s = tmp.path().to_str().unwrap();
    let bad_s = bad_path.to_str().unwrap();
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for path in [conv_s, store_s] {
        for fmt in ["human", "json", "jsonl", "concise"] {
            for events in [false, true] {
                for color in ["never", "always"] {
                    let mut a = vec!["--color", color, "diagnose", "--format", fmt];
                    if events {
                        a.push("--events");
                    }
                    a.extend(["--fail-on", "never", path]);
                    runs.push(a);
                }
            }
        }
        for v in ["1.29.3", "1.33.0", "1.42.0"] {
            runs.push(vec!["diagnose", "--server-version", v, "--events", path]);
        }
    }
    runs.push(vec!["diagnose", bad_s]);
    runs.push(vec!["diagnose", "--format", "json", bad_s, conv_s]);
    runs.push(vec!["explain"]);
    for id in ["plaintext-secret", "meta-divergence", "no-such-check"] {
        runs.push(vec!["explain", id]);
    }
    let mut saw_meta_divergence = false;
    for args in &runs {
        let out = run_clean(args, &c);
        saw_meta_divergence |= out.contains("meta-divergence");
    }
    assert!(
        saw_meta_divergence,
        "the fixture must make findings quote values"
    );
    // the redaction is visible, not silent
    let (out, _) = run(&["diagnose", "--events", conv_s]);
    assert!(out.contains("[REDACTED:"), "{out}");

    // repair: its diffs print whole JSON files with secrets in the context
    // lines. Free the conversation (the lease is live) so diffs are made.
    std::fs::remove_file(conv.join("owner_lease.json")).unwrap();
    let backups = tmp.path().join("backups");
    let backups_s = backups.to_str().unwrap();
    let repairs: Vec<Vec<&str>> = vec![
        vec!["repair", "--dry-run", conv_s],
        vec!["repair", "--dry-run", store_s],
        vec!["repair", "--dry-run", "--server-version", "1.33.0", conv_s],
        vec!["repair", "--dry-run", "--server-version", "1.58.2", conv_s],
        vec!["--color", "always", "repair", "--dry-run", conv_s],
        vec!["repair", "--backup-dir", backups_s, conv_s],
    ];
    let mut saw_diff = false;
    for args in &repairs {
        saw_diff |= run_clean(args, &c).contains("+++ b/");
    }
    assert!(
        saw_diff,
        "the repair runs must print a diff for this test to mean anything"
    );
}

fn all_outputs(args_list: &[Vec<&str>]) -> String {
    let mut all = String::new();
    for a in args_list {
        let (o, e) = run(a);
        all.push_str(&o);
        all.push_str(&e);
    }
    all
}

/// The SDK's own redaction hides URL credentials (`https://user:PASS@host`)
/// and token query values (`?access_token=`, `?api_key=`, …): so does every
/// output, divergence messages and diffs included.
#[test]
fn url_credentials_and_token_parameters_never_print() {
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp.path().join("0123456789abcdef0123456789abcdef");
    fs::create_dir_all(conv.join("events")).unwrap();
    let u = unique();
    let pass = format!("PASS-canary-{u}");
    let tok = format!("TOK-canary-{u}");
    let pass2 = format!("PASS2-canary-{u}");
    let key2 = format!("KEY2-canary-{u}");
    let llm = |url: String| json!({"model": "m", "base_url": url, "api_key": "**********"});
    let base = json!({
        "id": "01234567-89ab-cdef-0123-456789abcdef",
        "agent": {"kind": "Agent", "llm": llm(format!("https://user:{pass}@llm.example/v1?access_token={tok}&x=1"))},
    });
    let meta = json!({
        "id": "0123456789abcdef0123456789abcdef",
        "agent": {"kind": "Agent", "llm": llm(format!("http://other:{pass2}@x.example/?API_KEY={key2}"))},
        "workspace": {"working_dir": "/w"},
    });
    fs::write(conv.join("base_state.json"), base.to_string()).unwrap();
    fs::write(conv.join("meta.json"), meta.to_string()).unwrap();
    let c = conv.to_str().unwrap();
    let b = tmp.path().join("b");
    let all = all_outputs(&[
        vec!["diagnose", "--fail-on", "never", c],
        vec!["diagnose", "--format", "json", "--fail-on", "never", c],
        vec!["repair", "--dry-run", c],
        vec!["repair", "--dry-run", "--show-content", c],
        vec!["repair", "--backup-dir", b.to_str().unwrap(), c],
    ]);
    assert!(all.contains("meta-divergence"), "{all}");
    assert!(all.contains("[REDACTED:"), "{all}");
    for secret in [&pass, &tok, &pass2, &key2] {
        assert!(!all.contains(secret.as_str()), "{secret} leaked:\n{all}");
    }
    assert!(
        all.contains("llm.example"),
        "the host stays readable: {all}"
    );
}

/// One redactor for the whole run: a key learned from one conversation is
/// redacted in another one printed after it, in its findings, its path and
/// the summary.
#[test]
fn a_key_learned_in_one_conversation_is_redacted_in_every_other() {
    let tmp = tempfile::tempdir().unwrap();
    let key = format!("sk-run-wide-{}", unique());
    let a = tmp.path().join("a-conversation");
    fs::create_dir_all(a.join("events")).unwrap();
    fs::write(
        a.join("base_state.json"),
        json!({"id": "01234567-89ab-cdef-0123-456789abcdef",
               "agent": {"kind": "Agent", "llm": {"model": "m", "api_key": key}}})
        .to_string(),
    )
    .unwrap();
    // b quotes the key where no slot marks it secret: a model name that
    // diverges, and its own folder name
    let b = tmp.path().join(format!("b-{key}"));
    fs::create_dir_all(b.join("events")).unwrap();
    fs::write(
        b.join("base_state.json"),
        json!({"id": "01234567-89ab-cdef-0123-456789abcdee",
               "agent": {"kind": "Agent", "llm": {"model": "m"}}})
        .to_string(),
    )
    .unwrap();
    fs::write(
        b.join("meta.json"),
        json!({"id": "0123456789abcdef0123456789abcdee",
               "agent": {"kind": "Agent", "llm": {"model": key}},
               "workspace": {"working_dir": "/w"}})
        .to_string(),
    )
    .unwrap();
    let store = tmp.path().to_str().unwrap();
    let all = all_outputs(&[
        vec!["diagnose", "-j", "1", "--fail-on", "never", store],
        vec![
            "diagnose",
            "-j",
            "1",
            "--format",
            "jsonl",
            "--fail-on",
            "never",
            store,
        ],
        vec!["repair", "--dry-run", store],
    ]);
    assert!(all.contains("meta-divergence"), "{all}");
    assert!(
        !all.contains(&key),
        "the key learned in a leaked in b:\n{all}"
    );
}

/// `undo` prints through the redactor too (it printed raw paths before).
#[test]
fn undo_output_is_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/false-root");
    let conv_src = fs::read_dir(&src).unwrap().next().unwrap().unwrap().path();
    let token = format!("gAAAAABundo{}", unique());
    let conv = tmp.path().join(format!("conv-{token}"));
    fs::create_dir_all(conv.join("events")).unwrap();
    fs::copy(
        conv_src.join("base_state.json"),
        conv.join("base_state.json"),
    )
    .unwrap();
    for e in fs::read_dir(conv_src.join("events")).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), conv.join("events").join(e.file_name())).unwrap();
    }
    // outside the folder the conversation sits in (a backup there is refused)
    let btmp = tempfile::tempdir().unwrap();
    let b = btmp.path().join("b");
    let out = Command::new(BIN)
        .args([
            "repair",
            "--backup-dir",
            b.to_str().unwrap(),
            conv.to_str().unwrap(),
        ])
        .env("CONVO_DOCTOR_RUN_ID", "undo-redact")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (o, e) = run(&["undo", "--backup-dir", b.to_str().unwrap(), "undo-redact"]);
    assert!(o.contains("restored"), "{o}{e}");
    assert!(!o.contains(&token) && !e.contains(&token), "{o}{e}");
}

/// Diff context lines never print event content unless `--show-content`.
#[test]
fn diff_context_masks_event_content_unless_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/false-root");
    let store = tmp.path().join("store");
    let conv_src = fs::read_dir(&src).unwrap().next().unwrap().unwrap().path();
    let conv = store.join(conv_src.file_name().unwrap());
    fs::create_dir_all(conv.join("events")).unwrap();
    fs::copy(
        conv_src.join("base_state.json"),
        conv.join("base_state.json"),
    )
    .unwrap();
    let canary = format!("CONTENT-canary-{}", unique());
    for e in fs::read_dir(conv_src.join("events")).unwrap() {
        let e = e.unwrap();
        let mut text = fs::read_to_string(e.path()).unwrap();
        if e.file_name().to_str().unwrap().starts_with("event-00008-") {
            // content right after parent_id: inside the diff's context
            text = text.replace(
                r#""parent_id":"__root__","#,
                &format!(r#""parent_id":"__root__","activated_skills":["{canary}"],"#),
            );
            text = text.replace(r#","activated_skills":[],"#, ",");
        }
        fs::write(conv.join("events").join(e.file_name()), text).unwrap();
    }
    let st = store.to_str().unwrap();
    let (out, _) = run(&["repair", "--dry-run", st]);
    assert!(out.contains("+  \"parent_id\""), "{out}");
    assert!(!out.contains(&canary), "{out}");
    assert!(out.contains("characters hidden>"), "{out}");
    let (out, _) = run(&["repair", "--dry-run", "--show-content", st]);
    assert!(out.contains(&canary), "{out}");
}
