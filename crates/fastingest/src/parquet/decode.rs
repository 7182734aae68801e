//! Decoding a row group with the `parquet` crate from bytes already fetched:
//! an `AsyncFileReader` serves the decoder's reads out of the fetched spans,
//! and falls back to a counted, unplanned fetch for anything else.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::file::metadata::ParquetMetaData;

use super::format::PreparedFile;
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::source::Source;

/// The decoder's view of a file: fetched spans first, the store otherwise.
pub(crate) struct PrefetchedReader {
    spans: FetchedSpans,
    source: Source,
    fetcher: Fetcher,
    metadata: Arc<ParquetMetaData>,
}

impl PrefetchedReader {
    /// A reader over `spans` of `source`.
    pub(crate) fn new(
        spans: FetchedSpans,
        source: Source,
        fetcher: Fetcher,
        metadata: Arc<ParquetMetaData>,
    ) -> Self {
        PrefetchedReader {
            spans,
            source,
            fetcher,
            metadata,
        }
    }
}

impl AsyncFileReader for PrefetchedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        if let Some(b) = self.spans.get(&range) {
            return futures::future::ready(Ok(b)).boxed();
        }
        async move {
            self.fetcher.stats().add_unplanned();
            self.fetcher
                .fetch_range(&self.source, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        futures::future::ready(Ok(Arc::clone(&self.metadata))).boxed()
    }
}

/// Decodes the row group at position `unit` of `file`'s plan from `spans`
/// (on the blocking pool: the decoder's reads are served from memory, and
/// anything it asks for beyond the plan is fetched, counted as unplanned).
pub(crate) fn decode_row_group(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<RecordBatch>> {
    let location = file.source.location();
    let rg = file.plan.units[unit].index;
    check_unit_pages(file, unit, &spans)?;
    let num_rows = file.reader_metadata.metadata().row_group(rg).num_rows();
    let reader = PrefetchedReader::new(
        spans,
        Arc::clone(&file.source),
        fetcher.clone(),
        Arc::clone(file.reader_metadata.metadata()),
    );
    let mut builder =
        ParquetRecordBatchStreamBuilder::new_with_metadata(reader, file.reader_metadata.clone())
            .with_projection(file.projection.mask.clone())
            .with_row_groups(vec![rg])
            .with_batch_size(batch_rows(file, num_rows));
    if let Some(selection) = file.selections[unit].clone() {
        builder = builder.with_row_selection(selection);
    }
    let stream = builder
        .build()
        .map_err(|e| Error::from_parquet(location, e))?;
    // A decoder panic on damaged data is caught where every unit is decoded
    // (`pipeline::decode`), and named there as this file's corruption.
    futures::executor::block_on(stream.try_collect()).map_err(|e| Error::from_parquet(location, e))
}

/// Rows per decoded batch: the whole row group (up to 2^20 rows), fewer
/// when fixed-length columns are wide, since the decoder reserves rows ×
/// width for them up front (at most [`BATCH_FIXED_BYTES`] a batch).
fn batch_rows(file: &PreparedFile, num_rows: i64) -> usize {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    let widest = (0..descr.num_columns())
        .filter(|&l| file.projection.mask.leaf_included(l))
        .map(|l| descr.column(l))
        .filter(|c| c.physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY)
        .map(|c| c.type_length().max(1) as i64)
        .max()
        .unwrap_or(1);
    let by_width = (BATCH_FIXED_BYTES / widest).max(1);
    num_rows.clamp(1, (1 << 20).min(by_width)) as usize
}

/// The most bytes a batch's widest fixed-length column may take.
const BATCH_FIXED_BYTES: i64 = 256 << 20;

/// Checks the page headers of the unit's column chunks in `spans` before
/// the decoder allocates what they claim (see [`super::pages`]).
fn check_unit_pages(file: &PreparedFile, unit: usize, spans: &FetchedSpans) -> Result<()> {
    let metadata = file.reader_metadata.metadata();
    let plan_unit = &file.plan.units[unit];
    let group = metadata.row_group(plan_unit.index);
    for leaf in (0..group.num_columns()).filter(|&l| file.projection.mask.leaf_included(l)) {
        let chunk = group.column(leaf);
        let (start, len) = chunk.byte_range();
        let end = start + len;
        // The fetched ranges of this chunk (all of it, or its dictionary and
        // the pages a selection keeps): each starts at a page header.
        for range in plan_unit
            .ranges
            .iter()
            .filter(|r| r.start >= start && r.end <= end)
        {
            let Some(bytes) = spans.get(range) else {
                continue;
            };
            if let Err(bad) = super::pages::check_pages(&bytes, chunk.compression()) {
                let at = range.start + bad.offset as u64;
                return Err(Error::Corrupt {
                    location: file.source.location().to_string(),
                    range: Some(at..range.end),
                    detail: format!(
                        "row group {}, column {}: {}",
                        plan_unit.index,
                        chunk.column_path(),
                        bad.detail
                    ),
                    cause: None,
                });
            }
        }
    }
    Ok(())
}
