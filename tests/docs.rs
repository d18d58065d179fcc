//! docs/ stays true to the code: docs/checks.md is generated from the checks.

use std::path::Path;

#[test]
fn checks_md_matches_the_checks() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/checks.md");
    let want = convo_doctor::commands::explain::markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/checks.md is stale: run `UPDATE_DOCS=1 cargo test --test docs`"
    );
}
