//! Reads as a stream of batches: every file prepared first (the schema is
//! known and checked), then the units decoded as their bytes arrive, with
//! the fetch of later units (of this file and the next) started ahead
//! within the read's `memory_budget` (for local files at most 64 MiB: see
//! [`super::fetch_ahead`]). A slow consumer holds the read back: about that
//! many fetched bytes and a few decoded batches are in memory, not the file
//! or the dataset. The first batch comes early: the first unit is fetched
//! alone, a large one's first rows are decoded and handed over first
//! ([`HEAD_ROWS`]), and the rest of the read starts then (from a distant
//! store half a round trip after the first unit: see [`head_start`]). A
//! unit of more batches than the stream holds is decoded a batch of rows
//! at a time (see [`WindowOptions::slabs_beyond`]). No batch handed over is
//! empty.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{stream, FutureExt, StreamExt};
use tokio::sync::mpsc;

use super::ahead::AheadBudget;
use super::read::{start_window, StartedWindow, WindowOptions};
use super::{prepare_all, Format, Planned, ReadOptions};
use crate::error::Result;
use crate::plan::MIN_SLICE;

/// A read's batches as they are decoded, in file and row order.
pub struct BatchStream {
    /// The schema of every batch.
    pub schema: SchemaRef,
    /// The batches; the read stops when this is dropped.
    pub batches: mpsc::Receiver<Result<RecordBatch>>,
}

impl futures::Stream for BatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.batches.poll_recv(cx)
    }
}

/// Decoded batches waiting for the consumer.
const BATCHES_AHEAD: usize = 4;
/// Windows whose fetch may be started ahead of the one being decoded (the
/// byte budget is the real bound; this keeps tiny windows from flooding the
/// runtime).
const WINDOWS_AHEAD: usize = 64;
/// The largest window: consecutive units fetched as one plan (their small
/// ranges coalesced across units).
const MAX_WINDOW: u64 = 64 << 20;

