//! What every format's read shares: the options, the resulting table, the
//! frame of a read (check options, resolve the sources, read them, add the
//! cache's counters), and joining the files of a read into one table.

use std::future::Future;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;

use crate::cache::Cache;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::fetch::Fetcher;
use crate::parquet::select::same_fields;
use crate::parquet::Filter;
use crate::source::{resolve, Context, Source};
use crate::stats::ReadStats;
use crate::store::StorageOptions;

/// What to read and how.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Columns to return (top-level names or dotted struct paths), in this
    /// order; `None` for all.
    pub columns: Option<Vec<String>>,
    /// Row groups (Parquet) or stripes (ORC) to read, as indices into the
    /// file; only for a single file.
    pub row_groups: Option<Vec<usize>>,
    /// Rows to keep; also prunes row groups by their statistics (Parquet).
    pub filter: Option<Filter>,
    /// Options for the object store (credentials, endpoint, ...).
    pub storage_options: StorageOptions,
    /// Fetch tuning.
    pub config: Config,
    /// Counters the read adds to.
    pub stats: ReadStats,
    /// The on-disk cache remote bytes are read through, if any.
    pub cache: Option<Cache>,
}

impl ReadOptions {
    pub(crate) fn context(&self) -> Context<'_> {
        Context {
            options: &self.storage_options,
            config: &self.config,
            stats: &self.stats,
            cache: self.cache.as_ref(),
        }
    }

    pub(crate) fn fetcher(&self) -> Fetcher {
        Fetcher::with_cache(self.config.clone(), self.stats.clone(), self.cache.clone())
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

/// The frame of every read: checks the configuration, resolves `sources`,
/// runs `read` on the files, and adds the cache's counters afterwards
/// (whether the read succeeded or not).
pub(crate) async fn with_files<T, F, Fut>(
    sources: &[String],
    options: &ReadOptions,
    read: F,
) -> Result<T>
where
    F: FnOnce(Vec<Source>) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    options.config.validate()?;
    let result = match resolve(sources, options.context()).await {
        Ok(files) => read(files).await,
        Err(e) => Err(e),
    };
    if let Some(cache) = &options.cache {
        cache.flush_counters();
    }
    result
}

/// Resolves `sources` (the frame of [`with_files`]) and runs `per_file` on
/// each file with `fetcher`, several at once, results in source order.
/// `unit` names what `options.row_groups` selects (row groups, stripes),
/// which takes a single file.
pub(crate) async fn each_source<T, F, Fut>(
    sources: &[String],
    options: &ReadOptions,
    unit: &str,
    fetcher: &Fetcher,
    per_file: F,
) -> Result<Vec<T>>
where
    F: Fn(Fetcher, Source) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    with_files(sources, options, |files| async move {
        check_single_file(&files, options, unit)?;
        crate::fetch::each_file(fetcher, files, per_file).await
    })
    .await
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

/// Joins the files of a read in source order; their schemas must agree (the
/// first file's schema, with its metadata, is the table's).
pub(crate) fn concat(
    fetcher: &Fetcher,
    results: Vec<(Source, SchemaRef, Vec<RecordBatch>)>,
) -> Result<Table> {
    let Some((first_source, schema, _)) = results.first() else {
        return Err(Error::InvalidArgument("no files to read".into()));
    };
    let schema = Arc::clone(schema);
    let first = first_source.location().to_string();
    let mut batches = Vec::new();
    for (source, file_schema, file_batches) in results {
        check_same_schema(&schema, &first, &file_schema, source.location())?;
        for b in file_batches {
            let b = relabel(&schema, b, source.location())?;
            fetcher.stats().add_rows(b.num_rows() as u64);
            batches.push(b);
        }
    }
    Ok(Table { schema, batches })
}

/// Files of one read must share the first file's fields (`first` names it).
pub(crate) fn check_same_schema(
    schema: &SchemaRef,
    first: &str,
    file_schema: &SchemaRef,
    location: &str,
) -> Result<()> {
    match same_fields(schema, file_schema) {
        Some(detail) => Err(Error::SchemaMismatch {
            location: location.to_string(),
            first: first.to_string(),
            detail,
        }),
        None => Ok(()),
    }
}

/// A batch under the read's schema (the same fields, with the first file's
/// metadata); no copy.
pub(crate) fn relabel(schema: &SchemaRef, b: RecordBatch, location: &str) -> Result<RecordBatch> {
    if Arc::ptr_eq(b.schema_ref(), schema) {
        return Ok(b);
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(schema), b.columns().to_vec(), &opts)
        .map_err(|e| Error::from_arrow(location, e))
}
