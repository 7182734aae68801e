//! Decoding one unit (row group, stripe) once its spans are in: a decode
//! slot (CPU-heavy work is bounded to the cores), the blocking pool (the
//! runtime's workers keep fetching), the time counted, a decoder's panic
//! turned into an error naming the file and unit, then the filter's rows and
//! the columns asked for.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;

use super::Planned;
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::filter::Filter;

/// Decodes unit `unit` of `file` (a position in its plan) from `spans`.
/// `what` names the unit in messages (`row group`, `stripe`).
pub(crate) async fn decode_unit<P: Planned>(
    file: Arc<P>,
    unit: usize,
    what: &'static str,
    spans: FetchedSpans,
    fetcher: Fetcher,
) -> Result<Vec<RecordBatch>> {
    let location = file.source().location().to_string();
    let index = file.plan().units[unit].index;
    let _permit = fetcher.decode_permit().await?;
    let started = Instant::now();
    let stats = fetcher.stats().clone();
    let blocking_fetcher = fetcher.clone();
    let handle = tokio::task::spawn_blocking(move || -> Result<Vec<RecordBatch>> {
        let decoded = file.decode(unit, spans, &blocking_fetcher)?;
        let location = file.source().location();
        decoded
            .into_iter()
            .map(|batch| {
                let batch = match file.filter() {
                    Some(f) => keep_matching(f, batch, location)?,
                    None => batch,
                };
                file.output(batch)
            })
            .collect()
    });
    let result = match handle.await {
        Ok(r) => r,
        Err(e) => Err(Error::Corrupt {
            location,
            range: None,
            detail: format!("decoding {what} {index} failed: {}", panic_message(e)),
            cause: None,
        }),
    };
    stats.add_decode_time(started.elapsed());
    result
}

/// The rows of `batch` the filter keeps.
fn keep_matching(filter: &Filter, batch: RecordBatch, location: &str) -> Result<RecordBatch> {
    let mask = filter
        .evaluate(&batch)
        .map_err(|e| Error::from_arrow(location, e))?;
    arrow_select::filter::filter_record_batch(&batch, &mask)
        .map_err(|e| Error::from_arrow(location, e))
}

/// What a panicked blocking task said, for the error message.
pub(crate) fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => crate::error::panic_text(&*p),
        Err(e) => e.to_string(),
    }
}
