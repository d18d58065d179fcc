//! docs/batch.md's cron examples, run as cron runs them (issue 17, item 4):
//! both crontab lines under a real cron daemon (Debian's `cron`, which
//! .ci/run installs), rescheduled to every minute and pointed at test
//! stores, and the cron.daily script with cron's environment
//! (`env -i PATH=/usr/bin:/bin`). The lines are read from the page itself,
//! so the page cannot drift from what works.
//!
//! The daemon test needs root (it writes a file in /etc/cron.d) and cron;
//! elsewhere it says SKIP (a failure under CI, CONVO_DOCTOR_CI=1). It takes
//! about a minute: cron runs jobs on the minute.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{chmod, copy_fixture, open_tempdir, repo, s};

const BIN: &str = env!("CARGO_BIN_EXE_convo-doctor");

/// The page.
fn batch_md() -> String {
    fs::read_to_string(repo().join("docs/batch.md")).unwrap()
}

/// The bodies of the page's fenced blocks of `lang`.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    text.split(&fence)
        .skip(1)
        .map(|b| b[..b.find("```").unwrap()].to_string())
        .collect()
}

/// The crontab lines of the page that run convo-doctor.
fn crontab_lines() -> Vec<String> {
    blocks(&batch_md(), "crontab")
        .iter()
        .flat_map(|b| b.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| !l.starts_with('#') && l.contains("convo-doctor"))
        .collect()
}

/// A store of one conversation copied from `fixture`, readable by all.
fn store(dir: &Path, fixture: &str) -> PathBuf {
    let store = dir.join(format!("store-{fixture}"));
    copy_fixture(fixture, &store);
    for e in walkdir::WalkDir::new(&store) {
        let e = e.unwrap();
        chmod(e.path(), if e.file_type().is_dir() { 0o755 } else { 0o644 });
    }
    store
}

/// A documented line made to run here: the binary, the store and the
/// textfile folder replaced by the test's, every minute, as `user` (the
/// field an /etc/cron.d line has and a user's crontab has not).
fn localise(line: &str, store: &Path, textfile: &Path, user: &str) -> String {
    let mut fields = line.split_whitespace();
    for _ in 0..5 {
        fields.next().expect("a schedule of five fields");
    }
    let command: Vec<&str> = fields.collect();
    let command = command
        .join(" ")
        .replace("/usr/local/bin/convo-doctor", BIN)
        .replace("/srv/openhands/conversations", s(store))
        .replace("/var/lib/node_exporter/textfile", s(textfile));
    assert!(
        command.starts_with('/'),
        "the documented line gives the binary by its absolute path: {line}"
    );
    format!("* * * * * {user} {command}")
}

/// A cron daemon: the one running, or one started here (in the
/// foreground, so it is this test's child and stopped by its pid).
struct Cron(Option<Child>);

