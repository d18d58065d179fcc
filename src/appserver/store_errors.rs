//! An object store's failure in a few words, once, with what to check next.
//! The `object_store` client's errors repeat their causes (each layer
//! quotes the next, and the retry layer the request), so a refused endpoint
//! said `after 10 retries` three times and missing credentials printed the
//! instance metadata service's 403 three times without saying what was
//! missing. Here the whole chain is read once and named: no credentials
//! found (and where they were looked for), bucket not found, access denied,
//! endpoint refused, unknown host, no answer; anything else is its
//! innermost cause.

use std::error::Error;

use super::store_spec::StoreSpec;

/// Where the S3 client looks for credentials, in order (docs/appserver.md).
const S3_CHAIN: &str = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE, the ECS task role (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI), the EC2 instance metadata service at 169.254.169.254";

/// Where the GCS client looks for credentials, in order.
const GCS_CHAIN: &str = "GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_APPLICATION_CREDENTIALS, the metadata server (metadata.google.internal)";

/// Error codes of S3's XML answers that mean the credentials may not do it.
const DENIED: &[&str] = &[
    "AccessDenied",
    "AllAccessDisabled",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "AccountProblem",
];

/// The `<Code>` of an S3 XML error answer quoted in `text`.
fn xml_code(text: &str) -> Option<&str> {
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    Some(&text[start..start + len])
}

/// The `scheme://host[:port]` of the first request quoted in `text` that is
/// not the metadata service's.
fn endpoint(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(i) = rest.find("http") {
        let tail = &rest[i..];
        let scheme = ["http://", "https://"]
            .into_iter()
            .find(|s| tail.starts_with(s));
        if let Some(s) = scheme {
            let end = tail[s.len()..]
                .find(|c: char| c == '/' || c == '?' || c.is_whitespace())
                .map_or(tail.len(), |e| e + s.len());
            let url = &tail[..end];
            if !url.contains("169.254.169.254") && !url.contains("metadata.google.internal") {
                return Some(url);
            }
        }
        rest = &tail[4..];
    }
    None
}

/// What `e` (an object store client's error) means, in one line.
pub fn cause(e: &(dyn Error + 'static), spec: &StoreSpec) -> String {
    let mut chain: Vec<&(dyn Error + 'static)> = vec![e];
    let mut at = e;
    while let Some(next) = at.source() {
        chain.push(next);
        at = next;
    }
    let all: String = chain
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(" | ");
    let io = chain
        .iter()
        .find_map(|e| e.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let (bucket, chain_of_credentials) = match spec {
        StoreSpec::S3 { bucket, .. } => (bucket.as_str(), S3_CHAIN),
        StoreSpec::Gcs { bucket, .. } => (bucket.as_str(), GCS_CHAIN),
        StoreSpec::Fs(_) => ("", ""),
    };
    let at = endpoint(&all).unwrap_or("the store's endpoint");
    let code = xml_code(&all);
    let metadata = all.contains("169.254.169.254")
        || all.contains("metadata.google.internal")
        || all.contains("computeMetadata");
    let refused =
        io == Some(std::io::ErrorKind::ConnectionRefused) || all.contains("Connection refused");
    let text = if code == Some("NoSuchBucket") {
        format!("bucket not found: {at} has no bucket `{bucket}`; check the name (the app server's FILE_STORE_PATH) and the endpoint")
    } else if metadata {
        format!("no credentials found (looked in {chain_of_credentials})")
    } else if let Some(c) = code.filter(|c| DENIED.contains(c)) {
        format!("access denied ({c}): the credentials found may not list `{bucket}`; check their key and policy")
    } else if all.contains("403 Forbidden") {
        format!("access denied (403 Forbidden from {at}): the credentials found may not list `{bucket}`; check their key and policy")
    } else if refused {
        format!("endpoint refused: nothing listens at {at}; check the endpoint (AWS_ENDPOINT_URL, AWS_S3_ENDPOINT, STORAGE_EMULATOR_HOST)")
    } else if all.contains("dns error") || all.contains("lookup address") {
        format!("unknown host: {at} does not resolve; check the endpoint")
    } else if io == Some(std::io::ErrorKind::TimedOut) || all.contains("timed out") {
        format!("no answer from {at}: the request timed out")
    } else {
        // the innermost cause, said once
        chain.last().map(|e| e.to_string()).unwrap_or_default()
    };
    crate::text::sanitize(&super::without_password(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_endpoints_are_found() {
        let t = "Error performing GET http://127.0.0.1:54330/b?list-type=2 in 4ms - 404: <Error><Code>NoSuchBucket</Code></Error>";
        assert_eq!(xml_code(t), Some("NoSuchBucket"));
        assert_eq!(endpoint(t), Some("http://127.0.0.1:54330"));
        let imds = "Error performing PUT http://169.254.169.254/latest/api/token - 403 Forbidden";
        assert_eq!(endpoint(imds), None);
        let spec = StoreSpec::S3 {
            bucket: "b".into(),
            prefix: "users".into(),
        };
        let e = std::io::Error::other(imds);
        assert!(cause(&e, &spec).starts_with("no credentials found (looked in AWS_ACCESS_KEY_ID"));
        let e = std::io::Error::other(t);
        assert!(cause(&e, &spec)
            .starts_with("bucket not found: http://127.0.0.1:54330 has no bucket `b`"));
    }
}
