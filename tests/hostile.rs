//! Hostile input: every case gives a finding (or a clear error) naming the
//! file, never a panic, a hang or unbounded memory. Every input is generated
//! here at test time; nothing binary is committed.
//!
//! Each run of the real binary has a time limit, so a hang fails the test
//! instead of blocking `cargo test` forever.

#![allow(clippy::print_stderr)] // timings and skip notes for the test log

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{eid, Conv};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_convo-doctor");

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run the binary with a time limit; kill it and fail when it is exceeded.
fn run_as(prefix: &[&str], args: &[&str], limit: Duration) -> Run {
    let mut cmd = if prefix.is_empty() {
        Command::new(BIN)
    } else {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(BIN);
        c
    };
    let mut child = cmd
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn convo-doctor");
    // Drain both pipes on threads so a large report cannot fill a pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("convo-doctor {args:?} did not finish within {limit:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    let code = status.code().unwrap_or_else(|| {
        panic!(
            "convo-doctor {args:?} was killed by a signal (a crash): {}",
            String::from_utf8_lossy(&stderr)
        )
    });
    let stderr = String::from_utf8(stderr).expect("stderr is UTF-8");
    assert!(
        !stderr.contains("panicked"),
        "convo-doctor {args:?} panicked: {stderr}"
    );
    Run {
        code,
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr,
    }
}

