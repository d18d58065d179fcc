#![allow(clippy::print_stderr)]

//! Inputs the fuzz targets (fuzz/) crashed on, or that found a bug, replayed
//! through the same code in a normal `cargo test`. Files live in
//! `tests/regressions/<target>/`; a new crash from `fuzz/artifacts/<target>/`
//! is added by copying it there.

use std::fs;
use std::path::Path;

use convo_doctor::store::event::{parse_event, parse_event_name};

#[path = "../fuzz/src/layout.rs"]
mod layout;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/regressions")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name() != ".gitkeep")
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        fs::read(e.path()).unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn event_reader(data: &[u8]) {
    let _ = parse_event(data);
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = parse_event_name(name, true);
        let _ = parse_event_name(name, false);
    }
}

/// Inputs that found bugs before the fuzzers ran, kept as byte literals.
const EVENT_CASES: &[&[u8]] = &[
    // serde quoted a string `action` in its error message (a secret leak)
    br#"{"kind":"ActionEvent","action":"sk-secret"}"#,
    // duplicate keys take the Value path
    br#"{"kind":"A","kind":"B","observation":"x"}"#,
    b"{\"kind\":\"K\",\"x\":\"\\",
    b"\xef\xbb\xbf{\"kind\":\"K\"}",
    b"{",
    b"[",
    b"",
];

#[test]
fn event_reader_regressions() {
    for case in EVENT_CASES {
        event_reader(case);
    }
    let deep = format!(r#"{{"kind":"K","x":{}}}"#, "[".repeat(100_000));
    assert!(parse_event(deep.as_bytes()).is_err());
    for (name, data) in inputs("event_reader") {
        eprintln!("event_reader: {name}");
        event_reader(&data);
    }
}

#[test]
fn store_reader_regressions() {
    layout::analyze_bytes(b"{}\0{}\0{}\0\x00{\"kind\":\"MessageEvent\"}");
    for (name, data) in inputs("store_reader") {
        eprintln!("store_reader: {name}");
        layout::analyze_bytes(&data);
    }
}
