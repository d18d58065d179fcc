//! `--format markdown`: a redacted report to paste into a ticket or a GitHub
//! issue. A section per conversation with findings (or that cannot load):
//! path, id, server version, listed, the verdict, a findings table, and the
//! event tree as a Mermaid `flowchart`; then the summary.
//!
//! Everything read from disk is untrusted. Each string is redacted first,
//! escaped for the terminal (`render::sanitize`), then for its place:
//! Markdown text gets every character with a meaning (`|`, backticks, `<`,
//! `*`, `[`, …) as an HTML entity; Mermaid labels are always quoted strings
//! where every character outside `[A-Za-z0-9 .,:_/()+=-]` is a Mermaid entity
//! code (`#60;`), and node ids are generated (`t0`, `g1`), so a kind or a
//! file name can neither close a label nor start a `click`, `href`, `%%{init}`
//! or style statement.
//!
//! The size is bounded: [`MAX_DRAWN`] conversations get a section and a
//! graph, the next [`MAX_LISTED`] a row of one table, the rest only count in
//! the summary; clean conversations are counted, not shown. The report says
//! so.
//!
//! Long because: one format escaped for two languages (Markdown text and Mermaid labels); the escaping and its tests stay beside the only code that emits them.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::tree::{Anchor, Item, Reason, Tree};
use super::{sanitize, severity, Renderer, Summary};
use crate::report::ConversationReport;
use crate::secrets::redact_all;

/// Conversations drawn in full (section, findings table, graph).
pub const MAX_DRAWN: usize = 25;
/// Conversations after those listed one row each.
pub const MAX_LISTED: usize = 200;
/// Findings rows per conversation.
pub const MAX_FINDINGS: usize = 40;

/// An untrusted name (a path, an id, a file) as a code span: it reads the
/// same rendered and unrendered, and copies as it is, with no entity and no
/// invisible character in it. Nothing in a code span is Markdown, HTML, an
/// autolink or a mention (CommonMark 6.1, GFM 6.9); the fence is one
/// backtick longer than the longest run inside. `in_table`: a `|` is written
/// `\|`, which GFM reads as `|` inside a cell's code span (GFM example 200).
/// Line breaks become spaces and unsafe characters `\u{..}` (`sanitize`).
pub fn code(s: &str, in_table: bool) -> String {
    let flat: String = s
        .chars()
        .map(|c| if matches!(c, '\n' | '\r') { ' ' } else { c })
        .collect();
    let mut inner = crate::text::sanitize(&flat);
    if in_table {
        inner = inner.replace('|', "\\|");
    }
    let longest = inner.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if inner.is_empty() {
        return "` `".to_string();
    }
    let pad = if inner.starts_with('`') || inner.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{inner}{pad}{fence}")
}

/// Untrusted text for Markdown (a paragraph, a heading or a table cell):
/// every character with a meaning in CommonMark, GFM or HTML as an entity,
/// and no autolink: GitHub turns `https://…`, `www.…` and e-mail addresses
/// into links (cmark-gfm's autolink extension, which sees through entities:
/// `a&#64;b.example` is still a mailto link), and `@name` and `#123` into
/// mentions and references. A zero-width joiner (U+200D, invisible) after
/// the `:` of `scheme:/`, `mailto:` and `xmpp:`, between `www` and its dot,
/// and after every `@` and every `#` before a letter or digit breaks each of
/// them (checked with the real cmark-gfm: fixtures/gfm_autolinks.json).
pub fn md(s: &str) -> String {
    const ZWJ: &str = "&#8205;";
    let chars: Vec<char> = s.chars().collect();
    let ends_with_ci = |i: usize, word: &str| {
        let n = word.chars().count();
        i + 1 >= n
            && chars[i + 1 - n..=i]
                .iter()
                .zip(word.chars())
                .all(|(a, b)| a.eq_ignore_ascii_case(&b))
    };
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // An `_` between two letters or digits opens and closes no
            // emphasis (CommonMark 6.2), so `base_state.json` stays readable.
            '_' if i > 0
                && chars[i - 1].is_alphanumeric()
                && next.is_some_and(char::is_alphanumeric) =>
            {
                out.push('_')
            }
            '|' | '`' | '\\' | '*' | '_' | '[' | ']' | '#' | '~' | '!' | '$' | '{' | '}' | '^'
            | '@' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c if super::is_unsafe_char(c) => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c => out.push(c),
        }
        let breaks = match c {
            ':' => next == Some('/') || ends_with_ci(i, "mailto:") || ends_with_ci(i, "xmpp:"),
            'w' | 'W' => next == Some('.') && ends_with_ci(i, "www"),
            '@' => true,
            '#' => next.is_some_and(|n| n.is_alphanumeric()),
            _ => false,
        };
        if breaks {
            out.push_str(ZWJ);
        }
    }
    out
}

