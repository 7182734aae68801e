//! Decoding a row group with the `parquet` crate from bytes already fetched:
//! an `AsyncFileReader` serves the decoder's reads out of the fetched spans,
//! and falls back to a counted, unplanned fetch for anything else.

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::file::metadata::ParquetMetaData;

use super::filter::Filter;
use super::select::{extract, Projection};
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::source::Source;

/// The decoder's view of a file: fetched spans first, the store otherwise.
pub struct PrefetchedReader {
    spans: FetchedSpans,
    source: Source,
    fetcher: Fetcher,
    metadata: Arc<ParquetMetaData>,
}

impl PrefetchedReader {
    /// A reader over `spans` of `source`.
    pub fn new(
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

/// Everything needed to decode row groups of one file.
#[derive(Clone)]
pub struct DecodeJob {
    /// The file.
    pub source: Source,
    /// The read's fetcher (decode slots, statistics, unplanned fetches).
    pub fetcher: Fetcher,
    /// The footer as the Arrow reader sees it.
    pub reader_metadata: ArrowReaderMetadata,
    /// The columns to decode and return.
    pub projection: Projection,
    /// Rows to keep, applied after decoding.
    pub filter: Option<Arc<Filter>>,
}

impl DecodeJob {
    /// Decodes row group `rg` from `spans` on the blocking pool, applies the
    /// filter and the output projection.
    pub async fn decode_row_group(
        &self,
        rg: usize,
        selection: Option<RowSelection>,
        spans: FetchedSpans,
    ) -> Result<Vec<RecordBatch>> {
        let location = self.source.location().to_string();
        let num_rows = self.reader_metadata.metadata().row_group(rg).num_rows();
        let reader = PrefetchedReader::new(
            spans,
            Arc::clone(&self.source),
            self.fetcher.clone(),
            Arc::clone(self.reader_metadata.metadata()),
        );
        let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(
            reader,
            self.reader_metadata.clone(),
        )
        .with_projection(self.projection.mask.clone())
        .with_row_groups(vec![rg])
        .with_batch_size(num_rows.clamp(1, 1 << 20) as usize);
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        let stream = builder
            .build()
            .map_err(|e| Error::from_parquet(&location, e))?;
        let job = self.clone();
        let _permit = self.fetcher.decode_permit().await?;
        let started = Instant::now();
        let handle = tokio::task::spawn_blocking(move || -> Result<Vec<RecordBatch>> {
            let decoded: Vec<RecordBatch> = futures::executor::block_on(stream.try_collect())
                .map_err(|e| Error::from_parquet(&location, e))?;
            let mut out = Vec::with_capacity(decoded.len());
            for batch in decoded {
                let batch = match &job.filter {
                    Some(f) => {
                        let mask = f
                            .evaluate(&batch)
                            .map_err(|e| Error::from_arrow(&location, e))?;
                        arrow_select::filter::filter_record_batch(&batch, &mask)
                            .map_err(|e| Error::from_arrow(&location, e))?
                    }
                    None => batch,
                };
                out.push(
                    extract(&job.projection, &batch)
                        .map_err(|e| Error::from_arrow(&location, e))?,
                );
            }
            Ok(out)
        });
        let result = match handle.await {
            Ok(r) => r,
            Err(e) => Err(Error::Corrupt {
                location: self.source.location().to_string(),
                range: None,
                detail: format!("decoding row group {rg} failed: {}", panic_message(e)),
            }),
        };
        self.fetcher.stats().add_decode_time(started.elapsed());
        result
    }
}

/// What a panicked blocking task said, for the error message.
pub(crate) fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the decoder panicked".into()),
        Err(e) => e.to_string(),
    }
}
