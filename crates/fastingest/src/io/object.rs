//! Objects in an `object_store` backend (S3, GCS, Azure, memory).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use super::{copy_body, Failure, Guess, Guessed, ObjectVersion, RangeSource, Tail};
use crate::error::Error;

/// One object in a store. After the first read it pins the object's ETag, so
/// that an object replaced in the middle of a read gives an error rather than
/// a table stitched from two versions.
#[derive(Debug)]
pub struct ObjectStoreSource {
    location: String,
    identity: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    seen: std::sync::OnceLock<ObjectVersion>,
    listed: Option<ObjectVersion>,
    /// The store refused a suffix range (Azure has none, and object_store
    /// says so without a request): a longer tail is then not asked for.
    no_suffix: AtomicBool,
}

impl ObjectStoreSource {
    /// `location` is the URL as the user wrote it, used in errors;
    /// `identity` names the object for the cache (no credentials in it).
    pub fn new(
        store: Arc<dyn ObjectStore>,
        path: Path,
        location: String,
        identity: String,
    ) -> Self {
        ObjectStoreSource {
            location,
            identity,
            store,
            path,
            seen: std::sync::OnceLock::new(),
            listed: None,
            no_suffix: AtomicBool::new(false),
        }
    }

    /// Records what a listing said about the object.
    pub fn with_listed(mut self, version: ObjectVersion) -> Self {
        self.listed = Some(version);
        self
    }

    /// The same object, with what a later listing said about it.
    pub fn relisted(&self, version: ObjectVersion) -> Self {
        ObjectStoreSource {
            location: self.location.clone(),
            identity: self.identity.clone(),
            store: Arc::clone(&self.store),
            path: self.path.clone(),
            seen: std::sync::OnceLock::new(),
            listed: Some(version),
            no_suffix: AtomicBool::new(self.no_suffix.load(Relaxed)),
        }
    }

    /// The store holding the object.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The object's path in its store.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn options(&self, range: GetRange) -> GetOptions {
        GetOptions {
            range: Some(range),
            if_match: self.seen.get().and_then(|v| v.etag.clone()),
            ..Default::default()
        }
    }

    fn classify(&self, err: object_store::Error) -> Failure {
        classify(&self.location, err)
    }
}

/// The version an object_store response or listing describes.
pub(crate) fn version_of(meta: &object_store::ObjectMeta) -> ObjectVersion {
    ObjectVersion {
        size: meta.size,
        etag: meta.e_tag.clone(),
        last_modified: Some(meta.last_modified.timestamp_millis().to_string()),
    }
}

/// Sorts an object_store error into retry-worthy or final.
pub(crate) fn classify(location: &str, err: object_store::Error) -> Failure {
    use object_store::Error as E;
    let location = location.to_string();
    let detail = err.to_string();
    match err {
        E::NotFound { .. } => Failure::Permanent(Error::NotFound { location, detail }),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
            Failure::Permanent(Error::PermissionDenied { location, detail })
        }
        E::Precondition { .. } => Failure::Permanent(Error::Io {
            location,
            range: None,
            attempts: 1,
            detail: format!("the object changed while it was being read ({detail})"),
            timed_out: false,
            cause: Some(Arc::new(err)),
        }),
        E::Generic { .. } => match http_status(&detail) {
            // 408, 429 (SlowDown) and 5xx are worth another try; other 4xx are not.
            Some(s) if (400..500).contains(&s) && s != 408 && s != 429 => {
                let kind = if s == 416 {
                    "range not satisfiable"
                } else {
                    "request rejected"
                };
                Failure::Permanent(Error::Io {
                    location,
                    range: None,
                    attempts: 1,
                    detail: format!("{kind}: {detail}"),
                    timed_out: false,
                    cause: Some(Arc::new(err)),
                })
            }
            _ => Failure::Transient {
                timed_out: detail.contains("timed out") || detail.contains("Timeout"),
                detail,
                cause: Some(Arc::new(err)),
            },
        },
        _ => Failure::Permanent(Error::Io {
            location,
            range: None,
            attempts: 1,
            detail,
            timed_out: false,
            cause: Some(Arc::new(err)),
        }),
    }
}

