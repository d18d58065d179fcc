//! The app server's side of a conversation in a report: the checks'
//! `run_related` on each conversation's three sides (`crate::appserver`
//! joins them), the `appserver` part of a report, and the reports of
//! conversations only the app server knows.

use std::time::SystemTime;

use serde::Serialize;

use super::{ConversationReport, EventCounts};
use crate::appserver::relate::{folder_id, Copy};
use crate::appserver::{Related, Sources};
use crate::checks::{self, Finding};
use crate::store::Conversation;

/// The app server's side of a conversation in a report (`appserver` in JSON).
#[derive(Debug, Serialize)]
pub struct Part {
    /// The row of `conversation_metadata`, when `--db` was given and it has one.
    pub row: Option<RowPart>,
    /// The event copies found (each user segment, and the old layout).
    pub copies: Vec<CopyPart>,
}

#[derive(Debug, Serialize)]
pub struct RowPart {
    pub db: String,
    pub conversation_id: String,
    pub conversation_version: Option<String>,
    pub title: Option<String>,
    pub sandbox_id: Option<String>,
    pub execution_status: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CopyPart {
    pub location: String,
    /// The `<user_id>` segment (`null`: none).
    pub user: Option<String>,
    /// The pre-1.2.0 layout.
    pub legacy: bool,
    pub events: usize,
    pub keys: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Sources {
    /// Run the selected app-server checks on `rel`.
    pub fn findings(rel: &Related, selected: &dyn Fn(&str) -> bool) -> Vec<Finding> {
        let mut out = Vec::new();
        for c in checks::REGISTRY {
            if selected(c.id()) {
                c.run_related(rel, &mut out);
            }
        }
        out
    }

    fn part(&self, rel: &Related) -> Part {
        let row = rel.row.map(|r| RowPart {
            db: self
                .rows
                .as_ref()
                .map(|x| x.display.clone())
                .unwrap_or_default(),
            conversation_id: r.conversation_id.clone(),
            conversation_version: r.conversation_version.clone(),
            title: r.title.clone(),
            sandbox_id: r.sandbox_id.clone(),
            execution_status: r.execution_status.clone(),
        });
        let copies = rel
            .copies
            .iter()
            .chain(&rel.legacy)
            .map(|c| CopyPart {
                location: c.location.clone(),
                user: c.at.user.clone(),
                legacy: c.at.legacy.is_some(),
                events: c.ids().len(),
                keys: c.keys(),
                error: c.events.as_ref().err().cloned(),
            })
            .collect();
        Part { row, copies }
    }

    /// Add the app server's findings about a scanned folder to its report.
    pub fn attach(
        &self,
        conv: &Conversation,
        report: &mut ConversationReport,
        selected: &dyn Fn(&str) -> bool,
    ) {
        let id = folder_id(conv, &report.id);
        let rel = self.relate(&id, Some(conv));
        let found = Self::findings(&rel, selected);
        report.appserver = Some(self.part(&rel));
        if !found.is_empty() {
            report.findings.extend(found);
            sort(&mut report.findings);
        }
    }

    /// A report for a conversation the app server knows (a row, a copy) and
    /// that no scanned folder carries.
    pub fn record_report(
        &self,
        id: &str,
        server_version: &str,
        selected: &dyn Fn(&str) -> bool,
    ) -> ConversationReport {
        let rel = self.relate(id, None);
        let mut findings = Self::findings(&rel, selected);
        sort(&mut findings);
        let path = rel
            .copies
            .first()
            .or(rel.legacy.first())
            .map(|c| c.location.clone())
            .or_else(|| {
                let rows = self.rows.as_ref()?;
                let row = rel.row?;
                Some(format!("{}#{}", rows.display, row.conversation_id))
            })
            .unwrap_or_else(|| id.to_string());
        let copy_events: usize = rel.copies.iter().map(|c| c.ids().len()).sum();
        let keys: usize = rel.copies.iter().chain(&rel.legacy).map(Copy::keys).sum();
        let verdict = record_verdict(&rel, copy_events);
        let mut r = ConversationReport::record(path, id.to_string(), server_version.to_string());
        r.events = EventCounts {
            on_disk: keys,
            log_length: 0,
            ui_view: copy_events,
            agent_view: Some(0),
            orphaned: 0,
        };
        r.verdict = verdict;
        r.findings = findings;
        r.appserver = Some(self.part(&rel));
        r
    }

    /// Reports for rows whose `conversation_id` is not a UUID.
    pub fn bad_id_reports(
        &self,
        server_version: &str,
        selected: &dyn Fn(&str) -> bool,
    ) -> Vec<ConversationReport> {
        let Some(rows) = &self.rows else {
            return Vec::new();
        };
        rows.bad_ids
            .iter()
            .map(|row| {
                let rel = Related {
                    id: "",
                    folder: None,
                    rows: Some(rows),
                    row: Some(row),
                    store: None,
                    copies: Vec::new(),
                    legacy: Vec::new(),
                    now: SystemTime::now(),
                };
                let mut r = ConversationReport::record(
                    format!("{}#{}", rows.display, row.conversation_id),
                    row.conversation_id.clone(),
                    server_version.to_string(),
                );
                r.findings = Self::findings(&rel, selected);
                r.verdict = "app server row only: its id is not a UUID".into();
                r.appserver = Some(self.part(&rel));
                r
            })
            .collect()
    }
}

fn sort(f: &mut [Finding]) {
    f.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.file.cmp(&b.file))
            .then_with(|| a.check.cmp(b.check))
    });
}

fn record_verdict(rel: &Related, copy_events: usize) -> String {
    let mut parts = Vec::new();
    match rel.row {
        Some(r) => parts.push(format!(
            "app server row {} ({}{})",
            rel.row_name(),
            r.conversation_version.as_deref().unwrap_or("no version"),
            r.execution_status
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default()
        )),
        None if rel.rows.is_some() => parts.push("no app server row".into()),
        None => {}
    }
    if rel.store.is_some() {
        let legacy: usize = rel.legacy.iter().map(|c| c.ids().len()).sum();
        parts.push(match (copy_events, legacy) {
            (0, 0) => "no event copy".into(),
            (n, 0) => format!("{} in the copy", checks::plural(n, "event", "events")),
            (n, l) => format!(
                "{} in the copy, {l} in the old v1/events layout",
                checks::plural(n, "event", "events")
            ),
        });
    }
    parts.push("no agent-server folder among the PATHs".into());
    parts.join("; ")
}
