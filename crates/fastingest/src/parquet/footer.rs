//! Reading and decoding a Parquet footer: one speculative tail request, a
//! second only when the footer is longer than the prefetch.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use parquet::arrow::async_reader::MetadataFetch;
use parquet::file::metadata::{
    FileMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataBuilder, ParquetMetaDataReader,
    RowGroupMetaData,
};

use crate::error::{Error, Result};
use crate::fetch::{Beside, Fetcher, FooterRound};
use crate::io::Tail;
use crate::known::{Known, StartSlice};
use crate::source::Source;

const FOOTER_TRAILER: u64 = 8;

/// A file's decoded footer and size.
#[derive(Debug, Clone)]
pub struct Footer {
    /// Decoded metadata (with the page index when it was asked for and present).
    pub metadata: Arc<ParquetMetaData>,
    /// The file's size in bytes.
    pub file_size: u64,
    /// The bytes the footer request brought: the end of the file (all of it
    /// for a small file), which later reads are served from.
    pub tail: Bytes,
    /// The start of the file, asked for beside the footer when the read
    /// wanted all of it (see `Config::start_prefetch`); later reads are
    /// served from it too.
    pub start: Vec<StartSlice>,
}

impl Footer {
    /// What the footer's round trip brought and is bringing: the tail, and
    /// the file's start if asked for.
    pub fn known_bytes(&self) -> Known {
        Known {
            spans: vec![(self.file_size - self.tail.len() as u64, self.tail.clone())],
            start: self.start.clone(),
        }
    }
}

/// How much the footer request asks for: all of the file after its leading
/// magic when it is small (one request instead of two), else the configured
/// prefetch. (The leading 4 bytes are never needed, and leaving them out lets
/// a cache holding the chunks and footer serve it.)
///
/// Small: for a remote file, a listing said it is at most `small_file` (a
/// round trip costs more than fetching columns not asked for); for a local
/// file, at most `small_file` when the read wants every column chunk of it
/// (`wants_all_chunks`: nothing fetched goes unused, and a cold disk serves
/// one read of the file instead of two), else at most twice the prefetch (a
/// second `pread` costs tens of microseconds, about what copying 100 KiB
/// not asked for does).
fn first_request_len(fetcher: &Fetcher, source: &Source, wants_all_chunks: bool) -> u64 {
    let config = fetcher.config();
    let small = match source.is_local() {
        true => source.known_size().filter(|&size| {
            size <= config.footer_prefetch.saturating_mul(2)
                || (wants_all_chunks && size <= config.small_file)
        }),
        false => source
            .listed_version()
            .map(|v| v.size)
            .filter(|&size| size <= config.small_file),
    };
    match small {
        Some(size) => size.saturating_sub(4).max(config.footer_prefetch),
        None => config.footer_prefetch,
    }
}

/// What to keep of the requests for a file's start once its size is known:
/// all of them for a file at most twice `start_prefetch` (most of it, or all,
/// in the footer's round trip); for a larger file only those of the first
/// half. Its first row groups still come early, and the rest, dropped (and
/// so cancelled) before their bytes come in, is fetched in the plan's larger
/// slices, which it would have been anyway: the dropped requests' bytes held
/// at once cost a 143 MB read 8-17 MB of peak memory.
fn keep_of_start(mut start: Vec<StartSlice>, size: u64, start_prefetch: u64) -> Vec<StartSlice> {
    if size > start_prefetch.saturating_mul(2) {
        // The slices are in file order, `MIN_SLICE` bytes each.
        let half = (start_prefetch / 2).div_ceil(crate::plan::MIN_SLICE);
        start.truncate(usize::try_from(half).unwrap_or(usize::MAX));
    }
    start
}

/// Reads and decodes the footer of `source`; for a read that wants all of
/// the file (`wants_whole_file`), the file's start may come beside it (see
/// [`Beside::footer_of`] and `Config::start_prefetch`); a small local file
/// whose every column chunk the read wants (`wants_all_chunks`) is read
/// whole (see [`first_request_len`]).
pub async fn read_footer(
    fetcher: &Fetcher,
    source: &Source,
    with_page_index: bool,
    wants_whole_file: bool,
    wants_all_chunks: bool,
) -> Result<Footer> {
    let mut beside = Beside::footer_of(fetcher, source, wants_whole_file);
    if beside.long_tail.is_some() && super::memo::holds_object(source, with_page_index) {
        // A later read of an object whose footer this process decoded: the
        // footer request's answer will most likely confirm the same
        // version, and the long tail (1 MiB by default) would be cancelled
        // unused. A rewritten object with a longer footer costs one more
        // request instead.
        beside.long_tail = None;
    }
    let first = first_request_len(fetcher, source, wants_all_chunks);
    read_any_footer(
        fetcher,
        source,
        with_page_index,
        FooterOf::DataFile,
        beside,
        first,
    )
    .await
}

