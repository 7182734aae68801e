//! Reading through the cache: [`CachedBytes`] is a byte source in front of
//! another (the store's requests), serving the footer tail (with validation
//! of the object's version) and byte ranges (whole, or assembled from
//! overlapping entries with only the gaps fetched) from disk, and passing
//! the rest down. Local files and objects without an identity pass straight
//! through.

use std::ops::Range;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::FutureExt;

use super::entry::{self, Lookup};
use super::layout::{entry_name, lock_path, parse_entry_name};
use super::record::{now_ms, read_listing, write_listing, Record};
use super::{lock, Cache, Validate};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{MappedFile, ObjectVersion, Tail};
use crate::request::ByteSource;
use crate::source::{Listing, Listings, Source};
use crate::stats::ReadStats;

/// The cache in front of another byte source.
#[derive(Debug)]
pub struct CachedBytes {
    cache: Cache,
    inner: Arc<dyn ByteSource>,
}

impl Cache {
    /// This cache in front of `inner`: remote objects are read through it.
    pub fn in_front_of(&self, inner: Arc<dyn ByteSource>) -> CachedBytes {
        CachedBytes {
            cache: self.clone(),
            inner,
        }
    }
}

impl CachedBytes {
    /// Whether `file` goes through the cache (remote, with an identity).
    fn applies_to(&self, file: &Source) -> bool {
        !file.is_local() && file.cache_identity().is_some()
    }
}

impl ByteSource for CachedBytes {
    fn config(&self) -> &Config {
        self.inner.config()
    }

    fn stats(&self) -> &ReadStats {
        self.inner.stats()
    }

    fn tail<'a>(&'a self, file: &'a Source, len: u64) -> BoxFuture<'a, Result<Tail>> {
        if !self.applies_to(file) {
            return self.inner.tail(file, len);
        }
        self.cache.tail(self.inner.as_ref(), file, len).boxed()
    }

    fn range_into<'a>(
        &'a self,
        file: &'a Source,
        range: Range<u64>,
        part: BytesMut,
    ) -> BoxFuture<'a, Result<BytesMut>> {
        if !self.applies_to(file) {
            return self.inner.range_into(file, range, part);
        }
        self.cache
            .read_range(self.inner.as_ref(), file, range, part)
            .boxed()
    }

    fn populate<'a>(
        &'a self,
        file: &'a Source,
        mapping: Arc<MappedFile>,
        range: Range<u64>,
    ) -> BoxFuture<'a, bool> {
        match self.applies_to(file) {
            true => futures::future::ready(false).boxed(),
            false => self.inner.populate(file, mapping, range),
        }
    }

    fn head<'a>(&'a self, file: &'a Source) -> BoxFuture<'a, Result<ObjectVersion>> {
        self.inner.head(file)
    }

    fn held_entries(&self, file: &Source) -> Option<Vec<Range<u64>>> {
        match self.applies_to(file) {
            true => self.cache.held_entries(file),
            false => self.inner.held_entries(file),
        }
    }

    fn quickest_answer(&self) -> Option<std::time::Duration> {
        self.inner.quickest_answer()
    }
}

impl Listings for Cache {
    fn cached_listing(&self, key: &str) -> Option<Listing> {
        Cache::cached_listing(self, key)
    }

    fn store_listing(&self, key: &str, listing: &Listing) {
        Cache::store_listing(self, key, listing)
    }

    fn needs_validation(&self, identity: &str) -> bool {
        Cache::needs_validation(self, identity)
    }
}

/// A piece of a requested range: where it comes from (`None`: the store).
type Piece = (Range<u64>, Option<Range<u64>>);

fn task_failed(location: &str, e: tokio::task::JoinError) -> Error {
    Error::Io {
        location: location.to_string(),
        range: None,
        attempts: 1,
        detail: format!("cache task failed: {e}"),
        timed_out: false,
        cause: None,
    }
}

