//! Issue 24, "the app-server ticket, end to end", against the real services
//! `.ci/services.sh` starts (PostgreSQL, moto's S3 server) and the SQLite
//! database the real migrations made (fixtures/appserver/): one conversation
//! named by `--id`, a failed run still reported to machines, the services'
//! own words for what went wrong, an empty event copy or table taken for an
//! error, and notes that say where convo-doctor looked.
//! Each test skips when its service is not running, and fails instead in CI.

#[path = "appserver_shared.rs"]
mod shared;

use serde_json::Value;
use shared::*;

fn sqlite() -> String {
    format!("sqlite:{}", fixture("persist/openhands.db").display())
}

/// The summary's list `key` (`error_messages`, `notes`).
fn summary_list(doc: &Value, key: &str) -> Vec<String> {
    doc["summary"][key]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

fn errors(doc: &Value) -> Vec<String> {
    summary_list(doc, "error_messages")
}

/// Bullet 1: `diagnose --db … --events-store … conversations/<id>` reported
/// the whole database (13 conversations) and the others' findings set the
/// exit status. `--id` names the one conversation, in the UI's spelling, the
/// database's, or the start of either; the JSON carries both spellings.
#[test]
fn one_ticket_is_that_conversation_alone() {
    let Some((url, env)) = postgres_and_s3() else {
        return;
    };
    let folder = fixture("conversations/f295edf392db5ebfa05b31d41d9ef378");
    let convs = conversations();
    let base = ["--db", &url, "--events-store", "s3://oh-events/users"];
    // the clean conversation, by its dashed id: exit 0 whatever the others
    let mut args = base.to_vec();
    args.extend([s(&folder), "--id", "F295EDF3-92DB-5EBF-A05B-31D41D9EF378"]);
    let (code, doc, err) = diagnose_json(&args, &with(&env));
    assert_eq!(code, 0, "{err}");
    assert_eq!(ids(&doc), ["f295edf392db5ebfa05b31d41d9ef378"]);
    let c = &doc["conversations"][0];
    assert_eq!(c["id_dashed"], "f295edf3-92db-5ebf-a05b-31d41d9ef378");
    assert!(c["appserver"]["row"].is_object() && c["appserver"]["copies"][0].is_object());
    assert_eq!(doc["summary"]["conversations"], 1);
    // a row no folder carries, by the start of its dashless id: its finding alone
    let mut args = base.to_vec();
    args.extend([&convs, "--id", "1f3c8095cb"]);
    let (code, doc, err) = diagnose_json(&args, &with(&env));
    assert_eq!(code, 1, "{err}");
    assert_eq!(ids(&doc), ["1f3c8095cbe654ceb77772e5ad2b3932"]);
    assert_eq!(
        app_findings(&doc)["1f3c8095cbe654ceb77772e5ad2b3932"],
        ["row-without-events".to_string()].into()
    );
    // an ambiguous start and an unknown id are errors naming them
    let mut args = base.to_vec();
    args.extend([
        &convs,
        "--id",
        "f2",
        "--id",
        "0123456789abcdef0123456789abcdef",
    ]);
    let (code, doc, err) = diagnose_json(&args, &with(&env));
    assert_eq!(code, 2, "{err}");
    let e = errors(&doc);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e[0].contains("`f2` is ambiguous") && e[0].contains("f295edf392db5ebfa05b31d41d9ef378")
    );
    assert!(e[1].contains("`0123456789abcdef0123456789abcdef`"));
    assert!(ids(&doc).is_empty());
}

