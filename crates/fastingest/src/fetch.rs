//! Executes plans: every span's slices fetched in parallel through the
//! read's byte source (whose limits every file of the read shares), each
//! slice written straight into its place in the span's buffer.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::future::{join_all, BoxFuture, Shared};
use futures::{FutureExt, StreamExt, TryStreamExt};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::io::{Guess, ObjectVersion, Tail};
use crate::known::{from_start, joined, GuessedBytes, Known, LongTail, StartSlice};
use crate::plan::{FilePlan, PlanUnit, Span, MIN_SLICE};
use crate::request::{closed, reads_as_rotational, ByteSource};
use crate::source::Source;
use crate::stats::ReadStats;

/// What one read shares across its files and tasks: the byte source (the
/// store's requests under the read's limits, perhaps behind the cache) and
/// the decode slots.
#[derive(Debug, Clone)]
pub struct Fetcher(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    bytes: Arc<dyn ByteSource>,
    decode: Semaphore,
    /// Keeps the blocks of decoded spans for the read's output while it
    /// goes ([`crate::reuse`]).
    _reusing: crate::reuse::ReadGoing,
}

/// A span being fetched in the background; cloneable so that every unit
/// needing it can wait for it.
pub type SpanFuture = Shared<BoxFuture<'static, Result<Bytes>>>;

