//! `convo-doctor diagnose PATH...`

use std::io;

use super::{selection, ExitStatus};
use crate::checks::Severity;
use crate::cli::{DiagnoseArgs, FailOn};
use crate::render::{self, Summary};
use crate::report::{analyze, Options};
use crate::store::discover::discover;

pub fn threshold(f: FailOn) -> Option<Severity> {
    match f {
        FailOn::Info => Some(Severity::Info),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Error => Some(Severity::Error),
        FailOn::Never => None,
    }
}

pub fn diagnose(args: &DiagnoseArgs, color: bool) -> ExitStatus {
    let selected = match selection(&args.only, &args.skip) {
        Ok(s) => s,
        Err(e) => {
            render::error(&e);
            return ExitStatus::Error;
        }
    };
    let opts = Options {
        version: args.server_version,
        selected: &selected,
        event_list: args.events,
    };
    let color = color && args.format == render::Format::Human;
    let mut renderer = render::renderer(args.format, color);
    let mut summary = Summary::default();
    let mut status = ExitStatus::Success;
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let fail = threshold(args.fail_on);
    for path in &args.paths {
        let found = match discover(path) {
            Ok(f) => f,
            Err(e) => {
                render::error(&e);
                status = ExitStatus::Error;
                continue;
            }
        };
        summary.notes.extend(found.notes);
        for dir in &found.conversations {
            let report = analyze(dir, dir.display().to_string(), &opts);
            if status == ExitStatus::Success
                && fail.is_some_and(|t| report.worst().is_some_and(|w| w >= t))
            {
                status = ExitStatus::Findings;
            }
            summary.add(&report);
            if let Err(e) = renderer.conversation(&mut w, &report) {
                return broken_pipe_or_error(e);
            }
        }
    }
    if let Err(e) = renderer.finish(&mut w, &summary) {
        return broken_pipe_or_error(e);
    }
    status
}

/// A closed pipe (`| head`) ends the run quietly; other write errors are errors.
pub fn broken_pipe_or_error(e: io::Error) -> ExitStatus {
    if e.kind() == io::ErrorKind::BrokenPipe {
        ExitStatus::Success
    } else {
        render::error(&format!("cannot write the report: {e}"));
        ExitStatus::Error
    }
}