/// Untrusted (or generated) text for a Mermaid label in a quoted string:
/// only `[A-Za-z0-9 .,:_/()+=-]` raw, everything else as `#NNN;`.
pub fn mm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || " .,:_/()+=-".contains(c) {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", c as u32);
        }
    }
    out
}

#[derive(Default)]
pub struct Markdown {
    started: bool,
    drawn: usize,
    listed: usize,
    /// Conversations with findings beyond both bounds.
    unlisted: usize,
    /// Conversations with no finding that loads.
    clean: usize,
}

/// A conversation the report shows: it cannot load or has a finding.
fn worth_showing(r: &ConversationReport) -> bool {
    r.events.agent_view.is_none() || !r.findings.is_empty()
}

impl Markdown {
    fn header(&mut self, s: &mut String) {
        if !self.started {
            self.started = true;
            let _ = writeln!(
                s,
                "# convo-doctor report\n\nconvo-doctor {} · `diagnose --format markdown` · secrets redacted\n",
                env!("CARGO_PKG_VERSION")
            );
            let _ = writeln!(
                s,
                "Each tree is drawn root at the top: green, the agent's branch (red when the SDK cannot load it, drawn as on disk); dashed red, events cut off by a new root; amber, abandoned branches; blue, detached events; grey, unreadable files and state-sync artifacts; dashed white, collapsed runs.\n"
            );
        }
    }
}

fn clean(r: &ConversationReport, s: &str) -> String {
    md(&sanitize(&r.redactor.redact(s)))
}

/// A name of the conversation's (path, id, file) as a code span.
fn name(r: &ConversationReport, s: &str, in_table: bool) -> String {
    code(&r.redactor.redact(s), in_table)
}

fn label(r: &ConversationReport, s: &str) -> String {
    mm(&sanitize(&r.redactor.redact(s)))
}