/// Bullet 1 with SQLite and the filesystem copy: the folder, by a prefix of
/// its dashed id, and the docs' jq recipe matching either spelling.
#[test]
fn one_ticket_with_sqlite_and_the_filesystem_copy() {
    let store = fixture("persist").display().to_string();
    let db = sqlite();
    let (code, doc, err) = diagnose_json(
        &[
            "--db",
            &db,
            "--events-store",
            &store,
            &conversations(),
            "--id",
            "9ee5f8b7-54b0",
        ],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(ids(&doc), ["9ee5f8b754b05705a4b58a7d4557b224"]);
    assert_eq!(
        app_findings(&doc)["9ee5f8b754b05705a4b58a7d4557b224"],
        [
            "copy-missing-events".to_string(),
            "row-status-divergence".to_string()
        ]
        .into()
    );
    let c = &doc["conversations"][0];
    for spelling in [
        "9ee5f8b754b05705a4b58a7d4557b224",
        "9ee5f8b7-54b0-5705-a4b5-8a7d4557b224",
    ] {
        assert!(c["id"] == spelling || c["id_dashed"] == spelling);
    }
}

/// Bullet 2: a `--db` that cannot be read printed nothing in `--format
/// json`, and left `-o x.prom` with the previous run's figures. Every
/// format now says the run failed, the error counted, exit 2.
#[test]
fn a_failed_run_still_tells_machines() {
    let Some((url, env)) = postgres_and_s3() else {
        return;
    };
    let bad = url.replace("/openhands", "/no_such_db");
    let convs = conversations();
    // SQLite that is not there, a bucket that is not there: a document too
    let missing = fixture("persist/no-such.db").display().to_string();
    for (args, envs) in [
        (["--db", &format!("sqlite:{missing}")], vec![]),
        (["--events-store", "s3://no-such-bucket-24"], with(&env)),
    ] {
        let (code, doc, err) = diagnose_json(&[args[0], args[1], &convs], &envs);
        assert_eq!(
            (code, &doc["summary"]["failed"]),
            (2, &Value::Bool(true)),
            "{err}"
        );
        assert!(
            ids(&doc).is_empty() && doc["summary"]["errors"] == 1,
            "{doc}"
        );
    }
    let (code, doc, err) = diagnose_json(&["--db", &bad, &convs], &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(doc["summary"]["errors"], 1);
    let e = errors(&doc);
    assert!(
        e[0].contains("database \"no_such_db\" does not exist"),
        "{e:?}"
    );
    assert_eq!(doc["summary"]["failed"], true);
    assert!(ids(&doc).is_empty());
    // jsonl: the summary line
    let out = bin()
        .args(["diagnose", "--format", "jsonl", "--db", &bad, &convs])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let last: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(last["summary"]["errors"], 1);
    // Prometheus: yesterday's file rewritten, no last success
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("x.prom");
    let prometheus = |db: &str| {
        let out = bin()
            .args([
                "diagnose",
                "--format",
                "prometheus",
                "-o",
                s(&prom),
                "--db",
                db,
                &convs,
            ])
            .output()
            .unwrap();
        (out.status.code(), std::fs::read_to_string(&prom).unwrap())
    };
    let (code, before) = prometheus(&url);
    assert_eq!(code, Some(1));
    assert!(before.contains("convo_doctor_last_success_timestamp_seconds"));
    let (code, after) = prometheus(&bad);
    assert_eq!(code, Some(2));
    assert!(after.contains("\nconvo_doctor_scan_errors 1\n"), "{after}");
    assert!(!after.contains("last_success"), "{after}");
    // markdown and human say the run failed, once
    for (format, says) in [("markdown", "The run failed"), ("human", "the run failed")] {
        let out = bin()
            .args(["diagnose", "--format", format, "--db", &bad, &convs])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(says), "{format}: {text}");
        assert!(
            !text.contains("not everything could be read"),
            "{format}: {text}"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("convo-doctor: error").count(), 1, "{err}");
    }
}

/// Environment variables given to a run.
type Env<'a> = &'a [(&'a str, &'a str)];

/// A port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The one error a failed run reports, and that stderr says it once.
fn the_error(args: &[&str], envs: &[(&str, &str)]) -> String {
    let (code, doc, err) = diagnose_json(args, envs);
    assert_eq!(code, 2, "{err}");
    let e = errors(&doc);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(err.matches("convo-doctor: error").count(), 1, "{err}");
    e[0].clone()
}

/// Bullet 3, PostgreSQL: a wrong password and a missing database both said
/// `db error`, a refused port and an unknown host both `error connecting
/// to server`, and a role without SELECT "not an app server database".
/// Each is now the server's (or the client's) own words, once, with what to
/// check next.
#[test]
fn postgres_failures_in_the_servers_words() {
    let (Some(url), Some(pw_url)) = (
        service("CONVO_DOCTOR_PG_URL", "PostgreSQL"),
        service("CONVO_DOCTOR_PG_PW_URL", "PostgreSQL's password role"),
    ) else {
        return;
    };
    let convs = conversations();
    let port = closed_port().to_string();
    let cases: [(String, Env, &[&str]); 5] = [
        (
            pw_url.clone(),
            &[("PGPASSWORD", "wrong")],
            &[
                "password authentication failed for user \"ohpw\"",
                "PGPASSWORD",
            ],
        ),
        (
            url.replace("/openhands", "/no_such_db"),
            &[],
            &["database \"no_such_db\" does not exist", "DB_NAME"],
        ),
        (
            url.replace("54329", &port),
            &[],
            &["connection refused by 127.0.0.1:", "DB_PORT"],
        ),
        (
            url.replace("127.0.0.1", "no-such-host.invalid"),
            &[],
            &["unknown host `no-such-host.invalid`", "DB_HOST"],
        ),
        (
            url.replace("postgres@", "ohnosel@"),
            &[],
            &[
                "permission denied for table conversation_metadata",
                "SELECT",
            ],
        ),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (db, envs, says) in &cases {
        let e = the_error(&["--db", db, &convs], envs);
        for s in *says {
            assert!(e.contains(s), "{db}: {e}");
        }
        assert!(
            !e.contains("db error") && !e.contains("not an app server"),
            "{e}"
        );
        assert!(!e.contains("wrong"), "the password shown: {e}");
        seen.insert(e);
    }
    assert_eq!(seen.len(), cases.len());
}

/// Bullet 3, S3: no credentials printed the metadata service's 403 chain
/// three times, a refused endpoint `after 10 retries` three times. Each is
/// one line naming the cause.
#[test]
fn s3_failures_in_one_line() {
    let Some(endpoint) = service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)") else {
        return;
    };
    let refused = format!("http://127.0.0.1:{}", closed_port());
    let env = s3_env(&endpoint);
    let keys = with(&env);
    let no_keys: Vec<(&str, &str)> = keys
        .iter()
        .copied()
        .filter(|(k, _)| !k.starts_with("AWS_ACCESS") && !k.starts_with("AWS_SECRET"))
        .chain([("HOME", "/nonexistent")])
        .collect();
    let mut elsewhere = keys.clone();
    elsewhere.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    elsewhere.push(("AWS_ENDPOINT_URL", &refused));
    let convs = conversations();
    let cases: [(&str, Env, &str); 3] = [
        (
            "s3://oh-events",
            &no_keys,
            "no credentials found (looked in AWS_ACCESS_KEY_ID",
        ),
        ("s3://no-such-bucket-24", &keys, "bucket not found: "),
        (
            "s3://oh-events",
            &elsewhere,
            "endpoint refused: nothing listens at http://127.0.0.1:",
        ),
    ];
    for (store, envs, says) in cases {
        let started = std::time::Instant::now();
        let e = the_error(&["--events-store", store, &convs], envs);
        // not a speed target, a bound on waiting: a cause that is known at
        // once is said at once, with no retries in between (0.4 s measured)
        let waited = started.elapsed();
        assert!(
            waited < std::time::Duration::from_secs(15),
            "{store}: {waited:?}"
        );
        assert!(e.contains(says), "{store}: {e}");
        assert!(e.len() < 400, "not short: {e}");
        assert!(!e.contains("retries") && !e.contains("api/token"), "{e}");
    }
}

