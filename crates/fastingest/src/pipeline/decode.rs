//! Decoding units (row groups, stripes) once their spans are in: a decode
//! slot (CPU-heavy work is bounded to the cores), a decode thread (the
//! runtime's workers keep fetching; see [`super::decode_threads`]), the time
//! counted, a decoder's panic turned into an error naming the file and unit,
//! then the filter's rows and the columns asked for. A unit can also be
//! decoded in two parts that run at once (see [`Rows`]): its first rows
//! alone, handed over early, and the rest; in slabs of rows, for a stream;
//! or, through a link, column by column as each one's bytes arrive
//! ([`decode_in_parts`]).

use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;

use super::{DecodedColumns, Planned};
use crate::error::{Error, Result};
use crate::fetch::{await_spans, FetchedSpans, Fetcher, SpanFuture};
use crate::filter::Filter;

/// Which rows of a unit one decode job returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rows {
    /// All of them.
    All,
    /// Only the first `n` (see [`Planned::decode_head`]): a stream's first
    /// batch, handed over before its unit is decoded whole.
    Head(usize),
    /// All but the first `n` (the job beside a [`Rows::Head`] one).
    AfterHead(usize),
    /// Rows `from..to` (see [`Planned::slab_rows`]): a stream decodes a
    /// large unit a slab at a time, so that it holds a few slabs decoded,
    /// not the unit.
    Slab { from: usize, to: usize },
}

/// Decodes units `units` of `file` (positions in its plan, each with its
/// fetched spans and the rows wanted), in order, as one job on a decode
/// thread: several small units go together so that each does not pay the
/// hop to a thread and back. `what` names a unit in messages (`row group`,
/// `stripe`).
pub(crate) async fn decode_units<P: Planned>(
    file: Arc<P>,
    units: Vec<(usize, FetchedSpans, Rows)>,
    what: &'static str,
    fetcher: Fetcher,
) -> Result<Vec<RecordBatch>> {
    on_decode_thread(&file, &fetcher, move |file, fetcher| {
        let mut batches = Vec::new();
        for (unit, spans, rows) in units {
            let decoded = caught(file, unit, what, || {
                match decode_rows(file, unit, spans, rows, what, fetcher) {
                    Ok((decoded, filtered)) => finish(file, Ok(decoded), filtered),
                    Err(e) => finish(file, Err(e), false),
                }
            })?;
            batches.extend(decoded);
        }
        Ok(batches)
    })
    .await
}

/// Decodes unit `unit` of `file` (all its rows, no filter) in the parts
/// [`Planned::decode_parts`] gives, each as soon as its own spans
/// (`parts`) are in, then joins them: through a link, a row group's first
/// columns decode while its last ones are still on the wire, not after (a
/// file of one 105 MB row group waited for the whole of it, then decoded).
/// A part's spans are let go once it is decoded, unless it decoded
/// nothing: then the join decodes its columns from them.
pub(crate) async fn decode_in_parts<P: Planned>(
    file: Arc<P>,
    unit: usize,
    parts: Vec<Vec<(Range<u64>, SpanFuture)>>,
    what: &'static str,
    fetcher: Fetcher,
) -> Result<Vec<RecordBatch>> {
    let decoded =
        futures::future::try_join_all(parts.into_iter().enumerate().map(|(part, spans)| {
            let (file, fetcher) = (Arc::clone(&file), fetcher.clone());
            async move {
                let fetched = await_spans(spans).await?;
                let spans = FetchedSpans::new(fetched.clone());
                let columns = on_decode_thread(&file, &fetcher, move |file, fetcher| {
                    caught(file, unit, what, || {
                        file.decode_part(unit, part, &spans, fetcher)
                    })
                })
                .await?;
                let left = if columns.is_empty() {
                    fetched
                } else {
                    Vec::new()
                };
                Ok::<_, Error>((columns, left))
            }
        }))
        .await?;
    let (columns, left): (Vec<DecodedColumns>, Vec<_>) = decoded.into_iter().unzip();
    let mut left: Vec<(Range<u64>, bytes::Bytes)> = left.into_iter().flatten().collect();
    // Parts that share a span bring it each.
    left.sort_by_key(|(range, _)| (range.start, range.end));
    left.dedup_by(|a, b| a.0 == b.0);
    let spans = FetchedSpans::new(left);
    on_decode_thread(&file, &fetcher, move |file, fetcher| {
        caught(file, unit, what, || {
            finish(file, file.join_parts(unit, columns, spans, fetcher), false)
        })
    })
    .await
}

