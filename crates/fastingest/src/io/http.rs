//! Plain `http(s)://` URLs, presigned ones included: only `GET` with a `Range`
//! header is sent (a presigned URL is signed for GET alone, so no HEAD).

use std::ops::Range;

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use reqwest::header::{CONTENT_RANGE, ETAG, IF_MATCH, RANGE};
use reqwest::StatusCode;

use super::{copy_body, Failure, RangeSource, Tail};
use crate::error::Error;

/// One URL read with ranged GETs.
#[derive(Debug)]
pub struct HttpSource {
    url: String,
    client: reqwest::Client,
    /// The strong ETag seen by the first response; later requests send it as
    /// `If-Match` so a file replaced mid-read fails instead of mixing versions.
    etag: std::sync::OnceLock<Option<String>>,
}

impl HttpSource {
    /// `client` carries the connect timeout; request timeouts are applied by the retry layer.
    pub fn new(url: String, client: reqwest::Client) -> Self {
        HttpSource {
            url,
            client,
            etag: std::sync::OnceLock::new(),
        }
    }

    async fn get(&self, range_header: String) -> Result<reqwest::Response, Failure> {
        let mut request = self.client.get(&self.url).header(RANGE, range_header);
        if let Some(Some(etag)) = self.etag.get() {
            request = request.header(IF_MATCH, etag);
        }
        let resp = request.send().await.map_err(|e| Failure::Transient {
            timed_out: e.is_timeout(),
            detail: e.to_string(),
        })?;
        let status = resp.status();
        if status.is_success() {
            // Weak ETags ("W/...") never match If-Match, so only strong ones are pinned.
            let etag = resp
                .headers()
                .get(ETAG)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.starts_with("W/"))
                .map(str::to_string);
            let _ = self.etag.set(etag);
            return Ok(resp);
        }
        if status == StatusCode::PRECONDITION_FAILED {
            return Err(Failure::Permanent(Error::Io {
                location: self.url.clone(),
                range: 0..0,
                attempts: 1,
                detail: "the file changed while it was being read (ETag no longer matches)".into(),
                timed_out: false,
            }));
        }
        let location = self.url.clone();
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
                range: 0..0,
                attempts: 1,
                detail,
                timed_out: false,
            }),
        })
    }
}

fn body_error(e: reqwest::Error) -> Failure {
    Failure::Transient {
        timed_out: e.is_timeout(),
        detail: format!("reading response body: {e}"),
    }
}

/// Total size from `Content-Range: bytes a-b/total`.
fn total_from_content_range(resp: &reqwest::Response) -> Option<u64> {
    let v = resp.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    v.rsplit('/').next()?.trim().parse().ok()
}

impl RangeSource for HttpSource {
    fn location(&self) -> &str {
        &self.url
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        async move {
            let resp = self.get(format!("bytes=-{len}")).await?;
            let partial = resp.status() == StatusCode::PARTIAL_CONTENT;
            let total = total_from_content_range(&resp);
            let body = resp.bytes().await.map_err(body_error)?;
            if partial {
                let size = total.ok_or_else(|| {
                    Failure::Permanent(Error::Io {
                        location: self.url.clone(),
                        range: 0..0,
                        attempts: 1,
                        detail: "server sent 206 without a Content-Range total".into(),
                        timed_out: false,
                    })
                })?;
                Ok(Tail { bytes: body, size })
            } else {
                // The server ignored Range and sent everything.
                let size = body.len() as u64;
                let start = size.saturating_sub(len) as usize;
                Ok(Tail {
                    bytes: body.slice(start..),
                    size,
                })
            }
        }
        .boxed()
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
                skip,
            )
            .await
        }
        .boxed()
    }
}
