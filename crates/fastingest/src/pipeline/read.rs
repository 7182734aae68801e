//! Whole reads: every file prepared, its units fetched and decoded as their
//! bytes arrive (decoding overlaps the fetch), the files joined in order.
//! Also the two lighter calls: plans (metadata only) and metadata.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::future::{BoxFuture, Shared};
use futures::{stream, FutureExt, StreamExt, TryStreamExt};

use super::ahead::AheadBudget;
use super::decode::{decode_in_parts, decode_units, Rows};
use super::stream::windows_of;
use super::{check_single_file, concat, fetch_ahead, with_files, Format, Planned};
use super::{ReadOptions, Table};
use crate::error::Result;
use crate::fetch::{
    await_spans, each_file, spans_holding, unit_spans, FetchedSpans, Fetcher, SpanFuture,
};
use crate::plan::FilePlan;

/// Reads `sources` (paths, URLs, globs) into one table.
pub(crate) async fn read<F: Format>(sources: &[String], options: &ReadOptions) -> Result<Table> {
    with_files(sources, options, |dataset| async move {
        check_single_file(&dataset.files, options, F::UNITS)?;
        let fetcher = options.fetcher();
        let ahead_bytes = fetch_ahead(fetcher.config(), true);
        let local_ahead = AheadBudget::new(ahead_bytes);
        // Several files are read at once; the fetcher's limits bound the
        // requests of all of them together.
        let scoped = dataset.scoped(options).into_iter();
        let results = each_file(
            &fetcher,
            scoped
                .map(|(s, scope)| (s, scope.decoded_next(true)))
                .collect(),
            &|fetcher: Fetcher, (s, scope)| {
                let local_ahead = local_ahead.clone();
                async move {
                    let file = Arc::new(F::prepare(&fetcher, s, &scope).await?);
                    let units = match file.source().is_local() {
                        true => start_local_units::<F>(&fetcher, &file, local_ahead, ahead_bytes)
                            .boxed(),
                        false => {
                            let units = start_units::<F>(&fetcher, &file);
                            // Every unit's fetch has started and holds what it
                            // needs of the footer request's bytes; the file's
                            // own hold would keep the file's start (up to
                            // `start_prefetch` bytes) until the read's end.
                            file.release_known_bytes();
                            stream::iter(units).boxed()
                        }
                    };
                    let per_unit: Vec<Vec<RecordBatch>> = units
                        .buffered(file.plan().units.len().max(1))
                        .try_collect()
                        .await?;
                    // Every unit is in: the file's footer request bytes are
                    // not needed while the other files are read.
                    file.release_known_bytes();
                    Ok((file, per_unit.into_iter().flatten().collect()))
                }
            },
        )
        .await?;
        concat::<F>(&fetcher, options, &dataset, results)
    })
    .await
}

/// [`start_units`] for a local file, window by window of consecutive units,
/// each window's fetch started once its bytes fit in `ahead` (of
/// `ahead_bytes`) and given back when its last unit is decoded.
fn start_local_units<F: Format>(
    fetcher: &Fetcher,
    file: &Arc<F::File>,
    ahead: AheadBudget,
    ahead_bytes: u64,
) -> impl futures::Stream<Item = UnitFuture> + Send + 'static {
    // A file that fits goes as one window: splitting it only cuts its plan
    // (fewer ranges coalesced), and cost steady reads of 16 MB files 2-5 %.
    let window = match file.plan().bytes_needed() <= ahead_bytes {
        true => u64::MAX,
        false => ahead_bytes / 4,
    };
    let windows = windows_of::<F>(std::slice::from_ref(file), window);
    let (fetcher, file) = (fetcher.clone(), Arc::clone(file));
    stream::iter(windows)
        .then(move |(_, positions, bytes)| {
            let (fetcher, file, ahead) = (fetcher.clone(), Arc::clone(&file), ahead.clone());
            async move {
                // The budget is never closed; were it, the window goes unbounded.
                let permit = ahead.take(bytes).await.ok().map(Arc::new);
                start_window::<F>(&fetcher, &file, positions, WindowOptions::default())
                    .units
                    .into_iter()
                    .map(|unit| {
                        let permit = permit.clone();
                        async move {
                            let decoded = unit.await;
                            drop(permit);
                            decoded
                        }
                        .boxed()
                    })
                    .collect::<Vec<UnitFuture>>()
            }
        })
        .flat_map(stream::iter)
}

