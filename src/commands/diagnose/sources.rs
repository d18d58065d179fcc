//! Where `diagnose` looks: the PATHs given sorted by adapter (Codex
//! rollouts, Claude Code sessions, OpenHands folders), the places OpenHands
//! products keep conversations when none is given, and the app server's
//! database and event copy; and which of them `--id` names.

use std::path::PathBuf;

use crate::batch::ids::Wanted;
use crate::cli::DiagnoseArgs;
use crate::render::Summary;
use crate::report::ConversationReport;

/// The PATHs that are Codex stores, as the rollouts they hold, and the
/// other PATHs.
pub(super) fn codex_paths(
    paths: Vec<PathBuf>,
    summary: &mut Summary,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let list = |p: &std::path::Path| crate::codex::shape(p).map(|s| crate::codex::sessions(p, &s));
    store_paths(paths, summary, &list, "Codex rollout")
}

/// The PATHs that are Claude Code stores, as the session files they hold,
/// and the other PATHs.
pub(super) fn claude_paths(
    paths: Vec<PathBuf>,
    summary: &mut Summary,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let list =
        |p: &std::path::Path| crate::claude::shape(p).map(|s| crate::claude::sessions(p, &s));
    store_paths(paths, summary, &list, "Claude Code session")
}

/// The PATHs that `list` takes for its format's store, as the files they
/// hold (each a `what`), and the other PATHs.
fn store_paths(
    paths: Vec<PathBuf>,
    summary: &mut Summary,
    list: &dyn Fn(&std::path::Path) -> Option<crate::sessions::list::Listing>,
    what: &str,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut rest = Vec::new();
    for p in paths {
        let Some(found) = list(&p) else {
            rest.push(p);
            continue;
        };
        for e in found.errors {
            summary.error(e);
        }
        summary.notes.extend(found.notes);
        if found.files.is_empty() {
            summary.error(format!("no {what} in `{}`", p.display()));
        }
        files.extend(found.files);
    }
    (files, rest)
}

/// `diagnose` with no PATH: the invoking user's Claude Code sessions and
/// Codex rollouts ([`crate::sessions::discover`]), each place said in the
/// notes.
pub(super) fn own_sessions(
    env: &crate::store::discover::Env,
    summary: &mut Summary,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    use crate::sessions::discover::{looked, not_places, Format};
    let (mut claude, mut codex) = (Vec::new(), Vec::new());
    summary.notes.extend(not_places(env));
    for l in looked(env) {
        summary.notes.push(l.describe());
        let Some(found) = l.found else { continue };
        for e in found.errors {
            summary.error(e);
        }
        summary.notes.extend(found.notes);
        match l.format {
            Format::ClaudeCode => claude.extend(found.files),
            Format::Codex => codex.extend(found.files),
        }
    }
    (claude, codex)
}

/// `diagnose` with no PATH: every place OpenHands products keep
/// conversations, each said in the notes; the places found, and those of
/// them that are SDK-layout stores (no meta.json by design).
pub(super) fn default_paths(
    env: &crate::store::discover::Env,
    summary: &mut Summary,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    use crate::store::discover::{looked, not_places, StoreKind};
    let mut paths = Vec::new();
    let mut sdk = Vec::new();
    summary.notes.extend(not_places(env));
    for l in looked(env) {
        summary.notes.push(l.describe());
        if l.found
            .as_ref()
            .is_some_and(|d| !d.conversations.is_empty())
        {
            if l.place.kind == StoreKind::Sdk {
                sdk.push(l.place.path.clone());
            }
            paths.push(l.place.path);
        }
    }
    (paths, sdk)
}

