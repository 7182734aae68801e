//! Plain `http(s)://` URLs, presigned ones included: only `GET` with a `Range`
//! header is sent (a presigned URL is signed for GET alone, so no HEAD).

use std::ops::Range;
use std::sync::Arc;

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use reqwest::header::{HeaderMap, CONTENT_RANGE, ETAG, IF_MATCH, LAST_MODIFIED, RANGE};
use reqwest::StatusCode;

use super::{copy_body, redact_url, Failure, Guess, Guessed, ObjectVersion, RangeSource, Tail};
use crate::error::Error;

/// One URL read with ranged GETs.
#[derive(Debug)]
pub struct HttpSource {
    url: String,
    identity: String,
    client: reqwest::Client,
    /// The version seen by the first response; later requests send its
    /// strong ETag as `If-Match` so a file replaced mid-read fails instead of
    /// mixing versions.
    seen: std::sync::OnceLock<ObjectVersion>,
}

impl HttpSource {
    /// `client` carries the connect timeout; request timeouts are applied by the retry layer.
    pub fn new(url: String, client: reqwest::Client) -> Self {
        HttpSource {
            identity: redact_url(&url),
            url,
            client,
            seen: std::sync::OnceLock::new(),
        }
    }

    fn note_version(&self, headers: &HeaderMap, size: u64) {
        let _ = self.seen.set(version_from(headers, size));
    }

    async fn get(&self, range_header: String) -> Result<reqwest::Response, Failure> {
        let mut request = self.client.get(&self.url).header(RANGE, range_header);
        if let Some(etag) = self.seen.get().and_then(|v| v.etag.as_ref()) {
            request = request.header(IF_MATCH, etag);
        }
        // reqwest's errors name the URL: without it, so that no signature
        // reaches a message (the location names the object).
        let resp = request.send().await.map_err(|e| {
            let e = e.without_url();
            Failure::Transient {
                timed_out: e.is_timeout(),
                detail: e.to_string(),
                cause: Some(Arc::new(e)),
            }
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        if status == StatusCode::PRECONDITION_FAILED {
            return Err(Failure::Permanent(Error::Io {
                location: self.identity.clone(),
                range: None,
                attempts: 1,
                detail: "the file changed while it was being read (ETag no longer matches)".into(),
                timed_out: false,
                cause: None,
            }));
        }
        let location = self.identity.clone();
        let detail = format!("HTTP {status}");
        Err(match status {
            StatusCode::NOT_FOUND | StatusCode::GONE => {
                Failure::Permanent(Error::NotFound { location, detail })
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Failure::Permanent(Error::PermissionDenied { location, detail })
            }
            s if s.is_server_error()
                || s == StatusCode::TOO_MANY_REQUESTS
                || s == StatusCode::REQUEST_TIMEOUT =>
            {
                Failure::transient(detail)
            }
            _ => Failure::Permanent(Error::Io {
                location,
                range: None,
                attempts: 1,
                detail,
                timed_out: false,
                cause: None,
            }),
        })
    }
}

fn body_error(e: reqwest::Error) -> Failure {
    let e = e.without_url();
    Failure::Transient {
        timed_out: e.is_timeout(),
        detail: format!("reading response body: {e}"),
        cause: Some(Arc::new(e)),
    }
}

/// The version a response's headers describe.
fn version_from(headers: &HeaderMap, size: u64) -> ObjectVersion {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    ObjectVersion {
        size,
        // Weak ETags ("W/...") never match If-Match, so only strong ones count.
        etag: header(ETAG).filter(|v| !v.starts_with("W/")),
        last_modified: header(LAST_MODIFIED),
    }
}

/// Total size from `Content-Range: bytes a-b/total`.
fn total_from_content_range(resp: &reqwest::Response) -> Option<u64> {
    let v = resp.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    v.rsplit('/').next()?.trim().parse().ok()
}

impl RangeSource for HttpSource {
    fn location(&self) -> &str {
        &self.identity
    }

    fn address(&self) -> &str {
        &self.url
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        async move {
            let resp = self.get(format!("bytes=-{len}")).await?;
            let partial = resp.status() == StatusCode::PARTIAL_CONTENT;
            let total = total_from_content_range(&resp);
            let resp_headers = resp.headers().clone();
            let body = resp.bytes().await.map_err(body_error)?;
            if partial {
                let size = total.ok_or_else(|| {
                    Failure::Permanent(Error::Io {
                        location: self.identity.clone(),
                        range: None,
                        attempts: 1,
                        detail: "server sent 206 without a Content-Range total".into(),
                        timed_out: false,
                        cause: None,
                    })
                })?;
                self.note_version(&resp_headers, size);
                Ok(Tail { bytes: body, size })
            } else {
                // The server ignored Range and sent everything.
                let size = body.len() as u64;
                self.note_version(&resp_headers, size);
                let start = size.saturating_sub(len) as usize;
                Ok(Tail {
                    bytes: body.slice(start..),
                    size,
                })
            }
        }
        .boxed()
    }

    fn cache_identity(&self) -> Option<&str> {
        Some(&self.identity)
    }

    fn link_id(&self) -> Option<String> {
        // The server the requests go to: scheme, host and port.
        let url = url::Url::parse(&self.url).ok()?;
        Some(format!(
            "{}://{}:{}",
            url.scheme(),
            url.host_str()?,
            url.port_or_known_default()?
        ))
    }

    fn version(&self) -> Option<ObjectVersion> {
        self.seen.get().cloned()
    }

    fn pin_version(&self, version: &ObjectVersion) {
        let _ = self.seen.set(version.clone());
    }

    fn head(&self) -> BoxFuture<'_, Result<ObjectVersion, Failure>> {
        async move {
            // A presigned URL is signed for GET only: ask for one byte instead of HEAD.
            let resp = self.get("bytes=0-0".to_string()).await?;
            let size = match total_from_content_range(&resp) {
                Some(n) => n,
                None => resp.content_length().unwrap_or(0),
            };
            Ok(version_from(resp.headers(), size))
        }
        .boxed()
    }

    fn read_guess(&self, guess: Guess) -> Option<Guessed<'_>> {
        let range = match guess {
            Guess::Range(range) => format!("bytes={}-{}", range.start, range.end - 1),
            Guess::Last(len) => format!("bytes=-{len}"),
        };
        Some(
            async move {
                let resp = self.get(range).await?;
                // A server that ignores Range would send the whole object:
                // not worth it for speculation (the plan asks for what it needs).
                if resp.status() != StatusCode::PARTIAL_CONTENT {
                    return Err(Failure::transient("the server ignored the range"));
                }
                let size = total_from_content_range(&resp)
                    .ok_or_else(|| Failure::transient("206 without a Content-Range total"))?;
                let version = version_from(resp.headers(), size);
                let bytes = resp.bytes().await.map_err(body_error)?;
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
            let resp = self
                .get(format!("bytes={}-{}", range.start, range.end - 1))
                .await?;
            // A server that ignores Range sends the whole object: skip to our part.
            let skip = if resp.status() == StatusCode::PARTIAL_CONTENT {
                0
            } else {
                range.start as usize
            };
            copy_body(
                resp.bytes_stream().map(|c| c.map_err(body_error)),
                dst,
                (range.end - range.start) as usize,
                skip,
            )
            .await
        }
        .boxed()
    }
}
