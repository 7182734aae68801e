//! Reading a dataset unit by unit, in any order: what a training loader
//! needs. Every file is prepared once (footer, filter statistics, one schema
//! over all files); then any sequence of units (row groups, stripes) streams
//! out as one batch per unit, in the order asked, while the fetch of the
//! units after it runs ahead of the consumer within a byte budget.
//! [`Units`] is that reader with its format erased: the public face that the
//! training loader and the Ray and Dask read tasks use.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{stream, FutureExt, StreamExt};
use tokio::sync::mpsc;

use super::ahead::AheadBudget;
use super::read::{start_window, UnitFuture, WindowOptions};
use super::{prepare_all, BatchStream, Format, Planned, ReadOptions};
use crate::dataset::DatasetSchema;
use crate::error::{Error, Result};
use crate::fetch::Fetcher;
use crate::source::Source;

/// One unit of a dataset opened for reading by unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitInfo {
    /// The file's position in the dataset (after partition pruning).
    pub file: usize,
    /// The row group's (or stripe's) index in its file.
    pub index: usize,
    /// Rows before the filter (the filter's rows are known once decoded).
    pub num_rows: u64,
    /// Bytes fetched to read it (the columns asked for).
    pub fetch_bytes: u64,
    /// About how many bytes it takes decoded.
    pub decoded_bytes: u64,
}

/// A dataset opened for reading unit by unit (row groups of Parquet files,
/// stripes of ORC files), in any order: made by `open_parquet_units` or
/// `open_orc_units`.
pub struct Units(Box<dyn UnitAccess>);

impl Units {
    pub(crate) async fn open<F: Format>(sources: &[String], options: &ReadOptions) -> Result<Self> {
        let reader = UnitReader::<F>::open(sources, options).await?;
        Ok(Units(Box::new(reader)))
    }

    /// The schema of every batch (partition keys included).
    pub fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    /// The units the filter's statistics leave, in file order.
    pub fn units(&self) -> &[UnitInfo] {
        self.0.units()
    }

    /// The files' locations, in dataset order.
    pub fn locations(&self) -> Vec<String> {
        self.0.locations()
    }

    /// What opens each file again, in dataset order (may carry a URL's
    /// signature: never for display).
    pub fn sources(&self) -> Vec<String> {
        self.0.sources()
    }

    /// The partition keys, one row per file (in dataset order), typed as the
    /// batches have them; `None` when the files have no partition keys.
    pub fn partitions(&self) -> Result<Option<RecordBatch>> {
        self.0.partitions()
    }

    /// Streams units `order` (positions in [`units`](Self::units); repeats
    /// allowed) as one filtered batch each, in that order, fetching ahead of
    /// the consumer within `ahead_bytes`. Call it on the runtime.
    pub fn stream(&self, order: Vec<usize>, ahead_bytes: u64) -> Result<BatchStream> {
        self.0.stream(order, ahead_bytes)
    }
}

/// What [`Units`] asks of a [`UnitReader`], whatever its format.
trait UnitAccess: Send + Sync {
    fn schema(&self) -> SchemaRef;
    fn units(&self) -> &[UnitInfo];
    fn locations(&self) -> Vec<String>;
    fn sources(&self) -> Vec<String>;
    fn partitions(&self) -> Result<Option<RecordBatch>>;
    fn stream(&self, order: Vec<usize>, ahead_bytes: u64) -> Result<BatchStream>;
}

impl<F: Format> UnitAccess for UnitReader<F> {
    fn schema(&self) -> SchemaRef {
        UnitReader::schema(self)
    }
    fn units(&self) -> &[UnitInfo] {
        UnitReader::units(self)
    }
    fn locations(&self) -> Vec<String> {
        UnitReader::locations(self)
    }
    fn sources(&self) -> Vec<String> {
        UnitReader::sources(self)
    }
    fn partitions(&self) -> Result<Option<RecordBatch>> {
        let Some(partitions) = self.inner.unified.partitions() else {
            return Ok(None);
        };
        let batch = partitions
            .per_file()
            .map_err(|e| Error::from_arrow("partition keys", e))?;
        Ok(Some(batch))
    }
    fn stream(&self, order: Vec<usize>, ahead_bytes: u64) -> Result<BatchStream> {
        UnitReader::stream(self, order, ahead_bytes)
    }
}

/// Units whose fetch may run at once ahead of the consumer (the byte budget
/// is the real bound; this keeps tiny units from flooding the runtime).
const UNITS_AHEAD: usize = 64;

/// A dataset opened for reading by unit.
pub(crate) struct UnitReader<F: Format> {
    inner: Arc<Inner<F>>,
}

struct Inner<F: Format> {
    files: Vec<Arc<F::File>>,
    unified: DatasetSchema,
    fetcher: Fetcher,
    cache: Option<crate::cache::Cache>,
    /// Per unit: its file and its position in the file's plan.
    places: Vec<(usize, usize)>,
    infos: Vec<UnitInfo>,
}

