//! `not-listed`: an agent-server folder that the server of `--server-version`
//! leaves out of its conversation list, with the rule of that release that
//! drops it. Judged here against what the real servers listed; the rules
//! one by one, the coercions and the counts are tests/listing.rs's subject.
//! No repair of its own: the finding names the file that decides, and where
//! that is another check's finding (an unreadable state, a lease) its repair
//! applies.

use super::listing_fixture::{folders, root};
use super::{findings, plan};

/// Every folder of the stores the real 1.58.2 server wrote (and the one
/// whose state breaks its search): reported exactly when that server did
/// not list it, and both outcomes occur.
#[test]
fn reported_exactly_where_the_real_1_58_2_server_did_not_list() {
    let mut seen = (0, 0);
    for store in ["1.58.2", "breaker-1.58.2"] {
        for (case, folder, listed) in folders(store, "1.58.2") {
            let got: Vec<String> = findings(&root().join(store).join(&folder), "1.58.2")
                .into_iter()
                .filter(|(c, _)| c == "not-listed")
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got.is_empty(), listed, "{store}/{case}: {got:?}");
            if listed {
                seen.0 += 1;
            } else {
                seen.1 += 1;
            }
        }
    }
    assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
}

/// The folder without meta.json: every release skips it, and `repair`
/// does not invent one.
#[test]
fn a_folder_without_meta_json_is_not_listed_and_nothing_is_repaired() {
    let (_, folder, listed) = folders("1.58.2", "1.58.2")
        .into_iter()
        .find(|(case, _, _)| case == "no-meta")
        .unwrap();
    assert!(!listed);
    let conv = root().join("1.58.2").join(&folder);
    assert!(!conv.join("meta.json").exists());
    let (_, out) = plan(&conv, "not-listed", &["--unsafe-fixes"]);
    assert!(out.contains("nothing to repair"), "{out}");
}
