//! `live-lease`: a server holds the conversation; its gate refuses every
//! repair while it does.

use convo_doctor::fix::{self, Refusal, RepairOptions};
use convo_doctor::store::fsread::DirFd;

use super::{common, findings};

fn plan(conv: &std::path::Path) -> fix::Plan {
    let all = |_: &str| true;
    let dir = DirFd::open(conv).unwrap();
    fix::plan(
        &dir,
        conv.display().to_string(),
        &RepairOptions {
            server_version: None,
            selected: &all,
            unsafe_fixes: true,
        },
    )
}

/// The fixture's lease (another host, expiring in 2036): an info finding,
/// and the gate refuses the repair as `in-use`, whatever `--only` selects.
#[test]
fn a_live_lease_is_found_and_refuses_the_repair() {
    let (_tmp, _store, conv) = common::fixture_copy("live-lease");
    assert!(findings(&conv, "1.58.2").contains(&("live-lease".into(), "info".into())));
    let p = plan(&conv);
    let refused = p.refused.clone().expect("refused");
    assert_eq!(refused.kind, Refusal::InUse);
    assert!(
        refused
            .why
            .starts_with("in use by vm pid 1 (owner_lease.json is live)"),
        "{}",
        refused.why
    );
    assert!(!p.has_changes());
}

/// An expired lease holds nothing: no finding, no refusal.
#[test]
fn an_expired_lease_does_not_refuse() {
    let (_tmp, _store, conv) = common::fixture_copy("live-lease");
    let file = conv.join("owner_lease.json");
    let mut lease: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    lease["expires_at"] = serde_json::Value::from(1_000_000_000.0);
    std::fs::write(&file, lease.to_string()).unwrap();
    assert!(!findings(&conv, "1.58.2")
        .iter()
        .any(|(c, _)| c == "live-lease"));
    assert_eq!(plan(&conv).refused, None);
}

/// Through the binary: a lease held by another host's live process refuses
/// `repair` (exit 1, the owner named) and nothing changes.
#[test]
fn a_live_lease_refuses_the_repair() {
    let (tmp, store, conv) = common::fixture_copy("false-root");
    common::live_lease(&conv, 12345);
    let before = common::snapshot(&store);
    let (code, out, _) = common::run(
        &[
            "repair",
            "--backup-dir",
            common::s(&tmp.path().join("b")),
            common::s(&store),
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("refused: in use by another-host"), "{out}");
    assert!(
        common::snapshot(&store) == before,
        "a refused repair changed something"
    );
}
