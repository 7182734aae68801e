//! `orc-rust` reads through a `ChunkReader`; these serve it from bytes the
//! fetcher already brought, so it never reaches the store itself.

use std::io;
use std::ops::Range;

use bytes::Bytes;
use orc_rust::reader::ChunkReader;

use super::chunks::ChunkCheck;
use crate::fetch::FetchedSpans;

/// The end of the file, as fetched (as long as the postscript says the tail
/// is, and at least what `orc-rust` reads first).
pub(crate) struct TailChunks {
    pub size: u64,
    pub bytes: Bytes,
}

fn before_tail(offset: u64) -> io::Error {
    io::Error::other(format!("byte {offset} lies before the fetched tail"))
}

impl ChunkReader for TailChunks {
    type T = bytes::buf::Reader<Bytes>;

    fn len(&self) -> u64 {
        self.size
    }

    fn get_read(&self, offset: u64) -> io::Result<Self::T> {
        use bytes::Buf;
        let start = self.size - self.bytes.len() as u64;
        if offset < start {
            return Err(before_tail(offset));
        }
        Ok(self.bytes.slice((offset - start) as usize..).reader())
    }

    fn get_bytes(&self, offset: u64, length: u64) -> io::Result<Bytes> {
        let start = self.size - self.bytes.len() as u64;
        if offset < start {
            return Err(before_tail(offset));
        }
        let from = (offset - start) as usize;
        let to = from.saturating_add(length as usize);
        if to > self.bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "bytes {offset}..{} are past the end of the file",
                    offset + length
                ),
            ));
        }
        Ok(self.bytes.slice(from..to))
    }
}

/// Serves a stripe's footer and records where the projected streams lie,
/// without reading them: `orc-rust`'s own projection decides which streams a
/// column needs.
pub(crate) struct StreamFinder {
    pub footer: Range<u64>,
    pub footer_bytes: Bytes,
    pub streams: std::cell::RefCell<Vec<Range<u64>>>,
    /// See [`SpanReader::chunk_check`].
    pub chunk_check: Option<ChunkCheck>,
}

impl ChunkReader for StreamFinder {
    type T = bytes::buf::Reader<Bytes>;

    fn len(&self) -> u64 {
        self.footer.end
    }

    fn get_read(&self, _offset: u64) -> io::Result<Self::T> {
        Err(io::Error::other("stream finder only serves whole ranges"))
    }

    fn get_bytes(&self, offset: u64, length: u64) -> io::Result<Bytes> {
        if offset == self.footer.start && length == self.footer.end - self.footer.start {
            return checked(&self.footer, self.footer_bytes.clone(), self.chunk_check);
        }
        self.streams
            .borrow_mut()
            .push(offset..offset.saturating_add(length));
        Ok(Bytes::new())
    }
}

/// Serves a stripe's footer and streams from fetched spans.
pub(crate) struct SpanReader {
    pub size: u64,
    /// The stripe's planned streams.
    pub spans: FetchedSpans,
    /// What planning fetched (stripe footers, and streams near them).
    pub prefetched: std::sync::Arc<FetchedSpans>,
    /// The stripe's index section, not fetched: its streams read as empty
    /// (only predicates would use them).
    pub skipped: Range<u64>,
    /// How each stream served is checked first ([`super::chunks`]).
    pub chunk_check: Option<ChunkCheck>,
    /// The stripe's footer range and the bytes served for it in place of
    /// the file's ([`super::footer_zone`]), if any.
    pub footer: Option<(Range<u64>, Bytes)>,
}

impl ChunkReader for SpanReader {
    type T = bytes::buf::Reader<Bytes>;

    fn len(&self) -> u64 {
        self.size
    }

    fn get_read(&self, _offset: u64) -> io::Result<Self::T> {
        Err(io::Error::other("span reader only serves whole ranges"))
    }

    fn get_bytes(&self, offset: u64, length: u64) -> io::Result<Bytes> {
        if length == 0 {
            return Ok(Bytes::new());
        }
        let range = offset..offset.saturating_add(length);
        if self.skipped.start <= range.start && range.end <= self.skipped.end {
            return Ok(Bytes::new());
        }
        if let Some((footer, bytes)) = &self.footer {
            if *footer == range {
                return checked(&range, bytes.clone(), self.chunk_check);
            }
        }
        let bytes = self
            .spans
            .get(&range)
            .or_else(|| self.prefetched.get(&range))
            .ok_or_else(|| {
                io::Error::other(format!(
                    "bytes {}..{} were not planned (a stream outside the stripe?)",
                    range.start, range.end
                ))
            })?;
        checked(&range, bytes, self.chunk_check)
    }
}

/// `stream` (the bytes of `range`), once its chunks pass `check`.
fn checked(range: &Range<u64>, stream: Bytes, check: Option<ChunkCheck>) -> io::Result<Bytes> {
    match check.map(|check| check.check(&stream)) {
        Some(Err(problem)) => Err(io::Error::other(format!(
            "bytes {}..{}: {problem}",
            range.start, range.end
        ))),
        _ => Ok(stream),
    }
}
