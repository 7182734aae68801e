//! The one read pipeline every format goes through:
//! resolve → partitions → open → select → plan → fetch → decode → concat or
//! stream.
//!
//! A format plugs in by implementing [`Format`] (open one file's metadata,
//! and prepare it: choose columns and units, prune units with the filter,
//! plan their byte ranges) and [`Planned`] (decode one unit from its
//! fetched spans, and cut a decoded batch to the columns asked for).
//! Everything else (resolving sources, the fetch with its limits, retries
//! and cache, decoding on the blocking pool while later bytes arrive,
//! filtering rows, joining files, streaming) is written once, here.

mod ahead;
mod decode;
pub(crate) mod decode_threads;
mod raw;
mod read;
mod stream;
mod units;

use std::future::Future;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::cache::Cache;
use crate::clients::StorageOptions;
use crate::config::Config;
use crate::dataset::{Dataset, DatasetSchema, FileScope, Partitioning};
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::filter::Filter;
use crate::known::Known;
use crate::plan::FilePlan;
use crate::request::{ByteSource, StoreRequests};
use crate::source::{as_prefix, may_be_prefix, resolve, Context, Source};
use crate::stats::ReadStats;

pub(crate) use raw::{fetch_pieces, PieceReceiver, RawFile};
pub(crate) use read::{metadata, plan, read};
pub(crate) use stream::stream;
pub use stream::BatchStream;
pub use units::{UnitInfo, Units};

/// Bytes of local files fetched ahead of their decoding at most (all files
/// of a read together). Local disk (or the page cache) delivers several
/// times faster than the cores decode, so fetching further ahead only made
/// a read hold more new memory: a 128 MB file held 143 MB of fetch buffers
/// at once. Within this bound the buffers of decoded row groups are reused
/// for later ones.
const LOCAL_AHEAD: u64 = 64 << 20;

/// How many bytes a read may fetch ahead of decoding (whole reads) or of its
/// consumer (streams): `memory_budget`, and for local files at most
/// [`LOCAL_AHEAD`]. (Remote reads keep the whole budget: there the link,
/// not the cores, sets the pace.)
pub(super) fn fetch_ahead(config: &Config, local: bool) -> u64 {
    let budget = config.memory_budget.max(1024);
    match local {
        true => budget.min(LOCAL_AHEAD),
        false => budget,
    }
}

/// A file format the pipeline can read.
pub(crate) trait Format: Send + Sync + 'static {
    /// What `ReadOptions::row_groups` selects, as the user spells the
    /// keyword (`row_groups`, `stripes`); used in messages.
    const UNITS: &'static str;
    /// One unit, in messages (`row group`, `stripe`).
    const UNIT: &'static str;
    /// Whether `columns` come back in the order asked (else in file order).
    const IN_REQUESTED_ORDER: bool;
    /// One file, opened and planned.
    type File: Planned;
    /// One file's metadata, as `metadata()` returns it.
    type Metadata: Send + 'static;

    /// Reads one file's metadata (footer or tail) only (of `scope`, only
    /// where the dataset keeps metadata is used).
    fn open(
        fetcher: &Fetcher,
        source: Source,
        scope: &FileScope<'_>,
    ) -> impl Future<Output = Result<Self::Metadata>> + Send;

    /// Opens one file and plans its read: columns, units (by index and by
    /// the filter's statistics) and the byte ranges they need. `scope` says
    /// what to read of this file (see [`FileScope::in_file`]).
    fn prepare(
        fetcher: &Fetcher,
        source: Source,
        scope: &FileScope<'_>,
    ) -> impl Future<Output = Result<Self::File>> + Send;
}

