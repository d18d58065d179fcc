//! `shadowed`: two or more folders of one conversations directory whose
//! meta.json carry the same `id`; the agent-server shows at most one (the
//! folder named after the id). No automatic repair. The first test moved
//! here from tests/listing.rs.

use convo_doctor::report::{analyze, Options};

use super::found;
use super::listing_fixture::{manifest, root};

fn opts() -> Options<'static> {
    Options {
        version: "1.58.2".parse().unwrap(),
        version_given: false,
        selected: &|_: &str| true,
        event_list: false,
    }
}

#[test]
fn the_copy_and_the_original_are_both_told_about_the_shadow() {
    let m = manifest();
    let st = &m["stores"]["1.58.2"];
    let folder = |case: &str| {
        st["folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["case"] == case)
            .unwrap()["folder"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let opts = opts();
    let (ok, copy) = (folder("ok"), folder("shadow"));
    let orig = analyze(&root().join("1.58.2").join(&ok), ok.clone(), &opts);
    let dup = analyze(&root().join("1.58.2").join(&copy), copy.clone(), &opts);
    let msg = |r: &convo_doctor::report::ConversationReport| {
        r.findings
            .iter()
            .find(|f| f.check == "shadowed")
            .map(|f| f.message.clone())
            .unwrap_or_default()
    };
    assert!(
        msg(&orig).contains(&copy) && msg(&orig).contains("shows this folder"),
        "{}",
        msg(&orig)
    );
    assert!(
        msg(&dup).contains(&format!("shows folder `{ok}`")),
        "{}",
        msg(&dup)
    );
    assert_eq!((orig.listed, dup.listed), (Some(true), Some(false)));
}

/// The same folder alone in a store of its own has no copy to be shadowed by.
#[test]
fn a_folder_alone_is_not_shadowed() {
    let m = manifest();
    let ok = m["stores"]["1.58.2"]["folders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"] == "ok")
        .unwrap()["folder"]
        .as_str()
        .unwrap()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join(&ok);
    super::common::copy_tree(&root().join("1.58.2").join(&ok), &alone);
    assert!(found(&alone, "shadowed").is_empty());
    assert!(!found(&root().join("1.58.2").join(&ok), "shadowed").is_empty());
}
