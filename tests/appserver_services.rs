//! The app server's side read from real services, loaded by `.ci/services.sh`
//! with the fixtures the real openhands-ai wrote (fixtures/appserver/): a
//! PostgreSQL server (Debian's package) with the same rows, an S3 API
//! server (moto) with the bucket the real AwsEventService wrote, and a GCS
//! emulator (fake-gcs-server) holding the same objects.
//! Each test skips when its service is not running, and fails instead in CI
//! (`CONVO_DOCTOR_CI=1`, set by .ci/run, which starts them all).

#[path = "appserver_shared.rs"]
mod shared;

use shared::*;

#[test]
fn postgres_with_the_filesystem_copy() {
    let Some(url) = service("CONVO_DOCTOR_PG_URL", "PostgreSQL") else {
        return;
    };
    let store = fixture("persist").display().to_string();
    let (code, doc, err) = diagnose_json(
        &["--db", &url, "--events-store", &store, &conversations()],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert_whole(&doc, "fs", "alembic revision 014");
}

#[test]
fn postgres_errors_never_show_the_password() {
    let Some(url) = service("CONVO_DOCTOR_PG_URL", "PostgreSQL") else {
        return;
    };
    // a database that does not exist, with a password in the URL
    let bad = url
        .replacen("postgres@", "postgres:hunter2@", 1)
        .replace("/openhands", "/no_such_db");
    let out = bin()
        .args(["diagnose", "--db", &bad, "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no_such_db"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn sqlite_with_the_s3_copy() {
    let Some(endpoint) = service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)") else {
        return;
    };
    let db = format!("sqlite:{}", fixture("persist/openhands.db").display());
    let env = s3_env(&endpoint);
    let (code, doc, err) = diagnose_json(
        &[
            "--db",
            &db,
            "--events-store",
            "s3://oh-events",
            &conversations(),
        ],
        &with(&env),
    );
    assert_eq!(code, 1, "{err}");
    assert_expected(&doc, "s3");
    assert_clean_part_clean(&doc);
}

#[test]
fn postgres_with_the_s3_copy() {
    let Some((url, env)) = postgres_and_s3() else {
        return;
    };
    let (code, doc, err) = diagnose_json(
        &[
            "--db",
            &url,
            "--events-store",
            "s3://oh-events/users",
            &conversations(),
        ],
        &with(&env),
    );
    assert_eq!(code, 1, "{err}");
    assert_expected(&doc, "s3");
}

#[test]
fn the_app_servers_s3_endpoint_variables_are_honoured() {
    let Some(endpoint) = service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)") else {
        return;
    };
    // AWS_S3_ENDPOINT + AWS_S3_SECURE=false, as the app server's injector reads them
    let host = endpoint.trim_start_matches("http://").to_string();
    let (code, doc, err) = diagnose_json(
        &["--events-store", "s3://oh-events", "--allow-empty"],
        &[
            ("AWS_S3_ENDPOINT", host.as_str()),
            ("AWS_S3_SECURE", "false"),
            ("AWS_ACCESS_KEY_ID", "fixture"),
            ("AWS_SECRET_ACCESS_KEY", "fixture"),
            ("HOME", "/nonexistent"),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(app_findings(&doc)
        .values()
        .flatten()
        .any(|c| c == "s3-listing-limit"));
}

#[test]
fn a_bucket_of_thousands_is_listed_page_by_page_and_sharded() {
    let Some(endpoint) = service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)") else {
        return;
    };
    // .ci/services.sh loads `oh-scale` with this many copies: three listing pages
    let n: usize = std::env::var("CONVO_DOCTOR_S3_SCALE")
        .expect("CONVO_DOCTOR_S3_SCALE")
        .parse()
        .unwrap();
    let env = s3_env(&endpoint);
    let count = |extra: &[&str]| -> std::collections::BTreeSet<String> {
        let mut args = vec!["--events-store", "s3://oh-scale", "--allow-empty"];
        args.extend(extra);
        let mut e = with(&env);
        e.push(("HOME", "/nonexistent"));
        let (code, doc, err) = diagnose_json(&args, &e);
        assert_eq!(code, 0, "{err}");
        ids(&doc).into_iter().collect()
    };
    let all = count(&[]);
    assert_eq!(all.len(), n);
    let mut union = std::collections::BTreeSet::new();
    let mut sum = 0;
    for k in 0..3 {
        let part = count(&["--shard", &format!("{k}/3")]);
        sum += part.len();
        union.extend(part);
    }
    assert_eq!((sum, union), (n, all));
}

