//! Issue 19, attack 8: text from disk in a Markdown report must not become
//! a link when the report is pasted into a GitHub issue (a `kind` holding
//! `https://evil.example/login` was left as text GitHub's autolink
//! extension turns into a clickable link). The truth about what GitHub
//! links comes from its own engine, cmark-gfm, run by
//! fixtures/gen/gfm_autolinks.py and recorded in fixtures/gfm_autolinks.json.

mod common;

use serde_json::{json, Value};

use convo_doctor::render::markdown::{code, md};

/// Hostile text of the kinds GitHub links: URLs of each scheme and case,
/// `www.`, e-mail addresses (plain, `mailto:`, `xmpp:`), in the delimiters
/// GFM allows around them; and mentions and references, which github.com
/// links after rendering.
const SAMPLES: &[&str] = &[
    "https://evil.example/login",
    "see http://evil.example now",
    "HTTPS://EVIL.EXAMPLE/X",
    "ftp://evil.example/x",
    "www.evil.example",
    "WWW.evil.example/path?q=1",
    "(www.evil.example)",
    "*www.evil.example*",
    "~https://evil.example~",
    "bob@evil.example",
    "bob.smith+x@mail.evil.example",
    "mailto:bob@evil.example",
    "xmpp:bob@evil.example/res",
    "@octocat please look",
    "fixes #123",
    "owner/repo#4",
    "https://evil.example/base_state_json",
];

fn fixture() -> Value {
    let text = std::fs::read_to_string(common::repo().join("fixtures/gfm_autolinks.json"))
        .expect("fixtures/gfm_autolinks.json");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn github_links_nothing_md_makes_of_text_from_disk() {
    let samples: Vec<Value> = SAMPLES
        .iter()
        .map(|t| json!({"text": t, "markdown": md(t), "code": code(t, false), "code_in_table": code(t, true)}))
        .collect();
    if std::env::var_os("UPDATE_GFM").is_some() {
        let doc = json!({"samples": samples});
        std::fs::write(
            common::repo().join("fixtures/gfm_autolinks.json"),
            serde_json::to_string_pretty(&doc).unwrap() + "\n",
        )
        .unwrap();
        return;
    }
    let doc = fixture();
    let recorded = doc["samples"].as_array().unwrap();
    assert_eq!(recorded.len(), SAMPLES.len(), "regenerate the fixture");
    let mut raw_links = 0;
    for (want, got) in samples.iter().zip(recorded) {
        for key in ["markdown", "code", "code_in_table"] {
            assert_eq!(
                want[key], got[key],
                "{key} changed: UPDATE_GFM=1 cargo test --test markdown_autolinks, then python fixtures/gen/gfm_autolinks.py"
            );
        }
        // a name as a code span, in a heading and in a table cell: no link,
        // and the text copies as it is (one <code>, the sample inside)
        for key in ["html_code", "html_code_in_table"] {
            let h = got[key].as_str().expect("rendered by cmark-gfm");
            assert!(!h.contains("<a "), "{}: {h}", got["text"]);
            assert_eq!(h.matches("<code>").count(), 1, "{h}");
            let inner = &h[h.find("<code>").unwrap() + 6..h.find("</code>").unwrap()];
            assert_eq!(decoded(inner), got["text"].as_str().unwrap(), "{h}");
        }
        let html = got["html"].as_str().expect("rendered by cmark-gfm");
        let table = got["html_in_table"].as_str().unwrap();
        assert!(!html.contains("<a "), "{}: {html}", got["text"]);
        assert!(!table.contains("<a "), "{}: {table}", got["text"]);
        raw_links += usize::from(got["html_raw"].as_str().unwrap().contains("<a "));
    }
    // every URL and e-mail sample is one cmark-gfm links when left as it is
    // (but `WWW.` in capitals; mentions and references github.com links
    // after rendering)
    assert_eq!(raw_links, 13, "{doc}");
}

/// Entities decoded (what a browser and GitHub's filters see as text).
fn decoded(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').unwrap_or(0);
        let ent = &rest[1..end.max(1)];
        let c = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            e if e.starts_with('#') => e[1..].parse::<u32>().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) if end > 0 => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What GitHub would link in decoded text: a URL scheme followed by `//`,
/// `www.`, `mailto:`/`xmpp:`, an e-mail address, a mention or a reference.
fn links(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    for pat in ["http://", "https://", "ftp://", "www.", "mailto:", "xmpp:"] {
        // a match not broken by a zero-width joiner right after it
        for (at, _) in lower.match_indices(pat) {
            if !lower[at + pat.len()..].starts_with('\u{200d}') {
                found.push(pat.to_string());
            }
        }
    }
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        if (*c == '@' || *c == '#') && next.is_alphanumeric() {
            found.push(
                chars[i.saturating_sub(8)..(i + 8).min(chars.len())]
                    .iter()
                    .collect(),
            );
        }
    }
    found
}

/// The report of a conversation whose events carry hostile kinds and whose
/// folder name is an e-mail address links nothing outside its code blocks.
#[test]
fn a_markdown_report_of_hostile_text_links_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = common::Conv::new(json!({}));
    c.push("MessageEvent", None);
    for kind in [
        "https://evil.example/login",
        "www.evil.example",
        "mailto:eve@evil.example",
        "@octocat",
    ] {
        c.push(kind, None);
    }
    std::fs::create_dir_all(&store).unwrap();
    let folder = store.join("eve@evil.example");
    std::fs::rename(c.path(), &folder).unwrap();
    let (_, out, err) = common::run(
        &["diagnose", "--format", "markdown", common::s(&store)],
        &[],
    );
    assert!(out.contains("unknown-kind"), "{out}{err}");
    let mut prose = String::new();
    let mut in_code = false;
    for line in out.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    // code spans link nothing (github_links_nothing_md_makes_of_text_from_disk
    // proves it with cmark-gfm): the rest must not either
    let text = decoded(&common::without_code_spans(&prose));
    assert!(text.contains("evil.example"), "{text}");
    let found = links(&text);
    assert!(found.is_empty(), "{found:?}\n{text}");
}
