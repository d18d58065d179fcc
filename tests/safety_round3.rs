//! Issue 19, "safe as root, round 3": one test (or more) per attack of the
//! issue, each run as root with uid 65534 (`nobody`) as the attacker where
//! the attack needs a second user (they print `SKIP` otherwise), each
//! failing on the code before the fix. Attack 7 is in tests/root_sdk_live.sh
//! (it needs the real SDK), attack 8 in tests/markdown_autolinks.rs, attack 9
//! in bench/plan.py.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{chmod, fixture_copy, repair, run, s, NOBODY};
use serde_json::{json, Value};

/// Run the binary (under `prlimit --as` when `mem` is given, so memory that
/// grows without bound ends the process instead of the machine), killing it
/// after a minute: (exit code or None if killed, stdout, stderr).
fn run_bounded(args: &[&str], mem: Option<u64>) -> (Option<i32>, String, String) {
    let mut cmd = match mem {
        Some(bytes) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--as={bytes}"))
                .arg("--")
                .arg(env!("CARGO_BIN_EXE_convo-doctor"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_convo-doctor")),
    };
    let mut child = cmd
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every `convo-doctor …` command in `text` (between backticks, or from
/// `convo-doctor` to the end of the line), run by `sh` in `dir` with
/// `convo-doctor` a shell function that does nothing: what pasting them
/// does besides running convo-doctor.
fn paste_every_command(text: &str, dir: &Path) {
    let mut cmds: Vec<String> = text
        .split('`')
        .filter(|p| p.starts_with("convo-doctor "))
        .map(str::to_string)
        .collect();
    for line in text.lines() {
        if let Some(at) = line.find("convo-doctor undo") {
            cmds.push(line[at..].trim_end_matches(')').to_string());
        }
    }
    for cmd in cmds {
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!("convo-doctor() {{ :; }}\n{cmd}\n"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
    }
}

// ------------------------------------------------------------ attack 3

/// The journal (the folder owner's to write) names a backup folder holding
/// a shell command; a "secret" the folder also holds spans the quotes of the
/// printed `undo` command, so redacting it unquoted the command. Pasting
/// what `diagnose` prints must run nothing of the attacker's.
#[test]
fn a3_a_journal_cannot_put_a_command_into_the_printed_undo() {
    let tmp = common::open_tempdir();
    let mark = tmp.path().join("MARK");
    let evil_dir = format!("/x;touch {};#", mark.display());
    let mut c = common::Conv::new(json!({}));
    c.push("MessageEvent", None);
    // the "secret": the text spanning the opening quote of --backup-dir
    let mut state: Value =
        serde_json::from_slice(&fs::read(c.path().join("base_state.json")).unwrap()).unwrap();
    state["agent"]["llm"]["api_key"] = json!("-dir '/x");
    fs::write(c.path().join("base_state.json"), state.to_string()).unwrap();
    fs::write(
        c.path().join(".convo-doctor-repair.json"),
        json!({"run_id": "20261130T000000Z-4242", "backup_dir": evil_dir}).to_string(),
    )
    .unwrap();
    for format in ["human", "json", "concise", "markdown"] {
        let (_, out, err) = run(&["diagnose", "--format", format, s(c.path())], &[]);
        assert!(out.contains("interrupted-repair"), "{format}: {out}{err}");
        assert!(
            !out.contains("touch"),
            "{format}: the journal's text reached the output: {out}"
        );
        paste_every_command(&out, tmp.path());
        assert!(
            !mark.exists(),
            "{format}: pasting ran the attacker's command"
        );
    }
}

/// The journal of a real interrupted run still gives a command that works
/// when pasted, because its backup folder is vouched for: one `undo`
/// trusts, holding that run, which repaired this very folder.
#[test]
fn a3_a_vouched_backup_folder_is_still_printed_as_a_command() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let backups = tmp.path().join("backups");
    let env = [
        ("CONVO_DOCTOR_RUN_ID", "20261130T000000Z-4242"),
        ("CONVO_DOCTOR_CRASH_AT", "after-quarantine"),
    ];
    let args = [
        "repair",
        "--unsafe-fixes",
        "--backup-dir",
        s(&backups),
        s(&store),
    ];
    assert_ne!(run(&args, &env).0, 0);
    let (_, out, _) = run(&["diagnose", s(&conv)], &[]);
    let want = format!(
        "convo-doctor undo --backup-dir {} 20261130T000000Z-4242",
        backups.display()
    );
    assert!(out.contains(&want), "{out}");
    // another conversation's journal naming that same run is not vouched for
    let (_t2, _s2, other) = fixture_copy("false-root");
    fs::copy(
        conv.join(".convo-doctor-repair.json"),
        other.join(".convo-doctor-repair.json"),
    )
    .unwrap();
    let (_, out, _) = run(&["diagnose", s(&other)], &[]);
    assert!(out.contains("interrupted-repair"), "{out}");
    assert!(!out.contains(&want), "{out}");
    assert!(out.contains("is not printed"), "{out}");
}

// ------------------------------------------------------------ attack 4

/// A backup root another user owns, holding a run copied from a real one
/// (so every file of it reads as "can be undone") under a name that is a
/// shell command, a run whose manifest is a FIFO and one whose manifest is
/// a link to /dev/zero. Returns (tmp, root, mark).
fn hostile_backup_root(test: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    let (tmp, store, _conv) = fixture_copy("false-root");
    chmod(tmp.path(), 0o755);
    let real = tmp.path().join("real");
    let (code, out, err) = repair(&store, &real, &[], Some("r1"));
    assert_eq!(code, 0, "{out}{err}");
    let root = tmp.path().join("theirs");
    let mark = tmp.path().join("MARK");
    let evil = format!("r;touch {};#", mark.display());
    fs::create_dir(&root).unwrap();
    common::copy_tree(&real.join("r1"), &root.join(&evil));
    common::copy_tree(&real.join("r1"), &root.join("20261130T000000Z-1"));
    fs::create_dir(root.join("fifo-run")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo-run/manifest.json"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    fs::create_dir(root.join("zero-run")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero-run/manifest.json")).unwrap();
    if rustix::process::geteuid().is_root() {
        common::chown_tree(&root, NOBODY);
    } else {
        // not root: a root others can write to is as untrusted
        common::skip(
            test,
            "not root: the untrusted root is world-writable instead",
        );
        chmod(&root, 0o777);
    }
    Some((tmp, root, mark))
}

#[test]
fn a4_undo_list_of_another_users_backup_root_prints_no_command_of_theirs() {
    let Some((tmp, root, mark)) = hostile_backup_root("a4_undo_list…") else {
        return;
    };
    for format in ["human", "json"] {
        let (code, out, err) = run_bounded(
            &[
                "undo",
                "--list",
                "--format",
                format,
                "--backup-dir",
                s(&root),
            ],
            Some(1 << 30),
        );
        assert_eq!(code, Some(0), "{format}: {out}{err}");
        assert!(!out.contains("touch"), "{format}: {out}");
        paste_every_command(&out, tmp.path());
        assert!(
            !mark.exists(),
            "{format}: pasting ran the attacker's command"
        );
    }
    let (_, out, _) = run_bounded(&["undo", "--list", "--backup-dir", s(&root)], Some(1 << 30));
    assert!(out.contains("not trusted"), "{out}");
    assert!(!out.contains("can be undone"), "{out}");
    assert!(out.contains("not named like a run id"), "{out}");
}

/// A FIFO as a run's manifest never blocks the listing; a link to
/// /dev/zero never makes it read without bound (it is not followed).
#[test]
fn a4_a_fifo_or_dev_zero_manifest_neither_hangs_nor_grows() {
    let Some((_tmp, root, _)) = hostile_backup_root("a4_fifo…") else {
        return;
    };
    for name in ["fifo-run", "zero-run"] {
        fs::rename(root.join(name), root.join("20261130T000000Z-9")).unwrap();
        let (code, out, err) = run_bounded(
            &[
                "undo",
                "--list",
                "--format",
                "json",
                "--backup-dir",
                s(&root),
            ],
            Some(1 << 30),
        );
        assert_eq!(code, Some(0), "{name}: {out}{err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let unreadable = doc["unreadable"].as_array().unwrap();
        assert!(
            unreadable
                .iter()
                .any(|u| u["run_id"] == "20261130T000000Z-9"),
            "{name}: {doc}"
        );
        fs::rename(root.join("20261130T000000Z-9"), root.join(name)).unwrap();
    }
}

// ------------------------------------------------------------ attack 5

/// `--backup-dir U/lnk/bk`, U another user's folder and `lnk` their link to
/// a folder root owns: the ancestors were checked on the canonical path
/// only (root's), so root wrote its backups wherever the link pointed. Each
/// component is now opened without following links and checked as opened:
/// U is not root's or the invoking user's, so the path is refused.
#[test]
fn a5_a_backup_dir_through_another_users_link_is_refused() {
    let (tmp, store, _conv) = fixture_copy("false-root");
    chmod(tmp.path(), 0o755);
    let before = common::snapshot(&store);
    let real = tmp.path().join("root-owned");
    fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    let theirs = tmp.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::symlink(&real, theirs.join("lnk")).unwrap();
    if common::is_root("a5 (another user's folder)") {
        common::chown_tree(&theirs, NOBODY);
    } else {
        // not root: a folder others may write to is as untrusted
        chmod(&theirs, 0o777);
    }
    let via = theirs.join("lnk/bk");
    let (code, out, err) = repair(&store, &via, &[], None);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("another user could replace"), "{err}");
    assert!(!real.join("bk").exists(), "root wrote through their link");
    assert!(common::snapshot(&store) == before);
    // undo and undo --list refuse to trust it too
    let (code, _, err) = run(&["undo", "--backup-dir", s(&via), "x"], &[]);
    assert_eq!(code, 2, "{err}");
    // a link root (or you) owns, in a folder only root (or you) may change,
    // is followed (`/var/run -> /run`)
    let mine = tmp.path().join("mine");
    std::os::unix::fs::symlink(&real, &mine).unwrap();
    let (code, out, err) = repair(&store, &mine.join("bk"), &[], Some("ok1"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(real.join("bk/ok1/manifest.json").exists());
}

// ------------------------------------------------------------ attack 6

/// An undo that puts more than one file back, killed between two of them,
/// left a gap in the index (the placeholder removed, the file it stood for
/// not back) that the next safe `repair` closed on its own terms. Now undo
/// keeps the repair's journal while it works: `diagnose` reports the folder
/// half undone with the command that finishes it, `repair` refuses it, and
/// the printed command (pasted into a shell) puts everything back.
#[test]
fn a6_a_killed_undo_is_reported_refused_and_finished_by_the_printed_command() {
    let (tmp, store, conv) = fixture_copy("index-gap");
    let original = common::files(&conv);
    let backups = tmp.path().join("backups");
    let (code, out, err) = repair(
        &store,
        &backups,
        &["--unsafe-fixes"],
        Some("20261130T000000Z-77"),
    );
    assert_eq!(code, 0, "{out}{err}");
    let repaired = common::files(&conv);
    let (code, _, _) = run(
        &["undo", "--backup-dir", s(&backups), "20261130T000000Z-77"],
        &[("CONVO_DOCTOR_CRASH_AT", "undo-after-restore")],
    );
    assert_ne!(code, 0, "the undo was killed");
    let half = common::files(&conv);
    assert_ne!(half, original, "killed before it finished");
    assert_ne!(half, repaired, "killed after it started");
    let journal: Value = serde_json::from_slice(
        &fs::read(conv.join(".convo-doctor-repair.json")).expect("a journal"),
    )
    .unwrap();
    assert_eq!(journal["operation"], "undo");
    let (_, out, _) = run(&["diagnose", s(&conv)], &[]);
    assert!(out.contains("interrupted-repair"), "{out}");
    assert!(
        out.contains("a convo-doctor undo (run 20261130T000000Z-77) stopped half-way"),
        "{out}"
    );
    let cmd = out
        .split('`')
        .find(|p| p.starts_with("convo-doctor undo"))
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let (code, out, _) = repair(&store, &tmp.path().join("b2"), &[], None);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stopped half-way"), "{out}");
    assert_eq!(
        common::files(&conv),
        half,
        "a refused repair changed something"
    );
    let sh = Command::new("sh")
        .arg("-c")
        .arg(cmd.replacen(
            "convo-doctor",
            &format!("'{}'", env!("CARGO_BIN_EXE_convo-doctor")),
            1,
        ))
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stdout)
    );
    assert_eq!(common::files(&conv), original, "undo finished, exactly");
}

// ------------------------------------------------------------ attacks 1, 2

/// `sh -c script` as the attacker: uid 65534 when the suite runs as root,
/// else the invoking user.
fn as_attacker(script: &str) {
    let mut cmd = if rustix::process::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ]);
        c
    } else {
        let mut c = Command::new("sh");
        c.arg("-c");
        c
    };
    let st = cmd.arg(script).status().unwrap();
    assert!(st.success(), "the attacker's step failed: {script}");
}