/// Plans the read of `sources` without fetching column data.
pub(crate) async fn plan<F: Format>(
    sources: &[String],
    options: &ReadOptions,
    fetcher: &Fetcher,
) -> Result<Vec<F::File>> {
    with_files(sources, options, |dataset| async move {
        check_single_file(&dataset.files, options, F::UNITS)?;
        let prepared = each_file(
            fetcher,
            dataset.scoped(options),
            &|fetcher: Fetcher, (s, scope)| async move { F::prepare(&fetcher, s, &scope).await },
        )
        .await?;
        // A column no file holds is an error here as in a read.
        let held: Vec<Vec<String>> = prepared.iter().map(|f| f.column_names()).collect();
        dataset.check_columns_held(options, &held)?;
        Ok(prepared)
    })
    .await
}

/// The metadata of `sources` (`columns`, `row_groups` and `filter` are not
/// used).
pub(crate) async fn metadata<F: Format>(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<F::Metadata>> {
    with_files(sources, options, |dataset| async move {
        each_file(
            &options.fetcher(),
            dataset.scoped(options),
            &|fetcher: Fetcher, (s, scope)| async move {
                fetcher.stats().add_file();
                F::open(&fetcher, s, &scope).await
            },
        )
        .await
    })
    .await
}

/// The decode of one unit (or of a few small consecutive ones, their batches
/// in order), waiting for its spans; owns all it needs.
pub(super) type UnitFuture = BoxFuture<'static, Result<Vec<RecordBatch>>>;

/// Starts fetching every span of a prepared file and returns one future per
/// unit (small consecutive units share one, see [`SMALL_UNITS_ROWS`]) that
/// decodes it as soon as its spans are in, while later spans are still on
/// the wire. Dropping every future stops the fetch.
pub(super) fn start_units<F: Format>(fetcher: &Fetcher, file: &Arc<F::File>) -> Vec<UnitFuture> {
    start_window::<F>(
        fetcher,
        file,
        0..file.plan().units.len(),
        WindowOptions::default(),
    )
    .units
}

/// How a window of units is fetched and decoded, where not as the read's
/// config says.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WindowOptions {
    /// The first unit's first rows are decoded by a future of their own,
    /// first, then the rest of it (see [`Rows::Head`]): a stream hands them
    /// over without waiting for the whole unit.
    pub head: Option<usize>,
    /// Requests of at most this many bytes instead of the file plan's.
    pub slice_size: Option<u64>,
    /// How many windows share the request slots at once, when this one's
    /// plan is spread over its share of them through a link (see
    /// [`super::spread_over_link`]); 0: not spread.
    pub windows_at_once: usize,
    /// Units the format can cut into more slabs than this are decoded a
    /// slab at a time (see [`Rows::Slab`]): a stream's, whose consumer
    /// takes a batch at a time, and which holds this many slabs (decoding,
    /// or decoded and waiting) at most. A unit of fewer is decoded whole:
    /// it would be held whole either way, and its dictionaries would be
    /// read again by each slab (pyarrow's 3 M-row file, 3 slabs: 118 →
    /// 124 ms a stream, 267 → 271 MiB). `None`: every unit whole.
    pub slabs_beyond: Option<usize>,
}

/// A window's fetch, started: one future per decode job, and the spans'
/// own futures (to learn when its bytes are in).
pub(super) struct StartedWindow {
    pub units: Vec<UnitFuture>,
    pub spans: Vec<SpanFuture>,
    /// With a head: done when the head is decoded (or failed, or dropped).
    pub head_done: Option<HeadDone>,
}

/// Done when a window's head batch is decoded.
pub(super) type HeadDone = Shared<BoxFuture<'static, ()>>;