/// Finds the HTTP status in object_store's error text
/// ("... non-2xx status code: 503 Service Unavailable ...").
fn http_status(detail: &str) -> Option<u16> {
    let idx = detail.find("status code: ")? + "status code: ".len();
    detail.get(idx..idx + 3)?.parse().ok()
}

impl RangeSource for ObjectStoreSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        async move {
            let result = match self
                .store
                .get_opts(&self.path, self.options(GetRange::Suffix(len)))
                .await
            {
                Ok(r) => r,
                // Azure has no suffix ranges: learn the size first (two requests).
                Err(object_store::Error::NotSupported { .. }) => {
                    self.no_suffix.store(true, Relaxed);
                    let meta = self
                        .store
                        .head(&self.path)
                        .await
                        .map_err(|e| self.classify(e))?;
                    let _ = self.seen.set(version_of(&meta));
                    let start = meta.size.saturating_sub(len);
                    if start == meta.size {
                        return Ok(Tail {
                            bytes: bytes::Bytes::new(),
                            size: meta.size,
                        });
                    }
                    self.store
                        .get_opts(
                            &self.path,
                            self.options(GetRange::Bounded(start..meta.size)),
                        )
                        .await
                        .map_err(|e| self.classify(e))?
                }
                Err(e) => return Err(self.classify(e)),
            };
            let size = result.meta.size;
            let _ = self.seen.set(version_of(&result.meta));
            let bytes = result.bytes().await.map_err(|e| self.classify(e))?;
            Ok(Tail { bytes, size })
        }
        .boxed()
    }

    fn cache_identity(&self) -> Option<&str> {
        // The in-memory store lives and dies with the process: nothing to cache.
        (!self.identity.starts_with("memory:")).then_some(self.identity.as_str())
    }

    fn link_id(&self) -> Option<String> {
        // Clients are kept for the life of the process, one per endpoint and
        // set of options (`clients::store_for`): the client's address names
        // the link its requests take.
        Some(format!("{:p}", Arc::as_ptr(&self.store).cast::<()>()))
    }

    fn version(&self) -> Option<ObjectVersion> {
        self.seen.get().cloned()
    }

    fn listed_version(&self) -> Option<ObjectVersion> {
        self.listed.clone()
    }

    fn pin_version(&self, version: &ObjectVersion) {
        let _ = self.seen.set(version.clone());
    }

    fn head(&self) -> BoxFuture<'_, Result<ObjectVersion, Failure>> {
        async move {
            let meta = self
                .store
                .head(&self.path)
                .await
                .map_err(|e| self.classify(e))?;
            Ok(version_of(&meta))
        }
        .boxed()
    }

    fn read_guess(&self, guess: Guess) -> Option<Guessed<'_>> {
        // object_store accepts a range the object ends within (it checks the
        // Content-Range against the range cut at the object's size).
        let range = match guess {
            Guess::Range(range) => GetRange::Bounded(range),
            // The first tail, asked for before any guess, found out.
            Guess::Last(_) if self.no_suffix.load(Relaxed) => return None,
            Guess::Last(len) => GetRange::Suffix(len),
        };
        Some(
            async move {
                let result = self
                    .store
                    .get_opts(&self.path, self.options(range))
                    .await
                    .map_err(|e| self.classify(e))?;
                let version = version_of(&result.meta);
                let bytes = result.bytes().await.map_err(|e| self.classify(e))?;
                Ok((bytes, version))
            }
            .boxed(),
        )
    }

    fn read_into<'a>(
        &'a self,
        range: Range<u64>,
        dst: &'a mut BytesMut,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        async move {
            let result = self
                .store
                .get_opts(&self.path, self.options(GetRange::Bounded(range.clone())))
                .await
                .map_err(|e| self.classify(e))?;
            // Stream the body straight into its place in the destination buffer.
            let body = result
                .into_stream()
                .map(|c| c.map_err(|e| self.classify(e)));
            copy_body(body, dst, (range.end - range.start) as usize, 0).await
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_are_found_in_error_text() {
        assert_eq!(
            http_status("Error performing GET x in 1ms - Server returned non-2xx status code: 503 Service Unavailable: "),
            Some(503)
        );
        assert_eq!(http_status("connection reset"), None);
    }
}