fn run(args: &[&str]) -> Run {
    run_as(&[], args, Duration::from_secs(60))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Diagnose as JSON; returns the conversations.
fn diagnose_json(path: &Path) -> (Run, Vec<Value>) {
    let r = run(&["diagnose", "--format", "json", "--events", p(path)]);
    assert!(r.code == 0 || r.code == 1, "exit {}: {}", r.code, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json output parses");
    let convs = v["conversations"].as_array().unwrap().clone();
    (r, convs)
}

/// The findings of one conversation as (check, file, message).
fn findings(conv: &Value) -> Vec<(String, String, String)> {
    conv["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Assert a finding of `check` names `file` and mentions `needle`.
fn has_finding(conv: &Value, check: &str, file: &str, needle: &str) {
    let fs = findings(conv);
    assert!(
        fs.iter()
            .any(|(c, f, m)| c == check && f == file && m.contains(needle)),
        "no {check} finding on {file} mentioning {needle:?}: {fs:#?}"
    );
}

/// Every output format also completes on `path`, and the human one carries
/// no raw escape or control character.
fn all_formats_survive(path: &Path) {
    for fmt in ["human", "json", "jsonl"] {
        let r = run(&["diagnose", "--format", fmt, "--events", p(path)]);
        assert!(r.code == 0 || r.code == 1, "{fmt}: exit {}", r.code);
        assert_terminal_safe(&r.stdout);
        assert_terminal_safe(&r.stderr);
    }
}

fn assert_terminal_safe(text: &str) {
    for c in text.chars() {
        let bad = (c.is_control() && c != '\n')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}');
        assert!(
            !bad,
            "raw {:?} reached the output: {}",
            c,
            &text[..text.len().min(2000)]
        );
    }
}

fn event_name(idx: usize) -> String {
    format!("event-{idx:05}-{}.json", eid(idx))
}

#[test]
fn empty_files_are_findings() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push_raw("");
    fs::write(c.dir.join("meta.json"), "").unwrap();
    let (_, convs) = diagnose_json(c.path());
    let conv = &convs[0];
    has_finding(
        conv,
        "unreadable-event",
        &format!("events/{}", event_name(1)),
        "empty (0 bytes)",
    );
    has_finding(conv, "unreadable-state", "meta.json", "empty");
    fs::write(c.dir.join("base_state.json"), "").unwrap();
    let (_, convs) = diagnose_json(c.path());
    has_finding(&convs[0], "unreadable-state", "base_state.json", "empty");
    all_formats_survive(c.path());
}

#[test]
fn truncated_files_are_findings() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push_raw(r#"{"id":"x","kind":"MessageEvent","llm_message":{"role":"us"#);
    let (_, convs) = diagnose_json(c.path());
    has_finding(
        &convs[0],
        "unreadable-event",
        &format!("events/{}", event_name(1)),
        "truncated",
    );
    fs::write(c.dir.join("base_state.json"), r#"{"id":"0123","agent":{"#).unwrap();
    let (_, convs) = diagnose_json(c.path());
    has_finding(
        &convs[0],
        "unreadable-state",
        "base_state.json",
        "truncated",
    );
}

#[test]
fn a_50_mb_event_is_read_and_huge_values_are_clipped() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    // one 50 MB string inside the content
    let huge = "A".repeat(50 * 1024 * 1024);
    c.push_raw(&format!(
        r#"{{"id":"{}","kind":"ObservationEvent","source":"environment","observation":{{"kind":"ExecuteBashObservation","content":"{huge}"}}}}"#,
        eid(1)
    ));
    drop(huge);
    // a 1 MB kind, id and source: quoted in messages, clipped there
    let big = "K".repeat(1024 * 1024);
    c.push_raw(&format!(
        r#"{{"id":"{big}","kind":"{big}","source":"{big}"}}"#
    ));
    let (r, convs) = diagnose_json(c.path());
    assert_eq!(convs[0]["events"]["log_length"], 3);
    has_finding(
        &convs[0],
        "unknown-kind",
        &format!("events/{}", event_name(2)),
        "bytes)",
    );
    assert!(
        r.stdout.len() < 64 * 1024,
        "a huge value reached the report: {} bytes",
        r.stdout.len()
    );
    let h = run(&["diagnose", "--events", p(c.path())]);
    assert!(h.stdout.len() < 64 * 1024, "{} bytes", h.stdout.len());
}

#[test]
fn json_nested_100000_deep_is_an_error_not_a_stack_overflow() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let deep = format!(
        r#"{{"id":"x","kind":"MessageEvent","x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    c.push_raw(&deep);
    let deep_obj = format!(
        r#"{{"kind":"MessageEvent","action":{}1{}}}"#,
        r#"{"a":"#.repeat(100_000),
        "}".repeat(100_000)
    );
    c.push_raw(&deep_obj);
    fs::write(
        c.dir.join("meta.json"),
        format!(r#"{{"id":"x","agent":{}}}"#, "[".repeat(100_000)),
    )
    .unwrap();
    let (_, convs) = diagnose_json(c.path());
    let conv = &convs[0];
    for i in [1, 2] {
        has_finding(
            conv,
            "unreadable-event",
            &format!("events/{}", event_name(i)),
            "not valid JSON",
        );
    }
    has_finding(conv, "unreadable-state", "meta.json", "not valid JSON");
    fs::write(
        c.dir.join("base_state.json"),
        format!(r#"{{"agent":{}}}"#, "{\"a\":".repeat(100_000)),
    )
    .unwrap();
    let (_, convs) = diagnose_json(c.path());
    has_finding(
        &convs[0],
        "unreadable-state",
        "base_state.json",
        "not valid JSON",
    );
}

#[test]
fn invalid_utf8_in_content_and_in_file_names() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let id = eid(1);
    fs::write(
        c.dir.join("events").join(event_name(1)),
        b"{\"id\":\"x\",\"kind\":\"MessageEvent\",\"text\":\"\xff\xfe\"}",
    )
    .unwrap();
    let _ = id;
    // a file named almost like an event, with invalid UTF-8 and an escape
    let bad = OsStr::from_bytes(b"event-00009-abcdef12\xff\x1b[2J\x9b31m.json");
    fs::write(c.dir.join("events").join(bad), "{}").unwrap();
    fs::write(c.dir.join("meta.json"), b"{\"id\":\"\xc3\x28\"}").unwrap();
    let (_, convs) = diagnose_json(c.path());
    let conv = &convs[0];
    has_finding(
        conv,
        "unreadable-event",
        &format!("events/{}", event_name(1)),
        "not valid UTF-8",
    );
    has_finding(conv, "unreadable-state", "meta.json", "not valid UTF-8");
    assert!(
        findings(conv)
            .iter()
            .any(|(c, f, _)| c == "bad-event-filename"
                && f.starts_with("events/event-00009-abcdef12\u{FFFD}")),
        "{:#?}",
        findings(conv)
    );
    all_formats_survive(c.path());

    // a store whose conversation folder name is not UTF-8
    let tmp = tempfile::tempdir().unwrap();
    let conv_dir = tmp
        .path()
        .join(OsStr::from_bytes(b"conv-\xff\x1b]0;owned\x07"));
    fs::create_dir_all(conv_dir.join("events")).unwrap();
    fs::write(conv_dir.join("base_state.json"), "{}").unwrap();
    let (_, convs) = diagnose_json(tmp.path());
    assert_eq!(convs.len(), 1);
    all_formats_survive(tmp.path());
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success());
}

#[test]
fn fifo_socket_and_directory_named_like_events_do_not_block() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    let ev = c.dir.join("events");
    mkfifo(&ev.join(event_name(1)));
    // (a short id: a socket path must fit in 108 bytes)
    let sock_name = "event-00002-abcdef12.json";
    let _sock = std::os::unix::net::UnixListener::bind(ev.join(sock_name)).unwrap();
    fs::create_dir(ev.join(event_name(3))).unwrap();
    // a FIFO as a state file, and as a stray `event-*.json`
    mkfifo(&c.dir.join("meta.json"));
    mkfifo(&ev.join("event-7-x.json"));
    let (_, convs) = diagnose_json(c.path());
    let conv = &convs[0];
    for (name, what) in [
        (event_name(1), "FIFO"),
        (sock_name.to_string(), "socket"),
        (event_name(3), "directory"),
    ] {
        has_finding(conv, "unreadable-event", &format!("events/{name}"), what);
    }
    has_finding(conv, "unreadable-state", "meta.json", "FIFO");
    has_finding(conv, "bad-event-filename", "events/event-7-x.json", "");
    all_formats_survive(c.path());
}

#[test]
fn symlink_loops_do_not_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let conv = store.join("0123456789abcdef0123456789abcdef");
    fs::create_dir_all(conv.join("events")).unwrap();
    fs::write(conv.join("base_state.json"), "{}").unwrap();
    fs::write(
        conv.join("events").join(event_name(0)),
        json!({"id": eid(0), "kind": "MessageEvent"}).to_string(),
    )
    .unwrap();
    // links to themselves, to each other, and back up the tree
    symlink(event_name(1), conv.join("events").join(event_name(1))).unwrap();
    symlink("b", conv.join("events/a")).unwrap();
    symlink("a", conv.join("events/b")).unwrap();
    symlink("..", conv.join("subagents")).unwrap();
    symlink(".", store.join("self")).unwrap();
    symlink("../store", store.join("up")).unwrap();
    let (r, convs) = diagnose_json(&store);
    assert_eq!(convs.len(), 1, "a link was followed: {convs:#?}");
    has_finding(
        &convs[0],
        "unreadable-event",
        &format!("events/{}", event_name(1)),
        "symbolic link",
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let notes = v["summary"]["notes"].to_string();
    assert!(notes.contains("subagents"), "{notes}");
    // the conversation itself as PATH
    let (_, convs) = diagnose_json(&conv);
    assert_eq!(convs.len(), 1);
}

#[test]
fn symlinks_out_of_path_are_reported_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir_all(outside.join("conv/events")).unwrap();
    let canary = "OUTSIDE-CANARY-7f3a";
    fs::write(
        outside.join("state.json"),
        json!({"id": canary, "agent": {"llm": {"model": canary}}}).to_string(),
    )
    .unwrap();
    fs::write(
        outside.join("event.json"),
        json!({"id": canary, "kind": canary}).to_string(),
    )
    .unwrap();
    fs::write(outside.join("conv/base_state.json"), "{}").unwrap();

    let store = tmp.path().join("store");
    let conv = store.join("0123456789abcdef0123456789abcdef");
    fs::create_dir_all(&conv).unwrap();
    symlink(outside.join("state.json"), conv.join("base_state.json")).unwrap();
    symlink(outside.join("state.json"), conv.join("meta.json")).unwrap();
    let conv2 = store.join("fedcba9876543210fedcba9876543210");
    fs::create_dir_all(conv2.join("events")).unwrap();
    fs::write(conv2.join("base_state.json"), "{}").unwrap();
    symlink(
        outside.join("event.json"),
        conv2.join("events").join(event_name(0)),
    )
    .unwrap();
    let conv3 = store.join("00000000000000000000000000000003");
    fs::create_dir_all(&conv3).unwrap();
    fs::write(conv3.join("base_state.json"), "{}").unwrap();
    symlink(outside.join("conv/events"), conv3.join("events")).unwrap();
    symlink(outside.join("conv"), store.join("linked-conversation")).unwrap();

    let (r, convs) = diagnose_json(&store);
    assert!(!r.stdout.contains(canary) && !r.stderr.contains(canary));
    assert_eq!(convs.len(), 3, "{convs:#?}");
    let by_path = |dir: &Path| {
        convs
            .iter()
            .find(|c| c["path"] == p(dir))
            .unwrap_or_else(|| panic!("{} not reported", dir.display()))
            .clone()
    };
    let c1 = by_path(&conv);
    has_finding(&c1, "unreadable-state", "base_state.json", "symbolic link");
    has_finding(&c1, "unreadable-state", "meta.json", "symbolic link");
    has_finding(
        &by_path(&conv2),
        "unreadable-event",
        &format!("events/{}", event_name(0)),
        "symbolic link",
    );
    has_finding(
        &by_path(&conv3),
        "unreadable-event",
        "events/",
        "symbolic link",
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        v["summary"]["notes"]
            .to_string()
            .contains("linked-conversation"),
        "{}",
        v["summary"]
    );
    all_formats_survive(&store);
}

