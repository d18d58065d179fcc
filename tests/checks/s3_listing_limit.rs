//! `s3-listing-limit`: with `--events-store s3://…`, a conversation whose
//! copy holds more than 1,000 keys: the app server's S3 event service makes
//! one listing call and sees the first 1,000 only. Nothing in the data is
//! wrong, and there is no repair. Needs the S3 server .ci/services.sh starts
//! (a SKIP without it, a failure in CI).

use super::appserver_fs::{self, conversation};
use super::appserver_shared::{
    app_findings, conversations, diagnose_json, fixture, s3_env, service, with,
};

/// The long conversation of the S3 copy (1,050 events) is reported, and
/// only it: the real app server counted 1,000 of them.
#[test]
fn the_long_s3_copy_is_found_and_no_shorter_one() {
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
    let long = conversation("long-s3");
    assert_eq!(long["s3_count_events"], 1000);
    let id = long["id"].as_str().unwrap();
    let on: Vec<String> = app_findings(&doc)
        .into_iter()
        .filter(|(_, checks)| checks.contains("s3-listing-limit"))
        .map(|(conv, _)| conv)
        .collect();
    assert_eq!(on, [id]);
    let finding = doc["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"].as_str().unwrap().replace('-', "") == id)
        .unwrap()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "s3-listing-limit")
        .unwrap()
        .clone();
    assert_eq!(finding["severity"], "warning");
}

/// The filesystem copy is listed whole: never reported there.
#[test]
fn the_filesystem_copy_is_never_reported() {
    assert!(appserver_fs::found("s3-listing-limit").is_empty());
}