impl Renderer for Markdown {
    fn conversation(&mut self, w: &mut dyn Write, r: &ConversationReport) -> io::Result<()> {
        if !worth_showing(r) {
            self.clean += 1;
            return Ok(());
        }
        let mut s = String::new();
        self.header(&mut s);
        if self.drawn < MAX_DRAWN {
            self.drawn += 1;
            section(&mut s, r);
        } else if self.listed < MAX_LISTED {
            if self.listed == 0 {
                let _ = writeln!(
                    s,
                    "## More conversations with findings\n\nOnly the first {MAX_DRAWN} are drawn; these are listed without their trees.\n\n| conversation | worst | findings | verdict |\n|---|---|---|---|"
                );
            }
            self.listed += 1;
            let worst = severity(r).map_or("-", |x| x.as_str());
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                name(r, &r.path, true),
                worst,
                r.findings.len(),
                clean(r, &r.verdict)
            );
        } else {
            self.unlisted += 1;
        }
        w.write_all(r.redactor.redact(&s).as_bytes())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let mut t = String::new();
        self.header(&mut t);
        if self.listed > 0 {
            t.push('\n');
        }
        let _ = writeln!(t, "## Summary\n");
        let _ = writeln!(
            t,
            "- {} scanned: {} clean, {} with findings, {} cannot load",
            crate::checks::plural(s.conversations, "conversation", "conversations"),
            s.clean,
            s.with_findings,
            s.cannot_load
        );
        let _ = writeln!(
            t,
            "- {} on disk, {} the agents cannot see",
            crate::checks::plural(s.events_on_disk, "event", "events"),
            s.events_orphaned
        );
        let _ = writeln!(t, "- {} fixable with `convo-doctor repair`", s.fixable);
        if s.fixable_unsafe > 0 {
            let _ = writeln!(
                t,
                "- {} more fixable with `convo-doctor repair --unsafe-fixes`",
                s.fixable_unsafe
            );
        }
        if !s.by_check.is_empty() {
            let mut checks: Vec<(&&str, &usize)> = s.by_check.iter().collect();
            checks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let _ = writeln!(t, "\n| check | findings |\n|---|---|");
            for (c, k) in checks {
                let _ = writeln!(t, "| {c} | {k} |");
            }
        }
        t.push('\n');
        let mut said = Vec::new();
        if self.clean > 0 {
            said.push(format!(
                "{} without findings that the SDK loads {} not shown",
                crate::checks::plural(self.clean, "conversation", "conversations"),
                if self.clean == 1 { "is" } else { "are" }
            ));
        }
        if self.listed > 0 {
            said.push(format!(
                "trees are drawn for the first {MAX_DRAWN} conversations with findings only"
            ));
        }
        if self.unlisted > 0 {
            said.push(format!(
                "{} more with findings are not listed (`convo-doctor diagnose --format concise` lists every finding)",
                self.unlisted
            ));
        }
        if let Some(shard) = &s.shard {
            said.push(format!(
                "shard {shard}: only this shard's conversations were scanned"
            ));
        }
        if s.skipped_unmodified > 0 {
            said.push(format!(
                "{} not modified since the cutoff were not scanned",
                s.skipped_unmodified
            ));
        }
        for x in &said {
            let _ = writeln!(t, "- {x}");
        }
        for note in &s.notes {
            let _ = writeln!(t, "- note: {}", md(&sanitize(&redact_all(note))));
        }
        if s.errors > 0 && s.failed {
            let _ = writeln!(
                t,
                "\n**The run failed ({}): this report is not the answer.**\n",
                crate::checks::plural(s.errors, "error", "errors")
            );
        } else if s.errors > 0 {
            let _ = writeln!(
                t,
                "\n**{}: not everything could be read, so this report is incomplete.**\n",
                crate::checks::plural(s.errors, "scan error", "scan errors")
            );
        }
        if s.errors > 0 {
            for e in &s.error_messages {
                let _ = writeln!(t, "- {}", md(&sanitize(&redact_all(e))));
            }
            if s.errors > s.error_messages.len() {
                let _ = writeln!(t, "- … {} more", s.errors - s.error_messages.len());
            }
        }
        w.write_all(redact_all(&t).as_bytes())?;
        w.flush()
    }
}

fn section(s: &mut String, r: &ConversationReport) {
    let _ = writeln!(s, "## {}\n", name(r, &r.path, false));
    let listed = match r.listed {
        Some(true) => "yes",
        Some(false) => "no (see not-listed)",
        None => "n/a (no server catalogs it)",
    };
    let agent = r.events.agent_view.map_or("cannot load".to_string(), |n| {
        crate::checks::plural(n, "event", "events")
    });
    let _ = writeln!(
        s,
        "**id** {} · **server version** {} · **listed by agent-server** {listed} · **events on disk** {} · **agent's branch** {agent}\n",
        name(r, &r.id, false),
        clean(r, &r.server_version),
        r.events.on_disk
    );
    let _ = writeln!(s, "**Verdict:** {}\n", clean(r, &r.verdict));
    if !r.findings.is_empty() {
        let _ = writeln!(
            s,
            "| severity | check | file | message | fixable |\n|---|---|---|---|---|"
        );
        for f in r.findings.iter().take(MAX_FINDINGS) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                f.severity.as_str(),
                f.check,
                if f.file.is_empty() {
                    "-".to_string()
                } else {
                    name(r, &f.file, true)
                },
                clean(r, &f.message),
                if f.fixable {
                    "yes"
                } else if f.fixable_unsafe {
                    "with --unsafe-fixes"
                } else {
                    "no"
                }
            );
        }
        if r.findings.len() > MAX_FINDINGS {
            let _ = writeln!(
                s,
                "\n{} more findings not shown (`--format concise` lists them all).",
                r.findings.len() - MAX_FINDINGS
            );
        }
        s.push('\n');
    }
    if let Some(t) = &r.tree {
        s.push_str("```mermaid\n");
        s.push_str(&mermaid(r, t));
        s.push_str("```\n\n");
    }
}

