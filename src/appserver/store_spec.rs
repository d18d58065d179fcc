//! `--events-store` as given: the app server's event copy in a folder, an
//! S3 bucket or a GCS bucket, and which of its event services writes there.

use std::path::PathBuf;

/// The folder (or key segment) the app server files conversations under.
pub const V1_DIR: &str = "v1_conversations";
/// The bucket prefix `AwsEventServiceInjector` / `GoogleCloudEventServiceInjector` default to.
pub const BUCKET_PREFIX: &str = "users";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Fs,
    S3,
    Gcs,
}

impl Backend {
    pub fn service(self) -> &'static str {
        match self {
            Backend::Fs => "FilesystemEventService",
            Backend::S3 => "AwsEventService",
            Backend::Gcs => "GoogleCloudEventService",
        }
    }
}

/// `--events-store` as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreSpec {
    /// The app server's persistence directory (`OH_PERSISTENCE_DIR`,
    /// default `~/.openhands`).
    Fs(PathBuf),
    S3 {
        bucket: String,
        prefix: String,
    },
    Gcs {
        bucket: String,
        prefix: String,
    },
}

impl StoreSpec {
    pub fn parse(s: &str) -> Result<StoreSpec, String> {
        let bucket = |rest: &str| -> Result<(String, String), String> {
            let (b, p) = rest.split_once('/').unwrap_or((rest, ""));
            if b.is_empty() {
                return Err(format!("`{s}` names no bucket"));
            }
            let p = p.trim_matches('/');
            let p = if p.is_empty() { BUCKET_PREFIX } else { p };
            Ok((b.to_string(), p.to_string()))
        };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = bucket(rest)?;
            return Ok(StoreSpec::S3 { bucket, prefix });
        }
        if let Some(rest) = s.strip_prefix("gs://") {
            let (bucket, prefix) = bucket(rest)?;
            return Ok(StoreSpec::Gcs { bucket, prefix });
        }
        if s.contains("://") {
            return Err(format!(
                "`{}`: an events store is a path, s3://bucket[/prefix] or gs://bucket[/prefix]",
                super::without_password(s)
            ));
        }
        if s.is_empty() {
            return Err("an empty --events-store".into());
        }
        let mut p = PathBuf::from(s);
        // Given the v1_conversations folder itself: its parent is the prefix.
        if p.file_name().is_some_and(|n| n == V1_DIR) {
            p.pop();
        }
        Ok(StoreSpec::Fs(p))
    }

    pub fn backend(&self) -> Backend {
        match self {
            StoreSpec::Fs(_) => Backend::Fs,
            StoreSpec::S3 { .. } => Backend::S3,
            StoreSpec::Gcs { .. } => Backend::Gcs,
        }
    }

    pub fn display(&self) -> String {
        match self {
            StoreSpec::Fs(p) => p.display().to_string(),
            StoreSpec::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
            StoreSpec::Gcs { bucket, prefix } => format!("gs://{bucket}/{prefix}"),
        }
    }
}