/// Aborts the wrapped task when dropped, so an abandoned read stops fetching.
pub struct AbortOnDrop<T>(pub JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    /// The task's result; `None` when it was cancelled or panicked.
    pub async fn result(&mut self) -> Option<T> {
        (&mut self.0).await.ok()
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Fetcher {
    /// A fetcher for one read, straight from the store.
    #[cfg(test)]
    pub(crate) fn new(config: Config, stats: ReadStats) -> Self {
        Self::over(Arc::new(crate::request::StoreRequests::new(config, stats)))
    }

    /// A fetcher for one read that reads through `bytes` (the store's
    /// requests, or a cache in front of them).
    pub fn over(bytes: Arc<dyn ByteSource>) -> Self {
        let decode = Semaphore::new(bytes.config().effective_decode_parallelism());
        Fetcher(Arc::new(Inner {
            bytes,
            decode,
            _reusing: crate::reuse::ReadGoing::new(),
        }))
    }

    /// The read's configuration.
    pub fn config(&self) -> &Config {
        self.0.bytes.config()
    }

    /// The read's statistics.
    pub fn stats(&self) -> &ReadStats {
        self.0.bytes.stats()
    }

    /// Whether the store answers like one nearby (loopback, the same rack):
    /// a footer request of this read (or one of the store's latest, see
    /// [`crate::link`]) was answered within [`START_AFTER`].
    /// There each request costs the server CPU, which it may share with the
    /// reader, more than a round trip costs the link: fewer, larger requests
    /// bring the same bytes sooner.
    pub(crate) fn store_is_near(&self) -> bool {
        self.0
            .bytes
            .quickest_answer()
            .is_some_and(|took| took < START_AFTER)
    }

    /// Whether the store answers like one a region away: even this read's
    /// quickest footer answer (or the store's latest, see [`crate::link`])
    /// took [`DISTANT_ANSWER`] or more. Its requests then take half a slot
    /// each (see [`crate::request::slot_quarters`]).
    ///
    /// [`DISTANT_ANSWER`]: crate::request::DISTANT_ANSWER
    pub(crate) fn store_is_distant(&self) -> bool {
        crate::request::answers_from_afar(self.0.bytes.quickest_answer())
    }

    /// How soon the store answered this read's quickest footer request
    /// (about the link's round trip), if one was answered.
    pub(crate) fn quickest_answer(&self) -> Option<std::time::Duration> {
        self.0.bytes.quickest_answer()
    }

    /// The largest request of this read's plans: `Config::slice_size`, or
    /// from a near store ([`Fetcher::store_is_near`]) `near_slice_size`
    /// (within the memory budget). From MinIO on loopback, 9 interleaved
    /// fresh processes, 16 MiB slices read the suite's `int` file in 155 ms
    /// against 184 with 8 MiB (polars 172), `mixed` in 182 against 206,
    /// `string` in 205 against 212; 32 MiB did no better.
    pub(crate) fn max_slice(&self) -> u64 {
        near_or_not(self.config(), self.store_is_near())
    }

    /// The largest request to `source`: [`Fetcher::max_slice`]; a local file
    /// read as a rotational disk's gets a near store's (`near_slice_size`):
    /// there too fewer, longer reads bring the bytes sooner (see
    /// [`crate::config::LocalDisk`]).
    pub(crate) fn max_slice_for(&self, source: &Source) -> u64 {
        match reads_as_rotational(self.config(), source) {
            true => near_or_not(self.config(), true),
            false => self.max_slice(),
        }
    }

    /// Fits `plan` to what the byte source holds of `source` as units of
    /// its own (the disk cache's entries: see [`FilePlan::join_across`]), so
    /// that each is read once, in one request.
    pub(crate) fn join_across_held(&self, plan: &mut FilePlan, source: &Source) {
        // One request in all has nothing to join or cut: no listing of the
        // cache's folder for each of a dataset's many small files.
        if plan.spans.iter().map(|s| s.slices.len()).sum::<usize>() < 2 {
            return;
        }
        if let Some(held) = self.0.bytes.held_entries(source) {
            plan.join_across(&held);
        }
    }

    /// The longest gap between two ranges of `source` fetched together:
    /// `Config::hole_limit` for a store, `Config::local_hole_limit` for a
    /// local file.
    pub(crate) fn hole_limit_for(&self, source: &Source) -> u64 {
        match source.is_local() {
            true => self.config().local_hole_limit,
            false => self.config().hole_limit,
        }
    }

    /// Waits for a decode slot (bounds CPU-heavy work to the cores).
    pub(crate) async fn decode_permit(&self) -> Result<SemaphorePermit<'_>> {
        self.0.decode.acquire().await.map_err(closed)
    }

    /// The end of the file (footer and size) in one speculative request, or
    /// from the cache.
    pub async fn fetch_tail(&self, source: &Source, len: u64) -> Result<Tail> {
        self.0.bytes.tail(source, len).await
    }

    /// The end of the file as [`Fetcher::fetch_tail`] brings it and, in the
    /// same round trip, what `beside` asks for while the file's size is not
    /// known: up to `beside.start` bytes of its start (after the leading
    /// magic), in requests of [`MIN_SLICE`] bytes, and its last
    /// `beside.long_tail` bytes, for a footer longer than `tail_len`.
    /// Returns once the tail is in; the other requests go on in the
    /// background, and a plan made meanwhile waits for the parts of them it
    /// needs ([`Fetcher::start_with`], [`Fetcher::tail_from`]). They are
    /// speculation: what they fail to bring is fetched as planned. They are
    /// asked for only when the tail has not come within [`START_AFTER`]: a
    /// link that answers sooner saves little by them, and the extra
    /// requests cost a store on loopback the reader's CPU. The start of a
    /// file in a store whose latest footer answers all came later than that
    /// is asked for at once ([`crate::link`]); the long tail still waits, as
    /// most footers fit in the tail and would leave its bytes unused.
    pub async fn fetch_tail_and_beside(
        &self,
        source: &Source,
        tail_len: u64,
        beside: Beside,
    ) -> Result<FooterRound> {
        let tail = self.fetch_tail(source, tail_len);
        futures::pin_mut!(tail);
        let long_tail_len = beside.long_tail.filter(|&len| len > tail_len);
        if beside.start == 0 && long_tail_len.is_none() {
            return Ok(FooterRound::alone(tail.await?));
        }
        let mut start = match crate::link::known_far(source) {
            true => self.start_slices(source, beside.start),
            false => Vec::new(),
        };
        if let Ok(tail) = tokio::time::timeout(START_AFTER, &mut tail).await {
            return Ok(FooterRound {
                tail: tail?,
                start,
                long_tail: None,
            });
        }
        // First the long tail: a footer that needs it waits for it.
        let long_tail = long_tail_len.map(|len| LongTail(self.guess(source, Guess::Last(len))));
        if start.is_empty() {
            start = self.start_slices(source, beside.start);
        }
        Ok(FooterRound {
            tail: tail.await?,
            start,
            long_tail,
        })
    }

    /// Requests for the first `len` bytes of the file (after the leading
    /// magic), in the background, in slices of [`MIN_SLICE`] bytes.
    fn start_slices(&self, source: &Source, len: u64) -> Vec<StartSlice> {
        crate::plan::split(START..START + len, MIN_SLICE)
            .into_iter()
            .map(|range| {
                // Cancelled when the last holder of the slice lets go (a
                // read abandoned, or a plan that needs none of it).
                let mut task = self.guess(source, Guess::Range(range.clone()));
                let bytes: BoxFuture<'static, GuessedBytes> =
                    async move { task.result().await.flatten() }.boxed();
                StartSlice {
                    range,
                    bytes: bytes.shared(),
                }
            })
            .collect()
    }

    /// A speculative request in the background (see
    /// [`ByteSource::guess`]); dropping the handle cancels it.
    fn guess(&self, source: &Source, guess: Guess) -> AbortOnDrop<GuessedBytes> {
        let (fetcher, source) = (self.clone(), Arc::clone(source));
        AbortOnDrop(tokio::spawn(async move {
            fetcher.0.bytes.guess(&source, guess).await
        }))
    }

    /// The file's bytes from `from` to its end, as a tail: `tail` where it
    /// holds them; else `long_tail` (asked for beside it) where that holds
    /// them and is of the tail's version; else `tail` after one request for
    /// the part before it.
    pub async fn tail_from(
        &self,
        source: &Source,
        tail: Tail,
        long_tail: Option<LongTail>,
        from: u64,
    ) -> Result<Tail> {
        let tail_start = tail.start();
        if from >= tail_start {
            return Ok(tail);
        }
        if let Some(long_tail) = long_tail {
            let long = long_tail.bytes(source.version().as_ref()).await;
            if let Some(long) = long.filter(|l| l.size == tail.size && l.start() <= from) {
                return Ok(long);
            }
        }
        let head = self.fetch_range(source, from..tail_start).await?;
        let mut joined = BytesMut::with_capacity((tail.size - from) as usize);
        joined.extend_from_slice(&head);
        joined.extend_from_slice(&tail.bytes);
        Ok(Tail {
            bytes: joined.freeze(),
            size: tail.size,
        })
    }

    /// One range outside any plan (a footer larger than the prefetch, a page
    /// index, a decoder asking for something unforeseen).
    pub async fn fetch_range(&self, source: &Source, range: Range<u64>) -> Result<Bytes> {
        let slices = crate::plan::split(range.clone(), self.max_slice_for(source));
        let span = Span { range, slices };
        fetch_span(self.clone(), Arc::clone(source), span, MIN_MAPPED_SPAN).await
    }

    /// Starts fetching every span of `plan` in the background, in file order.
    /// The returned futures resolve to each span's bytes.
    pub fn start(
        &self,
        source: &Source,
        plan: &FilePlan,
    ) -> (Vec<SpanFuture>, Vec<AbortOnDrop<()>>) {
        self.start_with(source, plan, &Known::default())
    }

    /// [`Fetcher::start`], serving what `known` holds without a request
    /// and waiting for what it has on its way; only the rest is fetched
    /// (each span's part after the known bytes, in the background at once).
    pub fn start_with(
        &self,
        source: &Source,
        plan: &FilePlan,
        known: &Known,
    ) -> (Vec<SpanFuture>, Vec<AbortOnDrop<()>>) {
        self.stats().add_needed(plan.bytes_needed());
        let mut futures = Vec::with_capacity(plan.spans.len());
        let mut guards = Vec::with_capacity(plan.spans.len());
        // The start's bytes are used only if of the version the tail was.
        let version = source.version();
        let min_mapped = min_mapped_span(plan.bytes_needed());
        for span in &plan.spans {
            let held = known.held_prefix(&span.range);
            let len = span.range.end - span.range.start;
            if held.len() as u64 == len {
                let ready: BoxFuture<'static, Result<Bytes>> =
                    futures::future::ready(Ok(held)).boxed();
                futures.push(ready.shared());
                continue;
            }
            let (coming, rest_from) =
                known.coming(span.range.start + held.len() as u64, span.range.end);
            let (fetcher, file) = (self.clone(), Arc::clone(source));
            let assembled = match coming.is_empty() && held.is_empty() {
                true => fetch_span(fetcher, file, span.clone(), min_mapped).boxed(),
                false => {
                    let ahead = Ahead {
                        held,
                        coming,
                        rest_from,
                        version: version.clone(),
                    };
                    fetch_span_around(fetcher, file, span.clone(), ahead).boxed()
                }
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(assembled.map(move |r: Result<Bytes>| {
                let _ = tx.send(r);
            }));
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
                        cause: None,
                    })
                })
            }
            .boxed();
            futures.push(fut.shared());
        }
        (futures, guards)
    }
}