/// Issue 24: the GCS path against a real emulator (fake-gcs-server, which
/// serves the XML API object_store lists with), loaded with the S3 bucket's
/// objects: every planted divergence named as with S3, and the clean
/// conversations clean, with SQLite and with PostgreSQL.
#[test]
fn sqlite_and_postgres_with_the_gcs_copy() {
    let (Some(url), Some(host)) = (
        service("CONVO_DOCTOR_PG_URL", "PostgreSQL"),
        service(
            "CONVO_DOCTOR_GCS_ENDPOINT",
            "the GCS emulator (fake-gcs-server)",
        ),
    ) else {
        return;
    };
    let env = gcs_env(&host);
    let sqlite = format!("sqlite:{}", fixture("persist/openhands.db").display());
    for (db, store) in [
        (sqlite.as_str(), "gs://oh-events"),
        (&url, "gs://oh-events/users"),
    ] {
        let (code, doc, err) = diagnose_json(
            &["--db", db, "--events-store", store, &conversations()],
            &with(&env),
        );
        assert_eq!(code, 1, "{err}");
        assert_whole(
            &doc,
            "gcs",
            "(GoogleCloudEventService): 10 conversation copies",
        );
    }
}

/// `oh-odd` and `oh-big`: `oh-events` and what anybody who may write to the
/// bucket can add (fixtures/gen/appserver_load.py `hostile`, loaded by
/// .ci/services.sh).
fn hostile_buckets() -> Option<Vec<(&'static str, String)>> {
    let endpoint = service("CONVO_DOCTOR_S3_ENDPOINT", "the S3 server (moto)")?;
    service("CONVO_DOCTOR_S3_HOSTILE", "the hostile S3 buckets")?;
    Some(s3_env(&endpoint))
}

/// Issue 22, attack 11: a key the object store client cannot name (an empty
/// segment, `..`, a control character) ended the run with exit 2 and no
/// conversation reported. Each is now one scan error naming it, escaped,
/// and every conversation is reported as with the clean bucket.
#[test]
fn a11_an_odd_s3_key_is_one_scan_error_and_the_scan_goes_on() {
    let Some(env) = hostile_buckets() else {
        return;
    };
    let db = format!("sqlite:{}", fixture("persist/openhands.db").display());
    let (code, doc, err) = diagnose_json(
        &[
            "--db",
            &db,
            "--events-store",
            "s3://oh-odd/users",
            &conversations(),
        ],
        &with(&env),
    );
    assert_eq!(code, 2, "{err}");
    assert_expected(&doc, "s3");
    assert_clean_part_clean(&doc);
    let errors: Vec<&str> = doc["summary"]["error_messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let named = [
        "`users//`",
        "`users/../`",
        "`users/bad\\u{7}user/`",
        "`users/v1_conversations/ccccccccccccccccccccccccccccccc\\u{1}/`",
        "`users/v1_conversations/9ee5f8b754b05705a4b58a7d4557b224/../e.json`",
    ];
    assert_eq!(errors.len(), named.len(), "{errors:#?}");
    for key in named {
        assert!(
            errors
                .iter()
                .any(|e| e.contains(key) && e.contains("s3://oh-odd/users")),
            "{key} not named: {errors:#?}"
        );
    }
    // the control characters never reach the terminal raw
    assert!(!err.contains('\u{7}') && !err.contains('\u{1}'));
}

/// The peak resident memory of `convo-doctor ARGS` (KiB), its own (wait4).
fn peak_kib(args: &[&str], envs: &[(&str, &str)]) -> (i32, i64) {
    // reaped by wait4 below, not by `Child::wait` (which gives no rusage)
    #[allow(clippy::zombie_processes)]
    let child = bin()
        .args(args)
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: plain syscall on our own child, with owned out-parameters
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

/// Issue 22, attack 10: an event object was downloaded whole before the
/// size limit was applied (a 300 MiB object cost 317 MiB). Its size is now
/// asked first: a copy-only event of 100 MiB is never read, and reported
/// as an extra of unknown kind.
#[test]
fn a10_an_s3_object_over_the_limit_is_never_downloaded() {
    let Some(env) = hostile_buckets() else {
        return;
    };
    let db = format!("sqlite:{}", fixture("persist/openhands.db").display());
    let args = [
        "diagnose",
        "--format",
        "json",
        "--db",
        &db,
        "--events-store",
        "s3://oh-big/users",
        &conversations(),
    ];
    let (code, doc, err) = diagnose_json(&args[3..], &with(&env));
    assert_eq!(code, 1, "{err}");
    let big = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"].as_str().unwrap().replace('-', "") == "9ee5f8b754b05705a4b58a7d4557b224")
        .expect("the conversation with the big event");
    let extra = big["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "copy-extra-events")
        .expect("the 100 MiB event is an extra");
    let msg = extra["message"].as_str().unwrap();
    assert!(
        msg.contains("unknown kind") && msg.contains(&"f".repeat(32)),
        "{msg}"
    );
    // the object is 100 MiB: a run that read it would hold at least that
    let (code, kib) = peak_kib(&args, &with(&env));
    assert_eq!(code, 1);
    assert!(kib < 64 * 1024, "peak {kib} KiB: the object was read");
}
