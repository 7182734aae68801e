//! `_metadata` summary files (written by Spark, Dask and pyarrow's
//! `write_metadata`): one Parquet footer holding the row groups of every
//! file of a dataset, each column chunk naming the file it lies in. When a
//! directory or prefix has one, its files are planned from it: one request
//! for the dataset instead of one footer request per file.
//!
//! A summary is only a hint: it is used for a file only when it can be
//! trusted for it, and the file's own footer is read otherwise. Not trusted:
//! a summary that cannot be read or decoded, a file it does not name, a file
//! written after it (it may describe an older version; unless the config
//! says to trust it), a file whose size is not known without a request, and
//! chunks that do not fit in the file.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parquet::file::metadata::{FileMetaData, RowGroupMetaData};
use tokio::sync::OnceCell;

use super::footer::{check_chunk_ranges, read_summary_footer, with_row_groups, Footer};
use crate::config::SummaryFiles;
use crate::fetch::Fetcher;
use crate::source::Source;

/// The log target of what this module decides (`fastingest.summary` in
/// Python's logging).
const LOG: &str = "fastingest::summary";

/// A dataset's summary file, read at most once per read (by the first file
/// that asks, while the others wait).
#[derive(Debug)]
pub(crate) struct SummaryFile {
    source: Source,
    decoded: OnceCell<Option<Summary>>,
    /// Whether a file written after the summary was logged (once per read:
    /// a dataset copied in another order would log every file).
    told_newer: AtomicBool,
}

/// A decoded summary: every file's row groups, by the path it names.
#[derive(Debug)]
struct Summary {
    /// The footer every file shares (schema, key-value metadata, ...).
    shared: FileMetaData,
    /// Row groups by file path (relative to the summary's directory).
    files: HashMap<String, Vec<RowGroupMetaData>>,
    /// When the summary was written (ms since the epoch), if known.
    written: Option<i64>,
}

impl SummaryFile {
    /// The summary file at `source` (nothing is read yet).
    pub(crate) fn new(source: Source) -> Self {
        SummaryFile {
            source,
            decoded: OnceCell::new(),
            told_newer: AtomicBool::new(false),
        }
    }

    /// Whether this is the summary read from `source`.
    pub(crate) fn is(&self, source: &Source) -> bool {
        Arc::ptr_eq(&self.source, source)
    }

    /// The footer of `file` (at `path` below the summary's directory) as
    /// the summary records it, when the summary can be trusted for it;
    /// `None`: read the file's own footer.
    pub(crate) async fn footer(
        &self,
        fetcher: &Fetcher,
        file: &Source,
        path: &str,
    ) -> Option<Footer> {
        let summary = self
            .decoded
            .get_or_init(|| self.read(fetcher))
            .await
            .as_ref()?;
        let location = file.location();
        let size = file.known_size()?;
        // Whether the file may have been written after the summary (unknown
        // times count as newer: nothing says the summary saw this version).
        let newer = match (file.modified_millis(), summary.written) {
            (Some(modified), Some(written)) => Some(modified > written),
            _ => None,
        };
        if newer != Some(false) && fetcher.config().summary_files == SummaryFiles::Check {
            if !self.told_newer.swap(true, Ordering::Relaxed) {
                let when = match newer {
                    Some(_) => "written after",
                    None => "of unknown age relative to",
                };
                log::info!(
                    target: LOG,
                    "{location}: {when} {}; such files read their own footers \
                     (Config(summary_files=\"trust\") plans them from it)",
                    self.source.location()
                );
            }
            return None;
        }
        let row_groups = summary.files.get(path)?;
        // The file's footer: the summary's schema with the file's row groups.
        let metadata = with_row_groups(&summary.shared, row_groups.clone());
        // The data ends before the file's own footer and its 8-byte trailer
        // (the footer's length is not known here: the bound is loose).
        if let Err(e) = check_chunk_ranges(location, &metadata, size.saturating_sub(8)) {
            log::warn!(
                target: LOG,
                "{}: does not fit {location} ({e}); its own footer is read",
                self.source.location()
            );
            return None;
        }
        Some(Footer {
            metadata: Arc::new(metadata),
            file_size: size,
            tail: Bytes::new(),
            start: Vec::new(),
        })
    }

    /// Reads and splits the summary; `None` (logged) when it cannot be used.
    async fn read(&self, fetcher: &Fetcher) -> Option<Summary> {
        let location = self.source.location();
        // `why` names the summary's location.
        let unusable = |why: String| {
            log::warn!(
                target: LOG,
                "the dataset's summary is not used ({why}); each file's own footer is read"
            );
            None
        };
        let written = self.source.modified_millis();
        let footer = match read_summary_footer(fetcher, &self.source).await {
            Ok(f) => f,
            Err(e) => return unusable(e.to_string()),
        };
        let mut files: HashMap<String, Vec<RowGroupMetaData>> = HashMap::new();
        for (i, group) in footer.metadata.row_groups().iter().enumerate() {
            let mut paths = group.columns().iter().map(|c| c.file_path());
            let first = paths.next().flatten();
            match first {
                Some(p) if paths.all(|q| q == Some(p)) => files
                    .entry(p.trim_start_matches("./").to_string())
                    .or_default()
                    .push(group.clone()),
                _ => {
                    return unusable(format!(
                        "{location}: row group {i} does not name one file for all its column \
                         chunks"
                    ))
                }
            }
        }
        Some(Summary {
            shared: footer.metadata.file_metadata().clone(),
            files,
            written,
        })
    }
}
