//! `convo-doctor explain [CHECK]`

use super::ExitStatus;
use crate::checks::{find, REGISTRY};
use crate::render;

pub fn explain(check: Option<&str>) -> ExitStatus {
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
            None => {
                render::error(&format!(
                    "unknown check `{id}` (run `convo-doctor explain` for the list)"
                ));
                return ExitStatus::Error;
            }
        },
    };
    match render::out(&text) {
        Ok(()) => ExitStatus::Success,
        Err(e) => super::diagnose::broken_pipe_or_error(e),
    }
}
