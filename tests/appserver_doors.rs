//! Issue 22 ("safe at every door, round 4"): the app server's database read
//! by the folder reader's rules. Attacks 2–6, each a test that failed on the
//! code before (docs/safety.md, round 4): the Postgres password never shown,
//! given through libpq's own ways instead of argv, a server that never
//! answers, a SQLite view that never ends, and a WAL database read without
//! a file created beside it.

#[path = "appserver_shared.rs"]
mod shared;

use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use shared::*;

/// Run the binary, killing it (and failing) when it has not ended in
/// `limit`: (exit code, stdout, stderr).
fn run_bounded(args: &[&str], envs: &[(&str, &str)], limit: Duration) -> (i32, String, String) {
    let mut child = bin()
        .args(args)
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "`convo-doctor {}` still running after {limit:?}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const FORMATS: &[&str] = &[
    "human",
    "json",
    "jsonl",
    "concise",
    "markdown",
    "prometheus",
];

/// Attack 2: a password holding what the URL splits on, or given as a
/// percent-encoded query key, or in a URL clap would have refused, reaches
/// no output format, no `-o` file and no error message.
#[test]
fn a2_the_postgres_password_is_never_shown() {
    let conv = fixture("conversations");
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        // nothing listens on port 1: "cannot connect"
        (
            "postgres://oh:se/cr?et#x1@127.0.0.1:1/openhands",
            "se/cr?et#x1",
        ),
        (
            "postgres://oh:q'uo te-pw@127.0.0.1:1/openhands",
            "q'uo te-pw",
        ),
        (
            "postgres://oh@127.0.0.1:1/openhands?password=hun%23ter2",
            "hun#ter2",
        ),
        (
            "postgresql+asyncpg://oh:asyncpg-pw@db/openhands",
            "asyncpg-pw",
        ),
        (
            "postgress://oh:typo-scheme-pw@db/openhands",
            "typo-scheme-pw",
        ),
    ];
    for (url, pw) in cases {
        let encoded = pw.replace('#', "%23");
        for fmt in FORMATS {
            let out = dir.path().join(format!("out.{fmt}"));
            let (code, stdout, stderr) = run_bounded(
                &[
                    "diagnose",
                    "--format",
                    fmt,
                    "-o",
                    s(&out),
                    "--db",
                    url,
                    "--db-timeout",
                    "5s",
                    s(&conv),
                ],
                &[],
                Duration::from_secs(60),
            );
            assert_eq!(code, 2, "{url} {fmt}: {stderr}");
            let file = std::fs::read_to_string(&out).unwrap_or_default();
            for text in [&stdout, &stderr, &file] {
                assert!(
                    !text.contains(pw) && !text.contains(&encoded),
                    "{url} {fmt}: {text}"
                );
            }
            assert!(!stderr.trim().is_empty(), "{url} {fmt}: no error said");
        }
    }
}

/// Attack 3: the password comes from `PGPASSWORD` or a 0600 `PGPASSFILE`
/// (libpq's ways), so the command line holds none; a password file others
/// may read is not used, as libpq refuses it.
#[test]
fn a3_the_password_comes_from_pgpassword_or_pgpass() {
    let Some(url) = service("CONVO_DOCTOR_PG_PW_URL", "PostgreSQL (password role)") else {
        return;
    };
    let pw = std::env::var("CONVO_DOCTOR_PG_PASSWORD").unwrap();
    let conv = fixture("conversations");
    let args = ["diagnose", "--format", "json", "--db", &url, s(&conv)];
    let (code, stdout, stderr) =
        run_bounded(&args, &[("PGPASSWORD", &pw)], Duration::from_secs(60));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("12 row(s) of conversation_metadata"),
        "{stdout}"
    );
    assert!(!stdout.contains(&pw) && !stderr.contains(&pw));

    let dir = tempfile::tempdir().unwrap();
    let passfile = dir.path().join("pgpass");
    let escaped = pw.replace('\\', "\\\\").replace(':', "\\:");
    std::fs::write(
        &passfile,
        format!("127.0.0.1:54329:openhands:ohpw:{escaped}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let envs = [("PGPASSFILE", s(&passfile)), ("PGPASSWORD", "")];
    let (code, stdout, stderr) = run_bounded(&args, &envs, Duration::from_secs(60));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains("12 row(s) of conversation_metadata"),
        "{stdout}"
    );

    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, stderr) = run_bounded(&args, &envs, Duration::from_secs(60));
    assert_eq!(code, 2, "a 0644 password file was used: {stderr}");
    assert!(stderr.contains("password"), "{stderr}");
}

