//! The Python binding of fastingest: a thin layer over the `fastingest` crate.
//! Argument conversion lives in `convert`, error mapping in `errors`, and the
//! bridge between Python threads and the shared runtime in `run`.

mod allocator;
mod cache;
mod chunks;
mod config;
mod convert;
mod errors;
mod logs;
mod pyarrow;
mod rows;
mod run;
mod stats;
mod stream;
mod stripes;
mod units;

use bytes::Bytes;
use fastingest::parquet as pq;
use fastingest::{Config, ReadStats};
use fastingest::{ReadOptions, Table};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::PySchema;
use pyo3_arrow::PyTable;

use crate::cache::PyCache;
use crate::config::PyConfig;
use crate::stats::PyReadStats;

/// Panics inside the decoders (a corrupt file can trip an assertion in a
/// dependency) are caught and raised as `CorruptFileError` with the panic's
/// message; printing them to stderr as well would only alarm. Set
/// `FASTINGEST_DEBUG_PANICS=1` to see them with the default report.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("FASTINGEST_DEBUG_PANICS").is_some() {
            default(info);
        }
    }));
}

/// A filter literal as the core builds it, handed to pyarrow (for tests).
#[pyfunction]
fn _filter_literal<'py>(
    py: Python<'py>,
    literal: convert::FilterLiteral<'py>,
) -> PyResult<Py<PyAny>> {
    let array = Bound::new(
        py,
        pyo3_arrow::PyArray::from_array_ref(literal.into_array()?),
    )?;
    // pyarrow takes it through the Arrow C data interface.
    let pyarrow_array = pyarrow::module(py)?.getattr("array")?.call1((array,))?;
    Ok(pyarrow_array.unbind())
}

type Dnf<'py> = Vec<Vec<(String, String, convert::FilterLiteral<'py>)>>;

fn config_of(config: Option<&PyConfig>) -> PyResult<Config> {
    match config {
        Some(c) => Ok(c.inner.clone()),
        None => Config::from_env().map_err(errors::to_py),
    }
}

fn stats_of(stats: Option<&PyReadStats>) -> ReadStats {
    stats.map(|s| s.inner.clone()).unwrap_or_default()
}

/// The keyword arguments every read call takes, as the Python wrappers pass
/// them (one dict, already checked and normalised by `fastingest._read_args`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct ReadArgs<'py> {
    partitioning: Bound<'py, PyAny>,
    schema: Option<PySchema>,
    columns: Option<Vec<String>>,
    filters: Option<Dnf<'py>>,
    row_groups: Option<Vec<usize>>,
    read_dictionary: Option<Vec<String>>,
    binary_type: Option<String>,
    int96_unit: Option<String>,
    storage_options: Option<Bound<'py, PyDict>>,
    config: Option<PyConfig>,
    stats: Option<Bound<'py, PyReadStats>>,
    cache: Option<Bound<'py, PyCache>>,
}

impl ReadArgs<'_> {
    fn into_options(self) -> PyResult<ReadOptions> {
        Ok(ReadOptions {
            columns: self.columns,
            row_groups: self.row_groups,
            read_dictionary: self.read_dictionary.unwrap_or_default(),
            binary_type: convert::binary_type(self.binary_type.as_deref())?,
            int96_unit: convert::time_unit(self.int96_unit.as_deref())?,
            filter: convert::filter(self.filters)?,
            storage_options: convert::storage_options(self.storage_options.as_ref())?,
            config: config_of(self.config.as_ref())?,
            stats: stats_of(self.stats.as_ref().map(|s| s.get())),
            cache: self.cache.map(|c| c.get().inner.clone()),
            partitioning: convert::partitioning(&self.partitioning)?,
            schema: self.schema.map(|s| s.into_inner()),
        })
    }
}

/// Hands the batches to pyarrow zero-copy through the Arrow C stream.
/// (`pyarrow.table(obj)` would also work but imports pandas on first use,
/// which costs a quarter of a second.)
fn table_to_pyarrow(py: Python<'_>, table: Table) -> PyResult<Py<PyAny>> {
    let stream = PyTable::try_new(table.batches, table.schema)?.into_pyobject(py)?;
    let reader = pyarrow::module(py)?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (stream,))?;
    Ok(reader.call_method0("read_all")?.unbind())
}

