//! Hand-built conversation folders for tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A conversation folder under construction in a temp dir.
pub struct Conv {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    next: usize,
}

/// A base_state.json the real SDK accepts (checked with 1.29.3, 1.33.0 and
/// 1.58.2 `ConversationState.model_validate`): the agent fixtures/clean-tree's
/// 1.58.2 wrote, a local workspace, then `state`'s keys on top.
pub fn valid_state(state: Value) -> Value {
    let real: Value = serde_json::from_str(include_str!(
        "../../fixtures/clean-tree/a5050c9292d85c568ea70f078f0dddb5/base_state.json"
    ))
    .unwrap();
    let mut out = json!({
        "id": "01234567-89ab-cdef-0123-456789abcdef",
        "agent": real["agent"],
        "workspace": {"kind": "LocalWorkspace", "working_dir": "/tmp/w"},
    });
    if let Value::Object(m) = state {
        for (k, v) in m {
            out[k] = v;
        }
    }
    out
}

/// The fields an event kind requires, with values the real SDK accepts
/// (`Event.model_validate_json` of 1.29.3 and 1.58.2); other kinds get none.
pub fn required_fields(kind: &str) -> Value {
    match kind {
        "MessageEvent" => {
            json!({"llm_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}})
        }
        "ConversationErrorEvent" => json!({"source": "environment", "code": "X", "detail": "y"}),
        _ => json!({}),
    }
}

/// Deterministic event ids: `e0000000-…-<n>`.
pub fn eid(n: usize) -> String {
    format!("e0000000-0000-4000-8000-{n:012}")
}

impl Conv {
    /// An SDK-only conversation folder with a base_state.json.
    pub fn new(state: Value) -> Conv {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("0123456789abcdef0123456789abcdef");
        fs::create_dir_all(dir.join("events")).unwrap();
        let state = valid_state(state);
        fs::write(dir.join("base_state.json"), state.to_string()).unwrap();
        Conv {
            _tmp: tmp,
            dir,
            next: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Append an event of `kind` with an optional parent (`Some("__root__")`
    /// or `Some(id)`); returns its id.
    pub fn push(&mut self, kind: &str, parent: Option<&str>) -> String {
        let id = eid(self.next);
        let mut ev = json!({"id": id, "timestamp": "2026-01-01T00:00:00", "source": "user"});
        if let Some(p) = parent {
            ev["parent_id"] = json!(p);
        }
        ev["kind"] = json!(kind);
        if let Value::Object(m) = required_fields(kind) {
            for (k, v) in m {
                ev[k] = v;
            }
        }
        self.write_raw(self.next, &id, &ev.to_string());
        self.next += 1;
        id
    }

    /// Append a file with these exact bytes at the next index; returns its id.
    pub fn push_raw(&mut self, text: &str) -> String {
        let id = eid(self.next);
        self.write_raw(self.next, &id, text);
        self.next += 1;
        id
    }

    pub fn write_raw(&self, idx: usize, id: &str, text: &str) {
        fs::write(
            self.dir.join(format!("events/event-{idx:05}-{id}.json")),
            text,
        )
        .unwrap();
    }

    pub fn set_state(&self, state: Value) {
        let state = valid_state(state);
        fs::write(self.dir.join("base_state.json"), state.to_string()).unwrap();
    }
}

/// Agent view (indices) of a folder under a server version.
pub fn agent_view(dir: &Path, version: &str) -> Result<Vec<usize>, convo_doctor::view::LoadError> {
    use convo_doctor::store::{Conversation, Index};
    use convo_doctor::view::Views;
    let v = version.parse().unwrap();
    let conv = Conversation::load(dir, v);
    let index = Index::build(&conv.events);
    Views::compute(&conv, &index, v).agent
}

/// Copy a directory tree (files and folders only).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A fixture's store folder (`fixtures/<name>`) copied into a temp dir;
/// returns (tempdir guard, store path, conversation path).
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join(name);
    copy_tree(&src, &store);
    let conv = fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a conversation folder");
    (tmp, store, conv)
}

/// Every file under `dir` with its bytes and mtime, sorted by path.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let md = e.metadata().unwrap();
            out.push((
                e.path().to_path_buf(),
                fs::read(e.path()).unwrap(),
                md.modified().unwrap(),
            ));
        }
    }
    out
}

/// Run the built binary; returns (exit code, stdout, stderr).
pub fn run(args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_convo-doctor"));
    cmd.args(args)
        .env("NO_COLOR", "1")
        .env_remove("CONVO_DOCTOR_RUN_ID");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `event-*` files of a conversation, sorted by name.
pub fn event_files(conv: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(conv.join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("event-")
        })
        .collect();
    v.sort();
    v
}
