//! Decoding units (row groups, stripes) once their spans are in: a decode
//! slot (CPU-heavy work is bounded to the cores), a decode thread (the
//! runtime's workers keep fetching; see [`super::decode_threads`]), the time
//! counted, a decoder's panic turned into an error naming the file and unit,
//! then the filter's rows and the columns asked for.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;

use super::Planned;
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::filter::Filter;

/// Decodes units `units` of `file` (positions in its plan, each with its
/// fetched spans), in order, as one job on a decode thread: several small
/// units go together so that each does not pay the hop to a thread and back.
/// `what` names a unit in messages (`row group`, `stripe`).
pub(crate) async fn decode_units<P: Planned>(
    file: Arc<P>,
    units: Vec<(usize, FetchedSpans)>,
    what: &'static str,
    fetcher: Fetcher,
) -> Result<Vec<RecordBatch>> {
    let _permit = fetcher.decode_permit().await?;
    let started = Instant::now();
    let stats = fetcher.stats().clone();
    let blocking_fetcher = fetcher.clone();
    let threads = fetcher.config().decode_threads();
    let runtime = tokio::runtime::Handle::current();
    let job_file = Arc::clone(&file);
    let decoded = super::decode_threads::run(threads, runtime, move || {
        let mut batches = Vec::new();
        for (unit, spans) in units {
            // Each unit's panic is caught on its own, to name that unit.
            let one = std::panic::catch_unwind(AssertUnwindSafe(|| {
                decode_one(&*job_file, unit, spans, &blocking_fetcher)
            }));
            match one {
                Ok(Ok(decoded)) => batches.extend(decoded),
                Ok(Err(e)) => return Err(e),
                Err(panic) => {
                    let why = crate::error::panic_text(&*panic);
                    return Err(decode_failed(&*job_file, unit, what, why));
                }
            }
        }
        Ok(batches)
    })
    .await;
    stats.add_decode_time(started.elapsed());
    match decoded {
        Ok(r) => r,
        // Only the hop itself can fail here (each unit's panic is caught).
        Err(why) => Err(Error::Corrupt {
            location: file.source().location().to_string(),
            range: None,
            detail: format!("decoding failed: {why}"),
            cause: None,
        }),
    }
}

/// One unit decoded, filtered and cut to the columns asked for.
fn decode_one<P: Planned>(
    file: &P,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<RecordBatch>> {
    let decoded = file.decode(unit, spans, fetcher)?;
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