/// Reads and decodes the footer of a `_metadata` summary file: its column
/// chunks lie in other files, so they are not checked against its own size
/// (see `summary.rs`), and it is not kept with the data files' footers.
pub(super) async fn read_summary_footer(fetcher: &Fetcher, source: &Source) -> Result<Footer> {
    let beside = Beside::footer_of(fetcher, source, false);
    let first = first_request_len(fetcher, source, false);
    read_any_footer(fetcher, source, false, FooterOf::Summary, beside, first).await
}

/// Whose footer is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FooterOf {
    /// A data file: its chunks lie in it.
    DataFile,
    /// A dataset's summary: its chunks lie in the files it names.
    Summary,
}

async fn read_any_footer(
    fetcher: &Fetcher,
    source: &Source,
    with_page_index: bool,
    of: FooterOf,
    beside: Beside,
    first_request_len: u64,
) -> Result<Footer> {
    let location = source.location();
    let FooterRound {
        tail,
        start,
        long_tail,
    } = fetcher
        .fetch_tail_and_beside(source, first_request_len, beside)
        .await?;
    let size = tail.size;
    let start = keep_of_start(start, size, fetcher.config().start_prefetch);
    // The tail told (or the cache pinned) the object's version: a footer
    // decoded before for this version is reused.
    let memo = of == FooterOf::DataFile;
    if let Some(metadata) = memo
        .then(|| super::memo::get(source, with_page_index))
        .flatten()
    {
        return Ok(Footer {
            metadata,
            file_size: size,
            tail: tail.bytes,
            start,
        });
    }
    let corrupt = |range: Option<Range<u64>>, detail: String| Error::Corrupt {
        location: location.to_string(),
        range,
        detail,
        cause: None,
    };
    if size < 12 {
        return Err(corrupt(
            Some(0..size),
            format!("file is {size} bytes, too small to be Parquet (needs at least 12)"),
        ));
    }
    let n = tail.bytes.len();
    if (n as u64) < FOOTER_TRAILER {
        return Err(corrupt(
            Some(0..size),
            "could not read the file's last 8 bytes".into(),
        ));
    }
    let trailer = &tail.bytes[n - 8..];
    match &trailer[4..] {
        b"PAR1" => {}
        b"PARE" => {
            return Err(Error::Unsupported {
                location: location.to_string(),
                detail: "the footer is encrypted (PARE); encrypted Parquet files are not supported"
                    .into(),
                cause: None,
            })
        }
        other => {
            return Err(Error::WrongFormat {
                location: location.to_string(),
                expected: "Parquet",
                detail: format!(
                    "expected magic \"PAR1\" at the end (byte {}), found {other:?}",
                    size - 4
                ),
            })
        }
    }
    let meta_len = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]) as u64;
    if meta_len + FOOTER_TRAILER + 4 > size {
        return Err(corrupt(
            Some(size - 8..size - 4),
            format!("footer length {meta_len} is beyond the file's size of {size} bytes"),
        ));
    }
    let footer_start = size - FOOTER_TRAILER - meta_len;
    // A footer longer than the first request: the long tail asked for
    // beside it, or one more request. A footer that fits keeps the long tail
    // when the page index is wanted: it lies before the footer, which says
    // where.
    let (tail, long_tail) = match footer_start >= tail.start() {
        true => (tail, long_tail.filter(|_| with_page_index)),
        false => {
            let tail = fetcher
                .tail_from(source, tail, long_tail, footer_start)
                .await?;
            (tail, None)
        }
    };
    let footer = tail
        .bytes
        .slice((footer_start - tail.start()) as usize..tail.bytes.len() - 8);
    // A file with no version read before: its footer is reused when its
    // bytes are the ones it was decoded from (checks included: they only
    // looked at those bytes and the file's size).
    let kept = memo
        .then(|| super::memo::get_by_bytes(source, size, with_page_index, &footer))
        .flatten();
    let (metadata, tail_bytes) = match kept {
        Some(metadata) => (metadata, tail.bytes),
        None => {
            let metadata = decode_checked(location, &footer, footer_start, of)?;
            let tail = match page_index_start(&metadata, footer_start) {
                Some(at) if with_page_index && long_tail.is_some() => {
                    fetcher.tail_from(source, tail, long_tail, at).await?
                }
                _ => tail,
            };
            let tail_bytes = tail.bytes.clone();
            let metadata = if with_page_index {
                load_page_index(fetcher, source, metadata, tail).await?
            } else {
                metadata
            };
            let metadata = Arc::new(metadata);
            if memo {
                super::memo::put(source, size, with_page_index, &footer, &metadata);
            }
            (metadata, tail_bytes)
        }
    };
    Ok(Footer {
        metadata,
        file_size: size,
        tail: tail_bytes,
        start,
    })
}