impl Cache {
    /// The end of `source` (footer and size). Finds the object's version,
    /// from its record when the policy trusts it, from the store otherwise
    /// (one HEAD, or the listing the source came from), then serves the tail
    /// from the cache. Uncached objects are read with the usual single
    /// speculative request, which also tells their version.
    pub(crate) async fn tail(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        len: u64,
    ) -> Result<Tail> {
        let Some(identity) = source.cache_identity().filter(|_| self.usable()) else {
            return inner.tail(source, len).await;
        };
        let object = self.layout().object_dir(identity);
        // One process validates an object at a time; the others then trust
        // the record it wrote (it is newer than their start).
        let wait = inner.config().request_timeout;
        let guard = match lock::acquire(&object.join("lock"), wait).await {
            Ok(g) => g,
            Err(e) => {
                self.write_failed(&e);
                return inner.tail(source, len).await;
            }
        };
        let record = Record::read(&object.join("record"));
        let version = match (source.listed_version(), record) {
            (Some(listed), record) => self.validated(identity, &object, record.as_ref(), listed),
            (None, Some(r)) if self.trusts(r.validated_at) => r.version,
            (None, Some(r)) => {
                let current = inner.head(source).await?;
                self.validated(identity, &object, Some(&r), current)
            }
            (None, None) => {
                self.count_miss(inner);
                let tail = inner.tail(source, len).await?;
                if let Some(v) = source.version().filter(ObjectVersion::is_cacheable) {
                    self.validated(identity, &object, None, v.clone());
                    let range = tail.size - tail.bytes.len() as u64..tail.size;
                    if !range.is_empty() {
                        let path = self
                            .layout()
                            .version_dir(identity, &v)
                            .join(entry_name(&range));
                        self.store(source.location(), path, range, tail.bytes.clone())
                            .await?;
                    }
                }
                drop(guard);
                return Ok(tail);
            }
        };
        drop(guard);
        if !version.is_cacheable() {
            return inner.tail(source, len).await;
        }
        // Requests for anything not cached are now conditional on this version.
        source.pin_version(&version);
        let n = len.min(version.size);
        let bytes = if n == 0 {
            Bytes::new()
        } else {
            let range = version.size - n..version.size;
            let part = BytesMut::with_capacity(n as usize);
            self.read_range(inner, source, range, part).await?.freeze()
        };
        Ok(Tail {
            bytes,
            size: version.size,
        })
    }

    /// Records that the store reported `current` just now; a version other
    /// than the recorded one drops the old version's bytes.
    fn validated(
        &self,
        identity: &str,
        object: &Path,
        old: Option<&Record>,
        current: ObjectVersion,
    ) -> ObjectVersion {
        match old {
            // Unchanged and still trusted (a glob's listing on every read):
            // nothing to record, no write on the warm path.
            Some(r) if r.version.same_as(&current) && self.trusts(r.validated_at) => {
                return r.version.clone();
            }
            Some(r) if !r.version.same_as(&current) => {
                let stale = self.layout().version_dir(identity, &r.version);
                let _ = std::fs::remove_dir_all(stale);
            }
            _ => {}
        }
        let record = Record {
            identity: identity.to_string(),
            version: current.clone(),
            validated_at: now_ms(),
        };
        if let Err(e) = record.write(&self.layout().tmp(), &object.join("record")) {
            self.write_failed(&e);
        }
        current
    }

    /// Whether reading `identity` will ask the store for its version (it has
    /// a record the policy no longer trusts). Objects with no record learn
    /// their version from the footer request itself.
    pub(crate) fn needs_validation(&self, identity: &str) -> bool {
        if !self.usable() || self.0.options.validate == Validate::Immutable {
            return false;
        }
        let path = self.layout().object_dir(identity).join("record");
        Record::read(&path).is_some_and(|r| !self.trusts(r.validated_at))
    }

