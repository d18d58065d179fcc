//! Issue 26: the JSONL-session planners at 100,000 lines. A Claude Code
//! session and a Codex rollout of 100,000 lines, damaged all along, are
//! diagnosed (with `--events`' rows), planned, applied and proven through
//! the library, as `diagnose` and `repair` do. Not timed: each is built so
//! that a step that scans the lines (or the links walked) once per damaged
//! line takes minutes (10^10 steps), where a linear one takes a second or
//! two of the debug build.

use std::path::Path;

use convo_doctor::{claude, codex};

const LINES: usize = 100_000;

/// Every check, and `--events`' rows.
const ALL: convo_doctor::sessions::Ask = convo_doctor::sessions::Ask {
    selected: &|_: &str| true,
    event_list: true,
};

fn uuid(n: usize) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// A Claude Code session of `LINES` lines: a chain of prompts and answers
/// whose second half is stamped a millisecond apart and names phantom
/// parents (but its first record) (the client re-attaches each to the newest record stamped no
/// later, not walked yet: a scan past the walked ones was quadratic), with
/// false roots, sidechain records, uuids written twice and unpaired tool
/// calls in the first half.
fn claude_session() -> Vec<u8> {
    let mut out = String::new();
    let mut prev: Option<String> = None;
    for n in 0..LINES {
        let id = uuid(n);
        let half = n >= LINES / 2;
        let stamp = if half {
            let ms = n - LINES / 2;
            format!(
                "2026-12-03T10:{:02}:{:02}.{:03}Z",
                ms / 60_000 % 60,
                ms / 1000 % 60,
                ms % 1000
            )
        } else {
            format!(
                "2026-12-02T{:02}:{:02}:{:02}.{:03}Z",
                n / 3_600_000 % 24,
                n / 60_000 % 60,
                n / 1000 % 60,
                n % 1000
            )
        };
        let parent = match (n, half) {
            (0, _) => "null".to_string(),
            (_, true) if n != LINES / 2 => format!("\"{}\"", uuid(10_000_000 + n)),
            (_, false) if n % 97 == 0 => "null".to_string(),
            _ => format!("\"{}\"", prev.clone().unwrap()),
        };
        let side = !half && n % 13 == 5;
        let (kind, content) = if n % 2 == 0 {
            let c = if !half && n % 41 == 0 {
                format!("[{{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_{n}\",\"content\":\"x\"}}]")
            } else {
                format!("\"prompt {n}\"")
            };
            ("user", c)
        } else if !half && n % 29 == 1 {
            ("assistant", format!("[{{\"type\":\"tool_use\",\"id\":\"toolu_{n}\",\"name\":\"Bash\",\"input\":{{}}}}]"))
        } else {
            (
                "assistant",
                format!("[{{\"type\":\"text\",\"text\":\"answer {n}\"}}]"),
            )
        };
        out.push_str(&format!(
            "{{\"parentUuid\":{parent},\"isSidechain\":{side},\"type\":\"{kind}\",\"message\":{{\"role\":\"{kind}\",\"content\":{content}}},\"uuid\":\"{id}\",\"timestamp\":\"{stamp}\",\"sessionId\":\"s\",\"version\":\"2.1.328\"}}\n"
        ));
        if !side {
            prev = Some(id);
        }
        // a uuid written again with other content, now and then
        if !half && n % 1009 == 3 {
            out.push_str(&format!(
                "{{\"parentUuid\":{parent},\"isSidechain\":false,\"type\":\"{kind}\",\"message\":{{\"role\":\"{kind}\",\"content\":\"again {n}\"}},\"uuid\":\"{}\",\"timestamp\":\"{stamp}\",\"sessionId\":\"s\"}}\n",
                uuid(n)
            ));
        }
    }
    out.into_bytes()
}

#[test]
fn a_claude_session_of_100000_lines_with_damage_plans_in_linear_time() {
    let bytes = claude_session();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("s.jsonl");
    std::fs::write(&f, &bytes).unwrap();
    let r = claude::analyze(&f, "s.jsonl".into(), &ALL);
    assert!(r.events.on_disk >= LINES, "{}", r.events.on_disk);
    assert!(r.findings.iter().any(|x| x.check == "claude-broken-parent"));
    assert!(r
        .findings
        .iter()
        .any(|x| x.check == "claude-duplicate-uuid"));
    assert!(r.event_list.as_ref().is_some_and(|l| l.len() >= LINES));
    let s = claude::session::parse(bytes);
    let v = claude::view::build(&s);
    assert!(
        v.broken.len() > LINES / 4,
        "{} broken links",
        v.broken.len()
    );
    let relinks = claude::repair::plan(&s, &v);
    assert!(relinks.len() > LINES / 4, "{} re-links", relinks.len());
    let fixed = claude::repair::apply(&s, &relinks).unwrap();
    let after = claude::session::parse(fixed);
    let w = claude::view::build(&after);
    assert!(w.resent.len() > v.resent.len(), "the repair resends more");
}

