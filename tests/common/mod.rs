//! What the integration tests share: hand-built conversation folders,
//! copies of the fixtures, running the binary (and `repair`/`undo` with a
//! backup directory), and reading folders back.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture's store folder, `fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures").join(name)
}

/// Copy a fixture's conversation folder(s) into `to` (made if missing).
pub fn copy_fixture(name: &str, to: &Path) {
    copy_tree(&fixture(name), to);
}

/// A fixture's store folder (`fixtures/<name>`) copied into a temp dir;
/// returns (tempdir guard, store path, conversation path).
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join(name);
    copy_fixture(name, &store);
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

/// Every file below `dir` (links aside) by its path relative to `dir`,
/// with its bytes.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            (
                rel.to_str().unwrap().to_string(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A path as the `&str` an argument list takes.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// The permission bits of `p` (not following a link).
pub fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// The entries of `dir` whose names start with `prefix`, sorted.
pub fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// The `event-*` files of a conversation, sorted by name.
pub fn event_files(conv: &Path) -> Vec<PathBuf> {
    named(&conv.join("events"), "event-")
}

/// The event file of a conversation at `index` (`event-000NN-…`).
pub fn event_at(conv: &Path, index: usize) -> PathBuf {
    let found = named(&conv.join("events"), &format!("event-{index:05}-"));
    assert_eq!(found.len(), 1, "event {index}: {found:?}");
    found.into_iter().next().unwrap()
}

/// Whether `program` is on PATH.
pub fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The built binary, as a command: no colour, and no run id from the
/// environment of the test run.
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_convo-doctor"));
    cmd.env("NO_COLOR", "1").env_remove("CONVO_DOCTOR_RUN_ID");
    cmd
}

/// Run `cmd` to its end; returns (exit code, stdout, stderr).
pub fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run the built binary; returns (exit code, stdout, stderr).
pub fn run(args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    output(bin().args(args).envs(envs.iter().copied()))
}

/// Run the built binary in `dir` (relative paths, such as `fixtures/…`
/// from the repository's root, are read from there).
pub fn run_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    output(bin().args(args).envs(envs.iter().copied()).current_dir(dir))
}

/// `repair [extra…] --backup-dir BACKUPS PATH`, its run named `run_id`
/// (debug builds honour CONVO_DOCTOR_RUN_ID) or, with None, by the binary.
pub fn repair(
    path: &Path,
    backups: &Path,
    extra: &[&str],
    run_id: Option<&str>,
) -> (i32, String, String) {
    let mut args = vec!["repair"];
    args.extend(extra);
    args.extend(["--backup-dir", s(backups), s(path)]);
    let env: Vec<(&str, &str)> = run_id
        .map(|id| ("CONVO_DOCTOR_RUN_ID", id))
        .into_iter()
        .collect();
    run(&args, &env)
}

/// `undo --backup-dir BACKUPS RUN_ID`.
pub fn undo(backups: &Path, run_id: &str) -> (i32, String, String) {
    run(&["undo", "--backup-dir", s(backups), run_id], &[])
}

/// Take the SDK's event-log lock (`events/.eventlog.lock`, created if
/// missing) as a writer would; held until the file is dropped.
pub fn hold_event_log_lock(conv: &Path) -> fs::File {
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(conv.join("events/.eventlog.lock"))
        .unwrap();
    f.lock().unwrap();
    f
}

/// An agent-server lease on the conversation (owner_lease.json) held by
/// another host's process `pid`, expiring in ten minutes.
pub fn live_lease(conv: &Path, pid: u32) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    fs::write(
        conv.join("owner_lease.json"),
        format!(
            r#"{{"owner_instance_id":"x","generation":1,"expires_at":{},"owner_host":"another-host","owner_pid":{pid}}}"#,
            now + 600.0
        ),
    )
    .unwrap();
}

/// A repair refused because another process holds `events/.eventlog.lock`:
/// exit 1, the reason printed, and nothing below `store` changed since
/// `before` (a [`snapshot`]).
pub fn assert_refused_by_lock(
    code: i32,
    out: &str,
    store: &Path,
    before: &[(PathBuf, Vec<u8>, std::time::SystemTime)],
) {
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("another process holds events/.eventlog.lock"),
        "{out}"
    );
    assert!(
        snapshot(store) == before,
        "a refused repair changed something"
    );
}

/// A test passed over here: says `SKIP test: why` on the real stderr, which
/// `cargo test` shows even for a passing test (its capture only takes
/// `print!`/`eprint!`), as README.md promises.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
}

/// [`skip`] for a test of a real component that CI installs (a cron
/// daemon): under CI (`CONVO_DOCTOR_CI=1`, set by .ci/run) its absence is a
/// failure, not a skip.
pub fn skip_unless_ci(test: &str, why: &str) {
    if std::env::var_os("CONVO_DOCTOR_CI").is_some_and(|v| v == "1") {
        panic!("{test} must run in CI: {why}");
    }
    skip(test, why);
}