/// Checks and decodes a data file's (or summary's) footer, the bytes at
/// `footer_start` up to the trailer.
fn decode_checked(
    location: &str,
    footer: &[u8],
    footer_start: u64,
    of: FooterOf,
) -> Result<ParquetMetaData> {
    let footer_range = footer_start..footer_start + footer.len() as u64;
    let corrupt = |detail: String| Error::Corrupt {
        location: location.to_string(),
        range: Some(footer_range.clone()),
        detail,
        cause: None,
    };
    // The decoder reserves memory by the counts the footer claims: claims
    // its bytes cannot back are refused first.
    super::thrift::check_file_metadata(footer)
        .map_err(|detail| corrupt(format!("corrupt footer: {detail}")))?;
    let decode =
        |footer: &[u8]| std::panic::catch_unwind(|| ParquetMetaDataReader::decode_metadata(footer));
    let mut decoded = decode(footer);
    if matches!(decoded, Ok(Err(_))) {
        // Fields a writer typed otherwise than the format: skipped, as
        // Thrift's own readers skip them (see `mistyped`).
        if let Some((cleaned, _)) = super::mistyped::drop_mistyped_fields(footer) {
            if let Ok(Ok(m)) = decode(&cleaned) {
                decoded = Ok(Ok(m));
            }
        }
    }
    let metadata = match decoded {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            return Err(match Error::from_parquet(location, e) {
                Error::Corrupt { detail, cause, .. } => Error::Corrupt {
                    location: location.to_string(),
                    range: Some(footer_range),
                    detail: format!("corrupt footer: {detail}"),
                    cause,
                },
                other => other,
            })
        }
        Err(_) => return Err(corrupt("corrupt footer (the decoder gave up)".into())),
    };
    reject_encrypted_columns(location, &metadata)?;
    let data_end = (of == FooterOf::DataFile).then_some(footer_start);
    let metadata = super::quirks::corrected(metadata, data_end)
        .map_err(|e| Error::from_parquet(location, e))?;
    if of == FooterOf::DataFile {
        check_chunk_ranges(location, &metadata, footer_start)?;
    }
    Ok(fix_row_count(metadata))
}

/// Where the page index (column and offset indexes) begins: before the
/// footer, where writers put it. `None` without one, or where the footer
/// places it anywhere else (the page index reader then asks for what it
/// names).
fn page_index_start(metadata: &ParquetMetaData, footer_start: u64) -> Option<u64> {
    let start = metadata
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .flat_map(|c| [c.column_index_offset(), c.offset_index_offset()])
        .flatten()
        .min()?;
    u64::try_from(start)
        .ok()
        .filter(|&at| (4..footer_start).contains(&at))
}

/// The widest fixed-length value read (`FIXED_LEN_BYTE_ARRAY`'s
/// `type_length`): 64 MiB.
pub(crate) const MAX_FIXED_WIDTH: i32 = 64 << 20;

/// Every column chunk must lie between the leading magic and the footer,
/// with its data page inside it: the offsets come from the file and may say
/// anything, and everything after this (planning, `byte_range`, decoding)
/// relies on them. A chunk without values (a zero-row row group) may leave
/// its data page offset unset.
pub(super) fn check_chunk_ranges(
    location: &str,
    metadata: &ParquetMetaData,
    data_end: u64,
) -> Result<()> {
    // The decoder reserves rows × width for fixed-length values: a width no
    // real column has is refused (the widest batch is then bounded too,
    // see `decode::batch_rows`).
    for column in metadata.file_metadata().schema_descr().columns() {
        if column.physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY
            && !(0..=MAX_FIXED_WIDTH).contains(&column.type_length())
        {
            return Err(Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: format!(
                    "column {} claims fixed-length values of {} bytes each (at most {} are read)",
                    column.path(),
                    column.type_length(),
                    MAX_FIXED_WIDTH
                ),
                cause: None,
            });
        }
    }
    for (rg, group) in metadata.row_groups().iter().enumerate() {
        if group.num_rows() < 0 {
            return Err(Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: format!("row group {rg} claims {} rows", group.num_rows()),
                cause: None,
            });
        }
        for c in group.columns() {
            let data = c.data_page_offset();
            let start = c.dictionary_page_offset().unwrap_or(data);
            let len = c.compressed_size();
            let end = start.checked_add(len).unwrap_or(-1);
            let inside = if len == 0 {
                start >= 0
            } else {
                start >= 4 && len > 0 && end >= start && end as u64 <= data_end
            };
            let ok = inside && (c.num_values() == 0 || (start <= data && data < end));
            if !ok {
                return Err(Error::Corrupt {
                    location: location.to_string(),
                    range: None,
                    detail: format!(
                        "row group {rg}, column {}: invalid chunk offsets (start {start}, \
                         data page {data}, length {len}; the data ends at byte {data_end})",
                        c.column_path()
                    ),
                    cause: None,
                });
            }
        }
    }
    Ok(())
}