/// The classes of the graph.
const CLASSES: &[&str] = &[
    "classDef active fill:#dcfce7,stroke:#15803d,color:#14532d",
    "classDef disk fill:#fef2f2,stroke:#b91c1c,color:#450a0a",
    "classDef fails fill:#b91c1c,stroke:#7f1d1d,color:#ffffff",
    "classDef collapsed fill:#ffffff,stroke:#9ca3af,color:#374151,stroke-dasharray:3 3",
    "classDef cutoff fill:#fee2e2,stroke:#dc2626,color:#7f1d1d,stroke-dasharray:5 3",
    "classDef abandoned fill:#fef3c7,stroke:#d97706,color:#78350f",
    "classDef detached fill:#e0e7ff,stroke:#4f46e5,color:#1e1b4b",
    "classDef unreadable fill:#e5e7eb,stroke:#374151,color:#111827,stroke-dasharray:2 2",
    "classDef artifact fill:#f9fafb,stroke:#d1d5db,color:#6b7280",
];

/// The tree as a Mermaid flowchart, root at the top.
pub fn mermaid(r: &ConversationReport, t: &Tree) -> String {
    let mut s = String::from("flowchart TD\n");
    for c in CLASSES {
        let _ = writeln!(s, "  {c}");
    }
    let group = |g: &super::tree::Group| {
        format!(
            "{}<br/>{}",
            label(r, &{
                let (one, many) = g.reason.noun();
                crate::checks::plural(g.events.len(), one, many)
            }),
            label(
                r,
                &format!("{}: {}", g.reason.text(), crate::checks::ranges(&g.events))
            )
        )
    };
    let mut gid = 0;
    let mut next_g = || {
        gid += 1;
        format!("g{gid}")
    };
    // above the root: cut off
    let root_id = "t0";
    for g in t.at(Anchor::Above) {
        let id = next_g();
        let _ = writeln!(s, "  {id}[\"{}\"]:::{}", group(g), g.reason.class());
        let edge = match g.reason {
            Reason::FalseRoot { .. } => "false root: parent __root__",
            _ => "new root: navigate_to(None)",
        };
        if !t.trunk.is_empty() {
            let _ = writeln!(s, "  {id} -. \"{}\" .-x {root_id}", mm(edge));
        }
    }
    let trunk_class = if t.loads { "active" } else { "disk" };
    let mut prev: Option<String> = None;
    for item in t.items() {
        let id = match item {
            Item::Run { from, to } => {
                let id = format!("r{from}");
                let _ = writeln!(
                    s,
                    "  {id}([\"{}\"]):::collapsed",
                    label(r, &t.run_text(from, to))
                );
                id
            }
            Item::Event(p) => {
                let node = &t.trunk[p];
                let id = format!("t{p}");
                let mut text = label(
                    r,
                    &format!(
                        "{} · {}",
                        crate::checks::ix(node.idx),
                        node.kind.as_deref().unwrap_or("?")
                    ),
                );
                if let Some(src) = &node.source {
                    let _ = write!(text, " {}", label(r, &format!("({src})")));
                }
                for tag in &node.tags {
                    let _ = write!(text, "<br/>{}", label(r, tag));
                }
                if node.fails {
                    let _ = write!(
                        text,
                        "<br/>{}",
                        label(
                            r,
                            &format!(
                                "the SDK fails here{}",
                                t.load_error
                                    .as_deref()
                                    .map(|e| format!(" ({e})"))
                                    .unwrap_or_default()
                            )
                        )
                    );
                }
                let class = if node.fails { "fails" } else { trunk_class };
                let _ = writeln!(s, "  {id}[\"{text}\"]:::{class}");
                if node.dangling {
                    let _ = writeln!(
                        s,
                        "  m{p}[\"{}\"]:::unreadable",
                        mm("parent not in the log")
                    );
                    let _ = writeln!(s, "  m{p} -. \"{}\" .-x {id}", mm("dangling parent"));
                }
                for g in t.at(Anchor::At(p)) {
                    let gid = next_g();
                    let _ = writeln!(s, "  {gid}[\"{}\"]:::{}", group(g), g.reason.class());
                    let _ = writeln!(s, "  {id} -.-> {gid}");
                }
                id
            }
        };
        if let Some(p) = &prev {
            let _ = writeln!(s, "  {p} --> {id}");
        }
        prev = Some(id);
    }
    for g in t.at(Anchor::Apart) {
        let id = next_g();
        let _ = writeln!(s, "  {id}[\"{}\"]:::{}", group(g), g.reason.class());
    }
    if let Some((groups, events)) = t.more {
        let _ = writeln!(
            s,
            "  more[\"{}\"]:::collapsed",
            mm(&format!(
                "{events} more events in {groups} ranges not drawn"
            ))
        );
    }
    if t.trunk.is_empty() && t.groups.is_empty() {
        let _ = writeln!(s, "  empty[\"{}\"]:::collapsed", mm("no events"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_text_keeps_no_syntax() {
        assert_eq!(md("a|b"), "a&#124;b");
        assert_eq!(md("`x`"), "&#96;x&#96;");
        assert_eq!(md("<script>"), "&lt;script&gt;");
        assert_eq!(md("[l](u)"), "&#91;l&#93;(u)");
        assert_eq!(md("a & b"), "a &amp; b");
        assert_eq!(md("plain 00003–00004 ü"), "plain 00003–00004 ü");
    }

    #[test]
    fn markdown_text_makes_no_autolink() {
        assert_eq!(md("https://e.example"), "https:&#8205;//e.example");
        assert_eq!(md("WWW.e.example"), "WWW&#8205;.e.example");
        assert_eq!(md("a@b.example"), "a&#64;&#8205;b.example");
        assert_eq!(md("MailTo:x"), "MailTo:&#8205;x");
        assert_eq!(md("#12 # 3"), "&#35;&#8205;12 &#35; 3");
        assert_eq!(md("wwwx.y 10:30"), "wwwx.y 10:30");
        // intraword `_` is no emphasis: left as it is; at a word's edge not
        assert_eq!(md("base_state.json"), "base_state.json");
        assert_eq!(md("_x_ a_ _b"), "&#95;x&#95; a&#95; &#95;b");
    }

    #[test]
    fn names_are_code_spans_that_copy_as_they_are() {
        assert_eq!(code("convs/ab#12@x", false), "`convs/ab#12@x`");
        assert_eq!(code("a`b", false), "``a`b``");
        assert_eq!(code("`x``", false), "``` `x`` ```");
        assert_eq!(code("a|b", true), "`a\\|b`");
        assert_eq!(code("a|b", false), "`a|b`");
        assert_eq!(code("l1\nl2\u{202e}", false), "`l1 l2\\u{202e}`");
        assert_eq!(code("", true), "` `");
    }

    #[test]
    fn mermaid_labels_keep_no_syntax() {
        assert_eq!(mm("\"]; click"), "#34;#93;#59; click");
        assert_eq!(mm("%%{init}"), "#37;#37;#123;init#125;");
        assert_eq!(mm("a\nb"), "a#10;b");
        assert_eq!(mm("00003–00004"), "00003#8211;00004");
        assert_eq!(mm("x (y): z/w_v"), "x (y): z/w_v");
    }
}