/// One file, planned: what the pipeline needs to fetch and decode it.
pub(crate) trait Planned: Send + Sync + 'static {
    /// Where the bytes come from.
    fn source(&self) -> &Source;
    /// The byte ranges to fetch, one unit per row group or stripe.
    fn plan(&self) -> &FilePlan;
    /// The schema of the batches returned.
    fn schema(&self) -> &SchemaRef;
    /// The file's top-level columns, in its order (whatever the read asks
    /// of it: what an error about a column not found lists).
    fn column_names(&self) -> Vec<String>;
    /// The rows to keep (the read's filter as this file can answer it).
    fn filter(&self) -> Option<&Filter>;
    /// Bytes already in memory as `(offset, bytes)` spans (the end of the
    /// file the metadata request brought, the start fetched beside it):
    /// what plans ask of them is served without a request.
    fn known_bytes(&self) -> Known {
        Known::default()
    }
    /// Lets go of [`Planned::known_bytes`] once no fetch of this file will
    /// start again (a read of 2,000 small files held each whole file, which
    /// its footer request had brought, until the read's end).
    fn release_known_bytes(&self) {}
    /// Decodes unit `unit` (a position in the plan's units) from its fetched
    /// spans, with the columns the filter needs; runs on the blocking pool.
    fn decode(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<Vec<RecordBatch>>;
    /// The rows of unit `unit` from its row `from_row` on that the filter
    /// keeps, where the format can keep them as it decodes (decoding the
    /// filter's columns first, then only the kept rows of the others);
    /// `None` where it does not, and the caller decodes the unit whole and
    /// filters it. (`from_row` is 0, or the rows of a head decoded apart:
    /// see [`Planned::decode_head`].) Runs on the blocking pool.
    fn decode_filtered(
        &self,
        _unit: usize,
        _spans: &FetchedSpans,
        _fetcher: &Fetcher,
        _from_row: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        Ok(None)
    }
    /// Whether [`Planned::decode_head`] can decode the first rows of unit
    /// `unit` alone (the rows [`Planned::decode`] would give first, before
    /// any filter).
    fn decodes_head(&self, _unit: usize) -> bool {
        false
    }
    /// The first batch of `rows` rows of unit `unit` (which
    /// [`Planned::decodes_head`] allows and which holds more rows than
    /// that), decoding no more of it than they need; runs on the blocking
    /// pool, before the rest of the unit is decoded. (`None`, or a batch of
    /// other rows, fails the read as a damaged unit.)
    fn decode_head(
        &self,
        _unit: usize,
        _spans: FetchedSpans,
        _fetcher: &Fetcher,
        _rows: usize,
    ) -> Result<Option<RecordBatch>> {
        Ok(None)
    }
    /// The rows of each slab unit `unit` can be decoded in by a stream (see
    /// [`decode::Rows::Slab`]), where the format can decode a slab of its
    /// rows from the pages that hold them and the unit holds more than one;
    /// `None`: the stream decodes it whole.
    fn slab_rows(&self, _unit: usize) -> Option<usize> {
        None
    }
    /// Rows `rows` of unit `unit` (cut by [`Planned::slab_rows`]), decoding
    /// only the pages that hold them; runs on the blocking pool. (Batches of
    /// other rows fail the read as a damaged unit.)
    fn decode_slab(
        &self,
        _unit: usize,
        _spans: FetchedSpans,
        _fetcher: &Fetcher,
        _rows: std::ops::Range<usize>,
    ) -> Result<Vec<RecordBatch>> {
        Ok(Vec::new())
    }
    /// The rows of slab `rows` of unit `unit` that the filter keeps, where
    /// the format can keep them as it decodes (as
    /// [`Planned::decode_filtered`] does for a whole unit); `None` where it
    /// does not, and the caller decodes the slab whole and filters it. Runs
    /// on the blocking pool.
    fn decode_slab_filtered(
        &self,
        _unit: usize,
        _spans: FetchedSpans,
        _fetcher: &Fetcher,
        _rows: std::ops::Range<usize>,
    ) -> Result<Option<Vec<RecordBatch>>> {
        Ok(None)
    }
    /// The parts unit `unit` (all its rows, no filter) can be decoded in
    /// apart, each as the byte ranges it needs (its columns: see
    /// [`decode::decode_in_parts`]); `None` where the unit is decoded whole.
    fn decode_parts(&self, _unit: usize) -> Option<Vec<Vec<std::ops::Range<u64>>>> {
        None
    }
    /// Decodes part `part` of [`Planned::decode_parts`] of unit `unit` from
    /// `spans` (which hold at least its ranges) into columns, each with its
    /// position among the file's top-level fields. None (a part the format
    /// leaves to [`Planned::join_parts`]): its spans go to the join.
    /// Runs on the blocking pool.
    fn decode_part(
        &self,
        _unit: usize,
        _part: usize,
        _spans: &FetchedSpans,
        _fetcher: &Fetcher,
    ) -> Result<DecodedColumns> {
        Ok(Vec::new())
    }
    /// Unit `unit` as [`Planned::decode`] gives it, from the columns its
    /// parts decoded (`parts`, in the order of [`Planned::decode_parts`])
    /// and the spans of the parts that decoded none (for those columns).
    /// Runs on the blocking pool.
    fn join_parts(
        &self,
        unit: usize,
        _parts: Vec<DecodedColumns>,
        spans: FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<Vec<RecordBatch>> {
        self.decode(unit, spans, fetcher)
    }
    /// A decoded (and filtered) batch cut to the columns asked for.
    fn output(&self, batch: RecordBatch) -> Result<RecordBatch>;
    /// The rows unit `unit` holds before any filter.
    fn unit_rows(&self, unit: usize) -> u64;
    /// About how many bytes unit `unit` takes once decoded (the columns
    /// read): what a shuffle buffer holding it costs.
    fn unit_decoded_bytes(&self, unit: usize) -> u64;
}

/// Columns of a unit decoded apart: each with its position among the
/// file's top-level fields.
pub(crate) type DecodedColumns = Vec<(usize, Vec<arrow_array::ArrayRef>)>;

/// What to read and how.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Columns to return (top-level names or dotted struct paths), in this
    /// order; `None` for all.
    pub columns: Option<Vec<String>>,
    /// Row groups (Parquet) or stripes (ORC) to read, as indices into the
    /// file; only for a single file.
    pub row_groups: Option<Vec<usize>>,
    /// Rows to keep; also prunes row groups and stripes by their statistics.
    pub filter: Option<Filter>,
    /// Parquet string and binary columns to return as
    /// `dictionary<int32, string|binary>`, by their dot-joined Parquet
    /// column paths (pyarrow's `read_dictionary`); paths naming no such
    /// column of a file change nothing there.
    pub read_dictionary: Vec<String>,
    /// The Arrow layout of Parquet string and binary columns (pyarrow's
    /// `binary_type`; views, large offsets); dictionaries stay dictionaries.
    pub binary_type: crate::parquet::BinaryType,
    /// The unit Parquet's legacy INT96 timestamps (Spark, Hive, Impala) are
    /// read in, at any depth (pyarrow's `coerce_int96_timestamp_unit`);
    /// `None`: the unit the file's Arrow schema gives, else nanoseconds,
    /// which hold only 1677-2262 (a day outside wraps, as in pyarrow).
    pub int96_unit: Option<arrow_schema::TimeUnit>,
    /// Options for the object store (credentials, endpoint, ...).
    pub storage_options: StorageOptions,
    /// Fetch tuning.
    pub config: Config,
    /// Counters the read adds to.
    pub stats: ReadStats,
    /// The on-disk cache remote bytes are read through, if any.
    pub cache: Option<Cache>,
    /// How partition keys are read from the files' paths.
    pub partitioning: Partitioning,
    /// The dataset's schema, when given: columns are cast to it, and those
    /// a file lacks are null; `None`: every file's columns, unified.
    pub schema: Option<SchemaRef>,
}

