//! The store's side of a fetch: one request per tail or range, under the
//! read's limits (requests and bytes in flight, local reads at once), each
//! attempt timed out, transient failures retried with backoff, everything
//! counted.
//!
//! [`ByteSource`] is what the fetcher reads through. [`StoreRequests`] is the
//! bottom of that stack; the cache wraps it (`Cache::in_front_of`), serving
//! what it holds and passing the rest down, the way object_store's wrappers
//! (`LimitStore`, `ThrottledStore`) wrap a store.

use std::fmt::Debug;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

// tokio's clock: the real one, but for tests that pause it (a store's answer
// time is then the test's to set, not the machine's load).
use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::config::{Config, LocalDisk};
use crate::error::{Error, Result};
use crate::io::{with_retries, Failure, Guess, MappedFile, ObjectVersion, Retry, Tail};
use crate::source::Source;
use crate::stats::ReadStats;

/// Memory permits are counted in units of this many bytes.
const BUDGET_UNIT: u64 = 64 * 1024;

/// A request of at most this many bytes is bound by latency, not bandwidth
/// (at 100 MB/s a connection moves it in 10 ms, under a cloud round trip):
/// it takes half of a `max_in_flight` slot, so that many small files or
/// footers go out twice as wide, while large reads keep the width the
/// benchmarks chose for them.
pub(crate) const SMALL_REQUEST: u64 = 1024 * 1024;

/// A request of at most this many bytes takes a quarter of a slot: at
/// 50 MB/s a connection moves it in 5 ms, a twentieth of a far region's
/// round trip. Column chunks of a few columns of a wide file are this
/// small: 10 columns of the suite's 500-column file, 80 chunks of ~46 KB,
/// went out in two waves of 64 (one more round trip: 0.85× polars through
/// the far link) and go out in one.
pub(crate) const TINY_REQUEST: u64 = 256 * 1024;

/// A store whose quickest footer answer of a read (and of its latest reads,
/// see [`crate::link`]) took at least this long is a region away (a cloud
/// region's own round trip is 20-50 ms): there a request takes half the
/// slot it would take nearer (see [`slot_quarters`]).
pub(crate) const DISTANT_ANSWER: Duration = Duration::from_millis(60);

/// Whether a store whose quickest footer answer of the read took
/// `quickest` (`None`: none answered yet) is a region away.
pub(crate) fn answers_from_afar(quickest: Option<Duration>) -> bool {
    quickest.is_some_and(|took| took >= DISTANT_ANSWER)
}

/// Quarters of a `max_in_flight` slot a request of `len` bytes takes; half
/// as many (at least one) from a `distant` store. Across regions one
/// connection carries what its window allows per round trip, a fraction of
/// the link: through the far profile (100 ms, 50 MB/s a connection), fresh
/// processes, interleaved medians, 64 requests in flight against 32 read
/// the suite's `mixed` file in 373 ms against 467, `uint` in 385 against
/// 409, `mixed-zstd` in 373 against 393; through the cloud one (30 ms), 48
/// did no better than 32.
pub(crate) fn slot_quarters(len: u64, distant: bool) -> u32 {
    let quarters = if len <= TINY_REQUEST {
        1
    } else if len <= SMALL_REQUEST {
        2
    } else {
        4
    };
    match distant {
        true => (quarters / 2).max(1),
        false => quarters,
    }
}

/// Where a read's bytes come from, with retries and limits applied: every
/// call returns the final result.
pub trait ByteSource: Send + Sync + Debug {
    /// The read's configuration.
    fn config(&self) -> &Config;

    /// The read's counters.
    fn stats(&self) -> &ReadStats;

    /// Up to `len` bytes from the end of `file`, and its size.
    fn tail<'a>(&'a self, file: &'a Source, len: u64) -> BoxFuture<'a, Result<Tail>>;

