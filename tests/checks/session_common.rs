//! Shared by the claude-* and codex-* homes (claude_common, codex_common):
//! a fixture of a format's recorded sessions, and findings as (check,
//! severity, where).

use convo_doctor::checks::Finding;

/// `fixtures/<format>/sessions/<name>`, recorded with the real client.
pub fn fixture(format: &str, name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(format)
        .join("sessions")
        .join(name);
    std::fs::read(p).unwrap()
}

/// Findings as (check, severity, where).
pub fn triples(found: Vec<Finding>) -> Vec<(String, String, String)> {
    found
        .into_iter()
        .map(|f| {
            (
                f.check.to_string(),
                f.severity.as_str().to_string(),
                f.file.clone(),
            )
        })
        .collect()
}

/// `(check, severity)` pairs only.
pub fn kinds(triples: Vec<(String, String, String)>) -> Vec<(String, String)> {
    triples.into_iter().map(|(c, s, _)| (c, s)).collect()
}

/// The one finding of `found`, of `check` and `severity`: where it is.
pub fn only<'a>(found: &'a [(String, String, String)], check: &str, severity: &str) -> &'a str {
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        (check, severity),
        "{found:?}"
    );
    &found[0].2
}