    /// The folder of the entries of `source`'s version, where the cache
    /// serves it.
    fn entries_dir(&self, source: &Source) -> Option<PathBuf> {
        let (identity, version) = (source.cache_identity()?, source.version()?);
        (self.usable() && version.is_cacheable())
            .then(|| self.layout().version_dir(identity, &version))
    }

    /// The entries held for `source`'s version, sorted by start (see
    /// [`ByteSource::held_entries`]).
    pub(crate) fn held_entries(&self, source: &Source) -> Option<Vec<Range<u64>>> {
        let entries = entries_in(&self.entries_dir(source)?, &(0..u64::MAX));
        (!entries.is_empty()).then_some(entries)
    }

    /// The bytes of `range` of `source` in `part` (room for them, as
    /// [`ByteSource::range_into`] takes): from one entry, from several
    /// overlapping ones plus the gaps, or from the store (then written to
    /// the cache). Across processes, one fetches a range and the others wait
    /// for its entry.
    pub(crate) async fn read_range(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        range: Range<u64>,
        part: BytesMut,
    ) -> Result<BytesMut> {
        let (Some(identity), Some(version)) = (source.cache_identity(), source.version()) else {
            return inner.range_into(source, range, part).await;
        };
        if !self.usable() || !version.is_cacheable() {
            return inner.range_into(source, range, part).await;
        }
        let dir = self.layout().version_dir(identity, &version);
        let path = dir.join(entry_name(&range));
        let (part, found) = self.lookup(inner, source, &path, &range, part).await?;
        if found {
            return Ok(part);
        }
        // Entries already on disk may cover it all (a row group's range that
        // runs into the footer's entry, every epoch): read them without
        // taking the lock, which creates a file, when nothing is to fetch.
        let pieces = coverage(&dir, &range);
        let part = if pieces.iter().all(|(_, from)| from.is_some()) {
            match self
                .read_from_entries(inner, source, &dir, &range, part, &pieces)
                .await?
            {
                (part, true) => return Ok(part),
                (part, false) => part, // one went missing or is corrupt
            }
        } else {
            part
        };
        let wait = inner.config().request_timeout;
        let guard = lock::acquire(&lock_path(&path), wait).await.ok().flatten();
        let part = if guard.is_some() {
            // Someone may have fetched it while we waited.
            let (part, found) = self.lookup(inner, source, &path, &range, part).await?;
            if found {
                return Ok(part);
            }
            part
        } else {
            part
        };
        let pieces = coverage(&dir, &range);
        if pieces.iter().all(|(_, from)| from.is_none()) {
            self.count_miss(inner);
            let mut part = part;
            part.clear(); // room again, for the store's bytes
            let part = inner.range_into(source, range.clone(), part).await?;
            return self.store(source.location(), path, range, part).await;
        }
        self.assemble(inner, source, &dir, range, part, pieces)
            .await
    }

    /// Fills `part` from the entries of `pieces` (all cached) alone; false
    /// where one could not be read (its piece is left as it was). Hits are
    /// counted only when all were read: the locked path reads them again.
    async fn read_from_entries(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        dir: &Path,
        range: &Range<u64>,
        part: BytesMut,
        pieces: &[Piece],
    ) -> Result<(BytesMut, bool)> {
        let mut part = as_long_as(part, range);
        for (piece, from) in pieces {
            let Some(entry_range) = from else {
                return Ok((part, false));
            };
            let found;
            (part, found) = self
                .read_piece_into(inner, source, dir, entry_range, piece, range.start, part)
                .await?;
            if !found {
                return Ok((part, false));
            }
        }
        for (piece, _) in pieces {
            self.count_hit(inner, piece.end - piece.start);
        }
        Ok((part, true))
    }

