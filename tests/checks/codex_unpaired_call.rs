//! `codex-unpaired-call`: a tool output without its call (dropped by the
//! client), a call without its output (answered by the client).

use super::codex_common::{findings, fixture, repaired};

#[test]
fn an_output_without_its_call_and_a_call_without_its_output_are_warnings() {
    for case in ["output-without-call", "call-without-output"] {
        let f = findings(fixture(&format!("{case}.jsonl")));
        assert_eq!(f.len(), 1, "{case}: {f:?}");
        assert_eq!(
            (f[0].0.as_str(), f[0].1.as_str()),
            ("codex-unpaired-call", "warning"),
            "{case}"
        );
        // no automatic repair
        assert!(
            repaired(fixture(&format!("{case}.jsonl"))).is_none(),
            "{case}"
        );
    }
}
