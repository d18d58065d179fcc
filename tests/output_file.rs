//! Issue 17, item 4: `-o/--output-file FILE` (written whole, by a rename in
//! FILE's folder, for every format) and `--quiet` (nothing printed when the
//! exit status is 0, for cron).

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::{copy_fixture, fixture, run, s};

const FORMATS: [&str; 6] = [
    "human",
    "concise",
    "json",
    "jsonl",
    "markdown",
    "prometheus",
];

/// A store of `n` copies of the false-root conversation.
fn big_store(n: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let one = tmp.path().join("one");
    copy_fixture("false-root", &one);
    let src = fs::read_dir(&one).unwrap().next().unwrap().unwrap().path();
    for i in 0..n {
        common::copy_tree(
            &src,
            &store.join(format!("{:032x}", 0xc0ffee00_u64 + i as u64)),
        );
    }
    (tmp, store)
}

/// Lines that differ from run to run (timings, timestamps).
fn steady(text: &str) -> String {
    text.lines()
        .filter(|l| {
            !l.starts_with("elapsed ")
                && !l.starts_with("convo_doctor_scan_duration_seconds ")
                && !l.contains("_timestamp_seconds ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn output_file_holds_what_stdout_would_for_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let store = fixture("false-root");
    for format in FORMATS {
        let file = tmp.path().join(format!("report.{format}"));
        let (code, out, err) = run(
            &["diagnose", "--format", format, "-o", s(&file), s(&store)],
            &[],
        );
        assert_eq!(code, 1, "{format}: {err}");
        assert_eq!(out, "", "{format}: nothing on stdout");
        let (code2, want, _) = run(&["diagnose", "--format", format, s(&store)], &[]);
        assert_eq!(code2, 1);
        let got = fs::read_to_string(&file).unwrap();
        assert_eq!(steady(&got), steady(&want), "{format}");
        assert!(got.ends_with('\n'), "{format}");
    }
    // nothing but the reports is left in the folder (no temporary file)
    let mut names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), FORMATS.len(), "{names:?}");
    // repair's report too
    let file = tmp.path().join("repair.json");
    let (code, out, _) = run(
        &[
            "repair",
            "--dry-run",
            "--format",
            "json",
            "--output-file",
            s(&file),
            s(&store),
        ],
        &[],
    );
    assert_eq!((code, out.as_str()), (1, ""));
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["summary"]["totals"]["files"], 1);
}

#[test]
fn output_file_replaces_the_old_one_by_a_rename_never_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("convo_doctor.prom");
    fs::write(&file, "old\n").unwrap();
    // a second name for the old file: writing in place would change it too
    let keep = tmp.path().join("keep");
    fs::hard_link(&file, &keep).unwrap();
    let ino = fs::metadata(&file).unwrap().ino();
    // no temporary directory to fall back on: the temporary file must be
    // made in FILE's own folder (a rename across file systems would fail)
    let (code, _, err) = run(
        &[
            "diagnose",
            "--format",
            "prometheus",
            "-o",
            s(&file),
            s(&fixture("clean-tree")),
        ],
        &[("TMPDIR", "/nonexistent")],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read_to_string(&keep).unwrap(), "old\n");
    assert_ne!(fs::metadata(&file).unwrap().ino(), ino, "a new file");
    assert!(fs::read_to_string(&file)
        .unwrap()
        .contains("convo_doctor_conversations_scanned 1"));
    // a run that stops before scanning (a bad option) leaves FILE alone
    let (code, _, _) = run(
        &[
            "diagnose",
            "--only",
            "no-such-check",
            "-o",
            s(&file),
            s(&fixture("clean-tree")),
        ],
        &[],
    );
    assert_eq!(code, 2);
    assert!(fs::read_to_string(&file).unwrap().contains("scanned 1"));
    // a failed scan is written: it says so
    let (code, _, _) = run(
        &[
            "diagnose",
            "--format",
            "prometheus",
            "-o",
            s(&file),
            "/nonexistent/store",
        ],
        &[],
    );
    assert_eq!(code, 2);
    let metrics = fs::read_to_string(&file).unwrap();
    assert!(
        metrics.contains("\nconvo_doctor_scan_errors 1\n"),
        "{metrics}"
    );
    assert!(!metrics.contains("last_success"), "{metrics}");
    // a folder that does not exist: an error before anything is scanned
    let (code, _, err) = run(
        &[
            "diagnose",
            "-o",
            "/nonexistent/dir/report.txt",
            s(&fixture("clean-tree")),
        ],
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot write `/nonexistent/dir/report.txt`"),
        "{err}"
    );
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// A reader polling FILE while a long report is written sees the old
/// report or the whole new one, never a part.
#[test]
fn a_reader_never_sees_half_a_report() {
    let (tmp, store) = big_store(300);
    let file = tmp.path().join("report.json");
    fs::write(&file, "old").unwrap();
    let mut child = common::bin()
        .args([
            "diagnose",
            "--format",
            "json",
            "-j1",
            "-o",
            s(&file),
            s(&store),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reads = 0;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        let text = fs::read_to_string(&file).unwrap();
        if text != "old" {
            let doc: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("a partial report was visible: {e}"));
            assert_eq!(doc["summary"]["conversations"], 300);
        }
        reads += 1;
        std::thread::sleep(Duration::from_millis(2));
    };
    assert_eq!(status.code(), Some(1));
    assert!(reads > 10, "the run was too short to tell ({reads} reads)");
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["summary"]["conversations"], 300);
}

#[test]
fn quiet_prints_nothing_when_the_exit_status_is_0() {
    let clean = fixture("clean-tree");
    // a warning (--tree ignored by json) is held back too
    let (code, out, err) = run(
        &[
            "diagnose",
            "--quiet",
            "--format",
            "json",
            "--tree",
            s(&clean),
        ],
        &[],
    );
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let (code, out, err) = run(&["repair", "--dry-run", "-q", s(&clean)], &[]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    // exit 1: the whole report, as without --quiet, and the warning
    let bad = fixture("false-root");
    let (code, out, err) = run(
        &["diagnose", "-q", "--tree", "--format", "json", s(&bad)],
        &[],
    );
    assert_eq!(code, 1);
    let (_, want, _) = run(&["diagnose", "--format", "json", s(&bad)], &[]);
    assert_eq!(out, want);
    assert!(
        err.contains("--tree draws in the human format only"),
        "{err}"
    );
    let (code, out, _) = run(&["repair", "--dry-run", "-q", s(&bad)], &[]);
    assert_eq!(code, 1);
    assert!(out.contains("would change 1 file"), "{out}");
    // exit 2: the report and the error
    let (code, out, err) = run(&["diagnose", "-q", "/nonexistent/store"], &[]);
    assert_eq!(code, 2);
    assert!(out.contains("1 scan error"), "{out}");
    assert!(err.contains("/nonexistent/store"), "{err}");
    // a long report is held back whole
    let (_tmp, store) = big_store(50);
    let (code, out, _) = run(&["diagnose", "-q", "--format", "jsonl", s(&store)], &[]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 51);
}