/// Runs `job` on a decode thread once a decode slot is free (CPU-heavy work
/// is bounded to the cores; the runtime's workers keep fetching), its time
/// counted.
async fn on_decode_thread<P: Planned, T: Send + 'static>(
    file: &Arc<P>,
    fetcher: &Fetcher,
    job: impl FnOnce(&P, &Fetcher) -> Result<T> + Send + 'static,
) -> Result<T> {
    let _permit = fetcher.decode_permit().await?;
    let started = Instant::now();
    let threads = fetcher.config().decode_threads();
    let runtime = tokio::runtime::Handle::current();
    let (job_file, job_fetcher) = (Arc::clone(file), fetcher.clone());
    let decoded =
        super::decode_threads::run(threads, runtime, move || job(&*job_file, &job_fetcher)).await;
    fetcher.stats().add_decode_time(started.elapsed());
    match decoded {
        Ok(r) => r,
        // Only the hop itself can fail here (the jobs catch their panics).
        Err(why) => Err(Error::Corrupt {
            location: file.source().location().to_string(),
            range: None,
            detail: format!("decoding failed: {why}"),
            cause: None,
        }),
    }
}

/// `decode` (of unit `unit`, or a part of it), its panic (a decoder's, on
/// damaged data) turned into an error naming the file and the unit, or
/// saying the file was cut short under its mapping.
fn caught<P: Planned, T>(
    file: &P,
    unit: usize,
    what: &str,
    decode: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(decode)) {
        Ok(decoded) => decoded,
        Err(panic) => {
            let why = crate::error::panic_text(&*panic);
            Err(cut_short(file).unwrap_or_else(|| decode_failed(file, unit, what, why)))
        }
    }
}

/// One unit's decoded rows checked (the file whole), filtered (unless the
/// format `filtered` them as it decoded) and cut to the columns asked for.
/// The filter runs after a head is cut off, so the head and the rest
/// together keep the rows the whole unit would.
fn finish<P: Planned>(
    file: &P,
    decoded: Result<Vec<RecordBatch>>,
    filtered: bool,
) -> Result<Vec<RecordBatch>> {
    let source = file.source();
    if let Some(e) = cut_short(file) {
        return Err(e);
    }
    let decoded = decoded?;
    let location = source.location();
    let mapped = source.mapped();
    decoded
        .into_iter()
        .map(|batch| {
            let batch = match &mapped {
                Some(map) => map
                    .detach_batch(batch)
                    .map_err(|e| Error::from_arrow(location, e))?,
                None => batch,
            };
            let batch = match file.filter() {
                Some(f) if !filtered => keep_matching(f, batch, location)?,
                _ => batch,
            };
            file.output(batch)
        })
        .collect()
}