/// Whether this process is denied reading a 000-mode file (not as root).
fn permissions_deny(dir: &Path) -> bool {
    let f = dir.join("probe");
    fs::write(&f, "x").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
    let denied = fs::read(&f).is_err();
    let _ = fs::remove_file(&f);
    denied
}

#[test]
fn permission_denied_on_a_file_and_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let store = tmp.path().join("store");
    let conv = store.join("0123456789abcdef0123456789abcdef");
    fs::create_dir_all(conv.join("events")).unwrap();
    fs::write(conv.join("base_state.json"), "{}").unwrap();
    fs::write(conv.join("meta.json"), "{}").unwrap();
    fs::write(
        conv.join("events").join(event_name(0)),
        json!({"id": eid(0), "kind": "MessageEvent"}).to_string(),
    )
    .unwrap();
    let conv2 = store.join("fedcba9876543210fedcba9876543210");
    fs::create_dir_all(conv2.join("events")).unwrap();
    fs::write(conv2.join("base_state.json"), "{}").unwrap();
    let closed = store.join("closed");
    fs::create_dir_all(closed.join("deeper")).unwrap();
    for d in [&store, &conv, &conv.join("events"), &conv2] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    for f in [
        conv.join("meta.json"),
        conv.join("events").join(event_name(0)),
    ] {
        fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
    }
    fs::set_permissions(conv2.join("events"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(&closed, fs::Permissions::from_mode(0o000)).unwrap();

    // As root, permissions do not deny: run the binary as `nobody` instead.
    let prefix: Vec<&str> = if permissions_deny(tmp.path()) {
        vec![]
    } else if Path::new("/usr/bin/setpriv").exists()
        && Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
            .status()
            .is_ok_and(|s| s.success())
    {
        vec![
            "/usr/bin/setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
    } else {
        eprintln!(
            "note: skipping permission_denied_on_a_file_and_a_directory: running as root \
             and setpriv is unavailable, so permissions do not deny"
        );
        return;
    };
    // Issue 17: what this user cannot read is an error of the scan (exit
    // 2, named on stderr and in the summary), never a finding about the
    // conversation: the server's own user may read it fine.
    let r = run_as(
        &prefix,
        &["diagnose", "--format", "json", p(&store)],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let convs = v["conversations"].as_array().unwrap();
    assert!(convs.is_empty(), "neither is reported: {convs:#?}");
    let errors = v["summary"]["error_messages"].to_string();
    assert_eq!(v["summary"]["errors"], 3, "{errors}");
    for denied in [conv.join("meta.json"), conv2.join("events"), closed.clone()] {
        let msg = format!("cannot read `{}` as uid ", denied.display());
        assert!(errors.contains(&msg), "{msg}: {errors}");
        assert!(r.stderr.contains(&msg), "{msg}: {}", r.stderr);
    }
    assert!(errors.contains(": Permission denied"), "{errors}");
    // an unreadable PATH is a clear error naming it, exit 2
    let r = run_as(
        &prefix,
        &["diagnose", p(&closed.join("deeper"))],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, 2);
    // (the OS's own words, as ripgrep prints them: "Permission denied")
    let err = r.stderr.to_lowercase();
    assert!(err.contains("deeper") && err.contains("permission denied"));
}

/// A temp dir on tmpfs when there is one: the heavy cases write (and
/// delete) hundreds of thousands of entries, which a disk makes slow.
fn fast_tmp() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn two_hundred_thousand_event_files() {
    let tmp = fast_tmp();
    let conv = tmp.path().join("0123456789abcdef0123456789abcdef");
    let ev = conv.join("events");
    fs::create_dir_all(&ev).unwrap();
    fs::write(
        conv.join("base_state.json"),
        common::valid_state(json!({})).to_string(),
    )
    .unwrap();
    let n = 200_000;
    let start = Instant::now();
    for i in 0..n {
        // a legacy chain (no parent_id), with the last one cut off by a gap
        let idx = if i == n - 1 { i + 1 } else { i };
        let body = format!(
            r#"{{"id":"{}","kind":"MessageEvent","source":"user","llm_message":{{"role":"user","content":[]}}}}"#,
            eid(i)
        );
        fs::write(ev.join(format!("event-{idx:05}-{}.json", eid(i))), body).unwrap();
    }
    eprintln!("200,000 events written in {:?}", start.elapsed());
    let start = Instant::now();
    let r = run(&["diagnose", "--format", "jsonl", p(&conv)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let first: Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["events"]["on_disk"], n);
    assert_eq!(first["events"]["log_length"], n - 1);
    assert_eq!(first["events"]["agent_view"], n - 1);
    has_finding(&first, "index-gap", "events/", "");
    eprintln!("200,000 events diagnosed in {:?}", start.elapsed());
}

#[test]
fn a_store_of_fifty_thousand_empty_directories() {
    let tmp = fast_tmp();
    let store = tmp.path().join("store");
    for i in 0..50_000 {
        fs::create_dir_all(store.join(format!("{:02x}/{i:032x}", i % 64))).unwrap();
    }
    let real = store.join("zz").join("0123456789abcdef0123456789abcdef");
    fs::create_dir_all(real.join("events")).unwrap();
    fs::write(real.join("base_state.json"), "{}").unwrap();
    let start = Instant::now();
    let (_, convs) = diagnose_json(&store);
    assert_eq!(convs.len(), 1);
    eprintln!("50,000 directories walked in {:?}", start.elapsed());
}

#[test]
fn duplicate_keys_and_mistyped_parent_ids() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    // Python's json keeps the last of duplicate keys: this is a valid event
    c.push_raw(&format!(
        r#"{{"id":"{}","kind":"Bogus","kind":"MessageEvent","source":"user","source":"agent"}}"#,
        eid(1)
    ));
    c.push_raw(&format!(
        r#"{{"id":"{}","kind":"MessageEvent","parent_id":42}}"#,
        eid(2)
    ));
    c.push_raw(&format!(
        r#"{{"id":"{}","kind":"MessageEvent","parent_id":{{"id":"{}"}}}}"#,
        eid(3),
        eid(0)
    ));
    fs::write(
        c.dir.join("meta.json"),
        r#"{"id":"0123456789abcdef0123456789abcdef","id":"0123456789abcdef0123456789abcdef","tags":{},"tags":{"a":"b"}}"#,
    )
    .unwrap();
    let (_, convs) = diagnose_json(c.path());
    let conv = &convs[0];
    let rows = conv["event_list"].as_array().unwrap();
    assert_eq!(rows[1]["kind"], "MessageEvent");
    assert_eq!(rows[1]["source"], "agent");
    has_finding(
        conv,
        "unreadable-event",
        &format!("events/{}", event_name(2)),
        "`parent_id` is a number",
    );
    has_finding(
        conv,
        "unreadable-event",
        &format!("events/{}", event_name(3)),
        "`parent_id` is an object",
    );
    all_formats_survive(c.path());
}

#[test]
fn escapes_in_kinds_and_names_never_reach_the_terminal() {
    let mut c = Conv::new(json!({}));
    c.push("MessageEvent", None);
    c.push_raw(&format!(
        r#"{{"id":"{}","kind":"Evil\u001b]0;pwned\u0007\u009b2J\u202eKind","source":"\u001b[31mred"}}"#,
        eid(1)
    ));
    fs::write(
        c.dir.join("events/event-00002-abcdef12\x1b[2J.json"),
        r#"{"kind":"MessageEvent"}"#,
    )
    .unwrap();
    fs::write(
        c.dir.join("owner_lease.json"),
        json!({"expires_at": 9.0e15, "owner_host": "h\u{1b}[2Jost\u{9b}", "owner_pid": 1})
            .to_string(),
    )
    .unwrap();
    let r = run(&["--color", "always", "diagnose", "--events", p(c.path())]);
    // colour codes are ours; strip them, then nothing else may remain
    let stripped = strip_sgr(&r.stdout);
    assert_terminal_safe(&stripped);
    assert!(stripped.contains("\\u{1b}"), "{stripped}");
    all_formats_survive(c.path());
}

/// Remove the SGR colour sequences convo-doctor itself writes.
fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(tail.len());
        assert!(
            tail[end..].starts_with('m'),
            "a non-colour escape: {tail:?}"
        );
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn an_unreadable_path_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope\x1b[2J");
    let r = run(&["diagnose", p(&missing)]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nope"), "{}", r.stderr);
    assert_terminal_safe(&r.stderr);
    let file = tmp.path().join("file");
    fs::write(&file, "x").unwrap();
    let r = run(&["diagnose", p(&file)]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is not a directory"), "{}", r.stderr);
    let fifo = tmp.path().join("fifo");
    mkfifo(&fifo);
    let r = run(&["diagnose", p(&fifo)]);
    assert_eq!(r.code, 2);
}

/// An `action` or `observation` that is not an object: the release decides
/// (1.58 refuses it as `model_type`; 1.33.0's `_validate_subtype` crashes
/// with AttributeError, as the real releases do: fuzz_diff.py), and no
/// output quotes the value, in any format or release.
#[test]
fn a_non_object_action_or_observation_is_judged_by_the_release_and_never_quoted() {
    let (_tmp, _store, conv) = common::fixture_copy("clean-tree");
    let mut edited = 0;
    for f in common::event_files(&conv) {
        let mut v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        for key in ["action", "observation"] {
            if v.get(key).is_some_and(Value::is_object) {
                v[key] = Value::from(format!("sk-NEVER-QUOTED-{key}"));
                edited += 1;
            }
        }
        std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    }
    assert!(edited >= 2, "the fixture has an action and an observation");
    for (version, exception) in [("1.58.2", "ValidationError"), ("1.33.0", "AttributeError")] {
        for format in ["human", "json", "jsonl", "markdown", "concise"] {
            let r = run(&[
                "diagnose",
                "--server-version",
                version,
                "--format",
                format,
                "--events",
                p(&conv),
            ]);
            assert!(
                !r.stdout.contains("NEVER") && !r.stderr.contains("NEVER"),
                "{version} {format}"
            );
            if format == "human" {
                assert!(
                    r.stdout
                        .contains(&format!("cannot load this conversation ({exception}")),
                    "{version}: {}",
                    r.stdout
                );
            }
        }
    }
}