    /// The bytes of `range` of `file`, written into `part`: empty room with
    /// the capacity for them (one slice of a span's buffer), handed back
    /// holding exactly those bytes. The room is not cleared first, as no
    /// byte is read before it is written.
    fn range_into<'a>(
        &'a self,
        file: &'a Source,
        range: Range<u64>,
        part: BytesMut,
    ) -> BoxFuture<'a, Result<BytesMut>>;

    /// Reads `range` of the local file `file` into the page cache and maps
    /// its pages in `mapping` (see [`MappedFile::populate`]), under the
    /// read's limits as a read of the range is; `false` where it could not
    /// (the caller then reads the range, which reports why). A source of
    /// no local files never does.
    fn populate<'a>(
        &'a self,
        file: &'a Source,
        mapping: Arc<MappedFile>,
        range: Range<u64>,
    ) -> BoxFuture<'a, bool> {
        let _ = (file, mapping, range);
        futures::future::ready(false).boxed()
    }

    /// The byte ranges of `file` that something in front of the store
    /// holds as units of its own (the disk cache's entries, each read whole
    /// and checked), sorted by start; `None` (the default): nothing held.
    /// A plan is fitted to them: its spans joined where one reaches into
    /// the next, its requests cut where they begin and end (see
    /// [`crate::plan::FilePlan::join_across`]).
    fn held_entries(&self, file: &Source) -> Option<Vec<Range<u64>>> {
        let _ = file;
        None
    }

    /// The object's current version, asked of the store.
    fn head<'a>(&'a self, file: &'a Source) -> BoxFuture<'a, Result<ObjectVersion>>;

    /// How soon the store answered this read's quickest footer request of a
    /// remote file, or one of the store's latest before it
    /// ([`crate::link`]): the link's round trip and the store's time to
    /// first byte together (`None` while no such request has been answered).
    fn quickest_answer(&self) -> Option<Duration> {
        None
    }

    /// Speculation: what `guess` asks of `file` (see [`Guess`]), in one
    /// attempt, with the version it was of; `None` when the attempt failed
    /// or is not made (a cache in front of the store makes none: a cached
    /// file needs no request at all).
    fn guess<'a>(
        &'a self,
        file: &'a Source,
        guess: Guess,
    ) -> BoxFuture<'a, Option<(Bytes, ObjectVersion)>> {
        let _ = (file, guess);
        futures::future::ready(None).boxed()
    }
}

/// The store itself: requests under one read's limits.
#[derive(Debug)]
pub struct StoreRequests {
    config: Config,
    stats: ReadStats,
    requests: Semaphore,
    local_reads: Semaphore,
    /// The slots of `local_reads` ([`local_read_limit`]).
    local_slots: usize,
    budget: Semaphore,
    budget_units: u32,
    /// [`ByteSource::quickest_answer`] in nanoseconds (`u64::MAX`: none yet).
    quickest_answer_ns: AtomicU64,
}

impl StoreRequests {
    /// The requests of one read.
    pub fn new(config: Config, stats: ReadStats) -> Self {
        let budget_units =
            (config.memory_budget / BUDGET_UNIT).clamp(1, u32::MAX as u64 >> 3) as u32;
        let local_slots = local_read_limit(config.max_in_flight);
        StoreRequests {
            // Counted in quarter slots (see `slot_quarters`).
            requests: Semaphore::new(4 * config.max_in_flight),
            local_reads: Semaphore::new(local_slots),
            local_slots,
            budget: Semaphore::new(budget_units as usize),
            budget_units,
            quickest_answer_ns: AtomicU64::new(u64::MAX),
            config,
            stats,
        }
    }

    /// A request slot and the memory for `len` bytes.
    async fn permits(&self, len: u64) -> Result<(SemaphorePermit<'_>, SemaphorePermit<'_>)> {
        let units = len.div_ceil(BUDGET_UNIT).clamp(1, self.budget_units as u64) as u32;
        let distant = answers_from_afar(self.quickest_answer());
        let req = self
            .requests
            .acquire_many(slot_quarters(len, distant))
            .await
            .map_err(closed)?;
        let mem = self.budget.acquire_many(units).await.map_err(closed)?;
        Ok((req, mem))
    }

