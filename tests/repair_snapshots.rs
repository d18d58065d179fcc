//! `repair --dry-run` human output on every fixture, with and without
//! `--unsafe-fixes`, as snapshots (reviewed by hand against the fixtures'
//! manifest and the real SDK's verdicts in fixtures/repairs.json). A dry run
//! writes nothing, so it runs on the fixtures themselves.

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn snapshot(name: &str, actual: &str) -> Option<String> {
    let path = repo().join("tests/snapshots").join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    (want != actual)
        .then(|| format!("snapshot {name} differs:\n--- want\n{want}\n--- got\n{actual}"))
}

#[test]
fn repair_dry_run_snapshots_on_every_fixture() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fixtures/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut fails = Vec::new();
    for fx in manifest["fixtures"].as_array().unwrap() {
        let name = fx["name"].as_str().unwrap();
        // head-lag's repair depends on file mtimes, which git does not keep
        if name == "head-lag" {
            continue;
        }
        for (suffix, extra) in [("", None), ("-unsafe", Some("--unsafe-fixes"))] {
            let fixture = format!("fixtures/{name}");
            let mut args = vec!["repair", "--dry-run"];
            args.extend(extra);
            args.push(&fixture);
            let out = Command::new(env!("CARGO_BIN_EXE_convo-doctor"))
                .args(&args)
                .current_dir(repo())
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let text = format!(
                "$ convo-doctor {}\n(exit {})\n{}",
                args.join(" "),
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout)
            );
            fails.extend(snapshot(&format!("dry-run{suffix}-{name}"), &text));
        }
    }
    assert!(
        fails.is_empty(),
        "(UPDATE_SNAPSHOTS=1 cargo test --test repair_snapshots, then review)\n{}",
        fails.join("\n")
    );
}