impl ReadOptions {
    pub(crate) fn context(&self) -> Context<'_> {
        Context {
            options: &self.storage_options,
            config: &self.config,
            stats: &self.stats,
            listings: self.cache.as_ref().map(|c| c as _),
        }
    }

    /// The read's fetcher: the store's requests under the read's limits,
    /// with the cache in front of them when there is one.
    pub(crate) fn fetcher(&self) -> Fetcher {
        let store = StoreRequests::new(self.config.clone(), self.stats.clone());
        let bytes: Arc<dyn ByteSource> = match &self.cache {
            Some(cache) => Arc::new(cache.in_front_of(Arc::new(store))),
            None => Arc::new(store),
        };
        Fetcher::over(bytes)
    }
}

/// A read's result: a schema and the batches, in file and row order.
#[derive(Debug, Clone)]
pub struct Table {
    /// Schema of every batch (with the file's key-value metadata, e.g. pandas').
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

impl Table {
    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

/// The frame of every read: checks the configuration, resolves `sources`
/// into a dataset (partition keys read, files the filter rules out by them
/// dropped), runs `read` on it, and adds the cache's counters afterwards
/// (whether the read succeeded or not).
///
/// A remote name without a trailing `/` is tried as an object first (one
/// request, not two, for the usual single file); when there is no such
/// object, it is read as a prefix.
pub(crate) async fn with_files<T, F, Fut>(
    sources: &[String],
    options: &ReadOptions,
    read: F,
) -> Result<T>
where
    F: Fn(Dataset) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    options.config.validate()?;
    let mut result = match resolve(sources, options.context()).await {
        Ok(files) => read_dataset(files, options, &read).await,
        Err(e) => Err(e),
    };
    if let Err(Error::NotFound { location, .. }) = &result {
        if may_be_prefix(location) && sources.iter().any(|s| s == location) {
            let respelt: Vec<String> = sources
                .iter()
                .map(|s| {
                    if s == location {
                        as_prefix(s)
                    } else {
                        s.clone()
                    }
                })
                .collect();
            match resolve(&respelt, options.context()).await {
                Ok(files) => result = read_dataset(files, options, &read).await,
                // Nothing under the prefix either: the first answer stands.
                Err(Error::NotFound { .. }) => {}
                Err(e) => result = Err(e),
            }
        }
    }
    if let Some(cache) = &options.cache {
        cache.flush_counters();
    }
    result
}

async fn read_dataset<T, F, Fut>(
    files: Vec<crate::source::SourceFile>,
    options: &ReadOptions,
    read: &F,
) -> Result<T>
where
    F: Fn(Dataset) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    read(Dataset::new(files, options)?).await
}

