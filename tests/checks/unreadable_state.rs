//! `unreadable-state`: base_state.json or meta.json empty, truncated, not
//! UTF-8 or not a JSON object, or base_state.json missing while events
//! exist. Its repair (unsafe, base_state.json only) puts back the whole copy
//! an interrupted atomic write left beside it (or rebuilds the state from
//! meta.json's agent, servers before 1.43); an unreadable meta.json is left
//! to a human.

use serde_json::{json, Value};

use super::common::{agent_view, Conv};
use super::{found, plan, repair_here};

/// Two chained messages.
fn conv() -> Conv {
    let mut c = Conv::new(json!({}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    c
}

#[test]
fn a_cut_state_or_meta_is_found_and_a_missing_meta_is_not() {
    let c = conv();
    // an SDK-only conversation has no meta.json: normal
    assert!(found(c.path(), "unreadable-state").is_empty());
    let whole = std::fs::read(c.path().join("base_state.json")).unwrap();
    std::fs::write(c.path().join("base_state.json"), &whole[..whole.len() / 2]).unwrap();
    assert_eq!(found(c.path(), "unreadable-state"), ["error"]);
    assert!(agent_view(c.path(), "1.58.2").is_err());

    let c = conv();
    std::fs::write(c.path().join("meta.json"), "{\"id\": ").unwrap();
    assert_eq!(found(c.path(), "unreadable-state"), ["error"]);
    // the SDK itself does not read meta.json
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1]);
}

/// base_state.json cut short, and the whole state an interrupted atomic
/// write left as `.base_state.json.<random>.tmp`: `--unsafe-fixes` puts it
/// back, and the conversation loads.
#[test]
fn the_whole_copy_beside_it_takes_its_place_with_unsafe_fixes_only() {
    let c = conv();
    let path = c.path().join("base_state.json");
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(c.path().join(".base_state.json.k3j4h5q.tmp"), &whole).unwrap();
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let (_, out) = plan(c.path(), "unreadable-state", &[]);
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: unreadable-state ×1 (unsafe: --unsafe-fixes)"),
        "{out}"
    );
    repair_here(c.path(), &["--unsafe-fixes"]);
    let now: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let was: Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(now, was);
    assert!(found(c.path(), "unreadable-state").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1]);
}

/// With nothing in the folder to take the state from, nothing is written.
#[test]
fn without_a_copy_or_an_agent_the_state_is_not_invented() {
    let c = conv();
    let path = c.path().join("base_state.json");
    std::fs::write(&path, "").unwrap();
    assert_eq!(found(c.path(), "unreadable-state"), ["error"]);
    let (_, out) = plan(c.path(), "unreadable-state", &["--unsafe-fixes"]);
    assert!(!out.contains("would fix"), "{out}");
    assert_eq!(std::fs::read(&path).unwrap(), b"");
}