    async fn fetch_tail(&self, file: &Source, len: u64) -> Result<Tail> {
        let _p = self.permits(len).await?;
        let started = Instant::now();
        // Each attempt timed on its own: the answer's, not the failures'
        // before it, says how far the store is.
        let (tail, answered_in) =
            with_retries(&self.config, &self.stats, file.location(), None, || {
                let attempt = Instant::now();
                file.read_tail(len)
                    .map(move |r| r.map(|tail| (tail, attempt.elapsed())))
            })
            .await
            .map_err(|e| e.reading(&format!("reading the last {len} bytes (the footer)")))?;
        let took = started.elapsed();
        if !file.is_local() {
            // The answering attempt's time, as the link memo takes it: a
            // retried footer request says nothing of the link by its total.
            // A small file fetched whole in this request takes its transfer
            // time too: only a footer-sized answer says how far the store is.
            if len <= self.config.footer_prefetch {
                crate::link::note_footer_answer(file, answered_in);
            }
            // Judged with the store's latest answers, not this one alone: a
            // store's hiccup makes no read plan for a store a region away.
            let quickest = crate::link::quickest_recent_answer(file)
                .map_or(answered_in, |recent| recent.min(answered_in));
            let ns = u64::try_from(quickest.as_nanos()).unwrap_or(u64::MAX);
            self.quickest_answer_ns.fetch_min(ns, Ordering::Relaxed);
        }
        self.stats.add_fetch_time(took);
        self.stats.add_fetched(tail.bytes.len() as u64);
        Ok(tail)
    }

    /// The local-read slots a read of `len` bytes of local `file` takes.
    async fn local_slots_for(&self, file: &Source, len: u64) -> Result<SemaphorePermit<'_>> {
        let rotational = reads_as_rotational(&self.config, file);
        let slots = local_read_slots(len, rotational, self.local_slots);
        self.local_reads.acquire_many(slots).await.map_err(closed)
    }

    /// [`ByteSource::populate`], taking the slots and budget a read of the
    /// range would.
    async fn populate_range(
        &self,
        file: &Source,
        mapping: Arc<MappedFile>,
        range: Range<u64>,
    ) -> bool {
        if !file.is_local() {
            return false;
        }
        let len = range.end - range.start;
        let Ok(_local) = self.local_slots_for(file, len).await else {
            return false;
        };
        let Ok(_permits) = self.permits(len).await else {
            return false;
        };
        let started = Instant::now();
        let done = tokio::task::spawn_blocking(move || mapping.populate(&range)).await;
        self.stats.add_fetch_time(started.elapsed());
        matches!(done, Ok(Ok(())))
    }

    async fn fetch_range(
        &self,
        file: &Source,
        range: Range<u64>,
        mut part: BytesMut,
    ) -> Result<BytesMut> {
        let _local = match file.is_local() {
            true => Some(self.local_slots_for(file, range.end - range.start).await?),
            false => None,
        };
        let _permits = self.permits(range.end - range.start).await?;
        let mut retry = Retry::new(
            &self.config,
            &self.stats,
            file.location(),
            Some(range.clone()),
        );
        let want = (range.end - range.start) as usize;
        loop {
            // A failed attempt may have written a part: start over. (The
            // room stays; had it been taken, `reserve` gives new room, and
            // rejoining the span's slices then copies, rarely.)
            part.clear();
            part.reserve(want);
            match retry
                .attempt(file.read_into(range.clone(), &mut part))
                .await
            {
                Ok(()) if part.len() == want => {
                    self.stats.add_fetched(range.end - range.start);
                    return Ok(part);
                }
                Ok(()) => {
                    let got = part.len();
                    retry
                        .failed(Failure::transient(format!(
                            "read {got} bytes where {want} were asked for"
                        )))
                        .await?
                }
                Err(failure) => retry.failed(failure).await?,
            }
        }
    }
}

impl ByteSource for StoreRequests {
    fn config(&self) -> &Config {
        &self.config
    }

    fn stats(&self) -> &ReadStats {
        &self.stats
    }

    fn tail<'a>(&'a self, file: &'a Source, len: u64) -> BoxFuture<'a, Result<Tail>> {
        self.fetch_tail(file, len).boxed()
    }

