//! The Claude Code checks: declared like every other check (id, text,
//! repair; listed in [`crate::checks::REGISTRY`] so `explain`, `--only`,
//! the docs and `--help` know them), run on a session by [`run`], not on an
//! OpenHands folder (their [`Check::run`] finds nothing there).

use crate::checks::{Applicability, Finding, Repair, Severity};
use crate::sessions::checks::session_check;

use super::session::Session;
use super::view::{Broken, View};

session_check! {
    BrokenParent,
    BROKEN_PARENT = "claude-broken-parent",
    summary: "Claude Code: a record's parentUuid is null, names no record or loops, so `--resume` leaves history out or relies on the client's re-attachment",
    explain: "Claude Code resumes a session by walking `parentUuid` back from its \
leaf (the last `last-prompt`'s record, or the last record written when it \
descends from that one), and resends only that chain. Read in the client's \
code and measured with it (2.1.328, fixtures/claude/sessions, fixtures/claude/fuzz): \
a `parentUuid` of null on any record but the first (and a compaction's boundary) \
is a root, and everything written before it is not resent: an error, \"resume \
sends N of M: K cut off at line L\". A `parentUuid` that names no record (a \
phantom) or a record already walked (a loop) the client re-attaches to the \
record stamped last no later than the record's own, if that one is at most \
5 s older: a warning when that loses nothing (the session depends on the \
client's heuristic), an error when it skips messages or finds nothing (the \
environment attachment stamped before the first prompt: the prompt is lost; \
a reply whose prompt is gone and the turn before more than 5 s older). A \
null that costs nothing (a summary record right after its compaction's \
boundary) is a warning. The repair re-links the record to the record written \
before it in the file (the previous record of the main \
chain), the link the client wrote. See docs/claude-code.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::Links,
        what: "Claude Code sessions: re-link the record to the record written before it in the file (the previous main-chain record), so `--resume` resends the whole history",
        guards: "the file is a Claude Code session; the previous main-chain record exists and is not the record's own descendant; only `parentUuid` of that line changes (proven by parsing both)",
        planner: None,
    },
}

session_check! {
    InvalidLine,
    INVALID_LINE = "claude-invalid-line",
    summary: "Claude Code: a session line is not a JSON object (the client skips it; a truncated last line loses that record)",
    explain: "A line of a Claude Code session that is not a JSON object. Measured with \
the real client (2.1.328): it skips the line and resumes; a record cut short \
at the end of the file (a write interrupted) is lost, and when it was the \
last reply the client resends the prompt before it and answers for it \
itself (\"No response requested.\"). No automatic repair yet: the line's \
bytes are all that is left of the record. See docs/claude-code.md.",
    repair: Repair::manual(
        "the line's bytes are all that is left of the record; the client already skips it",
    ),
}

session_check! {
    DuplicateUuid,
    DUPLICATE_UUID = "claude-duplicate-uuid",
    summary: "Claude Code: one uuid written on several lines with different content (the client resends the last one written)",
    explain: "Two lines of a Claude Code session carry the same `uuid` and different \
content. Measured with the real client (2.1.328): it resends the content \
of the last line written, in the place of the first in the chain. Which \
content is right is a judgement: no automatic repair. See \
docs/claude-code.md.",
    repair: Repair::manual("which of the contents is right is a judgement the file cannot make"),
}

session_check! {
    UnpairedTool,
    UNPAIRED_TOOL = "claude-unpaired-tool",
    summary: "Claude Code: a tool_use without its tool_result on the resumed chain, or a result without its call (the client drops the message)",
    explain: "A message on the chain `--resume` resends holds a `tool_use` whose \
`tool_result` is not on the chain, or a `tool_result` whose `tool_use` is not \
(a record deleted, cut off by a broken link, or a call interrupted). The API \
refuses unpaired tool blocks; measured with the real client (2.1.328, the \
differential fuzzer's cases in fixtures/claude/fuzz): it drops such a message \
from what it resends. A call the chain ends on (a client killed while the \
tool ran) it answers itself when it resumes: it writes a `tool_result` \
\"[Tool call interrupted: the session ended before this call's result was \
recorded ...]\" (`is_error`, `toolDenialKind: interrupted`) and resends the \
call (a warning too: another client version may not). The repair writes \
that same answer for each call on the chain whose result is nowhere in the \
file, on a new line right after the call, and re-links the call's child on \
the chain onto it, so the client resends the call with its answer \
(fixtures/claude/tools). A result whose call is not on the chain is not \
repaired: putting the call back would mean writing the model's words. See \
docs/claude-code.md.",
    repair: Repair {
        applicability: Applicability::Safe,
        phase: crate::edit::Phase::Links,
        what: "Claude Code sessions: answer a call whose result was never recorded the way the client does (a tool_result \"[Tool call interrupted: ...]\", is_error) on a new line after it, its child re-linked onto the answer, so `--resume` resends the call",
        guards: "the file is a Claude Code session; the call is on the resumed chain, alone in its record, and no line holds its result; its child on the chain names it as parent; only the child's `parentUuid` changes and the new line parses to the answer; the answered session resends all it did plus the call",
        planner: None,
    },
}

