//! Reads as a stream of batches: every file prepared first (the schema is
//! known and checked), then each file's units decoded as their bytes arrive,
//! with the next files' fetch already started. A slow consumer holds the
//! read back: a few decoded batches and the files ahead are in memory, not
//! the whole dataset.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{stream, StreamExt};
use tokio::sync::mpsc;

use super::read::start_units;
use super::{check_same_schema, each_source, relabel, Format, Planned, ReadOptions};
use crate::error::{Error, Result};
use crate::fetch::Fetcher;
use crate::source::Source;

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

/// Reads `sources` as a stream of batches.
pub(crate) async fn stream<F: Format>(
    sources: &[String],
    options: &ReadOptions,
) -> Result<BatchStream> {
    let fetcher = options.fetcher();
    let prepared = each_source(
        sources,
        options,
        F::UNITS,
        &fetcher,
        |f: Fetcher, s: Source| async move { F::prepare(&f, s, options).await.map(Arc::new) },
    )
    .await?;
    let Some(first) = prepared.first() else {
        return Err(Error::InvalidArgument("no files to read".into()));
    };
    let schema = Arc::clone(first.schema());
    let location = first.source().location().to_string();
    for p in &prepared[1..] {
        check_same_schema(&schema, &location, p.schema(), p.source().location())?;
    }
    let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
    let out_schema = Arc::clone(&schema);
    let filter = options.filter.clone().map(Arc::new);
    let cache = options.cache.clone();
    tokio::spawn(async move {
        let files = stream::iter(prepared)
            .map(|file| {
                let units = start_units::<F>(&fetcher, &file, filter.clone());
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
        if let Some(cache) = &cache {
            cache.flush_counters();
        }
    });
    Ok(BatchStream {
        schema,
        batches: rx,
    })
}
