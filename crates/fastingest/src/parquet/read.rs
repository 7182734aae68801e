//! Reading Parquet files end to end: footer, projection, row-group selection,
//! plan, parallel fetch, and decoding that overlaps the fetch.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::future::BoxFuture;
use futures::{stream, FutureExt, StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::file::metadata::ParquetMetaData;
use tokio::sync::mpsc;

use super::decode::DecodeJob;
use super::filter::Filter;
use super::footer::{read_footer, Footer};
use super::select::{project, validate_schema, Projection};
use crate::error::{Error, Result};
use crate::fetch::{await_spans, each_file, unit_spans, FetchedSpans, Fetcher};
use crate::plan::{FilePlan, PlanUnit};
use crate::read::{check_same_schema, check_single_file, concat, each_source, relabel, with_files};
pub use crate::read::{ReadOptions, Table};
use crate::source::Source;

/// One file, planned and ready to fetch.
#[derive(Debug, Clone)]
pub struct PreparedFile {
    /// Where the bytes come from.
    pub source: Source,
    /// The decoded footer.
    pub footer: Footer,
    /// The footer as the Arrow reader sees it (Arrow schema resolved).
    pub reader_metadata: ArrowReaderMetadata,
    /// Columns to decode and return.
    pub projection: Projection,
    /// The byte ranges to fetch, one unit per selected row group.
    pub plan: FilePlan,
    /// Per unit of the plan: the rows the page index leaves, if it was used.
    pub selections: Vec<Option<RowSelection>>,
}

/// Reads `sources` (paths, URLs or globs) into one table.
pub async fn read_parquet(sources: &[String], options: &ReadOptions) -> Result<Table> {
    with_files(sources, options, |files| async move {
        read_sources(&options.fetcher(), files, options).await
    })
    .await
}

/// Plans the read of `sources` without fetching column data (footers only).
pub async fn plan_parquet(sources: &[String], options: &ReadOptions) -> Result<Vec<PreparedFile>> {
    each_source(
        sources,
        options,
        "row_groups",
        &options.fetcher(),
        |fetcher: Fetcher, s: Source| async move { prepare(&fetcher, s, options).await },
    )
    .await
}

/// Footers of `sources`, for inspection (`options.columns`, `row_groups`
/// and `filter` are not used).
pub async fn read_metadata(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<(Source, Footer, SchemaRef)>> {
    with_files(sources, options, |files| async move {
        each_file(&options.fetcher(), files, metadata_of).await
    })
    .await
}

/// One file's footer and the schema a full read of it would return.
async fn metadata_of(fetcher: Fetcher, s: Source) -> Result<(Source, Footer, SchemaRef)> {
    fetcher.stats().add_file();
    let footer = read_footer(&fetcher, &s, false).await?;
    let meta =
        ArrowReaderMetadata::try_new(Arc::clone(&footer.metadata), ArrowReaderOptions::new())
            .map_err(|e| Error::from_parquet(s.location(), e))?;
    // The schema a full read would return (same metadata rules).
    let all = project(
        s.location(),
        &footer.metadata,
        meta.schema(),
        None,
        &BTreeSet::new(),
    )?;
    Ok((s, footer, all.output_schema))
}

/// Reads already-resolved files with a shared fetcher.
pub async fn read_sources(
    fetcher: &Fetcher,
    files: Vec<Source>,
    options: &ReadOptions,
) -> Result<Table> {
    check_single_file(&files, options, "row_groups")?;
    // Several files are read at once; the fetcher's limits bound the requests
    // of all of them together.
    let results = each_file(fetcher, files, |fetcher: Fetcher, s: Source| async move {
        let (schema, batches) = read_file(&fetcher, Arc::clone(&s), options).await?;
        Ok((s, schema, batches))
    })
    .await?;
    concat(fetcher, results)
}

/// Reads the footer and plans the fetch of one file.
pub async fn prepare(
    fetcher: &Fetcher,
    source: Source,
    options: &ReadOptions,
) -> Result<PreparedFile> {
    let location = source.location().to_string();
    fetcher.stats().add_file();
    // The page index is only worth its bytes when a filter can use it.
    let footer = read_footer(fetcher, &source, options.filter.is_some()).await?;
    let reader_metadata =
        ArrowReaderMetadata::try_new(Arc::clone(&footer.metadata), ArrowReaderOptions::new())
            .map_err(|e| Error::from_parquet(&location, e))?;
    validate_schema(&location, &footer.metadata)?;
    let file_schema = Arc::clone(reader_metadata.schema());
    let filter_columns: BTreeSet<String> = options
        .filter
        .as_ref()
        .map(Filter::columns)
        .unwrap_or_default();
    if let Some(f) = &options.filter {
        f.check_types(&location, &file_schema)?;
    }
    let projection = project(
        &location,
        &footer.metadata,
        &file_schema,
        options.columns.as_deref(),
        &filter_columns,
    )?;
    let n = footer.metadata.num_row_groups();
    let mut row_groups: Vec<usize> = match &options.row_groups {
        Some(rgs) => {
            if let Some(bad) = rgs.iter().find(|&&i| i >= n) {
                return Err(Error::InvalidArgument(format!(
                    "{location}: row group {bad} does not exist (the file has {n})"
                )));
            }
            rgs.clone()
        }
        None => (0..n).collect(),
    };
    if let Some(f) = &options.filter {
        let keep = f.prune_row_groups(&footer.metadata, &file_schema);
        row_groups.retain(|&i| keep[i]);
    }
    // Within the row groups left, the page index may rule out whole pages.
    let mut selections: Vec<Option<RowSelection>> = Vec::with_capacity(row_groups.len());
    let mut kept = Vec::with_capacity(row_groups.len());
    for &rg in &row_groups {
        let rows = options
            .filter
            .as_ref()
            .and_then(|f| f.page_row_ranges(&footer.metadata, &file_schema, rg));
        match rows {
            Some(r) if r.is_empty() => continue,
            Some(r) => {
                let n = footer.metadata.row_group(rg).num_rows() as usize;
                selections.push(Some(RowSelection::from_consecutive_ranges(
                    r.into_iter(),
                    n,
                )));
            }
            None => selections.push(None),
        }
        kept.push(rg);
    }
    let units = kept
        .iter()
        .zip(&selections)
        .map(|(&rg, selection)| PlanUnit {
            index: rg,
            ranges: chunk_ranges(&footer.metadata, &projection, rg, selection.as_ref()),
        })
        .collect();
    let plan = FilePlan::new(
        location.clone(),
        footer.file_size,
        units,
        options.config.hole_limit,
        options.config.slice_size,
    );
    if let Some(bad) = plan.spans.iter().find(|s| s.range.end > footer.file_size) {
        return Err(Error::Corrupt {
            location,
            range: Some(bad.range.clone()),
            detail: format!(
                "a column chunk extends beyond the end of the file ({} bytes)",
                footer.file_size
            ),
        });
    }
    Ok(PreparedFile {
        source,
        footer,
        reader_metadata,
        projection,
        plan,
        selections,
    })
}

/// The byte ranges row group `rg` needs: whole column chunks, or, when a row
/// selection and the offset index exist, the dictionary page and only the data
/// pages holding selected rows (the pages the decoder will ask for).
fn chunk_ranges(
    metadata: &ParquetMetaData,
    projection: &Projection,
    rg: usize,
    selection: Option<&RowSelection>,
) -> Vec<Range<u64>> {
    let descr = metadata.file_metadata().schema_descr();
    let meta = metadata.row_group(rg);
    let num_rows = meta.num_rows() as usize;
    let selected: Option<Vec<Range<usize>>> = selection.map(|s| {
        let mut out = Vec::new();
        let mut row = 0usize;
        for sel in s.iter() {
            if !sel.skip {
                out.push(row..row + sel.row_count);
            }
            row += sel.row_count;
        }
        out
    });
    let mut ranges = Vec::new();
    for leaf in (0..descr.num_columns()).filter(|&l| projection.mask.leaf_included(l)) {
        let (start, len) = meta.column(leaf).byte_range();
        let pages = metadata
            .offset_index()
            .and_then(|oi| oi.get(rg))
            .and_then(|cols| cols.get(leaf))
            .map(|o| o.page_locations());
        match (&selected, pages) {
            (Some(rows), Some(pages)) if !pages.is_empty() => {
                let first = pages[0].offset as u64;
                if first > start {
                    ranges.push(start..first); // dictionary page
                }
                for (i, page) in pages.iter().enumerate() {
                    let from = page.first_row_index as usize;
                    let to = pages
                        .get(i + 1)
                        .map_or(num_rows, |p| p.first_row_index as usize);
                    if rows.iter().any(|r| r.start < to && from < r.end) {
                        let off = page.offset as u64;
                        ranges.push(off..off + page.compressed_page_size as u64);
                    }
                }
            }
            _ => ranges.push(start..start.saturating_add(len)),
        }
    }
    ranges
}

async fn read_file(
    fetcher: &Fetcher,
    source: Source,
    options: &ReadOptions,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let prepared = prepare(fetcher, source, options).await?;
    let units = start_units(fetcher, &prepared, options);
    let per_unit: Vec<Vec<RecordBatch>> = stream::iter(units)
        .buffered(prepared.plan.units.len().max(1))
        .try_collect()
        .await?;
    Ok((
        Arc::clone(&prepared.projection.output_schema),
        per_unit.into_iter().flatten().collect(),
    ))
}

/// One row group's decode, waiting for its spans; owns all it needs.
type UnitFuture = BoxFuture<'static, Result<Vec<RecordBatch>>>;

/// Starts fetching every span of a prepared file and returns one future per
/// row group that decodes it as soon as its spans are in, while later spans
/// are still on the wire. Dropping every future stops the fetch.
fn start_units(
    fetcher: &Fetcher,
    prepared: &PreparedFile,
    options: &ReadOptions,
) -> Vec<UnitFuture> {
    let plan = &prepared.plan;
    let known = Some(prepared.footer.known_bytes());
    let (spans, abort_guards) = fetcher.start_with(&prepared.source, plan, known);
    let abort_guards = Arc::new(abort_guards);
    let job = DecodeJob {
        source: Arc::clone(&prepared.source),
        fetcher: fetcher.clone(),
        reader_metadata: prepared.reader_metadata.clone(),
        projection: prepared.projection.clone(),
        filter: options.filter.clone().map(Arc::new),
    };
    // Each unit holds the spans it needs; a span's bytes are freed as soon
    // as the last row group using it is decoded.
    plan.units
        .iter()
        .zip(prepared.selections.iter().cloned())
        .map(|(unit, selection)| {
            let needed = unit_spans(plan, &spans, unit);
            let job = job.clone();
            let rg = unit.index;
            let guards = Arc::clone(&abort_guards);
            async move {
                let _fetching = guards;
                let fetched = await_spans(needed).await?;
                job.decode_row_group(rg, selection, FetchedSpans::new(fetched))
                    .await
            }
            .boxed()
        })
        .collect()
}

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

/// Files whose fetch starts ahead of the one being decoded.
const FILES_AHEAD: usize = 2;
/// Decoded batches waiting for the consumer.
const BATCHES_AHEAD: usize = 4;

/// Reads `sources` as a stream of batches: every footer first (so that the
/// schema is known and checked), then each file's row groups decoded as
/// their bytes arrive, with the next files' fetch already started. A slow
/// consumer holds the read back: at most a few decoded batches and the
/// files ahead are in memory, not the whole dataset.
pub async fn stream_parquet(sources: &[String], options: &ReadOptions) -> Result<BatchStream> {
    let fetcher = options.fetcher();
    let prepared = each_source(
        sources,
        options,
        "row_groups",
        &fetcher,
        |f: Fetcher, s: Source| async move { prepare(&f, s, options).await },
    )
    .await?;
    let Some(first) = prepared.first() else {
        return Err(Error::InvalidArgument("no files to read".into()));
    };
    let schema = Arc::clone(&first.projection.output_schema);
    let location = first.source.location().to_string();
    for p in &prepared[1..] {
        let file_schema = &p.projection.output_schema;
        check_same_schema(&schema, &location, file_schema, p.source.location())?;
    }
    let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
    let out_schema = Arc::clone(&schema);
    let options = options.clone();
    tokio::spawn(async move {
        let files = stream::iter(prepared)
            .map(|p| {
                let units = start_units(&fetcher, &p, &options);
                async move { units }
            })
            .buffered(FILES_AHEAD);
        let mut batches = files
            .flat_map(|units| {
                let n = units.len().max(1);
                stream::iter(units).buffered(n)
            })
            .boxed();
        while let Some(unit) = batches.next().await {
            let result = unit.and_then(|bs| {
                bs.into_iter()
                    .map(|b| {
                        fetcher.stats().add_rows(b.num_rows() as u64);
                        relabel(&out_schema, b, &location)
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
        }
        if let Some(cache) = &options.cache {
            cache.flush_counters();
        }
    });
    Ok(BatchStream {
        schema,
        batches: rx,
    })
}