/// What a footer request asks for beside the tail on a slow link (see
/// [`Fetcher::fetch_tail_and_beside`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Beside {
    /// Bytes of the file's start (`Config::start_prefetch`; 0: none).
    pub start: u64,
    /// Bytes of the file's end (`Config::long_footer_prefetch`), asked for
    /// where more than the tail request's.
    pub long_tail: Option<u64>,
}

impl Beside {
    /// What the footer request of `source` asks for beside it: nothing
    /// unless the file is remote and no listing gave its size (a listing's
    /// files are many, and those of at most `small_file` are fetched whole);
    /// then its long tail, and its start when the read wants all of the file.
    pub fn footer_of(fetcher: &Fetcher, source: &Source, wants_whole_file: bool) -> Self {
        if source.is_local() || source.listed_version().is_some() {
            return Beside::default();
        }
        let config = fetcher.config();
        Beside {
            start: if wants_whole_file {
                config.start_prefetch
            } else {
                0
            },
            long_tail: Some(config.long_footer_prefetch),
        }
    }
}

/// What a footer's round trip brought, and what it is still bringing.
#[derive(Debug)]
pub struct FooterRound {
    /// The end of the file, and its size.
    pub tail: Tail,
    /// The file's start, on its way (empty: not asked for).
    pub start: Vec<StartSlice>,
    /// A longer end of the file, on its way.
    pub long_tail: Option<LongTail>,
}