    /// Reads `piece` (inside the entry holding `entry_range`) into its place
    /// in `part`, which holds the range starting at `start`: straight from
    /// the file when the piece is the whole entry, else through a buffer of
    /// the entry (its checksum covers all of it). False if the entry is gone
    /// or corrupt (a corrupt one is counted); the caller counts hits.
    #[allow(clippy::too_many_arguments)]
    async fn read_piece_into(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        dir: &Path,
        entry_range: &Range<u64>,
        piece: &Range<u64>,
        start: u64,
        mut part: BytesMut,
    ) -> Result<(BytesMut, bool)> {
        let at = (piece.start - start) as usize;
        let n = (piece.end - piece.start) as usize;
        if piece != entry_range {
            let found = match self
                .read_piece(inner, source, dir, entry_range.clone(), piece)
                .await?
            {
                Some(bytes) => {
                    part[at..at + n].copy_from_slice(&bytes);
                    true
                }
                None => false,
            };
            return Ok((part, found));
        }
        let path = dir.join(entry_name(entry_range));
        let r = entry_range.clone();
        let (part, found) = tokio::task::spawn_blocking(move || {
            let found = entry::read_into(&path, &r, &mut part[at..at + n]);
            (part, found)
        })
        .await
        .map_err(|e| task_failed(source.location(), e))?;
        Ok(match found {
            Lookup::Hit => (part, true),
            Lookup::Missing => (part, false),
            Lookup::Corrupt(detail) => {
                self.count_corrupt(inner, &dir.join(entry_name(entry_range)), &detail);
                (part, false)
            }
        })
    }

    /// Fills `part` piece by piece: cached pieces from their entries, gaps
    /// from the store (each cached as an entry of its own).
    async fn assemble(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        dir: &Path,
        range: Range<u64>,
        part: BytesMut,
        pieces: Vec<Piece>,
    ) -> Result<BytesMut> {
        let mut part = as_long_as(part, &range);
        for (piece, from) in pieces {
            if let Some(entry_range) = &from {
                let found;
                (part, found) = self
                    .read_piece_into(inner, source, dir, entry_range, &piece, range.start, part)
                    .await?;
                if found {
                    self.count_hit(inner, piece.end - piece.start);
                    continue;
                }
            }
            let at = (piece.start - range.start) as usize;
            let n = (piece.end - piece.start) as usize;
            self.count_miss(inner);
            let buf = inner
                .range_into(source, piece.clone(), BytesMut::with_capacity(n))
                .await?;
            let path = dir.join(entry_name(&piece));
            let bytes = self
                .store(source.location(), path, piece.clone(), buf.freeze())
                .await?;
            part[at..at + n].copy_from_slice(&bytes);
        }
        Ok(part)
    }

    /// Looks up the entry at `path` for exactly `range`, reading it into
    /// `part` (room for it): on a miss `part` is handed back empty.
    async fn lookup(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        path: &Path,
        range: &Range<u64>,
        mut part: BytesMut,
    ) -> Result<(BytesMut, bool)> {
        part.clear();
        let (p, r) = (path.to_path_buf(), range.clone());
        let (part, found) = tokio::task::spawn_blocking(move || {
            let found = entry::read_appended(&p, &r, &mut part);
            (part, found)
        })
        .await
        .map_err(|e| task_failed(source.location(), e))?;
        Ok(match found {
            Lookup::Hit => {
                self.count_hit(inner, range.end - range.start);
                (part, true)
            }
            Lookup::Missing => (part, false),
            Lookup::Corrupt(detail) => {
                self.count_corrupt(inner, path, &detail);
                (part, false)
            }
        })
    }

    /// The bytes of `piece` from the entry holding `entry_range` (read whole,
    /// since its checksum covers all of it); `None` if gone or corrupt.
    async fn read_piece(
        &self,
        inner: &dyn ByteSource,
        source: &Source,
        dir: &Path,
        entry_range: Range<u64>,
        piece: &Range<u64>,
    ) -> Result<Option<Bytes>> {
        let path = dir.join(entry_name(&entry_range));
        let len = (entry_range.end - entry_range.start) as usize;
        let r = entry_range.clone();
        let (buf, found) = tokio::task::spawn_blocking(move || {
            let mut buf = BytesMut::with_capacity(len);
            let found = entry::read_appended(&path, &r, &mut buf);
            (buf, found)
        })
        .await
        .map_err(|e| task_failed(source.location(), e))?;
        Ok(match found {
            Lookup::Hit => {
                let from = (piece.start - entry_range.start) as usize;
                let to = (piece.end - entry_range.start) as usize;
                Some(buf.freeze().slice(from..to))
            }
            Lookup::Corrupt(detail) => {
                self.count_corrupt(inner, &dir.join(entry_name(&entry_range)), &detail);
                None
            }
            Lookup::Missing => None,
        })
    }