impl Cron {
    fn start() -> Cron {
        let mut child = Command::new("/usr/sbin/cron")
            .args(["-f", "-L", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start cron");
        std::thread::sleep(Duration::from_millis(500));
        // exits at once when a daemon already runs: that one will do
        match child.try_wait() {
            Ok(Some(_)) => Cron(None),
            _ => Cron(Some(child)),
        }
    }
}

impl Drop for Cron {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An /etc/cron.d file, removed when dropped.
struct CronD(PathBuf);

impl Drop for CronD {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn wait_for(files: &[&Path], limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if files.iter().all(|f| f.exists()) {
            // the writer may still be finishing the job's redirect
            std::thread::sleep(Duration::from_millis(500));
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

#[test]
fn the_documented_crontab_lines_work_under_a_real_cron_daemon() {
    let test = "the_documented_crontab_lines_work_under_a_real_cron_daemon";
    if !rustix::process::geteuid().is_root() {
        common::skip_unless_ci(test, "needs root to install an /etc/cron.d file");
        return;
    }
    if !Path::new("/usr/sbin/cron").exists() || !Path::new("/etc/cron.d").is_dir() {
        common::skip_unless_ci(test, "no cron daemon here (Debian: apt-get install cron)");
        return;
    }
    let lines = crontab_lines();
    assert_eq!(
        lines.len(),
        2,
        "the nightly and the textfile lines: {lines:?}"
    );
    let (nightly, textfile_line) = (&lines[0], &lines[1]);
    assert!(nightly.contains("--quiet") && !nightly.contains(" > "));
    assert!(textfile_line.contains("--format prometheus") && textfile_line.contains(" -o "));

    let tmp = open_tempdir();
    let dir = tmp.path();
    let bad = store(dir, "false-root");
    let clean = store(dir, "clean-tree");
    let textfile = dir.join("textfile");
    fs::create_dir(&textfile).unwrap();
    chmod(&textfile, 0o755);
    // What cron would mail is what the job prints: kept in a file here,
    // with the exit status, since the test has no mailbox to read.
    let captured = |name: &str, line: String| {
        format!(
            "{line} > {out} 2>&1; echo $? > {rc}",
            out = s(&dir.join(format!("{name}.out"))),
            rc = s(&dir.join(format!("{name}.rc")))
        )
    };
    let jobs = [
        captured("bad", localise(nightly, &bad, &textfile, "root")),
        captured("clean", localise(nightly, &clean, &textfile, "root")),
        captured("prom", localise(textfile_line, &bad, &textfile, "root")),
        format!("* * * * * root echo \"$PATH\" > {}", s(&dir.join("path"))),
    ];
    let name = format!("convo-doctor-test-{}", std::process::id());
    let cron_d = CronD(Path::new("/etc/cron.d").join(&name));
    fs::write(&cron_d.0, jobs.join("\n") + "\n").unwrap();
    chmod(&cron_d.0, 0o644);
    let _cron = Cron::start();

    let prom = textfile.join("convo_doctor.prom");
    let rcs: Vec<PathBuf> = ["bad", "clean", "prom"]
        .iter()
        .map(|n| dir.join(format!("{n}.rc")))
        .collect();
    let mut wanted: Vec<&Path> = rcs.iter().map(PathBuf::as_path).collect();
    wanted.push(&prom);
    assert!(
        wait_for(&wanted, Duration::from_secs(150)),
        "cron did not run the jobs within 150 s: {jobs:#?}"
    );
    drop(cron_d);
    let read = |n: &str| fs::read_to_string(dir.join(n)).unwrap();
    assert_eq!(read("path").trim(), "/usr/bin:/bin", "cron's own PATH");
    // the nightly line: findings are mailed (exit 1, the report); a clean
    // night prints nothing, so cron sends no mail
    assert_eq!(read("bad.rc").trim(), "1", "{}", read("bad.out"));
    assert!(
        read("bad.out").contains("error[false-root]"),
        "{}",
        read("bad.out")
    );
    assert_eq!(read("clean.rc").trim(), "0", "{}", read("clean.out"));
    assert_eq!(read("clean.out"), "", "nothing printed, no mail");
    // the textfile line: nothing printed, a whole file, no temporary left
    assert_eq!(read("prom.rc").trim(), "0", "{}", read("prom.out"));
    assert_eq!(read("prom.out"), "");
    let metrics = fs::read_to_string(&prom).unwrap();
    assert!(
        metrics.contains("\nconvo_doctor_conversations_scanned 1\n"),
        "{metrics}"
    );
    assert!(metrics.contains("convo_doctor_findings{check=\"false-root\",severity=\"error\"} 1"));
    assert!(metrics.contains("\nconvo_doctor_last_success_timestamp_seconds "));
    let left: Vec<_> = fs::read_dir(&textfile).unwrap().collect();
    assert_eq!(left.len(), 1, "only the .prom file: {left:?}");
}

/// The cron.daily script of the page, with its paths pointed here, run
/// with cron's environment: the first night scans everything, the stamp
/// moves on, and a night with nothing modified prints nothing.
#[test]
fn the_documented_cron_daily_script_runs_with_crons_path() {
    let script = blocks(&batch_md(), "sh")
        .into_iter()
        .find(|b| b.contains("/etc/cron.daily/convo-doctor"))
        .expect("the cron.daily script");
    let tmp = open_tempdir();
    let dir = tmp.path();
    let state = dir.join("state");
    fs::create_dir(&state).unwrap();
    let bad = store(dir, "false-root");
    let script = script
        .replace("/usr/local/bin/convo-doctor", BIN)
        .replace("/srv/openhands/conversations", s(&bad))
        .replace("/var/lib/convo-doctor", s(&state));
    let file = dir.join("convo-doctor.sh");
    fs::write(&file, script).unwrap();
    let night = || {
        let out = Command::new("/usr/bin/env")
            .args(["-i", "PATH=/usr/bin:/bin", "/bin/sh"])
            .arg(&file)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (code, out) = night();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error[false-root]"), "{out}");
    assert!(state.join("last").exists() && !state.join("next").exists());
    // nothing modified since: a quiet night
    std::thread::sleep(Duration::from_millis(1100));
    let (code, out) = night();
    assert_eq!((code, out.as_str()), (0, ""));
}