impl FooterRound {
    fn alone(tail: Tail) -> Self {
        FooterRound {
            tail,
            start: Vec::new(),
            long_tail: None,
        }
    }
}

/// Where a file's speculative start begins: after the leading magic, which
/// no plan asks for.
const START: u64 = 4;

/// How long the footer request may take before the file's start (and a long
/// tail) is asked for beside it. MinIO on loopback answers within it (where
/// the start's 8 requests cost a 143 MB read 3-6 %); a cloud region's round
/// trip (20-100 ms) does not.
pub(crate) const START_AFTER: std::time::Duration = std::time::Duration::from_millis(5);

/// What a read already has, or is being brought, of one plan span's
/// beginning (see [`Known`]).
struct Ahead {
    /// The span's first bytes, in memory.
    held: Bytes,
    /// The parts after `held` that the file's start is bringing.
    coming: Vec<(Range<u64>, StartSlice)>,
    /// Where the bytes neither covers begin.
    rest_from: u64,
    /// The version the start's bytes must be of (the tail's).
    version: Option<ObjectVersion>,
}

/// `span` from what `ahead` holds or is bringing, fetching only the rest:
/// into place in the span's buffer, so that only the bytes ahead are
/// copied. A part the start failed to bring is fetched as planned.
async fn fetch_span_around(
    fetcher: Fetcher,
    file: Source,
    span: Span,
    ahead: Ahead,
) -> Result<Bytes> {
    let Ahead {
        held,
        coming,
        rest_from,
        version,
    } = ahead;
    let start_parts = async {
        let mut parts = vec![held];
        for (range, slice) in coming {
            let got = slice.bytes.await;
            match from_start(&slice.range, &got, &range, version.as_ref()) {
                Some(bytes) => parts.push(bytes),
                None => parts.push(fetcher.fetch_range(&file, range).await?),
            }
        }
        Ok::<_, Error>(parts)
    };
    if rest_from == span.range.end {
        return Ok(joined(start_parts.await?));
    }
    let rest = fetch_span_after(&fetcher, &file, &span, rest_from);
    let (parts, buffer) = futures::join!(start_parts, rest);
    let mut buffer = buffer?;
    let mut at = 0;
    for part in parts? {
        buffer[at..at + part.len()].copy_from_slice(&part);
        at += part.len();
    }
    Ok(span_bytes(&fetcher, buffer))
}

