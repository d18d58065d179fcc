//! Messages on stderr (errors, warnings, notes), never on stdout, each
//! redacted and prefixed `convo-doctor:`; `--quiet` holds the warnings and
//! notes back until the exit status is known.

use std::io::{self, Write};

use super::sanitize;

/// An error: never held back.
pub fn error(msg: &str) {
    let msg = sanitize(&crate::secrets::redact_all(msg));
    let _ = writeln!(io::stderr(), "convo-doctor: error: {msg}");
}

/// An error that ends a command, with its causes (`cannot read `x`: No such
/// file or directory (os error 2)`).
pub fn fail(e: &anyhow::Error) {
    match e.downcast_ref::<clap::Error>() {
        Some(usage) => usage_error(usage),
        None => error(&format!("{e:#}")),
    }
}

/// A usage error from clap (an unknown flag, a bad value): its text, with
/// clap's `error:` made ours (`convo-doctor: error:`), so every error of the
/// program starts alike (`grep 'convo-doctor: error'` in a cron mail).
pub fn usage_error(e: &clap::Error) {
    let text = e.render().to_string();
    let _ = match text.strip_prefix("error: ") {
        Some(rest) => write!(io::stderr(), "convo-doctor: error: {rest}"),
        // the help shown for a missing subcommand is not an error message
        None => write!(io::stderr(), "{text}"),
    };
}

pub fn warning(msg: &str) {
    let msg = sanitize(&crate::secrets::redact_all(msg));
    to_stderr(format!("convo-doctor: warning: {msg}\n"));
}

pub fn note(msg: &str) {
    let msg = sanitize(&crate::secrets::redact_all(msg));
    to_stderr(format!("convo-doctor: {msg}\n"));
}

/// Warnings and notes held back by `--quiet` until the exit status is
/// known (`None`: printed at once). Errors are never held: they end in exit 2.
static HELD: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(None);

fn to_stderr(line: String) {
    if let Ok(mut held) = HELD.lock() {
        if let Some(lines) = held.as_mut() {
            lines.push(line);
            return;
        }
    }
    let _ = io::stderr().write_all(line.as_bytes());
}

/// `--quiet`: from now on, hold warnings and notes back.
pub fn hold_messages() {
    if let Ok(mut held) = HELD.lock() {
        held.get_or_insert_with(Vec::new);
    }
}

/// Print the warnings and notes held back (when `show`), or drop them; from
/// now on they are printed at once.
pub fn release_messages(show: bool) {
    let lines = HELD.lock().ok().and_then(|mut h| h.take());
    if show {
        let mut e = io::stderr().lock();
        for line in lines.into_iter().flatten() {
            let _ = e.write_all(line.as_bytes());
        }
    }
}

/// The notes of a summary, on stderr (`convo-doctor: note: …`).
pub fn notes(notes: &[String]) {
    for n in notes {
        note(&format!("note: {n}"));
    }
}
