//! Counters a read fills in as it goes; shared by every task of the read.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// Per-read statistics. Cheap to clone (shared counters); safe to read while a
/// read is in progress, and accumulates when passed to several reads.
#[derive(Debug, Default, Clone)]
pub struct ReadStats(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    files: AtomicU64,
    requests: AtomicU64,
    retries: AtomicU64,
    bytes_fetched: AtomicU64,
    bytes_needed: AtomicU64,
    unplanned_requests: AtomicU64,
    fetch_nanos: AtomicU64,
    decode_nanos: AtomicU64,
    rows: AtomicU64,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    cache_corrupt: AtomicU64,
    bytes_from_cache: AtomicU64,
    bytes_mapped: AtomicU64,
    row_groups_bloom_skipped: AtomicU64,
}

/// A point-in-time copy of [`ReadStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Files opened.
    pub files: u64,
    /// Requests (or local positional reads) issued, retries included.
    pub requests: u64,
    /// Requests repeated after a transient failure.
    pub retries: u64,
    /// Bytes transferred from storage (footers included).
    pub bytes_fetched: u64,
    /// Bytes of column data the plans needed (footers not included).
    pub bytes_needed: u64,
    /// Requests the decoder made for bytes the plan did not foresee.
    pub unplanned_requests: u64,
    /// Time spent with at least one request in flight, summed over files.
    pub fetch_seconds_total: Duration,
    /// Time spent decoding, summed over decode tasks.
    pub decode_seconds_total: Duration,
    /// Rows returned.
    pub rows: u64,
    /// Ranges (or pieces of ranges) served from the cache.
    pub cache_hits: u64,
    /// Ranges the cache did not hold, fetched from the store.
    pub cache_misses: u64,
    /// Cache entries found damaged (removed and refetched).
    pub cache_corrupt: u64,
    /// Bytes served from the cache.
    pub bytes_from_cache: u64,
    /// Of `bytes_fetched`, those read through a mapping of a local file
    /// (from the page cache, without a copy; `Config::map_local_files`).
    pub bytes_mapped: u64,
    /// Row groups that bloom filters showed to hold none of an `==` or
    /// `in` filter's values: their column data was not fetched
    /// (`Config::bloom_filters`).
    pub row_groups_bloom_skipped: u64,
}

impl ReadStats {
    /// Fresh, zeroed counters.
    pub fn new() -> Self {
        Self::default()
    }
    pub(crate) fn add_file(&self) {
        self.0.files.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_request(&self) {
        self.0.requests.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_retry(&self) {
        self.0.retries.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_fetched(&self, n: u64) {
        self.0.bytes_fetched.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_needed(&self, n: u64) {
        self.0.bytes_needed.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_unplanned(&self) {
        self.0.unplanned_requests.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_fetch_time(&self, d: Duration) {
        self.0.fetch_nanos.fetch_add(d.as_nanos() as u64, Relaxed);
    }
    pub(crate) fn add_decode_time(&self, d: Duration) {
        self.0.decode_nanos.fetch_add(d.as_nanos() as u64, Relaxed);
    }
    pub(crate) fn add_rows(&self, n: u64) {
        self.0.rows.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_cache_hit(&self, bytes: u64) {
        self.0.cache_hits.fetch_add(1, Relaxed);
        self.0.bytes_from_cache.fetch_add(bytes, Relaxed);
    }
    pub(crate) fn add_mapped(&self, n: u64) {
        self.0.bytes_mapped.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_bloom_skipped(&self, n: u64) {
        self.0.row_groups_bloom_skipped.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_cache_miss(&self) {
        self.0.cache_misses.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_cache_corrupt(&self) {
        self.0.cache_corrupt.fetch_add(1, Relaxed);
    }

    /// Reads the counters.
    pub fn snapshot(&self) -> StatsSnapshot {
        let c = &self.0;
        StatsSnapshot {
            files: c.files.load(Relaxed),
            requests: c.requests.load(Relaxed),
            retries: c.retries.load(Relaxed),
            bytes_fetched: c.bytes_fetched.load(Relaxed),
            bytes_needed: c.bytes_needed.load(Relaxed),
            unplanned_requests: c.unplanned_requests.load(Relaxed),
            fetch_seconds_total: Duration::from_nanos(c.fetch_nanos.load(Relaxed)),
            decode_seconds_total: Duration::from_nanos(c.decode_nanos.load(Relaxed)),
            rows: c.rows.load(Relaxed),
            cache_hits: c.cache_hits.load(Relaxed),
            cache_misses: c.cache_misses.load(Relaxed),
            cache_corrupt: c.cache_corrupt.load(Relaxed),
            bytes_from_cache: c.bytes_from_cache.load(Relaxed),
            bytes_mapped: c.bytes_mapped.load(Relaxed),
            row_groups_bloom_skipped: c.row_groups_bloom_skipped.load(Relaxed),
        }
    }
}