/// Bullet 3, a real "access denied": a moto server that enforces IAM
/// (`.ci/services.sh`), a bucket, and the key of a user with no policy.
/// Listing it is refused with S3's AccessDenied; the run says so once, names
/// the bucket, and never prints the secret key.
#[test]
fn s3_access_denied_in_the_servers_words() {
    let Some(locked) = service(
        "CONVO_DOCTOR_S3_LOCKED",
        "the S3 server enforcing IAM (moto)",
    ) else {
        return;
    };
    let mut it = locked.split_whitespace();
    let (Some(endpoint), Some(key), Some(secret)) = (it.next(), it.next(), it.next()) else {
        panic!("CONVO_DOCTOR_S3_LOCKED is `ENDPOINT KEY SECRET`: {locked}");
    };
    let envs = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", key),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("AWS_REGION", "us-east-1"),
    ];
    let convs = conversations();
    let out = bin()
        .args(["diagnose", "--events-store", "s3://oh-locked", &convs])
        .envs(envs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("access denied (AccessDenied)").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("`oh-locked`"), "{stderr}");
    assert!(
        !stderr.contains(secret),
        "the secret key was printed: {stderr}"
    );
    let e = the_error(&["--events-store", "s3://oh-locked", &convs], &envs);
    assert!(e.contains("access denied (AccessDenied)"), "{e}");
    assert!(e.len() < 400, "not short: {e}");
}

