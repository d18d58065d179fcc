//! `diagnose --tree` and `--format markdown` (issue 11, point 4).
//!
//! - The tree's trunk is the real SDK's active branch on every fixture that
//!   loads (fixtures/manifest.json `sdk_verdict.active_branch_ids`, recorded
//!   from the released SDK), and every event of the log is drawn exactly once
//!   (trunk, collapsed run or group).
//! - Snapshots of the drawing on the fixtures that show each shape (false
//!   root, abandoned branch, cannot load, a truncated event, a misplaced recovery
//!   error); each was checked by hand against `--events` of the same fixture.
//! - A 5,000-event conversation fits in a screenful, with counts computed by
//!   hand.
//! - Injections (Mermaid, Markdown, HTML) and an API key in kinds, sources
//!   and file names never reach the Markdown raw; the Mermaid is checked for
//!   structure (every edge's ids declared, labels quoted with entity codes
//!   only, one graph per conversation with findings, the size bounds).
//!
//! The snapshots are insta's (tests/snapshots/tree_markdown__*.snap): a
//! drift fails the test; `cargo insta review` shows and accepts it, or
//! `INSTA_UPDATE=always cargo test --test tree_markdown` rewrites them for a
//! review of the git diff by hand.

mod common;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::{eid, required_fields, run, valid_state, without_code_spans};
use convo_doctor::render::tree::{self, Anchor};
use convo_doctor::report::Options;
use convo_doctor::version::NEWEST;
use serde_json::{json, Value};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Assert `text` against insta's snapshot `name`; false when it differs
/// (insta has said how, and outside CI written `name`'s `.snap.new`), so
/// that one run reports every drifted snapshot, not only the first.
fn matches(name: &str, text: &str) -> bool {
    std::panic::catch_unwind(|| insta::assert_snapshot!(name, text)).is_ok()
}

fn manifest() -> Vec<Value> {
    let m: Value =
        serde_json::from_str(&fs::read_to_string(repo().join("fixtures/manifest.json")).unwrap())
            .unwrap();
    m["fixtures"].as_array().unwrap().clone()
}

/// idx → the event's id (its `id` field, else the id in its file name),
/// from the canonically named event files.
fn ids(conv: &Path) -> HashMap<usize, String> {
    let mut out = HashMap::new();
    for e in fs::read_dir(conv.join("events")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name
            .strip_prefix("event-")
            .and_then(|r| r.strip_suffix(".json"))
        {
            if let Some((n, id)) = rest.split_once('-') {
                if let (5, Ok(i)) = (n.len(), n.parse()) {
                    let inner = fs::read_to_string(e.path())
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .and_then(|v| v["id"].as_str().map(str::to_string));
                    out.insert(i, inner.unwrap_or_else(|| id.to_string()));
                }
            }
        }
    }
    out
}

fn tree_of(dir: &Path) -> (tree::Tree, convo_doctor::report::ConversationReport) {
    let all = |_: &str| true;
    let opts = Options {
        version: NEWEST,
        version_given: false,
        selected: &all,
        event_list: false,
    };
    let r = convo_doctor::report::analyze_tree(dir, dir.display().to_string(), &opts);
    (r.tree.clone().expect("a tree"), r)
}