impl<F: Format> UnitReader<F> {
    /// Resolves `sources` and prepares every file: footers only, no column
    /// data. The units are the row groups (stripes) the filter's statistics
    /// leave, in file order.
    pub async fn open(sources: &[String], options: &ReadOptions) -> Result<Self> {
        let fetcher = options.fetcher();
        let (files, unified) = prepare_all::<F>(sources, options, &fetcher, false).await?;
        let mut places = Vec::new();
        let mut infos = Vec::new();
        for (f, file) in files.iter().enumerate() {
            for (position, unit) in file.plan().units.iter().enumerate() {
                places.push((f, position));
                infos.push(UnitInfo {
                    file: f,
                    index: unit.index,
                    num_rows: file.unit_rows(position),
                    fetch_bytes: unit.bytes(),
                    decoded_bytes: file.unit_decoded_bytes(position),
                });
            }
        }
        Ok(UnitReader {
            inner: Arc::new(Inner {
                files,
                unified,
                fetcher,
                cache: options.cache.clone(),
                places,
                infos,
            }),
        })
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.inner.unified.schema)
    }

    /// The units, in file order.
    pub fn units(&self) -> &[UnitInfo] {
        &self.inner.infos
    }

    /// The files' locations, in dataset order (for display: no credentials
    /// or URL signatures).
    pub fn locations(&self) -> Vec<String> {
        self.per_file(|source| source.location())
    }

    /// What opens each file again, in dataset order: the location, or the
    /// full presigned URL where the location had its signature removed.
    /// For handing files to other processes; never for display.
    pub fn sources(&self) -> Vec<String> {
        self.per_file(|source| source.address())
    }

    fn per_file(&self, name: impl Fn(&Source) -> &str) -> Vec<String> {
        let files = &self.inner.files;
        files.iter().map(|f| name(f.source()).to_string()).collect()
    }

    /// Streams units `order` (positions in [`units`](Self::units); repeats
    /// allowed) as one batch each, in that order: filtered, under the
    /// dataset's schema. Fetch and decode run ahead of the consumer while
    /// the units started and not yet taken need at most `ahead_bytes` (a unit
    /// larger than that still runs, alone). Must be called on the runtime.
    pub fn stream(&self, order: Vec<usize>, ahead_bytes: u64) -> Result<BatchStream> {
        let n = self.inner.infos.len();
        if let Some(bad) = order.iter().find(|&&u| u >= n) {
            return Err(Error::InvalidArgument(format!(
                "unit {bad} does not exist (the dataset has {n})"
            )));
        }
        let budget = AheadBudget::new(ahead_bytes);
        let (tx, rx) = mpsc::channel(1);
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            let units = stream::iter(order)
                .map(|u| {
                    let inner = Arc::clone(&inner);
                    let budget = budget.clone();
                    async move {
                        let permit = budget.take(inner.infos[u].fetch_bytes).await?;
                        let batch = inner.read_unit(u).await?;
                        Ok::<_, Error>((batch, permit))
                    }
                })
                .buffered(UNITS_AHEAD);
            futures::pin_mut!(units);
            while let Some(next) = units.next().await {
                match next {
                    Ok((batch, permit)) => {
                        if tx.send(Ok(batch)).await.is_err() {
                            return; // the consumer is gone: stop reading
                        }
                        drop(permit);
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            if let Some(cache) = &inner.cache {
                cache.flush_counters();
            }
        });
        Ok(BatchStream {
            schema: self.schema(),
            batches: rx,
        })
    }
}

impl<F: Format> Inner<F> {
    /// Fetches and decodes unit `u` into one batch under the dataset schema.
    async fn read_unit(&self, u: usize) -> Result<RecordBatch> {
        let (f, position) = self.places[u];
        let file = &self.files[f];
        let location = file.source().location();
        let decoded = start_unit::<F>(&self.fetcher, file, position).await?;
        let conformed = decoded
            .into_iter()
            .map(|b| self.unified.conform(f, b, location))
            .collect::<Result<Vec<_>>>()?;
        let schema = &self.unified.schema;
        let batch = arrow_select::concat::concat_batches(schema, &conformed)
            .map_err(|e| Error::from_arrow(location, e))?;
        self.fetcher.stats().add_rows(batch.num_rows() as u64);
        Ok(batch)
    }
}

/// Fetches the spans of one unit of a prepared file (a plan of its own, so
/// that no other unit's bytes are fetched) and decodes it.
fn start_unit<F: Format>(fetcher: &Fetcher, file: &Arc<F::File>, position: usize) -> UnitFuture {
    let one = start_window::<F>(
        fetcher,
        file,
        position..position + 1,
        WindowOptions::default(),
    )
    .units;
    // A window of one unit makes one future.
    match one.into_iter().next() {
        Some(unit) => unit,
        None => futures::future::ready(Err(Error::InvalidArgument(format!(
            "unit {position} is not in its file's plan"
        ))))
        .boxed(),
    }
}
