//! Bytes of a file that a read holds, or has asked for, before its plan is
//! made: the end of the file that the footer request brought, and what was
//! asked for beside it while the file's size was not yet known: the start of
//! the file (see `Config::start_prefetch`) and a longer tail (see
//! `Config::long_footer_prefetch`). Plans are served from them first; only
//! what they lack is fetched.

use std::fmt;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use futures::future::{BoxFuture, Shared};

use crate::fetch::AbortOnDrop;
use crate::io::{ObjectVersion, Tail};

/// What a speculative request brought: its bytes (fewer than asked where the
/// file is shorter) and the version they are of; `None` when it failed (a
/// file that ends before the slice of its start asked for fails with 416).
pub type GuessedBytes = Option<(Bytes, ObjectVersion)>;

/// One request for part of a file's start, on its way.
#[derive(Clone)]
pub struct StartSlice {
    /// The bytes asked for.
    pub range: Range<u64>,
    /// Resolves when the request is answered.
    pub bytes: Shared<BoxFuture<'static, GuessedBytes>>,
}

impl fmt::Debug for StartSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StartSlice")
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// A longer end of the file than the footer request asked for, on its way:
/// it serves a footer (or ORC tail) longer than that request brought.
/// Dropping it cancels the request.
pub struct LongTail(pub(crate) AbortOnDrop<GuessedBytes>);

impl LongTail {
    /// The end of the file it brought, if it did and that is of `version`
    /// (the first tail's: the object may have been replaced in between).
    pub async fn bytes(mut self, version: Option<&ObjectVersion>) -> Option<Tail> {
        let (bytes, v) = self.0.result().await.flatten()?;
        if !version.is_some_and(|t| t.same_as(&v)) {
            return None;
        }
        Some(Tail {
            size: v.size,
            bytes,
        })
    }
}

impl fmt::Debug for LongTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LongTail").finish_non_exhaustive()
    }
}

/// The bytes of one file a read has before planning it.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// `(offset, bytes)` spans in memory (the footer request's tail).
    pub spans: Vec<(u64, Bytes)>,
    /// The file's start, asked for in slices, in file order.
    pub start: Vec<StartSlice>,
}

impl Known {
    /// The bytes at the beginning of `range` that the spans in memory hold
    /// (all of `range`'s, some, or none), across spans that follow each
    /// other (copied only then).
    pub fn held_prefix(&self, range: &Range<u64>) -> Bytes {
        let piece_at = |pos: u64| {
            self.spans.iter().find_map(|(at, bytes)| {
                let end = at + bytes.len() as u64;
                (*at <= pos && pos < end).then(|| {
                    let to = range.end.min(end);
                    bytes.slice((pos - at) as usize..(to - at) as usize)
                })
            })
        };
        let mut pieces = Vec::new();
        let mut at = range.start;
        while let Some(piece) = (at < range.end).then(|| piece_at(at)).flatten() {
            at += piece.len() as u64;
            pieces.push(piece);
        }
        joined(pieces)
    }

    /// The parts of `from..end` that the start's slices are bringing, each
    /// with its slice, from `from` on while slices follow each other; and
    /// where what they do not cover begins.
    pub fn coming(&self, from: u64, end: u64) -> (Vec<(Range<u64>, StartSlice)>, u64) {
        let mut parts = Vec::new();
        let mut at = from;
        while at < end {
            let Some(slice) = self
                .start
                .iter()
                .find(|s| s.range.start <= at && at < s.range.end)
            else {
                break;
            };
            let to = end.min(slice.range.end);
            parts.push((at..to, slice.clone()));
            at = to;
        }
        (parts, at)
    }
}

/// `range` out of what a start slice brought, if it brought all of it and
/// is of `version` (the tail's: the object may have been replaced between
/// the two responses).
pub fn from_start(
    slice: &Range<u64>,
    got: &GuessedBytes,
    range: &Range<u64>,
    version: Option<&ObjectVersion>,
) -> Option<Bytes> {
    let (bytes, v) = got.as_ref()?;
    if !version.is_some_and(|t| t.same_as(v)) {
        return None;
    }
    let from = (range.start - slice.start) as usize;
    let to = (range.end - slice.start) as usize;
    (to <= bytes.len()).then(|| bytes.slice(from..to))
}

/// Pieces that follow each other as one buffer: copied only when there are
/// several.
pub fn joined(pieces: Vec<Bytes>) -> Bytes {
    let mut nonempty = pieces.into_iter().filter(|p| !p.is_empty());
    let Some(first) = nonempty.next() else {
        return Bytes::new();
    };
    let Some(second) = nonempty.next() else {
        return first;
    };
    let mut out = BytesMut::from(&first[..]);
    out.extend_from_slice(&second);
    for piece in nonempty {
        out.extend_from_slice(&piece);
    }
    out.freeze()
}
