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

/// docs/repair.md's tables between the `repairs` markers are generated from
/// each check's declared repair.
#[test]
fn repair_md_matches_the_declarations() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/repair.md");
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    let (open, close) = (
        "<!-- repairs: generated from the checks' declarations -->\n",
        "<!-- /repairs -->",
    );
    let (head, rest) = have
        .split_once(open)
        .expect("docs/repair.md lost its repairs marker");
    let (_, tail) = rest
        .split_once(close)
        .expect("docs/repair.md lost its /repairs marker");
    let want = format!(
        "{head}{open}{}{close}{tail}",
        convo_doctor::fix::repair_markdown()
    );
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/repair.md's repair table is stale: run `UPDATE_DOCS=1 cargo test --test docs`"
    );
}

/// `repair --help` lists every safe and unsafe repair by its check id, from
/// the same declarations, and names each manual check.
#[test]
fn repair_help_lists_the_declared_repairs() {
    use clap::CommandFactory;
    let mut cmd = convo_doctor::cli::Cli::command();
    let repair = cmd.find_subcommand_mut("repair").unwrap();
    let help = repair.render_long_help().to_string();
    for c in convo_doctor::checks::REGISTRY {
        let r = c.repair();
        assert!(
            help.contains(c.id()),
            "repair --help does not name {}",
            c.id()
        );
        if r.applicability != convo_doctor::checks::Applicability::Manual {
            let first: String = r
                .what
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ");
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains(&first),
                "repair --help lacks `{first}` ({})",
                c.id()
            );
        }
    }
    assert!(help.contains("--unsafe-fixes"));
    assert!(
        !help.contains("--accept-ambiguous"),
        "the deprecated alias stays hidden"
    );
}
