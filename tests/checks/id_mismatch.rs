//! `id-mismatch`: base_state.json's `id` differs (dashes aside) from
//! meta.json's, or without meta.json from the 32-hex folder name; the SDK
//! refuses to resume ("Conversation ID mismatch"). When meta.json and the
//! folder name agree, the repair (safe) sets base_state.json's id to theirs;
//! with the folder name as the only witness only `--unsafe-fixes` does; when
//! meta.json disagrees with the folder, a human decides.

use serde_json::{json, Value};

use super::common::{agent_view, Conv};
use super::{found, plan, repair_here};

/// The folder's id (Conv's folder name) and its dashed form.
const FOLDER: &str = "0123456789abcdef0123456789abcdef";
const DASHED: &str = "01234567-89ab-cdef-0123-456789abcdef";
/// Another conversation's id.
const OTHER: &str = "fedcba98-7654-3210-fedc-ba9876543210";

/// Two chained messages; base_state.json's id `state_id`; meta.json with
/// `meta_id` when given.
fn conv(state_id: &str, meta_id: Option<&str>) -> Conv {
    let mut c = Conv::new(json!({"id": state_id}));
    let a = c.push("MessageEvent", None);
    c.push("MessageEvent", Some(&a));
    if let Some(id) = meta_id {
        std::fs::write(c.path().join("meta.json"), json!({"id": id}).to_string()).unwrap();
    }
    c
}

fn state_id(c: &Conv) -> Value {
    let state: Value =
        serde_json::from_slice(&std::fs::read(c.path().join("base_state.json")).unwrap()).unwrap();
    state["id"].clone()
}

#[test]
fn another_id_in_the_state_is_found_and_the_folders_own_is_not() {
    let c = conv(OTHER, None);
    assert_eq!(found(c.path(), "id-mismatch"), ["error"]);
    assert!(agent_view(c.path(), "1.58.2").is_err());
    assert!(found(conv(DASHED, None).path(), "id-mismatch").is_empty());
    assert!(found(conv(DASHED, Some(FOLDER)).path(), "id-mismatch").is_empty());
}

/// meta.json and the folder name agree against base_state.json: two
/// records against one, a safe repair.
#[test]
fn meta_json_and_the_folder_agreeing_set_the_state_id_safely() {
    let c = conv(OTHER, Some(FOLDER));
    assert_eq!(found(c.path(), "id-mismatch"), ["error"]);
    let (code, out) = plan(c.path(), "id-mismatch", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("would fix: id-mismatch ×1"), "{out}");
    repair_here(c.path(), &[]);
    assert_eq!(state_id(&c), DASHED);
    assert!(found(c.path(), "id-mismatch").is_empty());
    assert_eq!(agent_view(c.path(), "1.58.2").unwrap(), vec![0, 1]);
}

/// Without meta.json the folder name is the only witness (a folder renamed
/// by hand looks the same): only `--unsafe-fixes` sets the id.
#[test]
fn the_folder_name_alone_needs_unsafe_fixes() {
    let c = conv(OTHER, None);
    let (_, out) = plan(c.path(), "id-mismatch", &[]);
    assert!(
        out.contains("nothing to repair")
            && out.contains("left: id-mismatch ×1 (unsafe: --unsafe-fixes)"),
        "{out}"
    );
    assert_eq!(state_id(&c), OTHER);
    repair_here(c.path(), &["--unsafe-fixes"]);
    assert_eq!(state_id(&c), DASHED);
    assert!(found(c.path(), "id-mismatch").is_empty());
}

/// meta.json names a third id: which one is right is not the folder's to
/// say; nothing is changed, even with `--unsafe-fixes`.
#[test]
fn meta_json_disagreeing_with_the_folder_is_left_to_a_human() {
    let c = conv(OTHER, Some("aaaaaaaabbbbccccddddeeeeeeeeeeee"));
    assert_eq!(found(c.path(), "id-mismatch"), ["error"]);
    let (_, out) = plan(c.path(), "id-mismatch", &["--unsafe-fixes"]);
    assert!(!out.contains("would fix"), "{out}");
    assert_eq!(state_id(&c), OTHER);
}