/// The table formats, for the calls that differ only in the reader.
#[derive(Clone, Copy)]
enum Format {
    Parquet,
    Orc,
}

impl Format {
    async fn read(self, sources: Vec<String>, options: ReadOptions) -> fastingest::Result<Table> {
        match self {
            Format::Parquet => pq::read_parquet(&sources, &options).await,
            Format::Orc => fastingest::orc::read_orc(&sources, &options).await,
        }
    }

    async fn stream(
        self,
        sources: Vec<String>,
        options: ReadOptions,
    ) -> fastingest::Result<fastingest::BatchStream> {
        match self {
            Format::Parquet => pq::stream_parquet(&sources, &options).await,
            Format::Orc => fastingest::stream_orc(&sources, &options).await,
        }
    }

    async fn open_units(
        self,
        sources: Vec<String>,
        options: ReadOptions,
    ) -> fastingest::Result<fastingest::Units> {
        match self {
            Format::Parquet => fastingest::open_parquet_units(&sources, &options).await,
            Format::Orc => fastingest::open_orc_units(&sources, &options).await,
        }
    }
}

/// A read's batches as they are decoded (the GIL released while the
/// footers are read).
fn stream_batches(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
    format: Format,
) -> PyResult<stream::PyBatchStream> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    // The footers are read while pyarrow is imported (its batches need it).
    let batches = run::block_on_after(py, format.stream(sources, options), import_pyarrow)?;
    Ok(stream::PyBatchStream::new(batches))
}

/// A dataset opened for reading by unit (footers only).
fn open_units(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
    format: Format,
) -> PyResult<units::PyUnits> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let reader = run::block_on(py, format.open_units(sources, options))?;
    Ok(units::PyUnits::new(reader))
}

/// Imports pyarrow: `import fastingest` does not, so a fresh process's first
/// read imports it (~0.1 s) while its listing and requests are under way.
fn import_pyarrow(py: Python<'_>) -> PyResult<()> {
    // The import maps pyarrow's libraries: the read's faulting ahead would
    // hold each of those maps up (see `PrefaultPaused`).
    let _mapping = fastingest::memory::PrefaultPaused::new();
    pyarrow::module(py).map(drop)
}

/// Reads a table with the GIL released and hands it to pyarrow.
fn read_table(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
    format: Format,
) -> PyResult<Py<PyAny>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let table = run::block_on_after(py, format.read(sources, options), import_pyarrow)?;
    table_to_pyarrow(py, table)
}

/// Starts a read and calls `callback(ok, table_or_exception)` when it ends.
fn start_read(
    callback: Py<PyAny>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
    format: Format,
) -> PyResult<run::PendingRead> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    run::spawn_with_callback(format.read(sources, options), callback, table_to_pyarrow)
}

/// Reads Parquet into a `pyarrow.Table` (see `fastingest.read_parquet`).
#[pyfunction]
fn read_parquet(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<Py<PyAny>> {
    read_table(py, source, args, Format::Parquet)
}

/// Starts a read and calls `callback(ok, table_or_exception)` when it ends
/// (used by `fastingest.read_parquet_async`).
#[pyfunction]
fn start_read_parquet(
    callback: Py<PyAny>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<run::PendingRead> {
    start_read(callback, source, args, Format::Parquet)
}

/// The read plan of each file, as dicts (see `fastingest.plan_parquet`).
#[pyfunction]
fn plan_parquet<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let plans = run::block_on(
        py,
        async move { pq::plan_parquet(&sources, &options).await },
    )?;
    let out = PyList::empty(py);
    for p in &plans {
        out.append(convert::plan_dict(py, p)?)?;
    }
    Ok(out)
}

/// Footer metadata of each file, as dicts (see `fastingest.metadata`).
#[pyfunction]
fn read_metadata<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let files = run::block_on(
        py,
        async move { pq::read_metadata(&sources, &options).await },
    )?;
    let out = PyList::empty(py);
    for (source, footer, schema) in &files {
        out.append(convert::metadata_dict(py, source, footer, schema)?)?;
    }
    Ok(out)
}