/// A store the attacker (uid 65534) owns, holding a copy of `fixture`, and
/// a victim: another copy of it in a folder root owns, elsewhere.
/// Returns (tmp, store, the attacker's conversation, victim).
fn store_and_victim(fixture: &str) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (tmp, store, conv) = fixture_copy(fixture);
    chmod(tmp.path(), 0o755);
    let victim_root = tmp.path().join("root-only");
    common::copy_fixture(fixture, &victim_root);
    let victim = fs::read_dir(&victim_root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    chmod(&victim_root, 0o755);
    if rustix::process::geteuid().is_root() {
        common::chown_tree(&store, NOBODY);
    }
    (tmp, store, conv, victim)
}

/// Attack 1: a conversation of a store swapped for a link to another user's
/// conversation between the listing and the repair. `repair` planned and
/// wrote through the link, into the victim, and said "fixed". Now each
/// conversation is opened from the PATH held since before the listing,
/// component by component without following links: the link is refused.
#[test]
fn a1_a_conversation_swapped_for_a_link_after_the_listing_is_not_followed() {
    let (tmp, store, conv, victim) = store_and_victim("false-root");
    let before = common::snapshot(&victim);
    let gate = tmp.path().join("go");
    let backups = tmp.path().join("b");
    let child = common::paused(
        &["repair", "--backup-dir", s(&backups), s(&store)],
        "after-listing",
        &gate,
    );
    as_attacker(&format!(
        "mv '{c}' '{c}.away' && ln -s '{v}' '{c}'",
        c = conv.display(),
        v = victim.display()
    ));
    fs::write(&gate, "").unwrap();
    let (code, out) = common::finish(child);
    assert!(
        common::snapshot(&victim) == before,
        "root wrote into the victim: {out}"
    );
    assert!(!out.contains("fixed"), "{out}");
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("could not be opened again"), "{out}");
}

