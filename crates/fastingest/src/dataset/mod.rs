//! A read's files taken as one dataset: partition keys read from their
//! paths, files a filter on those keys rules out dropped before any request
//! to them, what to read of each file, and one schema over all of them.
//! Files listed under a `_metadata` summary carry it to their format, which
//! may plan them from it.

mod partition;
mod schema;

use std::sync::Arc;

pub use partition::Partitioning;
pub(crate) use partition::Partitions;
use schema::check_columns_held;
pub(crate) use schema::DatasetSchema;

use crate::config::SummaryFiles;
use crate::error::{Error, Result};
use crate::filter::{Filter, Rows};
use crate::parquet::SummaryFile;
use crate::pipeline::ReadOptions;
use crate::source::{Source, SourceFile};

/// The files of a read, after partition pruning.
#[derive(Debug)]
pub(crate) struct Dataset {
    /// The files to open, in order.
    pub files: Vec<Source>,
    /// Their partition keys, if any file has some.
    pub partitions: Option<Arc<Partitions>>,
    /// Per file: the rows the filter leaves once its partition keys are
    /// known.
    rows: Vec<Rows>,
    /// Per file: its entry in the summary of the directory it was listed in.
    summaries: Vec<Option<InSummary>>,
    /// Several files, partition keys or a given schema: a column a file
    /// lacks is null there (and one no file holds is found missing when
    /// the files' schemas are joined, where the keys are known too).
    several: bool,
}

/// A file's entry in its dataset's `_metadata` summary.
#[derive(Debug, Clone)]
pub(crate) struct InSummary {
    /// The summary (read once, by the first file that asks).
    pub file: Arc<SummaryFile>,
    /// The file's path as the summary names it: below its directory.
    pub path: String,
}

impl Dataset {
    /// Reads the partition keys of `files` and drops those the filter rules
    /// out, but for the first: it stays (planned with no rows where the
    /// filter rules it out), so that the read's schema does not hang on which
    /// files the filter leaves. pyarrow's is the first file's schema: a
    /// column the first file has is in the table, null in files without it,
    /// whichever partitions match.
    pub fn new(files: Vec<SourceFile>, options: &ReadOptions) -> Result<Self> {
        let partitions = Partitions::discover(&files, &options.partitioning)?;
        let several = files.len() > 1 || options.schema.is_some() || partitions.is_some();
        let mut rows: Vec<Rows> = Vec::with_capacity(files.len());
        for i in 0..files.len() {
            rows.push(match (&options.filter, &partitions) {
                (None, _) => Rows::All,
                (Some(f), None) => Rows::Matching(f.clone()),
                (Some(f), Some(p)) => decide(f, p, i)?,
            });
        }
        let mut keep: Vec<bool> = rows.iter().map(|r| !matches!(r, Rows::Nothing)).collect();
        if let Some(first) = keep.first_mut() {
            *first = true;
        }
        let mut partitions = partitions;
        if let Some(p) = &mut partitions {
            p.retain_files(&keep);
        }
        let mut kept_rows = Vec::new();
        let mut kept_files = Vec::new();
        let mut summaries = Vec::new();
        // One summary per directory listed, shared by its files.
        let mut opened: Vec<Arc<SummaryFile>> = Vec::new();
        for ((file, r), k) in files.into_iter().zip(rows).zip(&keep) {
            if !*k {
                continue;
            }
            let summary = file
                .summary
                .as_ref()
                .filter(|_| options.config.summary_files != SummaryFiles::Ignore);
            summaries.push(summary.map(|source| {
                let shared = match opened.iter().find(|s| s.is(source)) {
                    Some(s) => Arc::clone(s),
                    None => {
                        let s = Arc::new(SummaryFile::new(Arc::clone(source)));
                        opened.push(Arc::clone(&s));
                        s
                    }
                };
                InSummary {
                    file: shared,
                    path: file.path.clone(),
                }
            }));
            kept_files.push(file.source);
            kept_rows.push(r);
        }
        Ok(Dataset {
            files: kept_files,
            partitions: partitions.map(Arc::new),
            rows: kept_rows,
            summaries,
            several,
        })
    }

