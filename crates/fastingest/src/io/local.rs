//! Local files: one open file handle per read, positional reads (`pread`) on
//! the blocking pool, issued in parallel by the fetcher.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::BytesMut;
use futures::future::BoxFuture;
use futures::FutureExt;

use super::{Failure, RangeSource, Tail};
use crate::error::Error;

/// A local file opened once and read at offsets.
#[derive(Debug)]
pub struct LocalSource {
    location: String,
    file: Arc<File>,
    size: u64,
    modified_millis: Option<i64>,
}

impl LocalSource {
    /// Opens `path`; `location` is the name used in errors.
    pub fn open(path: PathBuf, location: String) -> Result<Self, Error> {
        let file = File::open(&path).map_err(|e| io_error(&location, e))?;
        let meta = file.metadata().map_err(|e| io_error(&location, e))?;
        if meta.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{location}: is a directory; pass a glob such as {location}/*.parquet"
            )));
        }
        let modified_millis = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        Ok(LocalSource {
            location,
            file: Arc::new(file),
            size: meta.len(),
            modified_millis,
        })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

pub(crate) fn io_error(location: &str, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let detail = e.to_string();
    let location = location.to_string();
    match e.kind() {
        K::NotFound => Error::NotFound { location, detail },
        K::PermissionDenied => Error::PermissionDenied { location, detail },
        _ => Error::Io {
            location,
            range: None,
            attempts: 1,
            detail,
            timed_out: false,
            cause: Some(std::sync::Arc::new(e)),
        },
    }
}

impl RangeSource for LocalSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>> {
        let len = len.min(self.size);
        let start = self.size - len;
        async move {
            let mut buf = BytesMut::zeroed(len as usize);
            self.read_into(start..self.size, &mut buf).await?;
            Ok(Tail {
                bytes: buf.freeze(),
                size: self.size,
            })
        }
        .boxed()
    }

    fn read_into<'a>(
        &'a self,
        range: Range<u64>,
        dst: &'a mut BytesMut,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        async move {
            let file = Arc::clone(&self.file);
            // The blocking pool needs an owned buffer: swap it out and back.
            let mut buf = std::mem::take(dst);
            let start = range.start;
            let (buf, res) = tokio::task::spawn_blocking(move || {
                let res = file.read_exact_at(&mut buf[..], start);
                (buf, res)
            })
            .await
            .map_err(|e| Failure::transient(format!("read task failed: {e}")))?;
            *dst = buf;
            res.map_err(|e| {
                let short = e.kind() == std::io::ErrorKind::UnexpectedEof;
                Failure::Permanent(match io_error(&self.location, e) {
                    Error::Io {
                        location,
                        attempts,
                        detail,
                        timed_out,
                        cause,
                        ..
                    } => Error::Io {
                        location,
                        range: Some(range.clone()),
                        attempts,
                        detail: if short {
                            format!("file is shorter than {} bytes", range.end)
                        } else {
                            detail
                        },
                        timed_out,
                        cause,
                    },
                    other => other,
                })
            })
        }
        .boxed()
    }

    fn is_local(&self) -> bool {
        true
    }

    fn known_size(&self) -> Option<u64> {
        Some(self.size)
    }

    fn modified_millis(&self) -> Option<i64> {
        self.modified_millis
    }
}