/// A plaintext footer can still describe encrypted column chunks; without
/// keys their pages are noise, so say so instead of failing to decode them.
fn reject_encrypted_columns(location: &str, metadata: &ParquetMetaData) -> Result<()> {
    let encrypted = metadata
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .find(|c| c.crypto_metadata().is_some());
    match encrypted {
        Some(c) => Err(Error::Unsupported {
            location: location.to_string(),
            detail: format!(
                "column {} is encrypted (plaintext footer); encrypted Parquet files are not supported",
                c.column_path()
            ),
            cause: None,
        }),
        None => Ok(()),
    }
}

/// Some writers leave the file's row count at 0 while the row groups hold
/// rows; readers that trust it return nothing. The row groups are the truth.
fn fix_row_count(metadata: ParquetMetaData) -> ParquetMetaData {
    let sum: i64 = metadata.row_groups().iter().map(|rg| rg.num_rows()).sum();
    if metadata.file_metadata().num_rows() == sum {
        return metadata;
    }
    with_row_groups(metadata.file_metadata(), metadata.row_groups().to_vec())
}

/// A footer of `row_groups` with the rest of `file` (schema, key-value
/// metadata, ...) and the row count they sum to.
pub(super) fn with_row_groups(
    file: &FileMetaData,
    row_groups: Vec<RowGroupMetaData>,
) -> ParquetMetaData {
    let rows: i64 = row_groups.iter().map(|g| g.num_rows()).sum();
    let counted = FileMetaData::new(
        file.version(),
        rows,
        file.created_by().map(str::to_string),
        file.key_value_metadata().cloned(),
        file.schema_descr_ptr(),
        file.column_orders().cloned(),
    );
    ParquetMetaDataBuilder::new(counted)
        .set_row_groups(row_groups)
        .build()
}

/// Adds the column and offset indexes, served from the tail when it holds them.
async fn load_page_index(
    fetcher: &Fetcher,
    source: &Source,
    metadata: ParquetMetaData,
    tail: Tail,
) -> Result<ParquetMetaData> {
    let mut reader = ParquetMetaDataReader::new_with_metadata(metadata)
        .with_page_index_policy(PageIndexPolicy::Optional);
    let fetch = TailFetch {
        fetcher: fetcher.clone(),
        source: Arc::clone(source),
        tail,
    };
    reader
        .load_page_index(fetch)
        .await
        .map_err(|e| Error::from_parquet(source.location(), e))?;
    reader
        .finish()
        .map_err(|e| Error::from_parquet(source.location(), e))
}

/// Serves metadata reads from the tail already fetched, fetching otherwise.
struct TailFetch {
    fetcher: Fetcher,
    source: Source,
    tail: Tail,
}

impl MetadataFetch for TailFetch {
    fn fetch(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            // A lying footer (a page index's offset or length) must not size
            // a buffer: refused before anything is allocated for it (a
            // fuzzed file asked for 32 TB here, and the process aborted).
            if range.start > range.end || range.end > self.tail.size {
                return Err(parquet::errors::ParquetError::General(format!(
                    "the footer points at bytes {}..{} of a file of {} bytes",
                    range.start, range.end, self.tail.size
                )));
            }
            let tail_start = self.tail.size - self.tail.bytes.len() as u64;
            if range.start >= tail_start && range.end <= self.tail.size {
                let s = (range.start - tail_start) as usize;
                let e = (range.end - tail_start) as usize;
                return Ok(self.tail.bytes.slice(s..e));
            }
            self.fetcher.stats().add_unplanned();
            self.fetcher
                .fetch_range(&self.source, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MIN_SLICE;

    fn slices(n: u64) -> Vec<StartSlice> {
        (0..n)
            .map(|i| StartSlice {
                range: 4 + i * MIN_SLICE..4 + (i + 1) * MIN_SLICE,
                bytes: futures::future::ready(None).boxed().shared(),
            })
            .collect()
    }

    #[test]
    fn a_file_the_start_covers_half_of_keeps_all_of_it_and_a_larger_one_its_first_half() {
        let prefetch = 16 * MIN_SLICE;
        for (size, kept) in [
            (2 * MIN_SLICE, 16),
            (17 * MIN_SLICE, 16),
            (32 * MIN_SLICE, 16),
            (32 * MIN_SLICE + 1, 8),
            (143_000_000, 8),
        ] {
            let start = keep_of_start(slices(16), size, prefetch);
            assert_eq!(start.len(), kept, "size {size}");
            assert!(start.windows(2).all(|w| w[0].range.end == w[1].range.start));
            assert_eq!(start[0].range.start, 4);
        }
    }
}