/// `span`'s slices from byte `from` on, cut to match.
fn slices_after(span: &Span, from: u64) -> Vec<Range<u64>> {
    span.slices
        .iter()
        .filter(|s| s.end > from)
        .map(|s| s.start.max(from)..s.end)
        .collect()
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

    /// The bytes of `range`: without copying when one span holds them,
    /// joined when consecutive spans that touch hold them together (the
    /// decoder may ask for pages of one column chunk in one range that the
    /// plan fetched as two requests).
    pub fn get(&self, range: &Range<u64>) -> Option<Bytes> {
        let i = self.first_of(range)?;
        let (r, b) = &self.0[i];
        if range.end <= r.end {
            return Some(b.slice((range.start - r.start) as usize..(range.end - r.start) as usize));
        }
        self.joined(i, range)
    }

    /// Whether the spans hold all of `range` (see [`FetchedSpans::get`]).
    pub fn holds(&self, range: &Range<u64>) -> bool {
        let Some(first) = self.first_of(range) else {
            return false;
        };
        self.covering(first, range).is_some()
    }

    /// The span `range` starts in.
    fn first_of(&self, range: &Range<u64>) -> Option<usize> {
        self.0
            .partition_point(|(r, _)| r.start <= range.start)
            .checked_sub(1)
    }

    /// How many spans from `first` on cover `range` without a gap; `None`
    /// when they leave some of it out.
    fn covering(&self, first: usize, range: &Range<u64>) -> Option<usize> {
        let mut at = range.start;
        for (n, (r, _)) in self.0[first..].iter().enumerate() {
            if r.start > at || r.end <= at {
                return None; // a gap, or a span behind the bytes still missing
            }
            at = range.end.min(r.end);
            if at == range.end {
                return Some(n + 1);
            }
        }
        None
    }

    /// `range`, which starts in span `first`, from that span and the ones
    /// after it, if they follow each other without a gap (checked before
    /// anything is copied).
    fn joined(&self, first: usize, range: &Range<u64>) -> Option<Bytes> {
        let n = self.covering(first, range)?;
        let mut out = Vec::with_capacity((range.end - range.start) as usize);
        for (r, b) in &self.0[first..first + n] {
            let from = range.start.max(r.start);
            let to = range.end.min(r.end);
            out.extend_from_slice(&b[(from - r.start) as usize..(to - r.start) as usize]);
        }
        Some(Bytes::from(out))
    }
}

/// The spans `unit` of `plan` needs, with their ranges, for a decode task to
/// wait for (`spans` as returned by [`Fetcher::start`]).
pub fn unit_spans(
    plan: &FilePlan,
    spans: &[SpanFuture],
    unit: &PlanUnit,
) -> Vec<(Range<u64>, SpanFuture)> {
    spans_holding(plan, spans, &unit.ranges)
}

