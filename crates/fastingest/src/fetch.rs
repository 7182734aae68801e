//! Executes plans: bounded, parallel range requests shared by every file of a
//! read, each slice written straight into its place in the span's buffer.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::future::{join_all, BoxFuture, Shared};
use futures::{FutureExt, StreamExt, TryStreamExt};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::task::JoinHandle;

use crate::cache::Cache;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{with_retries, Retry, Tail};
use crate::plan::{FilePlan, PlanUnit, Span};
use crate::source::Source;
use crate::stats::ReadStats;

/// Memory permits are counted in units of this many bytes.
const BUDGET_UNIT: u64 = 64 * 1024;

/// What one read shares across its files and tasks: the configuration, the
/// statistics, and the limits on requests and bytes in flight.
#[derive(Debug, Clone)]
pub struct Fetcher(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    config: Config,
    stats: ReadStats,
    requests: Semaphore,
    local_reads: Semaphore,
    budget: Semaphore,
    budget_units: u32,
    decode: Semaphore,
    cache: Option<Cache>,
}

/// A span being fetched in the background; cloneable so that every unit
/// needing it can wait for it.
pub type SpanFuture = Shared<BoxFuture<'static, Result<Bytes>>>;

/// Aborts the wrapped task when dropped, so an abandoned read stops fetching.
pub struct AbortOnDrop<T>(pub JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Fetcher {
    /// A fetcher for one read, without a cache.
    pub fn new(config: Config, stats: ReadStats) -> Self {
        Self::with_cache(config, stats, None)
    }

    /// A fetcher for one read that reads remote objects through `cache`.
    pub fn with_cache(config: Config, stats: ReadStats, cache: Option<Cache>) -> Self {
        let budget_units =
            (config.memory_budget / BUDGET_UNIT).clamp(1, u32::MAX as u64 >> 3) as u32;
        let decode = config.effective_decode_parallelism();
        Fetcher(Arc::new(Inner {
            requests: Semaphore::new(config.max_in_flight),
            local_reads: Semaphore::new(local_read_limit(config.max_in_flight)),
            budget: Semaphore::new(budget_units as usize),
            budget_units,
            decode: Semaphore::new(decode),
            cache,
            config,
            stats,
        }))
    }

    /// The read's configuration.
    pub fn config(&self) -> &Config {
        &self.0.config
    }

    /// The read's statistics.
    pub fn stats(&self) -> &ReadStats {
        &self.0.stats
    }

    /// The cache, when `source` is one it applies to (remote objects).
    fn cache_for(&self, source: &Source) -> Option<&Cache> {
        self.0
            .cache
            .as_ref()
            .filter(|_| !source.is_local() && source.cache_identity().is_some())
    }

    /// Waits for a decode slot (bounds CPU-heavy work to the cores).
    pub(crate) async fn decode_permit(&self) -> Result<SemaphorePermit<'_>> {
        self.0.decode.acquire().await.map_err(closed)
    }

    /// A slot for one local read (see [`local_read_limit`]).
    async fn local_permit(&self) -> Result<SemaphorePermit<'_>> {
        self.0.local_reads.acquire().await.map_err(closed)
    }

    async fn permits(&self, len: u64) -> Result<(SemaphorePermit<'_>, SemaphorePermit<'_>)> {
        let units = len
            .div_ceil(BUDGET_UNIT)
            .clamp(1, self.0.budget_units as u64) as u32;
        let req = self.0.requests.acquire().await.map_err(closed)?;
        let mem = self.0.budget.acquire_many(units).await.map_err(closed)?;
        Ok((req, mem))
    }

    /// The end of the file (footer and size) in one speculative request, or
    /// from the cache.
    pub async fn fetch_tail(&self, source: &Source, len: u64) -> Result<Tail> {
        match self.cache_for(source) {
            Some(cache) => cache.tail(self, source, len).await,
            None => self.fetch_tail_uncached(source, len).await,
        }
    }

    /// The end of the file from the store, in one speculative request.
    pub(crate) async fn fetch_tail_uncached(&self, source: &Source, len: u64) -> Result<Tail> {
        let _p = self.permits(len).await?;
        let started = Instant::now();
        let tail = with_retries(self.config(), self.stats(), source.location(), None, || {
            source.read_tail(len)
        })
        .await
        .map_err(|e| e.reading(&format!("reading the last {len} bytes (the footer)")))?;
        self.stats().add_fetch_time(started.elapsed());
        self.stats().add_fetched(tail.bytes.len() as u64);
        Ok(tail)
    }

    /// One range outside any plan (a footer larger than the prefetch, a page
    /// index, a decoder asking for something unforeseen).
    pub async fn fetch_range(&self, source: &Source, range: Range<u64>) -> Result<Bytes> {
        let slices = crate::plan::split(range.clone(), self.config().slice_size);
        let span = Span { range, slices };
        fetch_span(self.clone(), Arc::clone(source), span).await
    }

    /// Starts fetching every span of `plan` in the background, in file order.
    /// The returned futures resolve to each span's bytes.
    pub fn start(
        &self,
        source: &Source,
        plan: &FilePlan,
    ) -> (Vec<SpanFuture>, Vec<AbortOnDrop<()>>) {
        self.start_with(source, plan, None)
    }

    /// [`Fetcher::start`], serving spans that lie within `known` (bytes from
    /// `known.0` on, e.g. the footer request's) without a request.
    pub fn start_with(
        &self,
        source: &Source,
        plan: &FilePlan,
        known: Option<(u64, &Bytes)>,
    ) -> (Vec<SpanFuture>, Vec<AbortOnDrop<()>>) {
        self.stats().add_needed(plan.bytes_needed());
        let mut futures = Vec::with_capacity(plan.spans.len());
        let mut guards = Vec::with_capacity(plan.spans.len());
        for span in &plan.spans {
            if let Some((start, bytes)) = known {
                let end = start + bytes.len() as u64;
                if span.range.start >= start && span.range.end <= end {
                    let from = (span.range.start - start) as usize;
                    let part =
                        bytes.slice(from..from + (span.range.end - span.range.start) as usize);
                    let ready: BoxFuture<'static, Result<Bytes>> =
                        futures::future::ready(Ok(part)).boxed();
                    futures.push(ready.shared());
                    continue;
                }
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(
                fetch_span(self.clone(), Arc::clone(source), span.clone()).map(move |r| {
                    let _ = tx.send(r);
                }),
            );
            guards.push(AbortOnDrop(task));
            let location = source.location().to_string();
            let fut: BoxFuture<'static, Result<Bytes>> = async move {
                rx.await.unwrap_or_else(|_| {
                    Err(Error::Io {
                        location,
                        range: None,
                        attempts: 0,
                        detail: "fetch task was cancelled".into(),
                        timed_out: false,
                    })
                })
            }
            .boxed();
            futures.push(fut.shared());
        }
        (futures, guards)
    }
}

