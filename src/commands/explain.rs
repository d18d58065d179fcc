//! `convo-doctor explain [CHECK]`

use super::ExitStatus;
use crate::checks::{find, REGISTRY};
use crate::render;

pub fn explain(check: Option<&str>) -> anyhow::Result<ExitStatus> {
    let text = match check {
        None => {
            let mut s = String::from("Checks (run `convo-doctor explain <id>` for details):\n");
            for c in REGISTRY {
                s.push_str(&format!("  {:<22} {}\n", c.id(), c.summary()));
            }
            s
        }
        Some(id) => match find(id) {
            Some(c) => format!("{}: {}\n\n{}\n", c.id(), c.summary(), c.explain()),
            None => anyhow::bail!("{}", super::unknown_check(id)),
        },
    };
    match render::out(&text) {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => super::broken_pipe_or_error(e),
    }
}

/// docs/checks.md, generated from the checks' own documentation
/// (`tests/docs.rs` keeps the file equal to this).
pub fn markdown() -> String {
    let mut s = String::from(
        "# Checks\n\nGenerated from the checks' own text (`convo-doctor explain <id>` prints the same);\n\
         `UPDATE_DOCS=1 cargo test --test docs` rewrites this file.\n\n\
         | id | finds |\n|---|---|\n",
    );
    for c in REGISTRY {
        s.push_str(&format!(
            "| [`{}`](#{}) | {} |\n",
            c.id(),
            c.id(),
            c.summary()
        ));
    }
    for c in REGISTRY {
        s.push_str(&format!(
            "\n## {}\n\n{}\n\n```text\n{}\n```\n",
            c.id(),
            c.summary(),
            c.explain()
        ));
    }
    s
}