    fn range_into<'a>(
        &'a self,
        file: &'a Source,
        range: Range<u64>,
        part: BytesMut,
    ) -> BoxFuture<'a, Result<BytesMut>> {
        self.fetch_range(file, range, part).boxed()
    }

    fn populate<'a>(
        &'a self,
        file: &'a Source,
        mapping: Arc<MappedFile>,
        range: Range<u64>,
    ) -> BoxFuture<'a, bool> {
        self.populate_range(file, mapping, range).boxed()
    }

    fn guess<'a>(
        &'a self,
        file: &'a Source,
        guess: Guess,
    ) -> BoxFuture<'a, Option<(Bytes, ObjectVersion)>> {
        async move {
            let most = guess.most_bytes();
            let range = match &guess {
                Guess::Range(range) => Some(range.clone()),
                Guess::Last(_) => None,
            };
            let request = file.read_guess(guess)?;
            let _permits = self.permits(most).await.ok()?;
            let mut retry = Retry::new(&self.config, &self.stats, file.location(), range);
            // Not retried: what a failed attempt would have brought is
            // fetched as planned (an object shorter than the range's start
            // fails here with 416).
            let (bytes, version) = retry.attempt(request).await.ok()?;
            self.stats.add_fetched(bytes.len() as u64);
            Some((bytes, version))
        }
        .boxed()
    }

    fn quickest_answer(&self) -> Option<Duration> {
        match self.quickest_answer_ns.load(Ordering::Relaxed) {
            u64::MAX => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    fn head<'a>(&'a self, file: &'a Source) -> BoxFuture<'a, Result<ObjectVersion>> {
        async move {
            with_retries(&self.config, &self.stats, file.location(), None, || {
                file.head()
            })
            .await
            .map_err(|e| e.reading("checking the object's version"))
        }
        .boxed()
    }
}

/// Local reads at once: four per core (at most `max_in_flight`). Each is a
/// blocking `pread` that faults in fresh pages; more of them than that only
/// contend for the cores (the local sweep on 2 cores: 8-16 at once read the
/// same file ~18% faster than 32), while a remote request mostly waits.
fn local_read_limit(max_in_flight: usize) -> usize {
    max_in_flight.min(4 * crate::runtime::cores()).max(1)
}

/// Whether `file` is a local file whose bytes from disk are read as a
/// rotational disk's, in few long reads ([`LocalDisk`]).
pub(crate) fn reads_as_rotational(config: &Config, file: &Source) -> bool {
    file.is_local()
        && match config.local_disk {
            LocalDisk::Auto => file.on_rotational_disk(),
            LocalDisk::Solid => false,
            LocalDisk::Rotational => true,
        }
}

/// A local read of at least this many bytes is a long one: on a rotational
/// disk two of those run at once.
const LONG_LOCAL_READ: u64 = 4 * 1024 * 1024;

/// The slots of `local_reads` that a local read of `len` bytes takes out of
/// `slots`: one; or half of them for a long read from a rotational disk, so
/// that two long reads run at once while short ones (a few columns of a
/// wide file, scattered) still go many at a time.
fn local_read_slots(len: u64, rotational: bool, slots: usize) -> u32 {
    match rotational && len >= LONG_LOCAL_READ {
        true => (slots / 2).max(1) as u32,
        false => 1,
    }
}

/// The semaphores are never closed; should that change, a read fails
/// cleanly rather than panicking.
pub(crate) fn closed(_: tokio::sync::AcquireError) -> Error {
    Error::InvalidArgument("the read was shut down".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_reads_of_a_rotational_disk_take_half_the_local_slots() {
        let mib = 1024 * 1024;
        assert_eq!(
            local_read_slots(40 * 1024, true, 8),
            1,
            "short: many at once"
        );
        assert_eq!(local_read_slots(4 * mib - 1, true, 8), 1);
        assert_eq!(local_read_slots(4 * mib, true, 8), 4, "long: two at once");
        assert_eq!(local_read_slots(32 * mib, true, 8), 4);
        assert_eq!(local_read_slots(32 * mib, false, 8), 1, "solid: as before");
        assert_eq!(
            local_read_slots(32 * mib, true, 1),
            1,
            "one slot: still runs"
        );
        assert_eq!(local_read_slots(32 * mib, true, 3), 1);
    }
}