/// Fetched spans of one file, sorted by offset.
#[derive(Debug, Clone, Default)]
pub struct FetchedSpans(Vec<(Range<u64>, Bytes)>);

impl FetchedSpans {
    /// Wraps spans given in file order.
    pub fn new(mut spans: Vec<(Range<u64>, Bytes)>) -> Self {
        spans.sort_by_key(|(r, _)| r.start);
        FetchedSpans(spans)
    }

    /// The bytes of `range` without copying, when one span holds them.
    pub fn get(&self, range: &Range<u64>) -> Option<Bytes> {
        let i = self
            .0
            .partition_point(|(r, _)| r.start <= range.start)
            .checked_sub(1)?;
        let (r, b) = &self.0[i];
        (range.end <= r.end)
            .then(|| b.slice((range.start - r.start) as usize..(range.end - r.start) as usize))
    }
}

/// The spans `unit` of `plan` needs, with their ranges, for a decode task to
/// wait for (`spans` as returned by [`Fetcher::start`]).
pub fn unit_spans(
    plan: &FilePlan,
    spans: &[SpanFuture],
    unit: &PlanUnit,
) -> Vec<(Range<u64>, SpanFuture)> {
    let mut needed: Vec<usize> = unit.ranges.iter().filter_map(|r| plan.span_of(r)).collect();
    needed.sort_unstable();
    needed.dedup();
    needed
        .into_iter()
        .map(|i| (plan.spans[i].range.clone(), spans[i].clone()))
        .collect()
}