/// Reads `sources` as a stream of batches.
///
/// Each file's units are cut into windows of consecutive units (a quarter
/// of the read's budget, [`super::fetch_ahead`], at most [`MAX_WINDOW`]); a
/// window's fetch starts when the bytes of the windows fetched but not yet
/// handed over, its own included, fit in the budget (a window larger than
/// that runs alone). So a slow consumer holds at most about the budget of
/// fetched bytes, a few decoding units and [`BATCHES_AHEAD`] batches,
/// whatever the files' sizes.
pub(crate) async fn stream<F: Format>(
    sources: &[String],
    options: &ReadOptions,
) -> Result<BatchStream> {
    let fetcher = options.fetcher();
    let (prepared, unified) = prepare_all::<F>(sources, options, &fetcher, true).await?;
    let schema = Arc::clone(&unified.schema);
    let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
    let cache = options.cache.clone();
    let config = fetcher.config();
    let local = prepared.iter().all(|f| f.source().is_local());
    let ahead = super::fetch_ahead(config, local);
    // At most MAX_WINDOW, yet at least one slice of any file's plan (which a
    // config, a near store or a rotational disk may make larger than that).
    let largest_slice = prepared.iter().map(|f| f.plan().slice_size).max();
    let window_bytes = (ahead / 4).min(MAX_WINDOW).max(largest_slice.unwrap_or(0));
    let mut windows = windows_of::<F>(&prepared, window_bytes);
    first_unit_alone::<F>(&prepared, &mut windows);
    // The windows after the first whose fetches the budget lets run together:
    // they share the request slots (a window of few long requests would
    // leave most of them unused through a link).
    let windows_at_once =
        ((ahead / window_bytes.max(1)) as usize).clamp(1, windows.len().saturating_sub(1).max(1));
    let budget = AheadBudget::new(ahead);
    // Units decoding or decoded ahead of the consumer: as many as decode at
    // once (by default two per core).
    let decode_ahead = config.effective_decode_parallelism().max(2);
    // A large unit is decoded a slab of rows at a time where it holds more
    // slabs than the stream keeps decoding and waiting (see
    // [`WindowOptions::slabs_beyond`]).
    let slabs_beyond = Some(decode_ahead + BATCHES_AHEAD);
    let near = fetcher.store_is_near();
    // From a distant store the rest of the read does not wait for the first
    // batch (see below).
    let distant = fetcher.store_is_distant();

    // Starts each window's fetch, in order, as the budget allows.
    let (started_tx, started_rx) = mpsc::channel(WINDOWS_AHEAD);
    let starter = {
        let (fetcher, prepared) = (fetcher.clone(), prepared.clone());
        tokio::spawn(async move {
            let mut first_batch = None;
            for (w, (f, positions, bytes)) in windows.into_iter().enumerate() {
                let Ok(permit) = budget.take(bytes).await else {
                    return;
                };
                let file = &prepared[f];
                let options = match w {
                    0 => WindowOptions {
                        head: head_rows(&**file, positions.start),
                        slice_size: first_slices(bytes, file.plan().slice_size, near),
                        windows_at_once: 0,
                        slabs_beyond,
                    },
                    _ => WindowOptions {
                        windows_at_once,
                        slabs_beyond,
                        ..WindowOptions::default()
                    },
                };
                let last_of_file = positions.end == file.plan().units.len();
                let started = start_window::<F>(&fetcher, file, positions, options);
                if last_of_file {
                    // Its spans took what they need of the footer request's
                    // bytes; no fetch of this file starts again.
                    file.release_known_bytes();
                }
                if w == 0 {
                    first_batch = Some(match distant {
                        false => first_batch_ready(&started),
                        true => head_start(fetcher.quickest_answer(), first_batch_ready(&started)),
                    });
                }
                if started_tx
                    .send((f, started.units, Arc::new(permit)))
                    .await
                    .is_err()
                {
                    return; // the stream is gone
                }
                // The rest of the read waits for the first batch: started
                // beside it, its requests shared the link (or the disk) and
                // the cores with the first row group, whose batch came about
                // when the whole file did. (Through a link with round trips
                // this costs the rest one of them, once a stream.) From a
                // distant store the round trip waited is long: there the
                // rest waits half of one at most ([`head_start`]).
                if let Some(ready) = first_batch.take() {
                    ready.await;
                }
            }
        })
    };
    tokio::spawn(async move {
        let _starter = AbortOnDrop(starter);
        // Every unit carries its window's permit: the window's budget comes
        // back when its last unit's batches are handed over.
        let started = stream::unfold(started_rx, |mut rx| async move {
            rx.recv().await.map(|window| (window, rx))
        });
        let mut units = started
            .flat_map(|(f, units, permit)| {
                stream::iter(units.into_iter().map(move |unit| {
                    let permit = Arc::clone(&permit);
                    async move { (f, unit.await, permit) }
                }))
            })
            .buffered(decode_ahead)
            .boxed();
        while let Some((f, unit, permit)) = units.next().await {
            let location = prepared[f].source().location();
            // An empty batch is not handed over: a filtered unit that keeps
            // no row gives none, whether it was decoded whole or a slab at
            // a time (an unfiltered one has rows, or is a row group of none).
            let result = unit.and_then(|bs| {
                bs.into_iter()
                    .filter(|b| b.num_rows() > 0)
                    .map(|b| {
                        fetcher.stats().add_rows(b.num_rows() as u64);
                        unified.conform(f, b, location)
                    })
                    .collect::<Result<Vec<_>>>()
            });
            match result {
                Ok(bs) => {
                    for b in bs {
                        if tx.send(Ok(b)).await.is_err() {
                            return; // the consumer is gone: stop reading
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
            drop(permit);
        }
        if let Some(cache) = &cache {
            cache.flush_counters();
        }
    });
    Ok(BatchStream {
        schema,
        batches: rx,
    })
}

/// A stream's first batch holds this many rows when its unit has many more
/// (pyarrow's `iter_batches` batch): it is decoded on its own, before the
/// rest of its unit, and handed over first. On this 2-core VM the suite's
/// `int` file's first row group (1.1 M rows) took 25-33 ms to decode whole,
/// its first 64 Ki rows 3-4 ms.
const HEAD_ROWS: usize = 64 * 1024;

/// The rows of the head batch of unit `position` of `file`, when it is worth
/// decoding apart (the unit holds more than twice as many).
fn head_rows<P: Planned>(file: &P, position: usize) -> Option<usize> {
    let many = file.unit_rows(position) > 2 * HEAD_ROWS as u64;
    (many && file.decodes_head(position)).then_some(HEAD_ROWS)
}

/// Done when the first batch of `window` can be handed over: its head is
/// decoded, or (without a head) its bytes are in.
fn first_batch_ready(window: &StartedWindow) -> futures::future::BoxFuture<'static, ()> {
    match &window.head_done {
        Some(done) => done.clone().boxed(),
        None => futures::future::join_all(window.spans.clone())
            .map(|_| ())
            .boxed(),
    }
}

/// Done when the first window of a stream from a distant store
/// ([`crate::fetch::Fetcher::store_is_distant`]) has had half a round trip
/// (half the store's `quickest_answer` to a footer request) to itself, or
/// when its `first_batch` is ready if that comes sooner. The rest's bytes
/// then start to arrive half a round trip after the first window's, which
/// has the link and the cores to itself meanwhile. Waiting for the first
/// batch costs the rest a whole round trip (100 ms and more); not waiting
/// shared the first window's link out with every other row group's, so its
/// batch came late. Far profile, 256 MB files, fresh processes, 7
/// interleaved rounds, median ms, first batch not waiting → half a round
/// trip (polars-scan): `int` 490 → 385 (465), `mixed` 514 → 405 (506),
/// `string` 561 → 419 (775); the whole stream 673 → 679, 671 → 672 and
/// 692 → 656. (Waiting for the first batch: 295 and 296 ms first, 756 and
/// 786 whole.)
fn head_start(
    quickest_answer: Option<std::time::Duration>,
    first_batch: futures::future::BoxFuture<'static, ()>,
) -> futures::future::BoxFuture<'static, ()> {
    let half_round_trip = quickest_answer.unwrap_or_default() / 2;
    async move {
        tokio::select! {
            _ = first_batch => {}
            _ = tokio::time::sleep(half_round_trip) => {}
        }
    }
    .boxed()
}

/// The first window's first unit made a window of its own (the rest of its
/// window the next one), so that its bytes are not shared out with others.
fn first_unit_alone<F: Format>(
    files: &[Arc<F::File>],
    windows: &mut Vec<(usize, Range<usize>, u64)>,
) {
    let Some((f, positions, bytes)) = windows.first().cloned() else {
        return;
    };
    if positions.len() < 2 {
        return;
    }
    let first = files[f].plan().units[positions.start].bytes();
    windows[0] = (f, positions.start..positions.start + 1, first);
    windows.insert(
        1,
        (
            f,
            positions.start + 1..positions.end,
            bytes.saturating_sub(first),
        ),
    );
}

/// The slice size of the first window's requests (`None`: the plan's own).
/// Through a link with round trips, its bytes go over
/// [`FIRST_WINDOW_REQUESTS`] requests (it is fetched alone, so more
/// connections bring it sooner), each at least [`MIN_SLICE`] and at most the
/// plan's slice size. From a near store (see [`Fetcher::store_is_near`]) the
/// plan's own slices do better: the first batch of the suite's `int` file
/// (an 18 MB row group) from MinIO on loopback, 11 interleaved fresh
/// processes, came in 48 ms over 16 requests, 35 over 4 and 31 over the
/// plan's 8 MiB slices, while through the emulated cloud link (7 rounds)
/// 16 requests took 108 ms, 4 took 122 and 2 took 135.
///
/// [`Fetcher::store_is_near`]: crate::fetch::Fetcher::store_is_near
fn first_slices(bytes: u64, slice_size: u64, near: bool) -> Option<u64> {
    if near {
        return None;
    }
    Some((bytes / FIRST_WINDOW_REQUESTS).clamp(MIN_SLICE.min(slice_size), slice_size.max(1)))
}

const FIRST_WINDOW_REQUESTS: u64 = 16;

/// Each file's units cut into runs of consecutive units of up to
/// `window_bytes` to fetch (a larger unit is a run alone): `(file, unit
/// positions, bytes to fetch)`, in file and unit order.
pub(super) fn windows_of<F: Format>(
    files: &[Arc<F::File>],
    window_bytes: u64,
) -> Vec<(usize, Range<usize>, u64)> {
    let mut windows = Vec::new();
    for (f, file) in files.iter().enumerate() {
        let units = &file.plan().units;
        let mut start = 0;
        let mut bytes = 0u64;
        for (position, unit) in units.iter().enumerate() {
            let size = unit.bytes();
            if position > start && bytes + size > window_bytes {
                windows.push((f, start..position, bytes));
                start = position;
                bytes = 0;
            }
            bytes += size;
        }
        if start < units.len() {
            windows.push((f, start..units.len(), bytes));
        }
    }
    windows
}

/// Aborts a spawned task when dropped (the stream's reader is gone).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;
    use tokio::time::Instant;

    use super::head_start;

    // The rest of a stream from a distant store waits half a round trip for
    // a first batch that is slow to come, and not at all for one that came.
    #[tokio::test(start_paused = true)]
    async fn the_rest_waits_half_a_round_trip_or_for_the_first_batch() {
        let round_trip = Some(Duration::from_millis(100));
        let started = Instant::now();
        head_start(round_trip, futures::future::pending().boxed()).await;
        assert_eq!(started.elapsed(), Duration::from_millis(50));

        let started = Instant::now();
        head_start(round_trip, futures::future::ready(()).boxed()).await;
        assert_eq!(started.elapsed(), Duration::ZERO);

        let started = Instant::now();
        let batch_at_20_ms = tokio::time::sleep(Duration::from_millis(20)).boxed();
        head_start(round_trip, batch_at_20_ms).await;
        assert_eq!(started.elapsed(), Duration::from_millis(20));
    }
}