    /// Each file with what to read of it.
    pub fn scoped<'a>(&self, options: &'a ReadOptions) -> Vec<(Source, FileScope<'a>)> {
        let columns = self.file_columns(options);
        self.files
            .iter()
            .zip(&self.rows)
            .zip(&self.summaries)
            .map(|((source, rows), summary)| {
                let scope = FileScope {
                    options,
                    columns: columns.clone(),
                    rows: rows.clone(),
                    several: self.several,
                    files: self.files.len(),
                    summary: summary.clone(),
                    decoded_next: false,
                };
                (Arc::clone(source), scope)
            })
            .collect()
    }

    /// [`check_columns_held`] for this dataset's files, each holding the
    /// top-level columns `held` names (in the files' order).
    pub fn check_columns_held(&self, options: &ReadOptions, held: &[Vec<String>]) -> Result<()> {
        match self.files.first() {
            Some(first) => {
                check_columns_held(options, held, self.partitions.as_deref(), first.location())
            }
            None => Ok(()),
        }
    }

    /// The columns asked of the files: partition keys are not in them.
    fn file_columns(&self, options: &ReadOptions) -> Option<Vec<String>> {
        let asked = match (&options.columns, &options.schema) {
            (Some(c), _) => c.clone(),
            (None, Some(s)) => s.fields().iter().map(|f| f.name().clone()).collect(),
            (None, None) => return None,
        };
        Some(match &self.partitions {
            Some(p) => asked.into_iter().filter(|c| !p.has(c)).collect(),
            None => asked,
        })
    }
}

/// `filter` over file `i`, its partition keys known.
fn decide(filter: &Filter, partitions: &Partitions, i: usize) -> Result<Rows> {
    partitions
        .known(i)
        .and_then(|known| filter.given(Some(&known), |_| false))
        .map_err(|e| Error::InvalidArgument(format!("filters on partition keys: {e}")))
}

/// What to read of one file: the read's options, with the columns and
/// filter narrowed to what the file itself holds.
#[derive(Debug, Clone)]
pub(crate) struct FileScope<'a> {
    /// The read's options (row groups, limits, ...).
    pub options: &'a ReadOptions,
    columns: Option<Vec<String>>,
    rows: Rows,
    several: bool,
    files: usize,
    summary: Option<InSummary>,
    /// Whether the file's data is read right after its footer (a read, a
    /// stream, or raw chunks fetched at once), not only planned or
    /// inspected.
    decoded_next: bool,
}

impl<'a> FileScope<'a> {
    /// How many files the read takes this one's from.
    pub fn files_in_read(&self) -> usize {
        self.files
    }

    /// Whether a filter may drop rows (the page index is worth reading).
    pub fn filters(&self) -> bool {
        matches!(self.rows, Rows::Matching(_))
    }

    /// Whether the read needs no column of the file: only its row counts
    /// (the columns asked are all partition keys, and no filter term is on
    /// a file column).
    pub fn needs_no_columns(&self) -> bool {
        matches!(&self.columns, Some(c) if c.is_empty()) && !self.filters()
    }

    /// The scope, saying whether the file's data is read right after its
    /// footer (a read, a stream, raw chunks fetched at once) or not (a plan,
    /// a loader's units).
    pub fn decoded_next(mut self, yes: bool) -> Self {
        self.decoded_next = yes;
        self
    }

    /// Whether bytes of the file fetched before its footer is known are
    /// sure to be wanted, and soon: the read's only file, decoded right
    /// after its footer, all its columns, rows and row groups, and no cache
    /// that may hold them. (Of several files, or for a plan, a loader's
    /// shard or an inspection, they may be wanted late or never.)
    pub fn reads_whole_file(&self) -> bool {
        self.decoded_next
            && self.files == 1
            && self.columns.is_none()
            && matches!(self.rows, Rows::All)
            && self.options.row_groups.is_none()
            && self.options.cache.is_none()
    }

    /// Whether the read wants every column chunk of each of its files: all
    /// columns, all rows, no choice of row groups (so nothing read whole
    /// goes unused).
    pub fn wants_all_chunks(&self) -> bool {
        self.columns.is_none()
            && matches!(self.rows, Rows::All)
            && self.options.row_groups.is_none()
    }

    /// The file's entry in its directory's `_metadata` summary, if any.
    pub fn summary(&self) -> Option<&InSummary> {
        self.summary.as_ref()
    }

    /// The columns to read and the rows to keep, for a file that holds the
    /// top-level columns `has` says. Of several files, one may lack a column:
    /// it is left out here (null in the result) and a predicate on it is
    /// false. A single file lacking one is an error, raised by the format.
    pub fn in_file(&self, has: impl Fn(&str) -> bool) -> Result<(Option<Vec<String>>, Rows)> {
        if !self.several {
            return Ok((self.columns.clone(), self.rows.clone()));
        }
        let present = |c: &str| has(c) || c.split('.').next().is_some_and(&has);
        let columns = self
            .columns
            .as_ref()
            .map(|cs| cs.iter().filter(|c| present(c)).cloned().collect());
        let rows = match &self.rows {
            Rows::Matching(f) => f
                .given(None, |c| !has(c))
                .map_err(|e| Error::InvalidArgument(e.to_string()))?,
            other => other.clone(),
        };
        Ok((columns, rows))
    }
}
