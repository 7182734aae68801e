//! Byte sources: the one abstraction every format reader fetches through.
//!
//! A [`RangeSource`] is one file or object that can be read at byte offsets.
//! Three kinds exist: local files (positional reads, no object_store layer),
//! objects in an `object_store` backend, and plain `http(s)://` URLs (which may
//! be presigned, so only GET with a `Range` header is used).

mod disk;
mod http;
mod local;
mod mapped;
mod object;
mod retry;
mod version;

use std::fmt::Debug;
use std::fs::File;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};

pub use self::http::HttpSource;
pub use self::local::LocalSource;
pub use self::mapped::MappedFile;
#[cfg(test)]
pub(crate) use self::mapped::VIEWS_OFFERED;
pub(crate) use self::mapped::{cut_short_error, release_view};
pub(crate) use self::object::classify as classify_store_error;
pub(crate) use self::object::version_of;
pub use self::object::ObjectStoreSource;
pub use self::retry::Failure;
pub(crate) use self::retry::{with_retries, Retry};
pub(crate) use self::version::redact_url;
pub use self::version::ObjectVersion;

use crate::error::Result;

/// What a speculative request asks for while the object's size is not yet
/// known ([`RangeSource::read_guess`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guess {
    /// These bytes, or fewer where the object ends within them (a store
    /// refuses a range that starts past the end: 416).
    Range(Range<u64>),
    /// The object's last this many bytes, or all of it where it is shorter.
    Last(u64),
}

impl Guess {
    /// The most bytes the answer can hold.
    pub fn most_bytes(&self) -> u64 {
        match self {
            Guess::Range(range) => range.end - range.start,
            Guess::Last(len) => *len,
        }
    }
}

/// A speculative read's answer ([`RangeSource::read_guess`]): the bytes and
/// the version they are of.
pub type Guessed<'a> = BoxFuture<'a, Result<(Bytes, ObjectVersion), Failure>>;

/// The end of a file, as brought by one speculative suffix request.
#[derive(Debug, Clone)]
pub struct Tail {
    /// The last `bytes.len()` bytes of the object.
    pub bytes: Bytes,
    /// The object's total size.
    pub size: u64,
}

impl Tail {
    /// Where its bytes begin in the object.
    pub fn start(&self) -> u64 {
        self.size - self.bytes.len() as u64
    }
}

/// One readable file or object.
///
/// Implementations do one attempt per call; retries and timeouts are applied
/// by [`with_retries`] around them, so every source retries the same way.
pub trait RangeSource: Send + Sync + Debug {
    /// Where the bytes come from, as the user named it but without
    /// credentials or URL signatures; used in every error, log and repr.
    fn location(&self) -> &str;

    /// What opens exactly this object again (a presigned URL with its
    /// signature): for handing a file to another process, never for display.
    fn address(&self) -> &str {
        self.location()
    }

    /// Reads up to `len` bytes from the end of the object and learns its size,
    /// in a single request where the backend allows it.
    fn read_tail(&self, len: u64) -> BoxFuture<'_, Result<Tail, Failure>>;

