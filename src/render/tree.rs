//! `diagnose --tree`: each conversation's event tree drawn for the terminal,
//! root first, like `git log --graph`. The model (trunk, groups, collapsed
//! runs) is `crate::analysis::tree`; the Markdown report draws the same
//! model as a Mermaid graph (`render::markdown`).

use std::fmt::Write as _;

use owo_colors::OwoColorize;

use super::sanitize;
pub use crate::analysis::tree::{Anchor, Group, Item, Node, Reason, Tree, ENDS, MAX_GROUPS};
use crate::checks::{ix, plural};
use crate::report::ConversationReport;

/// The terminal drawing, two spaces in, one line per row. Every untrusted
/// string is redacted, then escaped.
pub fn draw(r: &ConversationReport, t: &Tree, color: bool) -> String {
    let clean = |s: &str| sanitize(&r.redactor.redact(s));
    let faint = |s: String| if color { s.dimmed().to_string() } else { s };
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str("  ");
        out.push_str(&s);
        out.push('\n');
    };
    if t.loads {
        line(faint(
            "tree, root first (● the agent sees it, ○ it does not):".into(),
        ));
    } else {
        line(format!(
            "tree: the SDK cannot load this conversation{}, so the agent sees none of it; drawn as it lies on disk (○):",
            t.load_error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
        ));
    }
    if t.trunk.is_empty() && t.groups.is_empty() {
        line(faint("(no events)".into()));
    }
    let dot = match (t.loads, color) {
        (true, true) => "●".green().to_string(),
        (true, false) => "●".to_string(),
        (false, true) => "○".red().to_string(),
        (false, false) => "○".to_string(),
    };
    for g in t.at(Anchor::Above) {
        line(faint(format!("○ {}", clean(&g.line()))));
    }
    if t.at(Anchor::Above).next().is_some() {
        let first = t.trunk.first().map_or(0, |n| n.idx);
        line(format!(
            "✂ {} starts a new root (parent __root__): the agent does not see the events above",
            ix(first)
        ));
    }
    for item in t.items() {
        match item {
            Item::Run { from, to } => line(faint(format!("┆ {}", t.run_text(from, to)))),
            Item::Event(p) => {
                let node = &t.trunk[p];
                if node.dangling {
                    line(format!("✗ parent of {} is not in the log", ix(node.idx)));
                }
                let mut s = format!("{dot} {}", clean(&t.node_text(p)));
                let mut tags = node.tags.clone();
                if node.fails {
                    tags.push(format!(
                        "✗ the SDK fails here{}",
                        t.load_error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ));
                }
                if !tags.is_empty() {
                    let _ = write!(s, "  ← {}", tags.join("; "));
                }
                line(s);
                for g in t.at(Anchor::At(p)) {
                    line(faint(format!("├─○ {}", clean(&g.line()))));
                }
            }
        }
    }
    for g in t.at(Anchor::Apart) {
        line(faint(format!("○ {}", clean(&g.line()))));
    }
    if let Some((groups, events)) = t.more {
        line(faint(format!(
            "○ … {} in {} more ranges not drawn (--events lists them all)",
            plural(events, "event", "events"),
            groups
        )));
    }
    out
}