    /// Writes `data` as the entry at `path` when the limits allow, and hands
    /// the data back. A failed write only costs the caching.
    async fn store<T>(&self, location: &str, path: PathBuf, range: Range<u64>, data: T) -> Result<T>
    where
        T: AsRef<[u8]> + Send + 'static,
    {
        let len = range.end - range.start;
        if !self.reserve(len) {
            return Ok(data);
        }
        let tmp = self.layout().tmp();
        let (data, written) = tokio::task::spawn_blocking(move || {
            let written = entry::write(&tmp, &path, &range, data.as_ref());
            (data, written)
        })
        .await
        .map_err(|e| task_failed(location, e))?;
        match written {
            Ok(()) => self.maybe_evict(),
            Err(e) => {
                self.unreserve(len);
                self.write_failed(&e);
            }
        }
        Ok(data)
    }

    fn count_hit(&self, inner: &dyn ByteSource, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.0.pending.hits.fetch_add(1, Relaxed);
        self.0.pending.bytes_served.fetch_add(bytes, Relaxed);
        inner.stats().add_cache_hit(bytes);
    }

    fn count_miss(&self, inner: &dyn ByteSource) {
        self.0
            .pending
            .misses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        inner.stats().add_cache_miss();
    }

    fn count_corrupt(&self, inner: &dyn ByteSource, path: &Path, detail: &str) {
        self.0
            .pending
            .corrupt
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        inner.stats().add_cache_corrupt();
        self.warn_once(
            "corrupt",
            format!(
                "cache entry {} was damaged ({detail}); it was removed and the bytes fetched again",
                path.display()
            ),
        );
    }

    /// A glob's cached listing, trusted only under `Validate::Immutable`.
    pub(crate) fn cached_listing(&self, key: &str) -> Option<Listing> {
        if !self.usable() || self.0.options.validate != Validate::Immutable {
            return None;
        }
        read_listing(&self.layout().listing(key))
    }

    /// Keeps a glob's listing for later reads under `Validate::Immutable`.
    pub(crate) fn store_listing(&self, key: &str, listing: &Listing) {
        if !self.usable() || self.0.options.validate != Validate::Immutable {
            return;
        }
        if let Err(e) = write_listing(&self.layout().tmp(), &self.layout().listing(key), listing) {
            self.write_failed(&e);
        }
    }
}

/// `part` as long as `range`, for pieces to be written into their places:
/// as it is when it is (what an earlier attempt wrote is written over), else
/// zeroed (entries are read into initialised bytes).
fn as_long_as(mut part: BytesMut, range: &Range<u64>) -> BytesMut {
    let n = (range.end - range.start) as usize;
    if part.len() != n {
        part.clear();
        part.resize(n, 0);
    }
    part
}

/// Splits `range` into pieces served by the entries in `dir` and gaps.
fn coverage(dir: &Path, range: &Range<u64>) -> Vec<Piece> {
    crate::plan::cover(&entries_in(dir, range), range)
}

/// The ranges of the entries in `dir` that overlap `range`, sorted by start.
fn entries_in(dir: &Path, range: &Range<u64>) -> Vec<Range<u64>> {
    let mut entries: Vec<Range<u64>> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(parse_entry_name))
                .filter(|r| r.start < range.end && range.start < r.end)
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by_key(|r| r.start);
    entries
}
