//! `claude-unpaired-tool`: a tool_use without its tool_result on the chain
//! resume sends (or the reverse); the client drops that message.

use serde_json::Value;

use super::claude_common::{findings, fixture};
use super::session_common::only;

/// clean.jsonl with the tool_result's line removed and the next record
/// re-parented onto the tool_use: the chain is whole, the pair is not.
fn without_the_tool_result() -> Vec<u8> {
    let text = String::from_utf8(fixture("clean.jsonl")).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let is_result = |r: &Value| {
        r["message"]["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|x| x["type"] == "tool_result"))
    };
    let result = recs.iter().find(|r| is_result(r)).unwrap();
    let (gone, parent) = (result["uuid"].clone(), result["parentUuid"].clone());
    let mut out = String::new();
    for (line, r) in text.lines().zip(&recs) {
        if is_result(r) {
            continue;
        }
        if r["parentUuid"] == gone {
            let mut r = r.clone();
            r["parentUuid"] = parent.clone();
            out.push_str(&serde_json::to_string(&r).unwrap());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn a_tool_use_without_its_result_is_a_warning_on_its_line() {
    let f = findings(without_the_tool_result());
    only(&f, "claude-unpaired-tool", "warning");
    assert!(findings(fixture("clean.jsonl")).is_empty());
}

/// The repair answers the call as the client answers one whose result was
/// never recorded, right after it, and re-links the next record onto the
/// answer: the pair is whole and the finding gone. Only with the check
/// selected.
#[test]
fn a_tool_use_without_its_result_is_answered_by_the_repair() {
    use convo_doctor::claude::repair::{Edit, Sessions, INTERRUPTED};
    use convo_doctor::sessions::repair::Adapter;
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("s.jsonl");
    let damaged = without_the_tool_result();
    std::fs::write(&f, &damaged).unwrap();
    let (o, write) = Sessions::plan(&f, true, &|_| true);
    let (before, after, checks) = write.expect("a repair");
    assert_eq!(before, damaged);
    assert_eq!(checks, vec!["claude-unpaired-tool"]);
    assert!(matches!(o.changes.edits.as_slice(), [Edit::Answered(_)]));
    assert_eq!(
        after.split(|&b| b == b'\n').count(),
        damaged.split(|&b| b == b'\n').count() + 1,
        "one line written"
    );
    assert!(String::from_utf8_lossy(&after).contains(INTERRUPTED));
    assert!(findings(after).is_empty());
    let (_, none) = Sessions::plan(&f, true, &|c| c == "claude-broken-parent");
    assert!(none.is_none(), "not without the check");
}