/// Waits for spans from [`unit_spans`].
pub async fn await_spans(spans: Vec<(Range<u64>, SpanFuture)>) -> Result<Vec<(Range<u64>, Bytes)>> {
    let mut fetched = Vec::with_capacity(spans.len());
    for (range, fut) in spans {
        fetched.push((range, fut.await?));
    }
    Ok(fetched)
}

/// Runs `per_file` on each of `files`, several at once (the fetcher's limits
/// bound their requests together), and returns the results in file order.
pub async fn each_file<T, F, Fut>(
    fetcher: &Fetcher,
    files: Vec<Source>,
    per_file: F,
) -> Result<Vec<T>>
where
    F: Fn(Fetcher, Source) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let width = fetcher.config().max_in_flight.max(1);
    // Collected first: a stream over a mapping closure would keep the
    // closure's type in the future, which then fails to prove `Send`.
    let futs: Vec<Fut> = files
        .into_iter()
        .map(|s| per_file(fetcher.clone(), s))
        .collect();
    futures::stream::iter(futs)
        .buffered(width)
        .try_collect()
        .await
}

/// Local reads at once: four per core (at most `max_in_flight`). Each is a
/// blocking `pread` that faults in fresh pages; more of them than that only
/// contend for the cores (the local sweep on 2 cores: 8-16 at once read the
/// same file ~18% faster than 32), while a remote request mostly waits.
fn local_read_limit(max_in_flight: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    max_in_flight.min(4 * cores).max(1)
}

/// The fetcher's semaphores are never closed; should that change, a read
/// fails cleanly rather than panicking.
fn closed(_: tokio::sync::AcquireError) -> Error {
    Error::InvalidArgument("the read was shut down".into())
}

/// Fetches all slices of `span` concurrently into one buffer.
async fn fetch_span(fetcher: Fetcher, source: Source, span: Span) -> Result<Bytes> {
    let len = (span.range.end - span.range.start) as usize;
    // calloc'd: the kernel hands out zero pages lazily, so this costs no memset.
    let mut rest = BytesMut::zeroed(len);
    let mut parts = Vec::with_capacity(span.slices.len());
    for slice in &span.slices {
        let part = rest.split_to((slice.end - slice.start) as usize);
        parts.push((slice.clone(), part));
    }
    let started = Instant::now();
    let filled = join_all(
        parts
            .into_iter()
            .map(|(range, part)| fetch_slice(&fetcher, &source, range, part)),
    )
    .await;
    fetcher.stats().add_fetch_time(started.elapsed());
    let mut whole: Option<BytesMut> = None;
    for part in filled {
        let part = part?;
        match whole.as_mut() {
            // Consecutive parts of one allocation rejoin without copying.
            Some(w) => w.unsplit(part),
            None => whole = Some(part),
        }
    }
    Ok(whole.unwrap_or_default().freeze())
}

async fn fetch_slice(
    fetcher: &Fetcher,
    source: &Source,
    range: Range<u64>,
    part: BytesMut,
) -> Result<BytesMut> {
    match fetcher.cache_for(source) {
        Some(cache) => cache.read_range(fetcher, source, range, part).await,
        None => fetch_slice_uncached(fetcher, source, range, part).await,
    }
}

/// Fetches one slice from the store: bounded, timed out, retried.
pub(crate) async fn fetch_slice_uncached(
    fetcher: &Fetcher,
    source: &Source,
    range: Range<u64>,
    mut part: BytesMut,
) -> Result<BytesMut> {
    let _local = match source.is_local() {
        true => Some(fetcher.local_permit().await?),
        false => None,
    };
    let _permits = fetcher.permits(range.end - range.start).await?;
    let mut retry = Retry::new(
        fetcher.config(),
        fetcher.stats(),
        source.location(),
        Some(range.clone()),
    );
    let want = (range.end - range.start) as usize;
    loop {
        if part.len() != want {
            // A cancelled attempt can leave the buffer taken; never read into
            // a buffer of the wrong size. (Rejoining then copies, rarely.)
            part = BytesMut::zeroed(want);
        }
        match retry
            .attempt(source.read_into(range.clone(), &mut part))
            .await
        {
            Ok(()) => {
                fetcher.stats().add_fetched(range.end - range.start);
                return Ok(part);
            }
            Err(failure) => retry.failed(failure).await?,
        }
    }
}