/// Bullet 4: `--events-store` on an empty folder (a mount that failed)
/// gave every folder `copy-missing-events` and every row
/// `row-without-events`, exit 1; a table with no row gave every folder
/// `events-without-row`. Either is one error naming the empty side and its
/// likely cause, exit 2, and no conversation's findings.
#[test]
fn an_empty_side_is_an_error_not_a_finding_per_conversation() {
    let Some((url, env)) = postgres_and_s3() else {
        return;
    };
    let convs = conversations();
    let mount = tempfile::tempdir().unwrap();
    let db = sqlite();
    let e = the_error(
        &["--db", &db, "--events-store", s(mount.path()), &convs],
        &[],
    );
    assert!(
        e.contains(&format!("the events store {} holds no", s(mount.path())))
            && e.contains("a mount that failed")
            && e.contains("the database lists 12 conversations"),
        "{e}"
    );
    // the same for an S3 prefix that holds nothing
    let e = the_error(
        &[
            "--db",
            &url,
            "--events-store",
            "s3://oh-events/nobody",
            &convs,
        ],
        &with(&env),
    );
    assert!(
        e.contains("s3://oh-events/nobody") && e.contains("wrong bucket or prefix"),
        "{e}"
    );
    // a migrated database with no row, beside the folders and the copy
    let empty = url.replace("/openhands", "/openhands_empty");
    let store = fixture("persist").display().to_string();
    let e = the_error(&["--db", &empty, "--events-store", &store, &convs], &[]);
    assert!(
        e.contains("openhands_empty has no row in conversation_metadata")
            && e.contains("8 conversation folders"),
        "{e}"
    );
}

/// `diagnose ARGS` with no PATH, in an empty working and temporary
/// directory, with none of the variables that name places, HOME as given
/// (`None`: unset).
fn no_path(args: &[&str], home: Option<&std::path::Path>) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut c = bin();
    c.arg("diagnose")
        .args(args)
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .env_remove("HOME");
    for k in [
        "OH_CONVERSATIONS_PATH",
        "OPENHANDS_CONVERSATIONS_DIR",
        "OPENHANDS_PERSISTENCE_DIR",
        "OH_PERSISTENCE_DIR",
        "FILE_STORE_PATH",
    ] {
        c.env_remove(k);
    }
    if let Some(h) = home {
        c.env("HOME", h);
    }
    c.output().unwrap()
}

/// [`no_path`] in JSON: (exit code, the document, stderr).
fn no_path_json(args: &[&str], home: Option<&std::path::Path>) -> (i32, Value, String) {
    let mut all = vec!["--format", "json"];
    all.extend(args);
    let out = no_path(&all, home);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn notes(doc: &Value) -> Vec<String> {
    summary_list(doc, "notes")
}

/// Bullet 5: with `--db` alone, "looked in /root/.openhands (default)" named
/// the database given for a folder that does not exist; with HOME unset
/// the home defaults were skipped without a word; an absent
/// `$TMPDIR/openhands-sandboxes` was not listed; and nothing found was
/// "1 scan error: not everything could be read".
#[test]
fn every_place_looked_is_said_truly() {
    let db = sqlite();
    let home = tempfile::tempdir().unwrap();
    // --db alone, a HOME without .openhands
    let (code, doc, err) = no_path_json(&["--db", &db], Some(home.path()));
    assert_eq!(code, 1, "{err}");
    let n = notes(&doc);
    let oh = format!(
        "looked in {}/.openhands (default) for the app server's database and event copy: not there",
        s(home.path())
    );
    assert!(n.contains(&oh), "{n:#?}");
    assert!(
        n.iter().any(|l| l.contains(
            "openhands-sandboxes for the agent-servers an app server runs as processes: not there"
        )),
        "{n:#?}"
    );
    // HOME unset: said
    let (code, doc, err) = no_path_json(&["--db", &db], None);
    assert_eq!(code, 1, "{err}");
    let n = notes(&doc);
    assert!(
        n.iter()
            .any(|l| l.starts_with("HOME is not set: ~/.openhands/conversations")),
        "{n:#?}"
    );
    assert!(
        !n.iter().any(|l| l.contains(".openhands (default)")),
        "{n:#?}"
    );
    // the app server's folder there, the database given: which one is used
    std::fs::create_dir_all(home.path().join(".openhands")).unwrap();
    std::fs::copy(
        fixture("persist/openhands.db"),
        home.path().join(".openhands/openhands.db"),
    )
    .unwrap();
    let (_, doc, _) = no_path_json(&["--db", &db], Some(home.path()));
    let n = notes(&doc);
    assert!(
        n.iter()
            .any(|l| l.ends_with("/.openhands/openhands.db (not used: --db given)")),
        "{n:#?}"
    );
    // nothing anywhere: an error that is no unreadable file
    let empty = tempfile::tempdir().unwrap();
    let (code, doc, _) = no_path_json(&[], Some(empty.path()));
    assert_eq!(code, 2);
    assert!(errors(&doc)[0].starts_with("no conversation found where OpenHands keeps them"));
    let out = no_path(&[], Some(empty.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("not everything could be read") && text.contains("the run failed"),
        "{text}"
    );
}