/// The rows of unit `unit` asked for, as the format decodes them, and
/// whether the filter was applied to them already (to a whole unit, or to
/// the rows after a head; a head is the unit's own first rows, filtered
/// after).
fn decode_rows<P: Planned>(
    file: &P,
    unit: usize,
    spans: FetchedSpans,
    rows: Rows,
    what: &str,
    fetcher: &Fetcher,
) -> Result<(Vec<RecordBatch>, bool)> {
    let from_row = match rows {
        Rows::All => Some(0),
        Rows::AfterHead(n) => Some(n),
        Rows::Head(_) | Rows::Slab { .. } => None,
    };
    if let (Some(from_row), Some(_)) = (from_row, file.filter()) {
        if let Some(kept) = file.decode_filtered(unit, &spans, fetcher, from_row)? {
            return Ok((kept, true));
        }
    }
    if let (Rows::Slab { from, to }, Some(_)) = (rows, file.filter()) {
        let kept = file.decode_slab_filtered(unit, spans.clone(), fetcher, from..to)?;
        if let Some(kept) = kept {
            let got: usize = kept.iter().map(RecordBatch::num_rows).sum();
            if got > to - from {
                let why = format!("its rows {from}..{to} kept {got} rows");
                return Err(decode_failed(file, unit, what, why));
            }
            return Ok((kept, true));
        }
    }
    let decoded = match rows {
        Rows::All => file.decode(unit, spans, fetcher)?,
        Rows::Head(n) => match file.decode_head(unit, spans, fetcher, n)? {
            Some(head) if head.num_rows() == n => vec![head],
            other => {
                let got = other.map_or(0, |b| b.num_rows());
                let why = format!("its first {n} rows decoded to {got} rows");
                return Err(decode_failed(file, unit, what, why));
            }
        },
        Rows::AfterHead(n) => without_first_rows(file.decode(unit, spans, fetcher)?, n),
        Rows::Slab { from, to } => {
            let slab = file.decode_slab(unit, spans, fetcher, from..to)?;
            let got: usize = slab.iter().map(RecordBatch::num_rows).sum();
            if got != to - from {
                let why = format!("its rows {from}..{to} decoded to {got} rows");
                return Err(decode_failed(file, unit, what, why));
            }
            slab
        }
    };
    Ok((decoded, false))
}

/// `batches` less their first `n` rows (slices: no copy).
fn without_first_rows(batches: Vec<RecordBatch>, mut n: usize) -> Vec<RecordBatch> {
    let mut kept = Vec::with_capacity(batches.len());
    for batch in batches {
        let cut = n.min(batch.num_rows());
        n -= cut;
        if cut < batch.num_rows() {
            kept.push(batch.slice(cut, batch.num_rows() - cut));
        }
    }
    kept
}

/// The error for a file cut short under its mapping while it was read:
/// its lost pages read as zeros, so whatever came of them (batches, a
/// decoding error, a decoder's panic) is not the file's.
fn cut_short<P: Planned>(file: &P) -> Option<Error> {
    let source = file.source();
    source
        .cut_short()
        .then(|| crate::io::cut_short_error(source.location(), None))
}

/// The error for a decoder's panic, naming the file and the unit.
fn decode_failed<P: Planned>(file: &P, unit: usize, what: &str, why: String) -> Error {
    let index = file.plan().units[unit].index;
    Error::Corrupt {
        location: file.source().location().to_string(),
        range: None,
        detail: format!("decoding {what} {index} failed: {why}"),
        cause: None,
    }
}

/// The rows of `batch` the filter keeps.
fn keep_matching(filter: &Filter, batch: RecordBatch, location: &str) -> Result<RecordBatch> {
    let mask = filter
        .evaluate(&batch)
        .map_err(|e| Error::from_arrow(location, e))?;
    arrow_select::filter::filter_record_batch(&batch, &mask)
        .map_err(|e| Error::from_arrow(location, e))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch};

    use super::without_first_rows;

    fn batch(values: std::ops::Range<i32>) -> RecordBatch {
        let column = Arc::new(Int32Array::from_iter_values(values));
        RecordBatch::try_from_iter([("x", column as _)]).unwrap()
    }

    fn values(batches: &[RecordBatch]) -> Vec<i32> {
        let arrays = batches.iter().map(|b| b.column(0).as_ref());
        arrays
            .flat_map(|a| {
                a.as_any()
                    .downcast_ref::<Int32Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    #[test]
    fn the_first_rows_are_cut_across_batches() {
        let batches = vec![batch(0..3), batch(3..5), batch(5..9)];
        assert_eq!(
            values(&without_first_rows(batches.clone(), 0)),
            (0..9).collect::<Vec<_>>()
        );
        let cut = without_first_rows(batches.clone(), 4);
        assert_eq!(cut.len(), 2);
        assert_eq!(values(&cut), (4..9).collect::<Vec<_>>());
        // A batch cut whole is left out, not kept empty.
        assert_eq!(without_first_rows(batches.clone(), 5).len(), 1);
        assert!(without_first_rows(batches, 20).is_empty());
    }
}