/// `row_groups` (or stripes, as `unit` says) select parts of a single file.
pub(crate) fn check_single_file(files: &[Source], options: &ReadOptions, unit: &str) -> Result<()> {
    if options.row_groups.is_some() && files.len() != 1 {
        return Err(Error::InvalidArgument(format!(
            "{unit} selects {unit} of a single file, but the source names {} files",
            files.len()
        )));
    }
    Ok(())
}

/// The units (row groups, stripes) `options.row_groups` names, checked
/// against the `n` the file has; all of them when it names none.
pub(crate) fn chosen_units<F: Format>(
    location: &str,
    options: &ReadOptions,
    n: usize,
) -> Result<Vec<usize>> {
    match &options.row_groups {
        Some(chosen) => match chosen.iter().find(|&&i| i >= n) {
            Some(bad) => Err(Error::InvalidArgument(format!(
                "{location}: {} {bad} does not exist (the file has {n})",
                F::UNIT
            ))),
            None => Ok(chosen.clone()),
        },
        None => Ok((0..n).collect()),
    }
}

/// The plan of `units` of `source`, checked to lie inside the file (a footer
/// may say anything). `files`: how many files the read holds, which about
/// multiplies its size; a small read gets smaller slices
/// ([`crate::plan::slice_for`]), a read from a near store or a rotational
/// disk its own ([`Fetcher::max_slice_for`]), a large one through a link
/// more requests ([`spread_over_link`]).
pub(crate) fn checked_plan(
    source: &Source,
    file_size: u64,
    units: Vec<crate::plan::PlanUnit>,
    fetcher: &Fetcher,
    files: usize,
) -> Result<FilePlan> {
    let location = source.location();
    // Past the file's end before anything is sized from it: a lying footer
    // (a page's offset in the page index) made a range of 2^48 bytes, and
    // splitting it into slices aborted the process.
    let past_end = |r: &std::ops::Range<u64>| r.start > r.end || r.end > file_size;
    if let Some(bad) = units.iter().flat_map(|u| &u.ranges).find(|r| past_end(r)) {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(bad.clone()),
            detail: format!(
                "the planned bytes extend beyond the end of the file ({file_size} bytes)"
            ),
            cause: None,
        });
    }
    let read_bytes = FilePlan::bytes_of(&units).saturating_mul(files.max(1) as u64);
    let slice_size = crate::plan::slice_for(read_bytes, fetcher.max_slice_for(source));
    let mut plan = FilePlan::new(
        location.to_string(),
        file_size,
        units,
        fetcher.hole_limit_for(source),
        slice_size,
    );
    spread_over_link(&mut plan, source, fetcher, files);
    fetcher.join_across_held(&mut plan, source);
    match plan.spans.iter().find(|s| s.range.end > file_size) {
        Some(bad) => Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(bad.range.clone()),
            detail: format!(
                "the planned bytes extend beyond the end of the file ({file_size} bytes)"
            ),
            cause: None,
        }),
        None => Ok(plan),
    }
}

