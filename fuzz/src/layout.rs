//! How the store_reader target turns bytes into a conversation folder, and
//! runs the whole pipeline on it (shared with the regression test, which
//! includes this file).
//!
//! The input is split on `0x00`: part 0 is `base_state.json`, part 1
//! `meta.json`, part 2 `owner_lease.json`, every later part an event file whose
//! first byte picks its name (index, id and a few malformed spellings) and
//! whose rest is its content. At most 16 events.

use std::path::Path;

use convo_doctor::render::{renderer, Format, Summary};
use convo_doctor::report::{analyze, Options};

const IDS: &[&str] = &[
    "e0000000-0000-4000-8000-000000000000",
    "e0000000-0000-4000-8000-000000000001",
    "e0000000-0000-4000-8000-000000000002",
    "abcdef12",
];

fn event_name(pos: usize, sel: u8) -> String {
    let idx = match sel & 0x07 {
        0..=4 => pos,
        5 => pos + 1,
        6 => pos.saturating_sub(1),
        _ => (sel >> 3) as usize,
    };
    let id = IDS[((sel >> 3) as usize) % IDS.len()];
    match sel >> 6 {
        0 | 1 => format!("event-{idx:05}-{id}.json"),
        2 => format!("event-{idx:06}-{id}.json"),
        _ => format!("event-{idx}-{id}.json"),
    }
}

pub fn write_folder(dir: &Path, data: &[u8]) {
    let events = dir.join("events");
    let _ = std::fs::create_dir_all(&events);
    for (i, part) in data.split(|&b| b == 0).take(3 + 16).enumerate() {
        let (path, body) = match i {
            0 => (dir.join("base_state.json"), part),
            1 => (dir.join("meta.json"), part),
            2 => (dir.join("owner_lease.json"), part),
            _ => {
                let Some((&sel, rest)) = part.split_first() else {
                    continue;
                };
                (events.join(event_name(i - 3, sel)), rest)
            }
        };
        let _ = std::fs::write(path, body);
    }
}

pub fn analyze_bytes(data: &[u8]) {
    let base = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm")
    } else {
        tempfile::tempdir()
    };
    let Ok(tmp) = base else { return };
    let dir = tmp.path().join("0123456789abcdef0123456789abcdef");
    write_folder(&dir, data);
    let all = |_: &str| true;
    for version in ["1.58.2", "1.33.0", "1.29.3"] {
        let opts = Options {
            version: version.parse().unwrap(),
            version_given: false,
            selected: &all,
            event_list: true,
        };
        let report = analyze(&dir, "conv".into(), &opts);
        for (format, color) in [
            (Format::Human, false),
            (Format::Human, true),
            (Format::Json, false),
            (Format::Jsonl, false),
        ] {
            let mut out = Vec::new();
            let mut r = renderer(format, color);
            let mut summary = Summary::default();
            summary.add(&report);
            r.conversation(&mut out, &report).unwrap();
            r.finish(&mut out, &summary).unwrap();
            let text = String::from_utf8(out).unwrap();
            if format != Format::Human {
                for line in text.lines().filter(|l| !l.is_empty()) {
                    if format == Format::Jsonl {
                        serde_json_check(line);
                    }
                }
                if format == Format::Json {
                    serde_json_check(&text);
                }
            }
        }
    }
}

fn serde_json_check(text: &str) {
    // the JSON renderers always write valid JSON
    assert!(
        serde_json::from_str::<serde_json::Value>(text).is_ok(),
        "invalid JSON output: {text}"
    );
}