/// [`start_units`] for the units at `positions` of the file's plan alone (a
/// plan of their own, so that no other unit's bytes are fetched).
pub(super) fn start_window<F: Format>(
    fetcher: &Fetcher,
    file: &Arc<F::File>,
    positions: Range<usize>,
    options: WindowOptions,
) -> StartedWindow {
    let whole = file.plan();
    let mut window;
    let plan = if positions == (0..whole.units.len()) && options.slice_size.is_none() {
        whole
    } else {
        window = FilePlan::new(
            whole.location.clone(),
            whole.file_size,
            whole.units[positions.clone()].to_vec(),
            fetcher.hole_limit_for(file.source()),
            options.slice_size.unwrap_or(whole.slice_size),
        );
        if options.windows_at_once > 0 {
            super::spread_over_link(&mut window, file.source(), fetcher, options.windows_at_once);
        }
        fetcher.join_across_held(&mut window, file.source());
        &window
    };
    let known = file.known_bytes();
    let (spans, abort_guards) = fetcher.start_with(file.source(), plan, &known);
    let abort_guards = Arc::new(abort_guards);
    let sizes: Vec<(u64, u64)> = positions
        .clone()
        .map(|p| (file.unit_rows(p), file.unit_decoded_bytes(p)))
        .collect();
    // Each job holds the spans its units need; a span's bytes are freed as
    // soon as the last unit using it is decoded.
    let mut jobs: Vec<Vec<(usize, Rows)>> = small_groups(&sizes)
        .into_iter()
        .map(|group| group.map(|i| (i, Rows::All)).collect())
        .collect();
    // The head decodes first: the rest of its unit waits for it, so that
    // the two do not share the cores while the consumer waits.
    let mut head_signal = None;
    let mut head_done = None;
    if let (Some(n), Some(first)) = (options.head, jobs.first_mut()) {
        if let [(0, rows)] = first.as_mut_slice() {
            *rows = Rows::AfterHead(n);
            jobs.insert(0, vec![(0, Rows::Head(n))]);
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            head_signal = Some(tx);
            head_done = Some(rx.map(|_| ()).boxed().shared());
        }
    }
    if let Some(least) = options.slabs_beyond {
        jobs = in_slabs(&**file, positions.start, jobs, least);
    }
    let units = jobs
        .into_iter()
        .map(|job| {
            let needed: Vec<_> = job
                .into_iter()
                .map(|(i, rows)| {
                    (
                        positions.start + i,
                        unit_spans(plan, &spans, &plan.units[i]),
                        rows,
                    )
                })
                .collect();
            let (file, fetcher) = (Arc::clone(file), fetcher.clone());
            let guards = Arc::clone(&abort_guards);
            let parts = match needed.as_slice() {
                [(position, _, Rows::All)] => in_parts(file.as_ref(), *position)
                    .map(|parts| (*position, parts_spans(plan, &spans, parts))),
                _ => None,
            };
            let is_head = matches!(needed.first(), Some((_, _, Rows::Head(_))));
            let signal = if is_head { head_signal.take() } else { None };
            // The rest of the head's unit (after it, or its slabs) waits.
            let after_head = match needed.first() {
                Some((p, _, _)) if *p == positions.start && !is_head => head_done.clone(),
                _ => None,
            };
            async move {
                let _fetching = guards;
                if let Some((position, parts)) = parts {
                    // Each part holds its own spans, and lets them go once
                    // decoded.
                    drop(needed);
                    return decode_in_parts(file, position, parts, F::UNIT, fetcher).await;
                }
                let mut fetched = Vec::with_capacity(needed.len());
                for (position, spans, rows) in needed {
                    let spans = FetchedSpans::new(await_spans(spans).await?);
                    fetched.push((position, spans, rows));
                }
                if let Some(head) = after_head {
                    head.await;
                }
                let decoded = decode_units(file, fetched, F::UNIT, fetcher).await;
                drop(signal); // the head is decoded
                decoded
            }
            .boxed()
        })
        .collect();
    StartedWindow {
        units,
        spans,
        head_done,
    }
}

/// `jobs` (each some of a window's units, by their place in the window,
/// which starts at unit `first` of `file`'s plan) with each job of one unit
/// that [`Planned::slab_rows`] cuts into more than `least` slabs (all its
/// rows, or those after a head) made a job per slab. The slabs end where a
/// whole unit's batches would (every multiple of the slab's rows), so an
/// unfiltered stream's batches are as they were (a filtered one hands over
/// each slab's kept rows as a batch); each slab job holds the unit's
/// spans, which are let go when the last is decoded.
fn in_slabs<P: Planned>(
    file: &P,
    first: usize,
    jobs: Vec<Vec<(usize, Rows)>>,
    least: usize,
) -> Vec<Vec<(usize, Rows)>> {
    let mut cut = Vec::with_capacity(jobs.len());
    for job in jobs {
        let (i, from) = match job.as_slice() {
            [(i, Rows::All)] => (*i, 0),
            [(i, Rows::AfterHead(n))] => (*i, *n),
            _ => {
                cut.push(job);
                continue;
            }
        };
        let Some(slab) = file.slab_rows(first + i).filter(|&s| s > 0) else {
            cut.push(job);
            continue;
        };
        let rows = usize::try_from(file.unit_rows(first + i)).unwrap_or(usize::MAX);
        if rows <= slab.saturating_mul(least) {
            cut.push(job);
            continue;
        }
        for (from, to) in slabs_of(from, rows, slab) {
            cut.push(vec![(i, Rows::Slab { from, to })]);
        }
    }
    cut
}