/// The spans of `plan` that hold `ranges`, with their ranges (each once).
pub fn spans_holding(
    plan: &FilePlan,
    spans: &[SpanFuture],
    ranges: &[Range<u64>],
) -> Vec<(Range<u64>, SpanFuture)> {
    let mut needed: Vec<usize> = ranges.iter().filter_map(|r| plan.span_of(r)).collect();
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
pub async fn each_file<I, T, F, Fut>(
    fetcher: &Fetcher,
    files: Vec<I>,
    per_file: &F,
) -> Result<Vec<T>>
where
    F: Fn(Fetcher, I) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    // As many files as footer requests may be in flight (each file's first
    // request is a footer or a small whole file: see `slot_quarters`). A
    // footer request is at most a small one; most are tiny.
    let width = 4 * fetcher.config().max_in_flight.max(1);
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

/// The largest request: `near_slice_size` (within the memory budget) for a
/// near source, else (or when it is 0) `slice_size`.
fn near_or_not(config: &Config, near: bool) -> u64 {
    match (near, config.near_slice_size) {
        (true, near) if near > 0 => near.min(config.memory_budget),
        _ => config.slice_size,
    }
}

/// A span shorter than this is read, not mapped, unless its plan is long
/// enough to map shorter ones (see [`min_mapped_span`]).
const MIN_MAPPED_SPAN: u64 = 256 * 1024;

/// The shortest span mapped in a long plan.
const MIN_MAPPED_SPAN_OF_LONG_PLAN: u64 = 64 * 1024;

/// A plan fetching fewer bytes than this maps only spans of
/// `MIN_MAPPED_SPAN`: mapping a file and unmapping it costs more than
/// copying this much.
const MIN_MAPPED_PLAN: u64 = 1 << 20;

/// The shortest span of a plan fetching `planned` bytes that is mapped.
///
/// A warm span read by `pread` lands in a fresh buffer whose pages the
/// process first faults in and clears; through the mapping the decoder
/// faults in the page cache's own pages, 16 at a time. For short spans that
/// saving is less than a span's mapping costs (checking its pages, dropping
/// them again): under 64 KB they are read, from the page cache in place
/// (see `io::local`). Measured on 10 of 500 columns (80 spans of ~82 KB)
/// and 20 of 200 in 128 row groups (2,560 spans of ~28 KB), see
/// docs/benchmarks.md.
fn min_mapped_span(planned: u64) -> u64 {
    match planned >= MIN_MAPPED_PLAN {
        true => MIN_MAPPED_SPAN_OF_LONG_PLAN,
        false => MIN_MAPPED_SPAN,
    }
}

/// Fetches all slices of `span` concurrently into one buffer; or, for a
/// local file whose span is in the page cache, hands out a view of its
/// mapping (a span that must come from disk reads as well with `pread`, see
/// [`crate::io::MappedFile::resident`]).
///
/// The mapped pages are not faulted in here: the decoder faults them in as
/// it reads, and the kernel maps 16 pages a fault. Populating them first
/// (`MADV_POPULATE_READ` on the blocking pool, slice by slice) took a third
/// of a steady read's CPU, and fresh reads from the page cache were 5-11 %
/// slower for it.
async fn fetch_span(
    fetcher: Fetcher,
    source: Source,
    span: Span,
    min_mapped: u64,
) -> Result<Bytes> {
    let len = span.range.end - span.range.start;
    let mapping = (fetcher.config().map_local_files && len >= min_mapped)
        .then(|| source.map())
        .flatten();
    if let Some(mapping) = mapping {
        let in_place = match mapping.resident(&span.range) {
            true => true,
            false => {
                populates(&fetcher, &source, len)
                    && fetcher
                        .0
                        .bytes
                        .populate(&source, Arc::clone(&mapping), span.range.clone())
                        .await
            }
        };
        if let Some(bytes) = in_place
            .then(|| mapping.bytes(span.range.clone()))
            .flatten()
        {
            fetcher.stats().add_fetched(len);
            fetcher.stats().add_mapped(len);
            return Ok(bytes);
        }
    }
    let fetched = fetch_span_after(&fetcher, &source, &span, span.range.start).await?;
    Ok(span_bytes(&fetcher, fetched))
}

/// The shortest cold span of a rotational disk read through the mapping.
const MIN_POPULATED_SPAN: u64 = 4 * 1024 * 1024;

/// Whether a cold span of `len` bytes of local `source` is read into the
/// page cache through the file's mapping (`MADV_POPULATE_READ`, on the
/// blocking pool, two long spans at a time) and then decoded in place, as
/// a warm one is, rather than read with `pread` into a fresh buffer: for a
/// long span of a disk read as rotational. There the kernel reads the span
/// in readahead-window pieces (8 MiB on this VM's virtual disk) and
/// neither copies it nor clears a buffer for it. The suite's files, page
/// cache dropped before each read, 7 interleaved rounds, median ms of the
/// first read of a process / of reads 2-6 (`pread` → populated): `int`
/// 395 → 326 / 292 → 232, `float` 345 → 295 / 270 → 200, `mixed-none`
/// 391 → 327 / 288 → 238, `string` 278 → 272 / 203 → 200; peak RSS 10-50
/// MiB lower (CHANGELOG, docs/benchmarks.md). Populating each span's 16
/// MiB slices at once instead was no faster than `pread` on `int`. On SSDs
/// and NVMe, whose readahead window is small (128 KiB by default) and whose
/// deep queues long `pread`s fill, reads stay as they are (not measured
/// here: no such device).
fn populates(fetcher: &Fetcher, source: &Source, len: u64) -> bool {
    len >= MIN_POPULATED_SPAN && crate::request::reads_as_rotational(fetcher.config(), source)
}

/// A fetched span's bytes, for the decoder, in a buffer whose memory is
/// handed on when the span is decoded ([`SpanBuffer`]).
fn span_bytes(fetcher: &Fetcher, fetched: BytesMut) -> Bytes {
    let once_decoded = match fetcher.store_is_distant() {
        true => OnceDecoded::PagesReleased,
        false => OnceDecoded::Reused,
    };
    Bytes::from_owner(SpanBuffer {
        bytes: fetched,
        once_decoded,
    })
}

/// A fetched span's buffer, and what becomes of its memory once the span
/// is decoded and the buffer dropped.
struct SpanBuffer {
    bytes: BytesMut,
    once_decoded: OnceDecoded,
}

enum OnceDecoded {
    /// From a distant store ([`Fetcher::store_is_distant`]) the pages go
    /// back to the kernel ([`crate::memory::give_back_pages`]) before the
    /// allocator takes the buffer back. Across regions a read waits on the
    /// link, and the faults this costs the output later hide in that wait.
    /// Through the far profile, two runs of 9 interleaved fresh processes
    /// against the same build without it: `int` 390 and 383 ms against 384
    /// and 396, peak 272-277 MiB against 293-307 (polars 271-273); `mixed`
    /// 396 against 373 ms, 290 against 318 MiB; `mixed-zstd` 382 against
    /// 377 ms, 283 against 295 MiB.
    PagesReleased,
    /// From nearer stores, and local files read into buffers, the block
    /// goes to the read's next large allocation ([`crate::reuse`]): its
    /// pages are already faulted in.
    Reused,
}

impl AsRef<[u8]> for SpanBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for SpanBuffer {
    fn drop(&mut self) {
        match self.once_decoded {
            OnceDecoded::PagesReleased => crate::memory::give_back_pages(&mut self.bytes),
            OnceDecoded::Reused => {
                let _freeing = crate::reuse::FreeingSpan::new();
                drop(std::mem::take(&mut self.bytes));
            }
        }
    }
}

/// The buffer of `span` with its bytes from `from` on fetched into place
/// (the bytes before `from` are left zero, for the caller to fill).
async fn fetch_span_after(
    fetcher: &Fetcher,
    source: &Source,
    span: &Span,
    from: u64,
) -> Result<BytesMut> {
    let len = (span.range.end - span.range.start) as usize;
    // One allocation, cut into room for each slice, which its request
    // writes without clearing it first: memory the allocator reuses (it
    // keeps what reads free, see the binding's allocator) is not zero, and
    // clearing it was 7 % of the client's CPU in a steady read from MinIO.
    let mut rest = BytesMut::with_capacity(len);
    let mut room = take_room(&mut rest, (from - span.range.start) as usize);
    room.resize(room.capacity(), 0); // the caller's to fill
    let mut parts = Vec::with_capacity(span.slices.len());
    for slice in slices_after(span, from) {
        let part = take_room(&mut rest, (slice.end - slice.start) as usize);
        parts.push((slice, part));
    }
    let started = Instant::now();
    let filled = join_all(
        parts
            .into_iter()
            .map(|(range, part)| fetch_slice(fetcher, source, range, part)),
    )
    .await;
    fetcher.stats().add_fetch_time(started.elapsed());
    let mut whole = room;
    for part in filled {
        // Consecutive parts of one allocation rejoin without copying.
        whole.unsplit(part?);
    }
    Ok(whole)
}

/// The first `n` bytes of `room`'s capacity, split off as empty room of
/// their own (`room` keeps the rest). Rooms written to the end of their
/// capacity rejoin without a copy (`BytesMut::unsplit`).
fn take_room(room: &mut BytesMut, n: usize) -> BytesMut {
    debug_assert!(room.is_empty() && n <= room.capacity());
    let rest = room.split_off(n);
    std::mem::replace(room, rest)
}

async fn fetch_slice(
    fetcher: &Fetcher,
    source: &Source,
    range: Range<u64>,
    part: BytesMut,
) -> Result<BytesMut> {
    fetcher.0.bytes.range_into(source, range, part).await
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
