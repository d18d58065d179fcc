//! Object keys the object store client cannot name, passed over one by one.
//!
//! The client (`object_store`) turns every key of a listing page into its
//! `Path` and fails the whole listing when one does not parse (`users//x`,
//! a `..` segment, a control character), so one odd key that anybody with
//! write access to the bucket put there would end the scan with no
//! conversation reported. This sits between the client and HTTP: each
//! listing page (`list-type=2`, the S3 and GCS XML APIs alike) is read, every
//! `<Contents>` or `<CommonPrefixes>` entry whose key the client's own
//! parser (`Path::parse`) refuses is taken out and remembered, and the rest
//! of the page goes on to the client unchanged.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;

/// A listing page larger than this is an error, not read on (a page of
/// 1,000 keys of 1,024 bytes each is about 1.5 MB of XML).
const MAX_PAGE: usize = 64 << 20;

/// The keys passed over so far, shared by the connector and the store.
#[derive(Debug, Clone, Default)]
pub struct OddKeys(Arc<Mutex<Vec<String>>>);

impl OddKeys {
    /// The keys passed over under `prefix` ("" for all), taken out (each
    /// one is reported once).
    pub fn take_under(&self, prefix: &str) -> Vec<String> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, rest): (Vec<String>, Vec<String>) =
            all.drain(..).partition(|k| k.starts_with(prefix));
        *all = rest;
        mine
    }

    fn add(&self, keys: Vec<String>) {
        if !keys.is_empty() {
            let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
            all.extend(keys);
        }
    }
}

/// The client's own HTTP connector with the listing pages filtered.
#[derive(Debug, Clone)]
pub struct Connector(pub OddKeys);

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Service {
            inner,
            odd: self.0.clone(),
        }))
    }
}

#[derive(Debug)]
struct Service {
    inner: HttpClient,
    odd: OddKeys,
}

#[async_trait::async_trait]
impl HttpService for Service {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let listing = req.method() == http::Method::GET
            && req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|p| p == "list-type=2"));
        let resp = self.inner.execute(req).await?;
        if !listing || !resp.status().is_success() {
            return Ok(resp);
        }
        let (mut parts, body) = resp.into_parts();
        let mut page = Vec::new();
        let mut stream = body.bytes_stream();
        while let Some(chunk) = stream.next().await {
            page.extend_from_slice(&chunk?);
            if page.len() > MAX_PAGE {
                return Err(HttpError::new(
                    HttpErrorKind::Decode,
                    std::io::Error::other(format!("a listing page of over {} MiB", MAX_PAGE >> 20)),
                ));
            }
        }
        let page = match String::from_utf8(page) {
            Ok(text) => {
                let (kept, odd) = filter_page(&text);
                self.odd.add(odd);
                kept.into_bytes()
            }
            // not text: the client's XML reader says what is wrong with it
            Err(e) => e.into_bytes(),
        };
        parts.headers.remove(http::header::CONTENT_LENGTH);
        Ok(HttpResponse::from_parts(
            parts,
            HttpResponseBody::from(page),
        ))
    }
}

/// Why the client cannot name `key`, in words.
pub fn why(key: &str) -> &'static str {
    let trimmed = key.strip_prefix('/').unwrap_or(key);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    let segments = || trimmed.split('/');
    if segments().any(|s| s == "." || s == "..") {
        "a `.` or `..` segment"
    } else if segments().any(str::is_empty) {
        "an empty segment, `//`"
    } else {
        "a control character"
    }
}

/// The page without the entries whose key the client cannot parse, and
/// those keys (as the XML gives them, unescaped).
fn filter_page(xml: &str) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(xml.len());
    let mut odd = Vec::new();
    let mut rest = xml;
    loop {
        // the next entry of either kind
        let next = [("Contents", "Key"), ("CommonPrefixes", "Prefix")]
            .into_iter()
            .filter_map(|(entry, field)| {
                rest.find(&format!("<{entry}>"))
                    .map(|at| (at, entry, field))
            })
            .min_by_key(|(at, _, _)| *at);
        let Some((at, entry, field)) = next else {
            kept.push_str(rest);
            return (kept, odd);
        };
        let close = format!("</{entry}>");
        let Some(len) = rest[at..].find(&close) else {
            kept.push_str(rest);
            return (kept, odd);
        };
        let end = at + len + close.len();
        let block = &rest[at..end];
        kept.push_str(&rest[..at]);
        match field_text(block, field) {
            Some(key) if object_store::path::Path::parse(&key).is_err() => odd.push(key),
            _ => kept.push_str(block),
        }
        rest = &rest[end..];
    }
}

/// The unescaped text of `<field>` in `block`.
fn field_text(block: &str, field: &str) -> Option<String> {
    let open = format!("<{field}>");
    let start = block.find(&open)? + open.len();
    let len = block[start..].find(&format!("</{field}>"))?;
    quick_xml::escape::unescape(&block[start..start + len])
        .ok()
        .map(|s| s.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_client_cannot_parse_is_taken_out() {
        let page = "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name>\
            <Contents><Key>users/v1_conversations/ab/e1.json</Key><Size>2</Size></Contents>\
            <Contents><Key>users//x.json</Key><Size>2</Size></Contents>\
            <CommonPrefixes><Prefix>users/../</Prefix></CommonPrefixes>\
            <CommonPrefixes><Prefix>users/alice/</Prefix></CommonPrefixes>\
            <CommonPrefixes><Prefix>users/b&#x1;d/</Prefix></CommonPrefixes>\
            <Contents><Key>a &amp; b.json</Key></Contents>\
            <NextContinuationToken>t</NextContinuationToken></ListBucketResult>";
        let (kept, odd) = filter_page(page);
        assert_eq!(odd, ["users//x.json", "users/../", "users/b\u{1}d/"]);
        assert!(kept.contains("<Key>users/v1_conversations/ab/e1.json</Key>"));
        assert!(kept.contains("<Prefix>users/alice/</Prefix>"));
        assert!(kept.contains("<Key>a &amp; b.json</Key>"));
        assert!(
            kept.ends_with("<NextContinuationToken>t</NextContinuationToken></ListBucketResult>")
        );
        assert!(!kept.contains("users//") && !kept.contains(".."));
        // nothing odd: the page unchanged
        let clean = page
            .replace("users//", "users/")
            .replace("/../", "/up/")
            .replace("b&#x1;d", "bd");
        assert_eq!(filter_page(&clean), (clean.clone(), Vec::new()));
    }

    #[test]
    fn taken_by_prefix_once() {
        let odd = OddKeys::default();
        odd.add(vec!["a/x".into(), "b/y".into(), "a/z".into()]);
        assert_eq!(odd.take_under("a/"), ["a/x", "a/z"]);
        assert!(odd.take_under("a/").is_empty());
        assert_eq!(odd.take_under(""), ["b/y"]);
    }
}