/// Metadata of files whose format their content tells (see
/// `fastingest.metadata`): Parquet, or ORC when the Parquet magic is missing.
#[pyfunction]
fn read_any_metadata<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    enum Found {
        Parquet(Vec<fastingest::ParquetMetadata>),
        Orc(Vec<fastingest::OrcMetadata>),
    }
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let found = run::block_on(py, async move {
        match pq::read_metadata(&sources, &options).await {
            Err(fastingest::Error::WrongFormat { .. }) => {
                fastingest::read_orc_metadata(&sources, &options)
                    .await
                    .map(Found::Orc)
            }
            other => other.map(Found::Parquet),
        }
    })?;
    let out = PyList::empty(py);
    match found {
        Found::Parquet(files) => {
            for (source, footer, schema) in &files {
                out.append(convert::metadata_dict(py, source, footer, schema)?)?;
            }
        }
        Found::Orc(files) => {
            for (source, tail, schema) in &files {
                out.append(convert::orc_metadata_dict(py, source, tail, schema)?)?;
            }
        }
    }
    Ok(out)
}

/// Reads ORC into a `pyarrow.Table` (see `fastingest.read_orc`; `row_groups`
/// carries the stripes).
#[pyfunction]
fn read_orc(py: Python<'_>, source: &Bound<'_, PyAny>, args: ReadArgs<'_>) -> PyResult<Py<PyAny>> {
    read_table(py, source, args, Format::Orc)
}

/// Starts an ORC read and calls `callback(ok, table_or_exception)` when it ends.
#[pyfunction]
fn start_read_orc(
    callback: Py<PyAny>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<run::PendingRead> {
    start_read(callback, source, args, Format::Orc)
}

/// The read plan of each ORC file, as dicts (see `fastingest.plan_orc`).
#[pyfunction]
fn plan_orc<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let plans = run::block_on(py, async move {
        fastingest::orc::plan_orc(&sources, &options).await
    })?;
    let out = PyList::empty(py);
    for p in &plans {
        out.append(convert::file_plan_dict(py, &p.plan, "stripes")?)?;
    }
    Ok(out)
}

/// ORC tail metadata of each file, as dicts (see `fastingest.metadata`).
#[pyfunction]
fn read_orc_metadata<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let files = run::block_on(py, async move {
        fastingest::orc::read_orc_metadata(&sources, &options).await
    })?;
    let out = PyList::empty(py);
    for (source, tail, schema) in &files {
        out.append(convert::orc_metadata_dict(py, source, tail, schema)?)?;
    }
    Ok(out)
}

/// The column chunks of a read: host bytes, or uploaded to `device` while
/// the fetch runs (see `fastingest.read_chunks`).
#[pyfunction]
#[pyo3(signature = (source, args, device=None, staging_size=None, staging_buffers=None, streams=None, staging_threads=None))]
#[allow(clippy::too_many_arguments)]
fn read_chunks(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
    device: Option<&Bound<'_, PyAny>>,
    staging_size: Option<usize>,
    staging_buffers: Option<usize>,
    streams: Option<usize>,
    staging_threads: Option<usize>,
) -> PyResult<Py<PyAny>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    match device {
        None => {
            let set = run::block_on(py, async move { pq::read_chunks(&sources, &options).await })?;
            let set = chunks::PyChunkSet::new(set);
            Ok(Py::new(py, set)?.into_any())
        }
        Some(d) => {
            let device = chunks::device_of(d)?;
            let upload =
                chunks::upload_options(staging_size, staging_buffers, streams, staging_threads);
            let set = chunks::read_to_device(py, sources, options, device, upload)?;
            Ok(Py::new(py, set)?.into_any())
        }
    }
}