const ROLLOUT: &str = "rollout-2026-12-03T06-55-54-0199e0b1-6d3a-7c2e-9f4b-2a1c3d4e5f60.jsonl";

/// A Codex rollout of `LINES` lines: messages, calls and outputs, with every
/// seventh line written twice, invalid lines, outputs without their call,
/// and a compaction whose replacement history names 30,000 of the lines
/// before it (each matched to its line: a scan of the lines per item was
/// quadratic).
fn codex_rollout() -> Vec<u8> {
    let id = "0199e0b1-6d3a-7c2e-9f4b-2a1c3d4e5f60";
    let mut lines: Vec<String> = vec![format!(
        "{{\"timestamp\":\"2026-12-03T06:55:54.000Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"timestamp\":\"2026-12-03T06:55:54.000Z\",\"cwd\":\"/w\",\"originator\":\"codex_exec\",\"cli_version\":\"0.171.0\"}}}}"
    )];
    let mut payloads = Vec::new();
    let mut n = 0;
    while lines.len() < LINES - 2 {
        n += 1;
        let payload = match n % 4 {
            0 => format!("{{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{{}}\",\"call_id\":\"call_{n}\"}}"),
            1 => format!("{{\"type\":\"function_call_output\",\"call_id\":\"call_{}\",\"output\":\"ok {n}\"}}", n - 1),
            2 => format!("{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"prompt {n}\"}}]}}"),
            _ => format!("{{\"type\":\"function_call_output\",\"call_id\":\"call_none_{n}\",\"output\":\"orphan\"}}"),
        };
        if payloads.len() < 30_000 {
            payloads.push(payload.clone());
        }
        let line = format!("{{\"timestamp\":\"2026-12-03T07:00:00.000Z\",\"type\":\"response_item\",\"payload\":{payload}}}");
        lines.push(line.clone());
        if n % 7 == 0 {
            lines.push(line);
        }
        if n % 11 == 0 {
            lines.push("{\"timestamp\":\"2026-12-03T07:00:00.000Z\",\"type\":\"resp".into());
        }
    }
    lines.push(format!(
        "{{\"timestamp\":\"2026-12-03T08:00:00.000Z\",\"type\":\"compacted\",\"payload\":{{\"message\":\"\",\"replacement_history\":[{}]}}}}",
        payloads.join(",")
    ));
    lines.push("{\"timestamp\":\"2026-12-03T08:00:01.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"after\"}]}}".into());
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

#[test]
fn a_codex_rollout_of_100000_lines_with_damage_plans_in_linear_time() {
    let bytes = codex_rollout();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join(ROLLOUT);
    std::fs::write(&f, &bytes).unwrap();
    let r = codex::analyze(&f, ROLLOUT.into(), &ALL);
    assert_eq!(r.events.on_disk, LINES);
    assert!(r.load_error.is_none(), "{:?}", r.load_error);
    for check in ["codex-duplicate-line", "codex-invalid-line"] {
        assert!(r.findings.iter().any(|x| x.check == check), "{check}");
    }
    assert!(r.event_list.as_ref().is_some_and(|l| l.len() >= LINES - 10));
    let a = codex::Analysis::of(codex::session::parse(bytes), Path::new(ROLLOUT));
    assert!(a.view.compaction.is_some());
    assert!(a.view.resent.len() >= 30_000, "{}", a.view.resent.len());
    let edits = codex::repair::plan(&a.rollout, &a.view, a.file.as_ref(), &|_: &str| true);
    assert!(edits.len() > LINES / 10, "{} edits", edits.len());
    let out = codex::repair::apply(&a.rollout, &edits).unwrap();
    let id = a.file.as_ref().map(|f| f.0.as_str());
    codex::repair::prove(&a.view, &edits, &out, id).unwrap();
    assert!(out.len() < a.rollout.bytes.len());
}