/// Attack 4: a server that accepts and never answers is given up on after
/// `--db-timeout`, with the reason.
#[test]
fn a4_a_postgres_server_that_never_answers_is_given_up_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().take(2) {
            held.push(c);
            std::thread::sleep(Duration::from_secs(15));
        }
    });
    let url = format!("postgres://oh@127.0.0.1:{port}/openhands");
    let conv = fixture("conversations");
    let start = Instant::now();
    let (code, _, stderr) = run_bounded(
        &["diagnose", "--db", &url, "--db-timeout", "2s", s(&conv)],
        &[("PGPASSWORD", "x-unused-pw")],
        Duration::from_secs(12),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("did not answer within 2 s"), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(10));
    drop(hold);
}

fn sqlite_db(path: &std::path::Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

/// Attack 5: `conversation_metadata` as a view over an endless recursive
/// query (8 KB of file, gigabytes of memory on the old code), or one that
/// yields no row forever, is refused at once: not the table the app
/// server's migrations make.
#[test]
fn a5_a_sqlite_view_is_refused_and_never_run() {
    let conv = fixture("conversations");
    let dir = tempfile::tempdir().unwrap();
    for (name, view) in [
        (
            "grow.db",
            "CREATE VIEW conversation_metadata AS WITH RECURSIVE r(conversation_id, title) AS \
             (SELECT '0f8b0186-d86c-5dbb-8239-dd60a36a9ec5', 'x' UNION ALL SELECT conversation_id, title || title FROM r) \
             SELECT * FROM r;",
        ),
        (
            "never.db",
            "CREATE VIEW conversation_metadata AS WITH RECURSIVE r(n) AS \
             (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT 'x' AS conversation_id, 't' AS title FROM r WHERE n < 0;",
        ),
    ] {
        let db = dir.path().join(name);
        sqlite_db(&db, view);
        let spec = format!("sqlite:{}", db.display());
        let (code, _, stderr) = run_bounded(
            &["diagnose", "--db", &spec, s(&conv)],
            &[],
            Duration::from_secs(20),
        );
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stderr.contains("is a view"), "{name}: {stderr}");
    }
}

/// Attack 6: reading a WAL-mode database leaves no `-wal`/`-shm` beside
/// it (the app server, another user, could no longer write its database).
#[test]
fn a6_reading_a_wal_database_creates_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("openhands.db");
    sqlite_db(
        &db,
        "PRAGMA journal_mode=WAL; CREATE TABLE conversation_metadata (conversation_id VARCHAR NOT NULL PRIMARY KEY, title VARCHAR); \
         INSERT INTO conversation_metadata VALUES ('0f8b0186-d86c-5dbb-8239-dd60a36a9ec5', 'one');",
    );
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(listing(), ["openhands.db"], "the writer left its WAL files");
    let spec = format!("sqlite:{}", db.display());
    let conv = fixture("conversations");
    let (code, stdout, stderr) = run_bounded(
        &["diagnose", "--format", "json", "--db", &spec, s(&conv)],
        &[],
        Duration::from_secs(20),
    );
    assert!(code < 2, "{stderr}");
    assert!(
        stdout.contains("1 row(s) of conversation_metadata"),
        "{stdout}"
    );
    assert_eq!(
        listing(),
        ["openhands.db"],
        "reading created files beside the database"
    );
}

/// Attack 8: a link in the filesystem event copy (`<user>/v1_conversations`
/// leading into another user's private folder) is never followed: what it
/// leads to is not read or reported, and a note names the link.
#[test]
fn a8_the_filesystem_event_copy_follows_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("persist");
    let status = std::process::Command::new("cp")
        .args(["-r", s(&fixture("persist")), s(&store)])
        .status()
        .unwrap();
    assert!(status.success());
    // the private folder the link leads to, with a copy nobody listed
    let hidden_hex = "feedfacefeedfacefeedfacefeedface";
    let private = dir.path().join("private/v1_conversations").join(hidden_hex);
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(
        private.join("0123456789abcdef0123456789abcdef.json"),
        r#"{"kind": "MessageEvent", "id": "0123456789abcdef0123456789abcdef"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(store.join("mallory")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("private/v1_conversations"),
        store.join("mallory/v1_conversations"),
    )
    .unwrap();
    let conv = fixture("conversations");
    let (code, stdout, stderr) = run_bounded(
        &[
            "diagnose",
            "--format",
            "json",
            "--events-store",
            s(&store),
            s(&conv),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert!(code < 2, "{stderr}");
    assert!(
        !stdout.contains(hidden_hex) && !stdout.contains("feedface-feed"),
        "{stdout}"
    );
    assert!(stdout.contains("never followed"), "{stdout}");
}
