//! Decoding one unit (row group, stripe) once its spans are in: a decode
//! slot (CPU-heavy work is bounded to the cores), a decode thread (the
//! runtime's workers keep fetching; see [`super::decode_threads`]), the time
//! counted, a decoder's panic
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
    let threads = fetcher.config().decode_threads();
    let runtime = tokio::runtime::Handle::current();
    let decoded =
        super::decode_threads::run(threads, runtime, move || -> Result<Vec<RecordBatch>> {
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
        })
        .await;
    let result = match decoded {
        Ok(r) => r,
        Err(why) => Err(Error::Corrupt {
            location,
            range: None,
            detail: format!("decoding {what} {index} failed: {why}"),
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
