//! The app server's side of a conversation (issue 18). In a deployment with
//! the web app (openhands-ai: the OSS GUI, self-hosted, Cloud) a conversation
//! lives in three places: the app server's SQL row (`conversation_metadata`,
//! [`db`]), the app server's copy of its events ([`events_store`]: a
//! filesystem, S3 or GCS), and the agent-server's folder (`crate::store`).
//! [`relate`] joins them by conversation id for the checks in
//! `src/checks/` whose `run_related` looks at all three. Everything here
//! only reads.

pub mod db;
pub mod events_store;
pub mod odd_keys;
pub mod pg;
pub mod relate;
pub mod rows;
mod sqlite;
pub mod store_errors;
pub mod store_spec;

pub use relate::{Related, Sources};

/// A URL as reports may show it: the password of `user:password@` removed
/// (also inside an error message that quotes the URL).
pub fn without_password(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                c == '/'
                    || c == '?'
                    || c == '#'
                    || c.is_whitespace()
                    || c == '`'
                    || c == '"'
                    || c == '\''
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                let user = userinfo.split(':').next().unwrap_or("");
                out.push_str(user);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    // libpq-style `password=...` in a connection string or an error
    redact_kv(&out, "password=")
}

fn redact_kv(s: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        let tail = &rest[i + key.len()..];
        let end = tail.find([' ', '&', ';']).unwrap_or(tail.len());
        out.push_str("***");
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// 32 hex digits.
pub fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A UUID as Python's `uuid.UUID(s)` accepts the spellings the app server
/// and the agent-server write (dashed, or 32 hex digits; optional braces or
/// `urn:uuid:`), as 32 lower-case hex digits.
pub fn uuid_hex(s: &str) -> Option<String> {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: String = t.chars().filter(|&c| c != '-').collect();
    is_hex32(&hex).then(|| hex.to_ascii_lowercase())
}

/// A UUID in any spelling [`uuid_hex`] takes, dashed as `str(UUID)` writes
/// it (the database's `conversation_id`).
pub fn uuid_dashed(s: &str) -> Option<String> {
    let h = uuid_hex(s)?;
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_shown() {
        assert_eq!(
            without_password("postgres://alice:s3cret@db:5432/openhands"),
            "postgres://alice@db:5432/openhands"
        );
        assert_eq!(
            without_password("error connecting to `postgres://u:p@h/x`: refused"),
            "error connecting to `postgres://u@h/x`: refused"
        );
        assert_eq!(
            without_password("host=/tmp user=u password=hunter2 dbname=x"),
            "host=/tmp user=u password=*** dbname=x"
        );
        assert_eq!(without_password("s3://bucket/users"), "s3://bucket/users");
    }

    #[test]
    fn uuids() {
        assert_eq!(
            uuid_hex("0F8B0186-D86C-5DBB-8239-DD60A36A9EC5").as_deref(),
            Some("0f8b0186d86c5dbb8239dd60a36a9ec5")
        );
        assert!(uuid_hex("not-a-uuid").is_none());
        assert_eq!(
            uuid_dashed("0f8b0186d86c5dbb8239dd60a36a9ec5").as_deref(),
            Some("0f8b0186-d86c-5dbb-8239-dd60a36a9ec5")
        );
    }
}
