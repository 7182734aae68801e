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
use super::{prepare_all, Format, Planned, ReadOptions};
use crate::error::Result;

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
    let (prepared, unified) = prepare_all::<F>(sources, options, &fetcher).await?;
    let schema = Arc::clone(&unified.schema);
    let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
    let cache = options.cache.clone();
    tokio::spawn(async move {
        let files = stream::iter(prepared.into_iter().enumerate())
            .map(|(i, file)| {
                let units = start_units::<F>(&fetcher, &file);
                let location = file.source().location().to_string();
                async move { (i, location, units) }
            })
            .buffered(FILES_AHEAD);
        let mut batches = files
            .flat_map(|(i, location, units)| {
                let n = units.len().max(1);
                stream::iter(units)
                    .buffered(n)
                    .map(move |unit| (i, location.clone(), unit))
            })
            .boxed();
        while let Some((i, location, unit)) = batches.next().await {
            let result = unit.and_then(|bs| {
                bs.into_iter()
                    .map(|b| {
                        fetcher.stats().add_rows(b.num_rows() as u64);
                        unified.conform(i, b, &location)
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
