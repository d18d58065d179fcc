//! The repairs as `repair --help` and docs/repair.md list them, generated
//! from each check's declared [`super::Repair`] (the registry's order).

use super::{Applicability, REGISTRY};

/// Wrap `text` at `width` columns, every line after the first indented by
/// `indent` spaces.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for word in text.split_whitespace() {
        if col > indent && col + 1 + word.len() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += word.len();
    }
    out
}

/// The repairs as `repair --help` lists them, generated from each check's
/// declared [`super::Repair`], followed by `tail`.
pub fn help_text(tail: &str) -> String {
    let mut out = String::from("Repairs (safe: always; unsafe: with --unsafe-fixes):\n");
    for want in [Applicability::Safe, Applicability::Unsafe] {
        for c in REGISTRY {
            let r = c.repair();
            if r.applicability == want {
                let line = format!("  {:<7}{}: {}", want.as_str(), c.id(), r.what);
                out.push_str(&wrap(&line, 79, 9));
                out.push('\n');
            }
        }
    }
    let manual: Vec<&str> = REGISTRY
        .iter()
        .filter(|c| c.repair().applicability == Applicability::Manual)
        .map(|c| c.id())
        .collect();
    let line = format!(
        "  manual {} (`convo-doctor explain ID` says why)",
        manual.join(", ")
    );
    out.push_str(&wrap(&line, 79, 9));
    out.push_str("\n\n");
    out.push_str(tail);
    out
}

/// The repair tables of docs/repair.md, generated from each check's
/// declared [`super::Repair`] (tests/docs.rs fails when they drift).
pub fn repair_markdown() -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "| check | applicability | repair | guards (all must hold) |\n|---|---|---|---|\n",
    );
    for want in [Applicability::Safe, Applicability::Unsafe] {
        for c in REGISTRY {
            let r = c.repair();
            if r.applicability == want {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    c.id(),
                    want.as_str(),
                    esc(r.what),
                    esc(r.guards)
                ));
            }
        }
    }
    out.push_str("\nNo automatic repair (manual):\n\n| check | why |\n|---|---|\n");
    for c in REGISTRY {
        let r = c.repair();
        if r.applicability == Applicability::Manual {
            out.push_str(&format!("| `{}` | {} |\n", c.id(), esc(r.what)));
        }
    }
    out
}
