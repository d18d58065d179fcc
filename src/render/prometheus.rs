//! `--format prometheus`: the run's totals in the Prometheus text exposition
//! format, for node_exporter's textfile collector (docs/batch.md). Nothing
//! per conversation: ids would make unbounded label sets.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Renderer, Summary};
use crate::checks::{Severity, REGISTRY};
use crate::report::ConversationReport;

pub struct Prometheus;

const SEVERITIES: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Info];

fn metric(t: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(t, "# HELP {name} {help}");
    let _ = writeln!(t, "# TYPE {name} gauge");
    let _ = writeln!(t, "{name} {value}");
}

/// A label value as the exposition format spells it.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Renderer for Prometheus {
    fn conversation(&mut self, _: &mut dyn Write, _: &ConversationReport) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self, w: &mut dyn Write, s: &Summary) -> io::Result<()> {
        let mut t = String::new();
        let c = "convo_doctor_conversations";
        metric(
            &mut t,
            &format!("{c}_scanned"),
            "Conversations scanned by the last run.",
            s.conversations,
        );
        metric(
            &mut t,
            &format!("{c}_clean"),
            "Conversations the SDK loads with no finding above info.",
            s.clean,
        );
        metric(
            &mut t,
            &format!("{c}_with_findings"),
            "Conversations with a finding above info, or that cannot load.",
            s.with_findings,
        );
        metric(
            &mut t,
            &format!("{c}_cannot_load"),
            "Conversations the SDK cannot load.",
            s.cannot_load,
        );
        metric(
            &mut t,
            &format!("{c}_skipped_unmodified"),
            "Conversations passed over by --since/--changed-since.",
            s.skipped_unmodified,
        );
        let name = "convo_doctor_findings";
        let _ = writeln!(
            t,
            "# HELP {name} Findings of the last run, by check id and severity."
        );
        let _ = writeln!(t, "# TYPE {name} gauge");
        for check in REGISTRY {
            for sev in SEVERITIES {
                let n = s
                    .by_check_severity
                    .get(&(check.id(), sev))
                    .copied()
                    .unwrap_or(0);
                let _ = writeln!(
                    t,
                    "{name}{{check=\"{}\",severity=\"{}\"}} {n}",
                    label(check.id()),
                    sev.as_str()
                );
            }
        }
        metric(
            &mut t,
            "convo_doctor_findings_fixable",
            "Findings `convo-doctor repair` can fix.",
            s.fixable,
        );
        metric(
            &mut t,
            "convo_doctor_findings_fixable_unsafe",
            "Findings only `convo-doctor repair --unsafe-fixes` can fix.",
            s.fixable_unsafe,
        );
        metric(
            &mut t,
            "convo_doctor_events_on_disk",
            "Event files of the scanned conversations.",
            s.events_on_disk,
        );
        metric(
            &mut t,
            "convo_doctor_events_orphaned",
            "Events the agents cannot see.",
            s.events_orphaned,
        );
        metric(
            &mut t,
            "convo_doctor_notes",
            "Paths passed over (symbolic links, unreadable entries).",
            s.notes.len(),
        );
        metric(&mut t, "convo_doctor_scan_errors", "PATHs that could not be scanned and conversations that could not be analysed (exit 2).", s.errors);
        let secs = s.elapsed.map_or(0.0, |d| d.as_secs_f64());
        metric(
            &mut t,
            "convo_doctor_scan_duration_seconds",
            "Wall time of the last run.",
            format!("{secs:.3}"),
        );
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        metric(
            &mut t,
            "convo_doctor_last_run_timestamp_seconds",
            "When the last run finished (Unix time).",
            now,
        );
        if s.errors == 0 {
            metric(
                &mut t,
                "convo_doctor_last_success_timestamp_seconds",
                "When the last run that scanned every PATH finished (Unix time); absent after a failed run.",
                now,
            );
        }
        w.write_all(t.as_bytes())?;
        w.flush()
    }
}