/// A read's batches as they are decoded (see `fastingest.iter_batches`).
#[pyfunction]
fn iter_batches(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<stream::PyBatchStream> {
    stream_batches(py, source, args, Format::Parquet)
}

/// A Parquet dataset opened for reading by row group (see
/// `fastingest.torch.ParquetDataset` and `fastingest.ray`/`fastingest.dask`).
#[pyfunction]
fn open_parquet_units(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<units::PyUnits> {
    open_units(py, source, args, Format::Parquet)
}

/// An ORC dataset opened for reading by stripe (see `fastingest.ray` and
/// `fastingest.dask`; stripe filters as `read_orc`).
#[pyfunction]
fn open_orc_units(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<units::PyUnits> {
    open_units(py, source, args, Format::Orc)
}

/// An ORC read's batches as they are decoded (see
/// `fastingest.iter_orc_batches`; `row_groups` carries the stripes).
#[pyfunction]
fn iter_orc_batches(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    args: ReadArgs<'_>,
) -> PyResult<stream::PyBatchStream> {
    stream_batches(py, source, args, Format::Orc)
}

/// The raw stripes of ORC files (see `fastingest.read_orc_stripes`).
#[pyfunction]
fn read_orc_stripes<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    args: ReadArgs<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let sources = convert::sources(source)?;
    let options = args.into_options()?;
    let set = run::block_on(py, async move {
        fastingest::read_orc_stripes(&sources, &options).await
    })?;
    stripes::stripe_dicts(py, set)
}

/// Whether CUDA uploads can run here (driver, device, CUDA build).
#[pyfunction]
fn cuda_available() -> bool {
    fastingest::gpu::cuda_available()
}

/// Number of CUDA devices; raises `DeviceUnavailableError` saying why there
/// are none to use.
#[pyfunction]
fn cuda_device_count() -> PyResult<usize> {
    fastingest::gpu::cuda_device_count().map_err(errors::to_py)
}

/// Writes `data` to `url` through object_store: test set-up for `memory://`
/// and the emulators (not part of the public API).
#[pyfunction]
#[pyo3(signature = (url, data, storage_options=None))]
fn _put(
    py: Python<'_>,
    url: &str,
    data: Vec<u8>,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    use object_store::ObjectStoreExt;
    let parsed = url::Url::parse(url)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("{url}: {e}")))?;
    let options = convert::storage_options(storage_options)?;
    let (store, path) = fastingest::clients::store_for(&parsed, &options, &Config::builtin())
        .map_err(errors::to_py)?;
    let location = url.to_string();
    run::block_on(py, async move {
        store
            .put(&path, Bytes::from(data).into())
            .await
            .map(|_| ())
            .map_err(|e| fastingest::Error::InvalidArgument(format!("{location}: put failed: {e}")))
    })
}

#[pymodule]
fn _fastingest(m: &Bound<'_, PyModule>) -> PyResult<()> {
    allocator::configure();
    quiet_caught_panics();
    m.add_function(wrap_pyfunction!(allocator::_allocator_purge_delay, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::_allocator_huge_pages, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::_allocator_prefaults, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::_allocator_reuse, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::_allocator_reuses_spans, m)?)?;
    m.add_function(wrap_pyfunction!(_filter_literal, m)?)?;
    logs::install();
    m.add_function(wrap_pyfunction!(logs::_flush_logs, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyConfig>()?;
    m.add_class::<PyReadStats>()?;
    m.add_class::<PyCache>()?;
    m.add_class::<run::PendingRead>()?;
    m.add_function(wrap_pyfunction!(read_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(start_read_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(plan_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(read_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(read_any_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(read_orc, m)?)?;
    m.add_function(wrap_pyfunction!(start_read_orc, m)?)?;
    m.add_function(wrap_pyfunction!(read_orc_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(plan_orc, m)?)?;
    m.add_class::<chunks::PyChunkInfo>()?;
    m.add_class::<chunks::PyChunk>()?;
    m.add_class::<chunks::PyChunkSet>()?;
    m.add_class::<chunks::PyDeviceChunk>()?;
    m.add_class::<chunks::PyDeviceChunkSet>()?;
    m.add_function(wrap_pyfunction!(read_chunks, m)?)?;
    m.add_class::<stream::PyBatchStream>()?;
    m.add_function(wrap_pyfunction!(iter_batches, m)?)?;
    m.add_function(wrap_pyfunction!(iter_orc_batches, m)?)?;
    m.add_class::<units::PyUnits>()?;
    m.add_function(wrap_pyfunction!(open_parquet_units, m)?)?;
    m.add_function(wrap_pyfunction!(open_orc_units, m)?)?;
    m.add_class::<stripes::PyBytesView>()?;
    m.add_function(wrap_pyfunction!(rows::take_rows, m)?)?;
    m.add_function(wrap_pyfunction!(read_orc_stripes, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_put, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_error_classes, m)?)?;
    Ok(())
}