/// Rows `from..rows` cut at every multiple of `slab` (> 0).
fn slabs_of(from: usize, rows: usize, slab: usize) -> Vec<(usize, usize)> {
    let mut slabs = Vec::new();
    let mut at = from;
    while at < rows {
        let to = (at / slab + 1).saturating_mul(slab).min(rows);
        slabs.push((at, to));
        at = to;
    }
    slabs
}

/// The parts unit `position` of `file` is decoded in as their bytes arrive
/// (see [`decode_in_parts`]), where that pays: all its rows wanted and no
/// filter (a filter decodes its own columns first, then the kept rows of
/// the others), its bytes coming through a link, and enough of them that
/// its first columns arrive well before its last.
fn in_parts<P: Planned>(file: &P, position: usize) -> Option<Vec<Vec<Range<u64>>>> {
    let unit = &file.plan().units[position];
    let worth_it =
        file.filter().is_none() && !file.source().is_local() && unit.bytes() >= IN_PARTS_MIN_BYTES;
    if !worth_it {
        return None;
    }
    let parts = file.decode_parts(position)?;
    (parts.len() > 1).then_some(parts)
}

/// The spans each of `parts` (byte ranges) needs.
fn parts_spans(
    plan: &FilePlan,
    spans: &[SpanFuture],
    parts: Vec<Vec<Range<u64>>>,
) -> Vec<Vec<(Range<u64>, SpanFuture)>> {
    parts
        .iter()
        .map(|ranges| spans_holding(plan, spans, ranges))
        .collect()
}

/// The fewest bytes of a unit decoded in parts (see [`in_parts`]): through
/// the cloud link's ~500 MB/s, 8 MiB take 17 ms to arrive.
const IN_PARTS_MIN_BYTES: u64 = 8 << 20;

/// Consecutive units are decoded together while the group holds at most
/// this many rows and about this many decoded bytes: a file of 8 row groups
/// of 160 rows paid more for 8 hops to a decode thread and back than for
/// decoding them. (Rows bound it too because the byte estimate, the
/// encoded size, is far under the decoded size of dictionary-encoded runs.)
const SMALL_UNITS_ROWS: u64 = 16 * 1024;
const SMALL_UNITS_BYTES: u64 = 256 * 1024;

/// Consecutive units (their rows and decoded bytes in `units`) grouped
/// within [`SMALL_UNITS_ROWS`] and [`SMALL_UNITS_BYTES`]; a larger unit is
/// a group of its own.
fn small_groups(units: &[(u64, u64)]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let (mut start, mut rows, mut bytes) = (0, 0u64, 0u64);
    for (i, &(r, b)) in units.iter().enumerate() {
        let (more_rows, more_bytes) = (rows.saturating_add(r), bytes.saturating_add(b));
        if i > start && (more_rows > SMALL_UNITS_ROWS || more_bytes > SMALL_UNITS_BYTES) {
            groups.push(start..i);
            (start, rows, bytes) = (i, r, b);
        } else {
            (rows, bytes) = (more_rows, more_bytes);
        }
    }
    if start < units.len() {
        groups.push(start..units.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::{slabs_of, small_groups};

    #[test]
    fn slabs_end_where_a_whole_units_batches_would() {
        assert_eq!(slabs_of(0, 10, 4), vec![(0, 4), (4, 8), (8, 10)]);
        // After a head of 3 rows: the first slab ends at the first multiple.
        assert_eq!(slabs_of(3, 10, 4), vec![(3, 4), (4, 8), (8, 10)]);
        assert_eq!(slabs_of(4, 8, 4), vec![(4, 8)]);
        assert!(slabs_of(10, 10, 4).is_empty());
        assert_eq!(slabs_of(0, 3, 1 << 20), vec![(0, 3)]);
    }

    #[test]
    fn small_units_are_grouped_within_the_limits() {
        const KIB: u64 = 1024;
        assert!(small_groups(&[]).is_empty());
        let small = (100, 60 * KIB);
        assert_eq!(small_groups(&[small; 5]), vec![0..4, 4..5]);
        // A unit over a limit stands alone, and ends the group before it.
        let wide = (100, 300 * KIB);
        assert_eq!(small_groups(&[small, wide, small]), vec![0..1, 1..2, 2..3]);
        let long = (20_000, KIB);
        assert_eq!(small_groups(&[long, long]), vec![0..1, 1..2]);
        // Rows bound a group whatever its bytes.
        let rows = (6_000, KIB);
        assert_eq!(small_groups(&[rows; 4]), vec![0..2, 2..4]);
        assert_eq!(small_groups(&[(0, 0), (0, 0)]), vec![0..2]);
    }
}