/// Every Claude Code finding of a session, with its view.
pub fn run(s: &Session, v: &View, selected: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if selected(BROKEN_PARENT) {
        broken_parent(s, v, &mut out);
    }
    if selected(UNPAIRED_TOOL) {
        for &i in &v.unpaired {
            let r = s.lines[i].record().expect("a record line");
            let what = if r.tool_uses.is_empty() {
                "a tool_result whose tool_use is not on the resumed chain"
            } else {
                "a tool_use whose tool_result is not on the resumed chain"
            };
            let mut f = Finding::new(
                UNPAIRED_TOOL,
                Severity::Warning,
                s.line_name(i),
                format!("{what}: the client drops this message when it resumes"),
            );
            // a result without its call is not repaired (the call would be
            // the model's words, which the file no longer holds)
            f.fixable &= !r.tool_uses.is_empty();
            out.push(f);
        }
        for &i in &v.interrupted {
            out.push(Finding::new(
                UNPAIRED_TOOL,
                Severity::Warning,
                s.line_name(i),
                "the chain ends on a tool_use whose result was never recorded (a client stopped while the tool ran): the client (2.1.328) answers it itself as interrupted when it resumes".to_string(),
            ));
        }
    }
    if selected(INVALID_LINE) {
        for (i, reason, truncated) in s.invalid() {
            let msg = if truncated {
                format!("the last line ends without a newline and is cut short ({reason}): the record a crash was writing is lost; the client skips it")
            } else {
                format!("{reason}: the client skips this line")
            };
            out.push(Finding::new(
                INVALID_LINE,
                Severity::Warning,
                s.line_name(i),
                msg,
            ));
        }
    }
    if selected(DUPLICATE_UUID) {
        let mut first: std::collections::HashMap<&str, (usize, u64)> = Default::default();
        for (i, r) in s.records() {
            let Some(u) = r.uuid.as_deref().filter(|_| r.in_tree()) else {
                continue;
            };
            match first.get(u) {
                None => {
                    first.insert(u, (i, r.content_hash));
                }
                Some(&(j, h)) if h != r.content_hash => out.push(Finding::new(
                    DUPLICATE_UUID,
                    Severity::Warning,
                    s.line_name(i),
                    format!(
                        "uuid `{}` was written before at {} with other content: the client resends this line's content in its place",
                        s.redactor.redact(u),
                        s.line_name(j)
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

fn broken_parent(s: &Session, v: &View, out: &mut Vec<Finding>) {
    let rec = |i: usize| s.lines[i].record().expect("a record line");
    let n = v.resent.len();
    let m = v.messages.len() - v.compacted.len();
    for link in &v.broken {
        let r = rec(link.at);
        let what = match r.kind.as_str() {
            _ if r.is_compact_boundary() => "a compaction's boundary",
            "user" if r.role.is_some() => "a user record",
            "assistant" => "an assistant record",
            "attachment" => "an attachment",
            "system" => "a system record",
            _ => "a record",
        };
        // the messages written before this record (in the file) the walk
        // does not resend: what this link costs
        // (`lost` is in file order)
        let lost_here = v.lost.partition_point(|&j| j < link.at);
        let how = match (link.why, link.to) {
            (_, Some(to)) => format!("the client (2.1.328) re-attaches it to {}", s.line_name(to)),
            (Broken::FalseRoot, None) => "the client's walk ends there".to_string(),
            (_, None) => {
                "the client finds nothing to re-attach it to: its walk ends there".to_string()
            }
        };
        let (severity, effect) = if lost_here > 0 {
            (
                Severity::Error,
                format!(
                    "{how}; resume sends {n} of {m} messages, {} cut off at {}",
                    lost_here,
                    s.line_name(link.at)
                ),
            )
        } else {
            (
                Severity::Warning,
                format!("{how}, losing nothing now (another client version may not be as kind)"),
            )
        };
        out.push(Finding::new(
            BROKEN_PARENT,
            severity,
            s.line_name(link.at),
            format!("on {what}, {}: {effect}", link.why.words()),
        ));
    }
}
