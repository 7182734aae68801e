//! Whole reads: every file prepared, its units fetched and decoded as their
//! bytes arrive (decoding overlaps the fetch), the files joined in order.
//! Also the two lighter calls: plans (metadata only) and metadata.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use futures::future::BoxFuture;
use futures::{stream, FutureExt, StreamExt, TryStreamExt};

use super::decode::decode_unit;
use super::{check_single_file, concat, each_source, with_files, Format, Planned};
use super::{ReadOptions, Table};
use crate::error::Result;
use crate::fetch::{await_spans, each_file, unit_spans, FetchedSpans, Fetcher};
use crate::plan::FilePlan;

/// Reads `sources` (paths, URLs, globs) into one table.
pub(crate) async fn read<F: Format>(sources: &[String], options: &ReadOptions) -> Result<Table> {
    with_files(sources, options, |dataset| async move {
        check_single_file(&dataset.files, options, F::UNITS)?;
        let fetcher = options.fetcher();
        // Several files are read at once; the fetcher's limits bound the
        // requests of all of them together.
        let results = each_file(
            &fetcher,
            dataset.scoped(options),
            &|fetcher: Fetcher, (s, scope)| async move {
                let file = Arc::new(F::prepare(&fetcher, s, &scope).await?);
                let units = start_units::<F>(&fetcher, &file);
                let per_unit: Vec<Vec<RecordBatch>> = stream::iter(units)
                    .buffered(file.plan().units.len().max(1))
                    .try_collect()
                    .await?;
                Ok((file, per_unit.into_iter().flatten().collect()))
            },
        )
        .await?;
        concat::<F>(&fetcher, options, &dataset, results)
    })
    .await
}

/// Plans the read of `sources` without fetching column data.
pub(crate) async fn plan<F: Format>(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<F::File>> {
    each_source(
        sources,
        options,
        F::UNITS,
        &options.fetcher(),
        |fetcher: Fetcher, (s, scope)| async move { F::prepare(&fetcher, s, &scope).await },
    )
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

/// One unit's decode, waiting for its spans; owns all it needs.
pub(super) type UnitFuture = BoxFuture<'static, Result<Vec<RecordBatch>>>;

/// Starts fetching every span of a prepared file and returns one future per
/// unit that decodes it as soon as its spans are in, while later spans are
/// still on the wire. Dropping every future stops the fetch.
pub(super) fn start_units<F: Format>(fetcher: &Fetcher, file: &Arc<F::File>) -> Vec<UnitFuture> {
    start_window::<F>(fetcher, file, 0..file.plan().units.len())
}

/// [`start_units`] for the units at `positions` of the file's plan alone (a
/// plan of their own, so that no other unit's bytes are fetched).
pub(super) fn start_window<F: Format>(
    fetcher: &Fetcher,
    file: &Arc<F::File>,
    positions: Range<usize>,
) -> Vec<UnitFuture> {
    let whole = file.plan();
    let window;
    let plan = if positions == (0..whole.units.len()) {
        whole
    } else {
        let config = fetcher.config();
        window = FilePlan::new(
            whole.location.clone(),
            whole.file_size,
            whole.units[positions.clone()].to_vec(),
            config.hole_limit,
            config.slice_size,
        );
        &window
    };
    let (spans, abort_guards) = fetcher.start_with(file.source(), plan, file.known_bytes());
    let abort_guards = Arc::new(abort_guards);
    // Each unit holds the spans it needs; a span's bytes are freed as soon
    // as the last unit using it is decoded.
    plan.units
        .iter()
        .zip(positions)
        .map(|(unit, position)| {
            let needed = unit_spans(plan, &spans, unit);
            let (file, fetcher) = (Arc::clone(file), fetcher.clone());
            let guards = Arc::clone(&abort_guards);
            async move {
                let _fetching = guards;
                let fetched = FetchedSpans::new(await_spans(needed).await?);
                decode_unit(file, position, F::UNIT, fetched, fetcher).await
            }
            .boxed()
        })
        .collect()
}