/// `--db` / `--events-store`, or with no PATH the app server's default
/// persistence directory when it holds a database or an event copy.
pub(super) fn open_sources(
    args: &DiagnoseArgs,
    defaults: Option<&crate::store::discover::Env>,
    summary: &mut Summary,
) -> anyhow::Result<Option<crate::appserver::Sources>> {
    use crate::appserver::{db::DbSpec, events_store::StoreSpec, Sources};
    let mut db = args.db.clone();
    let mut store = args.events_store.clone();
    let app_dir = defaults
        .and_then(crate::store::discover::app_server_dir)
        .filter(|(dir, why)| {
            // a place nobody named: read only when root or this user owns it
            let uid = rustix::process::geteuid().as_raw();
            match why.starts_with('$') {
                true => true,
                false => match crate::store::discover::trusted(dir, uid) {
                    Ok(()) => true,
                    Err(reason) => {
                        summary.notes.push(format!(
                            "looked in {} ({why}) for the app server's database and event copy: passed over ({reason})",
                            dir.display()
                        ));
                        false
                    }
                },
            }
        });
    if let Some((dir, why)) = app_dir {
        // what is there, and whether it is used (an option given wins)
        let mut there = Vec::new();
        let file = dir.join("openhands.db");
        if file.is_file() {
            let spec = DbSpec::Sqlite(file);
            there.push(match db {
                None => format!("{} (used)", spec.display()),
                Some(_) => format!("{} (not used: --db given)", spec.display()),
            });
            db.get_or_insert(spec);
        }
        let copy = dir.join(crate::appserver::events_store::V1_DIR).is_dir()
            || dir.join("v1").join("events").is_dir();
        if copy {
            let spec = StoreSpec::Fs(dir.clone());
            there.push(match store {
                None => format!("the event copy {} (used)", spec.display()),
                Some(_) => format!(
                    "the event copy {} (not used: --events-store given)",
                    spec.display()
                ),
            });
            store.get_or_insert(spec);
        }
        let said = match (there.is_empty(), dir.is_dir()) {
            (false, _) => there.join(", "),
            (true, true) => "neither openhands.db nor an event copy there".to_string(),
            (true, false) => "not there".to_string(),
        };
        summary.notes.push(format!(
            "looked in {} ({why}) for the app server's database and event copy: {said}",
            dir.display()
        ));
    }
    if db.is_none() && store.is_none() {
        return Ok(None);
    }
    let limits = crate::appserver::db::Limits {
        timeout: args.db_timeout,
        ..Default::default()
    };
    let src = Sources::open(db.as_ref(), store.as_ref(), &limits)?;
    summary.notes.extend(src.notes.iter().cloned());
    Ok(Some(src))
}

/// A folder of an SDK-layout store found by `diagnose` with no PATH (the
/// OpenHands CLI's): no agent-server lists it, by design, so no listing
/// verdict and no `not-listed` finding.
pub(super) fn sdk_store(
    mut r: Box<ConversationReport>,
    sdk_roots: &[PathBuf],
    list: &[PathBuf],
    i: usize,
) -> Box<ConversationReport> {
    if list
        .get(i)
        .is_some_and(|d| sdk_roots.iter().any(|root| d.starts_with(root)))
    {
        r.listed = None;
        r.findings
            .retain(|f| f.check != crate::checks::not_listed::ID);
    }
    r
}

/// `--id`, resolved against the ids known before the scan: the folders'
/// names, the app server's rows and copies. Errors are scan errors.
pub(super) fn wanted(
    args: &DiagnoseArgs,
    list: &[PathBuf],
    sources: Option<&crate::appserver::Sources>,
    summary: &mut Summary,
) -> Option<Wanted> {
    if args.scan.ids.is_empty() {
        return None;
    }
    let mut known: std::collections::BTreeSet<String> = list
        .iter()
        .filter_map(|d| crate::batch::ids::folder_hex(d))
        .collect();
    if let Some(src) = sources {
        known.extend(src.record_ids(&Default::default()));
    }
    let (w, errors) = Wanted::resolve(&args.scan.ids, &known);
    for e in errors {
        summary.fail(e);
    }
    Some(w)
}