#[test]
fn the_trunk_is_the_real_sdks_active_branch_and_every_event_is_drawn_once() {
    let mut failures = Vec::new();
    for f in manifest() {
        let name = f["name"].as_str().unwrap();
        let dir = repo().join("fixtures").join(f["path"].as_str().unwrap());
        let verdict = &f["sdk_verdict"];
        if !verdict.is_object() {
            continue;
        }
        let (t, r) = tree_of(&dir);
        let loads = verdict["loads"].as_bool().unwrap();
        if t.loads != loads {
            failures.push(format!(
                "{name}: tree.loads {} but the SDK loads: {loads}",
                t.loads
            ));
        }
        let names = ids(&dir);
        if loads {
            let want: Vec<String> = verdict["active_branch_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            let got: Vec<String> = t.trunk.iter().map(|n| names[&n.idx].clone()).collect();
            if got != want {
                failures.push(format!("{name}: trunk {got:?}, the SDK's branch {want:?}"));
            }
        }
        // every event once: the trunk, then the groups
        let mut seen = HashSet::new();
        for n in &t.trunk {
            if !seen.insert(n.idx) {
                failures.push(format!("{name}: {} drawn twice", n.idx));
            }
        }
        for g in &t.groups {
            for &i in &g.events {
                if !seen.insert(i) {
                    failures.push(format!("{name}: {i} drawn twice"));
                }
            }
        }
        // the log, all of it, and the files past its gap: what `--events` lists
        let more = t.more.map_or(0, |m| m.1);
        let log = r.events.log_length;
        let past_gap = names.keys().filter(|&&i| i > log).count();
        if (0..log).any(|i| !seen.contains(&i)) && more == 0 {
            failures.push(format!("{name}: an event of the log is not drawn"));
        }
        if seen.len() + more != log + past_gap {
            failures.push(format!(
                "{name}: {} events drawn, {log} in the log and {past_gap} past its gap",
                seen.len() + more,
            ));
        }
        // the collapsed runs and the items cover the trunk in order
        let mut next = 0;
        for item in t.items() {
            let (a, b) = match item {
                tree::Item::Event(p) => (p, p),
                tree::Item::Run { from, to } => (from, to),
            };
            if a != next || b < a {
                failures.push(format!("{name}: items skip or repeat at {a}"));
            }
            next = b + 1;
        }
        if next != t.trunk.len() {
            failures.push(format!("{name}: items end at {next} of {}", t.trunk.len()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// (fixture, what to check by hand in the snapshot)
const TREE_SNAPSHOTS: &[&str] = &[
    // 00000,00001,00003,00004 are "before the root at 00008" in --events;
    // 00002, 00005–00007, 00009 are state-sync artifacts; 00008, 00010 seen
    "false-root",
    // 00003–00004 "branch left at 00002"
    "abandoned-branch",
    // KeyError at 00004, whose parent is missing; 00000–00003 a chain apart
    "dangling-parent",
    // 00002 truncated: the walk from 00004 passes it
    "truncated-event",
    // 00004 cut off by the recovery error 00006 hanging off 00001
    "misparented-recovery-error",
];

#[test]
fn tree_snapshots() {
    let mut fails = Vec::new();
    for name in TREE_SNAPSHOTS {
        let fixture = format!("fixtures/{name}");
        let (code, out, err) = run(&["diagnose", "--tree", &fixture], &[]);
        let _ = err;
        let text = format!("$ convo-doctor diagnose --tree {fixture}\n(exit {code})\n{out}");
        let snap = format!("tree-{name}");
        if !matches(&snap, &text) {
            fails.push(snap);
        }
    }
    for name in ["false-root", "abandoned-branch", "dangling-parent"] {
        let fixture = format!("fixtures/{name}");
        let (code, out, _) = run(&["diagnose", "--format", "markdown", &fixture], &[]);
        let text = format!(
            "<!-- $ convo-doctor diagnose --format markdown {fixture} (exit {code}) -->\n{out}"
        );
        let snap = format!("markdown-{name}");
        if !matches(&snap, &text) {
            fails.push(snap);
        }
    }
    assert!(
        fails.is_empty(),
        "snapshots differ: {} (review with `cargo insta review`, or \
         `INSTA_UPDATE=always cargo test --test tree_markdown` and the git diff)",
        fails.join(", ")
    );
}

#[test]
fn tree_lines_match_the_views() {
    // false-root: the two events the SDK sees, nothing else on the trunk
    let (_, out, _) = run(&["diagnose", "--tree", "fixtures/false-root"], &[]);
    let trunk: Vec<&str> = out.lines().filter(|l| l.starts_with("  ● ")).collect();
    assert_eq!(trunk.len(), 2, "{out}");
    assert!(
        trunk[0].starts_with("  ● 00008  MessageEvent  user  ← root: a false root"),
        "{out}"
    );
    assert!(
        trunk[1].contains("00010") && trunk[1].ends_with("← leaf (HEAD)"),
        "{out}"
    );
    assert!(
        out.contains("○ 4 events cut off by a false root at 00008: 00000–00001, 00003–00004"),
        "{out}"
    );
    // abandoned-branch: the branch hangs off 00002, between it and 00005
    let (_, out, _) = run(&["diagnose", "--tree", "fixtures/abandoned-branch"], &[]);
    let at = out.find("● 00002").unwrap();
    let branch = out.find("├─○ 2 events on an abandoned branch").unwrap();
    let next = out.find("● 00005").unwrap();
    assert!(at < branch && branch < next, "{out}");
    // head-lag (not a snapshot: its message depends on mtimes, which git
    // does not keep): 00004 hangs off the stored HEAD 00003
    let (_, out, _) = run(&["diagnose", "--tree", "fixtures/head-lag"], &[]);
    assert!(
        out.contains("● 00003  ObservationEvent  environment  ← leaf (HEAD)\n  ├─○ 1 event written after the stored HEAD, which never moved to them: 00004\n"),
        "{out}"
    );
    // dangling-parent cannot load: drawn from disk, nothing as seen
    let (_, out, _) = run(&["diagnose", "--tree", "fixtures/dangling-parent"], &[]);
    assert!(
        out.contains("the SDK cannot load this conversation (KeyError)"),
        "{out}"
    );
    assert!(!out.contains('●'), "{out}");
    assert!(out.contains("✗ parent of 00004 is not in the log"), "{out}");
    assert!(out.contains("○ 4 events not linked to this path"), "{out}");
    // --tree is the human format's: JSON is unchanged and says nothing of it
    let (_, plain, _) = run(
        &["diagnose", "--format", "json", "fixtures/false-root"],
        &[],
    );
    let (_, with, err) = run(
        &[
            "diagnose",
            "--format",
            "json",
            "--tree",
            "fixtures/false-root",
        ],
        &[],
    );
    assert_eq!(plain, with);
    assert!(
        err.contains("--tree draws in the human format only"),
        "{err}"
    );
}

/// A conversation folder in `store` whose events are `events`
/// (idx, parent index or None, kind).
fn write_conv(store: &Path, n: usize, events: &[(usize, Option<usize>, &str)]) -> PathBuf {
    let folder = format!("{n:032x}");
    let dir = store.join(&folder);
    fs::create_dir_all(dir.join("events")).unwrap();
    let id = format!(
        "{}-{}-{}-{}-{}",
        &folder[..8],
        &folder[8..12],
        &folder[12..16],
        &folder[16..20],
        &folder[20..]
    );
    fs::write(
        dir.join("base_state.json"),
        valid_state(json!({"id": id})).to_string(),
    )
    .unwrap();
    for &(i, parent, kind) in events {
        let mut ev = json!({"id": eid(i), "timestamp": "2026-01-01T00:00:00", "source": "user", "kind": kind});
        if let Some(p) = parent {
            ev["parent_id"] = json!(eid(p));
        }
        if let Value::Object(m) = required_fields(kind) {
            for (k, v) in m {
                ev[k] = v;
            }
        }
        fs::write(
            dir.join(format!("events/event-{i:05}-{}.json", eid(i))),
            ev.to_string(),
        )
        .unwrap();
    }
    dir
}

#[test]
fn five_thousand_events_fit_in_a_screenful() {
    let tmp = tempfile::tempdir().unwrap();
    // 0 → … → 2500 → 4960 → … → 4999 is the active branch (the leaf is the
    // last event); 2501–4959 is a branch left at 2500.
    let events: Vec<(usize, Option<usize>, &str)> = (0..5000)
        .map(|i| {
            let parent = match i {
                0 => None,
                4960 => Some(2500),
                _ => Some(i - 1),
            };
            (i, parent, "MessageEvent")
        })
        .collect();
    let dir = write_conv(tmp.path(), 1, &events);
    let (_, out, _) = run(&["diagnose", "--tree", dir.to_str().unwrap()], &[]);
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("tree, root first"))
        .take_while(|l| !l.is_empty())
        .collect();
    // heading, 3 + run + 2500 + branch + run + 3
    assert_eq!(lines.len(), 11, "{out}");
    // 2,501 + 40 on the trunk: 0–2, …2,497…, 2500, …37…, 4997–4999
    assert!(lines.contains(&"  ┆ … 2497 events: 00003–02499 …"), "{out}");
    assert!(lines.contains(&"  ┆ … 37 events: 04960–04996 …"), "{out}");
    assert!(
        lines.contains(&"  ├─○ 2459 events on an abandoned branch (navigate_to/fork): 02501–04959"),
        "{out}"
    );
    let (_, md, _) = run(
        &["diagnose", "--format", "markdown", dir.to_str().unwrap()],
        &[],
    );
    let graphs = mermaid_blocks(&md);
    assert_eq!(graphs.len(), 1);
    let nodes = graphs[0].lines().filter(|l| l.contains("[\"")).count();
    assert_eq!(nodes, 10, "{}", graphs[0]); // 7 events, 2 runs, 1 branch
}

/// The ```mermaid blocks of a report.
fn mermaid_blocks(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in md.lines() {
        match (&mut cur, line) {
            (None, "```mermaid") => cur = Some(String::new()),
            (Some(_), "```") => out.push(cur.take().unwrap()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    assert!(cur.is_none(), "an unclosed mermaid block");
    out
}

/// Every line of a graph is one of the statements the renderer writes, every
/// label a quoted string of safe characters and entity codes, every edge
/// between declared ids. Returns the problems.
fn check_graph(g: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let mut declared = HashSet::new();
    let mut edges = Vec::new();
    let id_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
    let label_ok = |s: &str| {
        let s = s.replace("<br/>", " ");
        // entity codes only: `#` starts `#NNN;`
        let mut rest = s.as_str();
        while let Some(i) = rest.find('#') {
            let tail = &rest[i + 1..];
            let end = tail.find(';').unwrap_or(0);
            if end == 0 || !tail[..end].chars().all(|c| c.is_ascii_digit()) {
                return false;
            }
            rest = &tail[end + 1..];
        }
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " .,:_/()+=-#;".contains(c))
    };
    for (n, line) in g.lines().enumerate() {
        if n == 0 {
            if line != "flowchart TD" {
                bad.push(format!("first line {line:?}"));
            }
            continue;
        }
        let l = line.strip_prefix("  ").unwrap_or("");
        if l.starts_with("classDef ") {
            continue;
        }
        if let Some((id, rest)) = l.split_once("[\"").or_else(|| l.split_once("([\"")) {
            let (label, tail) = rest.rsplit_once("\"]").unwrap_or(("", ""));
            let tail = tail.trim_start_matches(')');
            let id = id.trim_end_matches('(');
            if !id_ok(id) || !label_ok(label) || !tail.starts_with(":::") {
                bad.push(format!("node {line:?}"));
            }
            declared.insert(id.to_string());
            continue;
        }
        let parts: Vec<&str> = l.split(' ').collect();
        match parts.as_slice() {
            [a, "-->" | "-.->", b] => edges.push((a.to_string(), b.to_string())),
            [a, "-.", ..] if l.ends_with(&format!(" .-x {}", parts[parts.len() - 1])) => {
                let label = l
                    .split_once("-. \"")
                    .and_then(|(_, r)| r.rsplit_once("\" .-x"))
                    .map_or("\"", |x| x.0);
                if !label_ok(label) {
                    bad.push(format!("edge label {line:?}"));
                }
                edges.push((a.to_string(), parts[parts.len() - 1].to_string()));
            }
            _ => bad.push(format!("unexpected line {line:?}")),
        }
    }
    for (a, b) in edges {
        for id in [a, b] {
            if !declared.contains(&id) {
                bad.push(format!("edge to undeclared {id}"));
            }
        }
    }
    bad
}

#[test]
fn every_graph_of_the_fixtures_is_well_formed_and_bounded() {
    let (_, md, _) = run(&["diagnose", "--format", "markdown", "fixtures"], &[]);
    let (_, json, _) = run(&["diagnose", "--format", "json", "fixtures"], &[]);
    let doc: Value = serde_json::from_str(&json).unwrap();
    let convs = doc["conversations"].as_array().unwrap();
    let with: Vec<&Value> = convs
        .iter()
        .filter(|c| {
            c["events"]["agent_view"].is_null() || !c["findings"].as_array().unwrap().is_empty()
        })
        .collect();
    assert!(
        with.len() > 25,
        "the fixtures have {} conversations with findings",
        with.len()
    );
    let graphs = mermaid_blocks(&md);
    assert_eq!(graphs.len(), 25, "the first 25 are drawn");
    for g in &graphs {
        let bad = check_graph(g);
        assert!(bad.is_empty(), "{bad:?}\n{g}");
    }
    // each drawn conversation's section has exactly one graph, in order
    let sections: Vec<&str> = md
        .split("\n## ")
        .skip(1)
        .filter(|s| !s.starts_with("Summary") && !s.starts_with("More conversations"))
        .collect();
    assert_eq!(sections.len(), 25);
    for (s, c) in sections.iter().zip(&with) {
        // the heading names the folder as a code span (copies as it is)
        assert!(
            s.starts_with(&format!("`{}`", c["path"].as_str().unwrap())),
            "{s}"
        );
        assert_eq!(s.matches("```mermaid").count(), 1, "{s}");
    }
    // the others: one row each, and said so
    let more = md
        .split("## More conversations with findings")
        .nth(1)
        .unwrap();
    let rows = more
        .lines()
        .filter(|l| l.starts_with("| `fixtures/"))
        .count();
    assert_eq!(rows, with.len() - 25);
    let clean = convs.len() - with.len();
    assert!(
        md.contains(&format!(
            "- {clean} conversations without findings that the SDK loads are not shown"
        )),
        "{md}"
    );
    assert!(md.contains("trees are drawn for the first 25 conversations with findings only"));
    // the checker itself rejects what an injection would make
    assert!(!check_graph(
        "flowchart TD\n  t0[\"x\"]:::active\n  click t0 href \"https://e.com\"\n"
    )
    .is_empty());
    assert!(!check_graph("flowchart TD\n  t0[\"a\"] b[\"c\"]:::active\n").is_empty());
    assert!(!check_graph("flowchart TD\n  t0[\"x\"]:::active\n  t0 --> t9\n").is_empty());
}

#[test]
fn injections_and_secrets_never_reach_the_report_raw() {
    const KEY: &str = "sk-proj-Zq8vN3xT5mK2pL9wR4yB7cF1hJ6dG0sA";
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_conv(
        tmp.path(),
        7,
        &[
            (0, None, "MessageEvent"),
            (1, Some(0), "MessageEvent"),
            (2, Some(1), "MessageEvent"),
        ],
    );
    let mut state = valid_state(json!({"id": "00000000-0000-0000-0000-000000000007"}));
    state["agent"]["llm"]["api_key"] = json!(KEY);
    fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
    // a short kind so the key is not clipped away; a source; a file name
    let evil_kind = format!("\"]; click t0 `x` |<script>{KEY}");
    let ev = json!({"id": eid(3), "timestamp": "2026-01-01T00:00:00", "parent_id": eid(2),
        "kind": evil_kind, "source": format!("<img src=x onerror=alert(1)>|{KEY}")});
    fs::write(
        dir.join(format!("events/event-00003-{}.json", eid(3))),
        ev.to_string(),
    )
    .unwrap();
    fs::write(
        dir.join(format!(
            "events/event-00004-\"]; click t2 call alert(1) |<script>`{KEY}.json"
        )),
        "{}",
    )
    .unwrap();
    let p = dir.to_str().unwrap();
    let (code, md, err) = run(&["diagnose", "--format", "markdown", p], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(!md.contains(KEY), "the key in:\n{md}");
    // names from disk (the file name above) are code spans, where nothing is
    // Markdown or HTML (tests/markdown_autolinks.rs renders them with
    // cmark-gfm); everywhere else nothing from disk is raw
    let prose = without_code_spans(&md);
    for raw in [
        "\"];",
        "click t0 `",
        "`x`",
        "<script",
        "<img",
        "|<",
        "alert(1)>",
    ] {
        assert!(!prose.contains(raw), "{raw:?} raw in:\n{md}");
    }
    assert!(
        md.contains("`events/event-00004-"),
        "the file as a code span:\n{md}"
    );
    assert!(md.contains("REDACTED:"), "{md}");
    // every table row has its columns, and no more: no `|` from disk
    for line in md.lines().filter(|l| l.starts_with('|')) {
        // a `|` inside a cell's code span is written `\|` (GFM)
        let n = line.matches('|').count() - line.matches("\\|").count();
        assert!(n == 6 || n == 3 || n == 5, "{n} pipes: {line}");
    }
    let graphs = mermaid_blocks(&md);
    assert_eq!(graphs.len(), 1);
    assert!(
        check_graph(&graphs[0]).is_empty(),
        "{:?}",
        check_graph(&graphs[0])
    );
    // the hostile kind is on the drawn path (the load fails at it)
    assert!(
        graphs[0].contains("#34;#93;#59; click t0 #96;x#96; #124;#60;script#62;"),
        "{}",
        graphs[0]
    );
    // the terminal drawing: the key redacted, nothing that drives a terminal
    let (_, out, _) = run(&["diagnose", "--tree", p], &[]);
    assert!(!out.contains(KEY), "{out}");
    assert!(out.contains("← last event; ✗ the SDK fails here"), "{out}");
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out}");
}

#[test]
fn groups_hang_where_the_views_put_them() {
    // 0 → 1 → 2 (leaf); 3 hangs off 1; 4's parent is missing (detached)
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_conv(
        tmp.path(),
        3,
        &[
            (0, None, "MessageEvent"),
            (1, Some(0), "MessageEvent"),
            (3, Some(1), "MessageEvent"),
            (4, Some(99), "MessageEvent"),
        ],
    );
    // index 2: the leaf, written last in the file order, named in base_state
    let ev = json!({"id": eid(2), "timestamp": "2026-01-01T00:00:00", "source": "user",
        "kind": "MessageEvent", "parent_id": eid(1),
        "llm_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}});
    fs::write(
        dir.join(format!("events/event-00002-{}.json", eid(2))),
        ev.to_string(),
    )
    .unwrap();
    let mut state: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("base_state.json")).unwrap()).unwrap();
    state["leaf_event_id"] = json!(eid(2));
    fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
    let (t, _) = tree_of(&dir);
    assert!(t.loads);
    let trunk: Vec<usize> = t.trunk.iter().map(|n| n.idx).collect();
    assert_eq!(trunk, [0, 1, 2]);
    let g: Vec<(Anchor, Vec<usize>)> = t
        .groups
        .iter()
        .map(|g| (g.anchor, g.events.clone()))
        .collect();
    assert_eq!(
        g,
        [(Anchor::At(1), vec![3]), (Anchor::Apart, vec![4])],
        "{:?}",
        t.groups
    );
}

#[test]
fn past_twelve_groups_the_rest_are_summed_on_one_line() {
    // trunk 0 → … → 40 (the stored HEAD); events 41–60 each hang off 2k
    let tmp = tempfile::tempdir().unwrap();
    let mut events: Vec<(usize, Option<usize>, &str)> = (0..=40)
        .map(|i: usize| (i, i.checked_sub(1), "MessageEvent"))
        .collect();
    for k in 0..20 {
        events.push((41 + k, Some(2 * k), "MessageEvent"));
    }
    let dir = write_conv(tmp.path(), 9, &events);
    let mut state: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("base_state.json")).unwrap()).unwrap();
    state["leaf_event_id"] = json!(eid(40));
    fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
    let (t, _) = tree_of(&dir);
    assert_eq!(t.trunk.len(), 41);
    assert_eq!(t.groups.len(), tree::MAX_GROUPS);
    assert_eq!(t.more, Some((8, 8)));
    let p = dir.to_str().unwrap();
    let (_, out, _) = run(&["diagnose", "--tree", p], &[]);
    assert_eq!(
        out.matches("├─○ 1 event on an abandoned branch").count(),
        12,
        "{out}"
    );
    assert!(
        out.contains("○ … 8 events in 8 more ranges not drawn (--events lists them all)"),
        "{out}"
    );
    let (_, md, _) = run(&["diagnose", "--format", "markdown", p], &[]);
    let graphs = mermaid_blocks(&md);
    assert!(
        check_graph(&graphs[0]).is_empty(),
        "{:?}",
        check_graph(&graphs[0])
    );
    assert!(graphs[0].contains("more[\"8 more events in 8 ranges not drawn\"]"));
}