/// Attack 1, in a store's `subagents/` descent: `subagents` swapped for a
/// link to a folder holding the victim under the sub-agent's name.
#[test]
fn a1_a_subagents_folder_swapped_for_a_link_is_not_followed() {
    let (tmp, store, conv, _) = store_and_victim("false-root");
    // the attacker's conversation holds a sub-agent conversation (a copy of
    // the same damage) under subagents/<id>
    let sub_id = "0123456789abcdef0123456789abcdef";
    let sub = conv.join("subagents").join(sub_id);
    common::copy_tree(&conv.join("events"), &sub.join("events"));
    let mut state: Value =
        serde_json::from_slice(&fs::read(conv.join("base_state.json")).unwrap()).unwrap();
    state["id"] = json!("01234567-89ab-cdef-0123-456789abcdef");
    fs::write(sub.join("base_state.json"), state.to_string()).unwrap();
    // the victim: a root-owned folder holding a conversation by that name
    let elsewhere = tmp.path().join("root-only-2");
    common::copy_tree(&sub, &elsewhere.join(sub_id));
    let victim = elsewhere.join(sub_id);
    if rustix::process::geteuid().is_root() {
        common::chown_tree(&store, NOBODY);
    }
    let before = common::snapshot(&victim);
    let gate = tmp.path().join("go");
    let backups = tmp.path().join("b");
    let child = common::paused(
        &["repair", "--backup-dir", s(&backups), s(&store)],
        "after-listing",
        &gate,
    );
    let subagents = conv.join("subagents");
    as_attacker(&format!(
        "mv '{s}' '{s}.away' && ln -s '{e}' '{s}'",
        s = subagents.display(),
        e = elsewhere.display()
    ));
    fs::write(&gate, "").unwrap();
    let (code, out) = common::finish(child);
    assert!(
        common::snapshot(&victim) == before,
        "root wrote into the victim: {out}"
    );
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("could not be opened again"), "{out}");
}