/// The uid the permission tests run the binary as.
pub const NOBODY: u32 = 65534;

/// The built binary, run as uid 65534 (`nobody`, on every Linux) so that
/// file modes deny: as root through util-linux `setpriv`; as another user,
/// as that user (a mode-000 file denies them too). Returns the command
/// and the uid it runs as, or `None` (after a SKIP line) when neither works.
pub fn bin_as_nobody(test: &str) -> Option<(Command, u32)> {
    let euid = rustix::process::geteuid().as_raw();
    if euid != 0 {
        return Some((bin(), euid));
    }
    let setpriv = "/usr/bin/setpriv";
    let ids = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    let works = Command::new(setpriv)
        .args(ids)
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        skip(
            test,
            "running as root without a working setpriv to drop to uid 65534",
        );
        return None;
    }
    let mut cmd = Command::new(setpriv);
    cmd.args(ids)
        .arg(env!("CARGO_BIN_EXE_convo-doctor"))
        .env("NO_COLOR", "1")
        .env_remove("CONVO_DOCTOR_RUN_ID");
    Some((cmd, NOBODY))
}

/// A temp dir uid 65534 can enter (tempfile makes them 0700).
pub fn open_tempdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    chmod(tmp.path(), 0o755);
    tmp
}

/// The mtimes a recorded case gave the folder: every file `all_files`, then
/// the overrides (a head lag's newer event files).
pub fn apply_mtimes(conv: &Path, mtimes: &Value) {
    let set = |p: &Path, secs: u64| {
        let f = fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    };
    let all = mtimes["all_files"].as_u64().expect("mtimes.all_files");
    for e in walkdir::WalkDir::new(conv) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            set(e.path(), all);
        }
    }
    for (rel, secs) in mtimes["files"].as_object().expect("mtimes.files") {
        set(&conv.join(rel), secs.as_u64().unwrap());
    }
}

/// The agent's branch as our `diagnose` computes it for the newest SDK: the
/// JSON ids of its events, in the order of the SDK's `active_branch()`.
pub fn agent_branch_ids(conv: &Path) -> Option<Vec<String>> {
    use convo_doctor::version::NEWEST;
    let c = convo_doctor::store::Conversation::load(conv, NEWEST);
    let index = convo_doctor::store::Index::build(&c.events);
    let views = convo_doctor::view::Views::compute(&c, &index, NEWEST);
    let reader = convo_doctor::view::Reader::new(&c, &index, NEWEST);
    views.agent.as_ref().ok().map(|chain| {
        chain
            .iter()
            .map(|&i| reader.returned_id(i).to_string())
            .collect()
    })
}

/// `args` run until the binary's pause point `point` (a debug build's
/// `CONVO_DOCTOR_PAUSE_AT`), where it waits for `gate` to be removed.
pub fn paused(args: &[&str], point: &str, gate: &Path) -> std::process::Child {
    let child = bin()
        .args(args)
        .env("CONVO_DOCTOR_PAUSE_AT", point)
        .env("CONVO_DOCTOR_PAUSE_FILE", gate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = PathBuf::from(format!("{}.ready", gate.display()));
    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "the run never reached `{point}`"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

/// A paused run's exit code and its stdout and stderr together.
pub fn finish(child: std::process::Child) -> (i32, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Whether the tests run as root (to make files another uid owns); says
/// SKIP otherwise, and fails under CI.
pub fn is_root(test: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        skip_unless_ci(test, "needs root to make files owned by another uid");
    }
    root
}

/// Give every entry below `dir` (and `dir`) to `uid`, without following links.
pub fn chown_tree(dir: &Path, uid: u32) {
    for e in walkdir::WalkDir::new(dir) {
        let e = e.unwrap();
        std::os::unix::fs::lchown(e.path(), Some(uid), Some(uid)).unwrap();
    }
}

/// Markdown `s` without its code spans (a run of backticks to the next run
/// of the same length, on one line); fence lines are kept as they are.
pub fn without_code_spans(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        if line.starts_with("```") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find('`') {
            out.push_str(&rest[..at]);
            let run = rest[at..].chars().take_while(|&c| c == '`').count();
            let fence = "`".repeat(run);
            let after = &rest[at + run..];
            match after.find(&fence) {
                Some(end) => rest = &after[end + run..],
                None => {
                    out.push_str(&fence);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// Run the built binary with no extra environment: (exit code, stdout,
/// stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    run(args, &[])
}

/// `diagnose --format json [extra…] PATH`, parsed; a crash (no exit code)
/// or output that is not JSON fails the test with what it printed.
pub fn diagnose_json(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["diagnose", "--format", "json"];
    args.extend(extra);
    args.push(s(path));
    let (code, out, err) = cli(&args);
    assert!(code >= 0, "no crash: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}