/// A plan through a link gets its share of the request slots (`files` share
/// them), in slices of at least `MIN_SLICE` ([`FilePlan::spread_to`]):
/// through a link one connection brings a few tens of MB/s whatever the link
/// allows. The suite's `string` file, 16 column chunks of 8 MB, fresh
/// process, interleaved medians: 470 -> 404 ms through the far link, 271 ->
/// 243 through the cloud one (fetch alone 463 -> 378 and 235 -> 217).
/// Smaller reads too, whose slices [`crate::plan::slice_for`] sizes to about
/// an eighth of the read: the suite's 33 MB `mixed-card1000` file went as
/// 16 requests of 1 MiB (its start) and four of 3-4 MiB, which took a
/// round trip and 40 ms at one connection's 100 MB/s; the rest now goes as
/// 13 of 1-1.3 MiB. 9 interleaved rounds through the far link: fresh 344 ->
/// 316 ms, steady 334 -> 286 (one column of the `int` file, 38 MB: 330 ->
/// 295, 325 -> 288). Not for a near store, where each request costs the
/// server CPU the reader shares. A distant store's requests take half a
/// slot ([`crate::request::slot_quarters`]), so twice as many go out.
pub(crate) fn spread_over_link(
    plan: &mut FilePlan,
    source: &Source,
    fetcher: &Fetcher,
    files: usize,
) {
    if !source.is_local() && !fetcher.store_is_near() {
        let per_slot = if fetcher.store_is_distant() { 2 } else { 1 };
        let slots = per_slot * fetcher.config().max_in_flight / files.max(1);
        plan.spread_to(slots, crate::plan::MIN_SLICE);
    }
}

/// Resolves `sources` and prepares every file (metadata and plan, no
/// column data), under one dataset schema.
pub(crate) async fn prepare_all<F: Format>(
    sources: &[String],
    options: &ReadOptions,
    fetcher: &Fetcher,
    decoded_next: bool,
) -> Result<(Vec<Arc<F::File>>, DatasetSchema)> {
    with_files(sources, options, |dataset| async move {
        check_single_file(&dataset.files, options, F::UNITS)?;
        let scoped = dataset.scoped(options).into_iter();
        let prepared = crate::fetch::each_file(
            fetcher,
            scoped
                .map(|(s, scope)| (s, scope.decoded_next(decoded_next)))
                .collect(),
            &|f: Fetcher, (s, scope)| async move { F::prepare(&f, s, &scope).await.map(Arc::new) },
        )
        .await?;
        let unified = dataset_schema::<F>(options, &dataset, prepared.iter())?;
        Ok((prepared, unified))
    })
    .await
}

/// The one schema of a read's prepared `files` (in source order).
pub(crate) fn dataset_schema<'f, F: Format>(
    options: &ReadOptions,
    dataset: &Dataset,
    files: impl Iterator<Item = &'f Arc<F::File>>,
) -> Result<DatasetSchema> {
    let files: Vec<&dyn Planned> = files.map(|f| f.as_ref() as _).collect();
    let partitions = dataset.partitions.clone();
    DatasetSchema::unify(options, partitions, &files, F::IN_REQUESTED_ORDER)
}

/// Joins the files of a read in source order, under one schema (see
/// [`DatasetSchema`]).
pub(crate) fn concat<F: Format>(
    fetcher: &Fetcher,
    options: &ReadOptions,
    dataset: &Dataset,
    results: Vec<(Arc<F::File>, Vec<RecordBatch>)>,
) -> Result<Table> {
    let unified = dataset_schema::<F>(options, dataset, results.iter().map(|(f, _)| f))?;
    let mut batches = Vec::new();
    for (i, (file, file_batches)) in results.into_iter().enumerate() {
        for b in file_batches {
            let b = unified.conform(i, b, file.source().location())?;
            fetcher.stats().add_rows(b.num_rows() as u64);
            batches.push(b);
        }
    }
    Ok(Table {
        schema: unified.schema,
        batches,
    })
}