/// Attack 2: a byte copy of the victim's conversation with one value changed
/// (its confirmation policy, in base_state.json), swapped for a link to the
/// victim right after the proof's read. `apply` resolved the path again,
/// found the victim's meta.json byte-identical to the plan's, and wrote the
/// attacker's value into it ("fixed"). Now the repair writes only through
/// the folder it read and proved, and refuses when the path no longer leads
/// to it: neither folder changes.
#[test]
fn a2_a_decoy_swapped_for_a_link_after_the_proof_writes_nothing() {
    let (tmp, store, decoy, victim) = store_and_victim("fat-meta-divergence");
    let set_policy = |dir: &Path, file: &str, kind: &str| {
        let p = dir.join(file);
        let mut v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        v["confirmation_policy"] = json!({"kind": kind});
        fs::write(&p, v.to_string()).unwrap();
    };
    // the victim confirms every action; the decoy is its copy that does not
    set_policy(&victim, "base_state.json", "AlwaysConfirm");
    set_policy(&victim, "meta.json", "AlwaysConfirm");
    for f in ["base_state.json", "meta.json"] {
        fs::copy(victim.join(f), decoy.join(f)).unwrap();
    }
    set_policy(&decoy, "base_state.json", "NeverConfirm");
    // what the proof's "did the folder change?" stamp compares (sizes and
    // mtimes of events/, base_state.json, meta.json): made the victim's, as
    // the attacker can for their own files
    let (v, d) = (
        victim.join("base_state.json"),
        decoy.join("base_state.json"),
    );
    let mut padded = fs::read(&d).unwrap();
    padded.resize(fs::metadata(&v).unwrap().len() as usize, b' ');
    fs::write(&d, padded).unwrap();
    for name in ["events", "base_state.json", "meta.json"] {
        let st = rustix::fs::stat(victim.join(name)).unwrap();
        let t = |sec: i64, nsec: i64| rustix::fs::Timespec {
            tv_sec: sec,
            tv_nsec: nsec as _,
        };
        let times = rustix::fs::Timestamps {
            last_access: t(st.st_atime, st.st_atime_nsec as i64),
            last_modification: t(st.st_mtime, st.st_mtime_nsec as i64),
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            decoy.join(name),
            &times,
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
    }
    if rustix::process::geteuid().is_root() {
        common::chown_tree(&store, NOBODY);
    }
    assert_eq!(
        fs::read(victim.join("meta.json")).unwrap(),
        fs::read(decoy.join("meta.json")).unwrap()
    );
    let (before_v, before_d) = (common::snapshot(&victim), common::files(&decoy));
    let gate = tmp.path().join("go");
    let backups = tmp.path().join("b");
    let child = common::paused(
        &["repair", "--backup-dir", s(&backups), s(&store)],
        "before-proof",
        &gate,
    );
    as_attacker(&format!(
        "mv '{c}' '{c}.away' && ln -s '{v}' '{c}'",
        c = decoy.display(),
        v = victim.display()
    ));
    fs::write(&gate, "").unwrap();
    let (code, out) = common::finish(child);
    let meta = fs::read_to_string(victim.join("meta.json")).unwrap();
    assert!(
        !meta.contains("NeverConfirm"),
        "the attacker's value reached the victim"
    );
    assert!(common::snapshot(&victim) == before_v, "{out}");
    // the refusal comes before any write: the decoy is unchanged too
    let moved = PathBuf::from(format!("{}.away", decoy.display()));
    assert!(common::files(&moved) == before_d, "{out}");
    assert!(!out.contains("  fixed"), "{out}");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("moved or replaced"), "{out}");
}