    /// Appends the bytes of `range` to `dst`. Callers give `dst` the room
    /// (capacity past its length), so that nothing is reallocated, and no
    /// implementation clears that room first. A failed attempt may leave
    /// part of the bytes appended: the caller truncates `dst` before trying
    /// again.
    fn read_into<'a>(
        &'a self,
        range: Range<u64>,
        dst: &'a mut BytesMut,
    ) -> BoxFuture<'a, Result<(), Failure>>;

    /// For a speculative read while the object's size is not known yet (its
    /// start beside the footer request, or a longer tail in case the footer
    /// is long): one request that the store answers with fewer bytes where
    /// the object is shorter, with the version the response was of. `None`
    /// where the source makes no such request (local files: their size is
    /// known at once).
    fn read_guess(&self, guess: Guess) -> Option<Guessed<'_>> {
        let _ = guess;
        None
    }

    /// The file mapped into memory, to read without copies (local files,
    /// where the system allows: see [`MappedFile`]); `None` reads with
    /// [`RangeSource::read_into`].
    fn map(&self) -> Option<Arc<MappedFile>> {
        None
    }

    /// The file's mapping while bytes read through it live.
    fn mapped(&self) -> Option<Arc<MappedFile>> {
        None
    }

    /// Whether the file was cut short under a mapping during this read, so
    /// that bytes read through it are not the file's.
    fn cut_short(&self) -> bool {
        false
    }

    /// Whether reads go to local disk (no network, no retries needed, no cache).
    fn is_local(&self) -> bool {
        false
    }

    /// Whether a local file lies on a device that says it is rotational
    /// (Linux's sysfs, asked once per device); what that changes is
    /// [`crate::config::LocalDisk`]'s to decide.
    fn on_rotational_disk(&self) -> bool {
        false
    }

    /// The object's identity for the cache: its URL without credentials or
    /// request signatures (plus the endpoint when it is not in the URL).
    /// `None`: never cached.
    fn cache_identity(&self) -> Option<&str> {
        None
    }

    /// Names the store the requests go to (one client, one endpoint), so
    /// that what a read learns of the link to it serves later reads (see
    /// [`crate::link`]). `None`: nothing is kept (local files, sources that
    /// say nothing).
    fn link_id(&self) -> Option<String> {
        None
    }

    /// The version the first response reported, or the one pinned.
    fn version(&self) -> Option<ObjectVersion> {
        None
    }

    /// The version a listing reported when the source came from a glob: as
    /// good as a validation made just now.
    fn listed_version(&self) -> Option<ObjectVersion> {
        None
    }

    /// The object's size when known without a request (a listing said it,
    /// or a local file's metadata).
    fn known_size(&self) -> Option<u64> {
        self.listed_version().map(|v| v.size)
    }

    /// When the object was last written, in milliseconds since the epoch,
    /// when known without a request (a listing said it, or a local file's
    /// metadata).
    fn modified_millis(&self) -> Option<i64> {
        self.listed_version()?.last_modified?.parse().ok()
    }

    /// Makes every later request conditional on `version` (a known version
    /// from the cache), so a changed object fails instead of mixing versions.
    fn pin_version(&self, _version: &ObjectVersion) {}

    /// Asks the store for the object's current version (one request).
    fn head(&self) -> BoxFuture<'_, Result<ObjectVersion, Failure>> {
        let location = self.location().to_string();
        Box::pin(async move {
            Err(Failure::Permanent(crate::error::Error::Unsupported {
                location,
                detail: "this source cannot report its version".into(),
                cause: None,
            }))
        })
    }
}

/// Fills `dst` with the file's bytes from `offset` on, by `pread`, which
/// writes into memory whatever it held (so `dst` need not be cleared
/// first); a file that ends first is an `UnexpectedEof` error.
pub(crate) fn pread_exact(
    file: &File,
    dst: &mut [MaybeUninit<u8>],
    offset: u64,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < dst.len() {
        let rest = &mut dst[done..];
        // SAFETY: the kernel writes at most `rest.len()` bytes into `rest`,
        // a live buffer of that length.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                rest.as_mut_ptr().cast(),
                rest.len(),
                (offset + done as u64) as libc::off_t,
            )
        };
        match n {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n if n < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => done += n as usize,
        }
    }
    Ok(())
}

/// Appends the first `want` bytes of a response body to `dst`, after
/// skipping its first `skip` bytes (a server that ignored the Range header
/// sends the whole object). A body that ends early is a transient failure:
/// the caller retries the whole range.
///
/// Appended, not copied over: `dst` is room that nothing has written yet,
/// and clearing it first (memory the allocator reuses is not zero) was 7 %
/// of the client's CPU in a steady read from MinIO.
pub(crate) async fn copy_body<S>(
    mut body: S,
    dst: &mut BytesMut,
    want: usize,
    mut skip: usize,
) -> Result<(), Failure>
where
    S: Stream<Item = Result<Bytes, Failure>> + Unpin,
{
    let mut filled = 0usize;
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk?;
        if skip > 0 {
            let n = skip.min(chunk.len());
            chunk = chunk.slice(n..);
            skip -= n;
        }
        let n = chunk.len().min(want - filled);
        dst.extend_from_slice(&chunk[..n]);
        filled += n;
        if filled == want {
            return Ok(());
        }
    }
    Err(Failure::transient(format!(
        "response body ended after {filled} of {want} bytes"
    )))
}
