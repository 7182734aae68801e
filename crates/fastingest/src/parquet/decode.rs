//! Decoding a row group with the `parquet` crate from bytes already fetched:
//! an `AsyncFileReader` serves the decoder's reads out of the fetched spans,
//! and falls back to a counted, unplanned fetch for anything else.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Schema};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::async_reader::ParquetRecordBatchStream;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::schema::types::{ColumnDescPtr, ColumnDescriptor};

use super::format::{Damage, PreparedFile};
use super::{flat, lists, pages, projected, structs};
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::io::MappedFile;
use crate::pipeline::decode_threads::{self, Part};
use crate::source::Source;

/// The decoder's view of a file: fetched spans first, the store otherwise.
pub(crate) struct PrefetchedReader {
    spans: FetchedSpans,
    source: Source,
    fetcher: Fetcher,
    metadata: Arc<ParquetMetaData>,
}

impl PrefetchedReader {
    /// A reader over `spans` of `source`.
    pub(crate) fn new(
        spans: FetchedSpans,
        source: Source,
        fetcher: Fetcher,
        metadata: Arc<ParquetMetaData>,
    ) -> Self {
        PrefetchedReader {
            spans,
            source,
            fetcher,
            metadata,
        }
    }
}

impl AsyncFileReader for PrefetchedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        if let Some(b) = self.spans.get(&range) {
            return futures::future::ready(Ok(b)).boxed();
        }
        async move {
            self.fetcher.stats().add_unplanned();
            self.fetcher
                .fetch_range(&self.source, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        futures::future::ready(Ok(Arc::clone(&self.metadata))).boxed()
    }
}

/// Decodes the row group at position `unit` of `file`'s plan from `spans`
/// (on the blocking pool: the decoder's reads are served from memory, and
/// anything it asks for beyond the plan is fetched, counted as unplanned).
pub(crate) fn decode_row_group(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<RecordBatch>> {
    check_unit_pages(file, unit, &spans)?;
    // Without a selection, the flat columns and lists of numbers and
    // strings are decoded here, each chunk whole, however many bytes the
    // row group holds: its decoded rows are held to the end of the unit
    // either way, and a row group too large for one batch of the crate's
    // (Spark writes 128 MB ones) was decoded by the crate a batch at a
    // time, one thread per row group, at under half the speed.
    let direct = if decodes_here(file, unit) {
        let threads = fetcher.config().decode_threads();
        decode_flat_columns(
            file,
            unit,
            &spans,
            threads,
            &projected_roots(file),
            None,
            &[],
        )?
    } else {
        Vec::new()
    };
    decode_rest(file, unit, direct, spans, fetcher)
}

/// Whether fastingest's own decoders take the columns of the row group at
/// position `unit` (those they can) whole: see [`decode_row_group`].
fn decodes_here(file: &PreparedFile, unit: usize) -> bool {
    let rg = file.plan.units[unit].index;
    let num_rows = file.reader_metadata.metadata().row_group(rg).num_rows();
    file.selections[unit].is_none() && decoded_here_whole(num_rows)
}

/// The parts the row group at position `unit` can be decoded in apart
/// (see [`crate::pipeline`]'s `decode_in_parts`): one per top-level field
/// read, each as the byte ranges of its column chunks; `None` when the
/// row group is not decoded here (see [`decodes_here`]).
pub(crate) fn row_group_parts(file: &PreparedFile, unit: usize) -> Option<Vec<Vec<Range<u64>>>> {
    if !decodes_here(file, unit) {
        return None;
    }
    let metadata = file.reader_metadata.metadata();
    let group = metadata.row_group(file.plan.units[unit].index);
    let descr = metadata.file_metadata().schema_descr();
    let parts = projected_roots(file)
        .into_iter()
        .map(|root| {
            (0..descr.num_columns())
                .filter(|&l| file.projection.mask.leaf_included(l))
                .filter(|&l| descr.get_column_root_idx(l) == root)
                .map(|l| {
                    let (start, len) = group.column(l).byte_range();
                    start..start.saturating_add(len)
                })
                .collect()
        })
        .collect();
    Some(parts)
}

/// The columns of part `part` (see [`row_group_parts`]) of the row group at
/// position `unit` that fastingest's decoders take, from `spans`.
pub(crate) fn decode_row_group_part(
    file: &PreparedFile,
    unit: usize,
    part: usize,
    spans: &FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<(usize, Pieces)>> {
    let Some(&root) = projected_roots(file).get(part) else {
        return Ok(Vec::new());
    };
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    check_pages_of(file, unit, spans, |leaf| {
        descr.get_column_root_idx(leaf) == root
    })?;
    let threads = fetcher.config().decode_threads();
    decode_flat_columns(file, unit, spans, threads, &[root], None, &[])
}

/// The row group at position `unit` from the columns its parts decoded
/// (`parts`: see [`decode_row_group_part`]) and the rest, which the crate
/// decodes from `spans`.
pub(crate) fn join_row_group_parts(
    file: &PreparedFile,
    unit: usize,
    parts: Vec<Vec<(usize, Pieces)>>,
    spans: FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<RecordBatch>> {
    let direct: Vec<(usize, Pieces)> = parts.into_iter().flatten().collect();
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    check_pages_of(file, unit, &spans, |leaf| {
        let root = descr.get_column_root_idx(leaf);
        !direct.iter().any(|(r, _)| *r == root)
    })?;
    decode_rest(file, unit, direct, spans, fetcher)
}

/// The row group at position `unit`: the columns fastingest's decoders
/// gave (`direct`), those the `parquet` crate decodes from `spans` beside
/// them, sliced to batches.
fn decode_rest(
    file: &PreparedFile,
    unit: usize,
    direct: Vec<(usize, Pieces)>,
    spans: FetchedSpans,
    fetcher: &Fetcher,
) -> Result<Vec<RecordBatch>> {
    let rg = file.plan.units[unit].index;
    let num_rows = file.reader_metadata.metadata().row_group(rg).num_rows();
    let rows_per_batch = batch_rows(file, num_rows);
    // The crate decodes the rest: the whole row group as one batch where it
    // fits one (see [`decodes_whole`]), else a batch at a time.
    let whole =
        file.selections[unit].is_none() && num_rows > 0 && decodes_whole(file, rg, rows_per_batch);
    let batch_size = if whole {
        num_rows as usize
    } else {
        rows_per_batch
    };
    let mask = if direct.is_empty() {
        file.projection.mask.clone()
    } else {
        let descr = file
            .reader_metadata
            .metadata()
            .file_metadata()
            .schema_descr();
        let rest = (0..descr.num_columns()).filter(|&l| {
            file.projection.mask.leaf_included(l)
                && !direct
                    .iter()
                    .any(|(root, _)| *root == descr.get_column_root_idx(l))
        });
        ProjectionMask::leaves(descr, rest.collect::<Vec<_>>())
    };
    let rest = if !direct.is_empty() && direct.len() == projected_roots(file).len() {
        Vec::new()
    } else {
        let stream = crate_stream(file, unit, spans.clone(), fetcher, mask, batch_size)?;
        // A decoder panic on damaged data is caught where every unit is
        // decoded (`pipeline::decode`), and named there as this file's
        // corruption.
        futures::executor::block_on(stream.try_collect::<Vec<_>>())
            .map_err(|e| crate_failure(file, unit, &spans, e))?
    };
    let batches = if direct.is_empty() {
        rest
    } else {
        merge(file, direct, rest, num_rows as usize)?
    };
    Ok(if batches.iter().any(|b| b.num_rows() > rows_per_batch) {
        slice_batches(batches, rows_per_batch)
    } else {
        batches
    })
}

/// The `parquet` crate's error decoding the row group at position `unit` of
/// `file`, told with what fastingest's decoders found wrong in one of its
/// column chunks: the column and its bytes, which the crate's words do not
/// name. Where they did not decode the row group (a head batch, a selection),
/// its fetched chunks' pages are read now to find it.
pub(super) fn crate_failure(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    err: parquet::errors::ParquetError,
) -> Error {
    let rg = file.plan.units[unit].index;
    let error = Error::from_parquet(file.source.location(), err);
    let Error::Corrupt {
        location,
        range: None,
        detail,
        cause,
    } = error
    else {
        return error;
    };
    match file
        .damage
        .in_row_group(rg)
        .or_else(|| damaged_pages(file, unit, spans))
    {
        Some(seen) => Error::Corrupt {
            location,
            range: Some(seen.range),
            detail: format!(
                "row group {rg}, column {}: {} (the parquet crate: {detail})",
                seen.column, seen.detail
            ),
            cause,
        },
        None => Error::Corrupt {
            location,
            range: None,
            detail,
            cause,
        },
    }
}

/// The first projected column chunk of the row group at position `unit`,
/// fetched whole in `spans`, whose pages do not read (a header, or a body
/// that does not decompress to what its header says).
fn damaged_pages(file: &PreparedFile, unit: usize, spans: &FetchedSpans) -> Option<Damage> {
    let rg = file.plan.units[unit].index;
    let group = file.reader_metadata.metadata().row_group(rg);
    (0..group.num_columns())
        .filter(|&leaf| file.projection.mask.leaf_included(leaf))
        .find_map(|leaf| {
            let chunk = group.column(leaf);
            let (start, len) = chunk.byte_range();
            let range = start..start.saturating_add(len);
            let bytes = spans.get(&range)?;
            let mut pages = pages::ChunkPages::new(bytes, chunk.compression())?;
            let detail = loop {
                match pages.next_page() {
                    Ok(Some(_)) => {}
                    Ok(None) => return None,
                    Err(detail) => break detail,
                }
            };
            Some(Damage {
                row_group: rg,
                column: chunk.column_path().to_string(),
                range,
                detail,
            })
        })
}

/// The `parquet` crate's batches of the row group at position `unit`, of
/// the leaves in `mask`, `batch_size` rows each, decoded as they are pulled
/// (with the unit's row selection, if any).
pub(super) fn crate_stream(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
    mask: ProjectionMask,
    batch_size: usize,
) -> Result<ParquetRecordBatchStream<PrefetchedReader>> {
    let selection = file.selections[unit].clone();
    crate_stream_of(file, unit, spans, fetcher, mask, batch_size, selection)
}

/// [`crate_stream`] of the rows `selection` keeps (`None`: all of them).
pub(super) fn crate_stream_of(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
    mask: ProjectionMask,
    batch_size: usize,
    selection: Option<RowSelection>,
) -> Result<ParquetRecordBatchStream<PrefetchedReader>> {
    let reader = PrefetchedReader::new(
        spans,
        Arc::clone(&file.source),
        fetcher.clone(),
        Arc::clone(file.reader_metadata.metadata()),
    );
    let mut builder =
        ParquetRecordBatchStreamBuilder::new_with_metadata(reader, file.reader_metadata.clone())
            .with_projection(mask)
            .with_row_groups(vec![file.plan.units[unit].index])
            .with_batch_size(batch_size);
    if let Some(selection) = selection {
        builder = builder.with_row_selection(selection);
    }
    builder
        .build()
        .map_err(|e| Error::from_parquet(file.source.location(), e))
}

/// The first batch of `rows` rows of the row group at position `unit` of
/// `file`'s plan (which has no row selection): the first batch of the
/// `parquet` crate's page-by-page decode, so only the pages that hold them
/// are decompressed and decoded (a stream's first batch comes before its
/// row group is decoded whole).
pub(crate) fn decode_row_group_head(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
    rows: usize,
) -> Result<Option<RecordBatch>> {
    check_unit_pages(file, unit, &spans)?;
    let mask = file.projection.mask.clone();
    let mut stream = crate_stream(file, unit, spans.clone(), fetcher, mask, rows)?;
    futures::executor::block_on(stream.try_next()).map_err(|e| crate_failure(file, unit, &spans, e))
}

/// Whether the `parquet` crate decodes row group `rg` as one batch: when it
/// fits one, and also when it has more rows than that but its projected
/// columns are small enough to hold decoded at once (a batch at a time,
/// the crate took about twice as long: old pyarrow wrote one row group of
/// up to 64 Mi rows per file). fastingest's own decoders take each chunk
/// whole whatever its size (see [`decode_row_group`]).
pub(super) fn decodes_whole(file: &PreparedFile, rg: usize, rows_per_batch: usize) -> bool {
    let group = file.reader_metadata.metadata().row_group(rg);
    let rows = group.num_rows();
    if rows <= rows_per_batch as i64 {
        return true;
    }
    let projected: i64 = (0..group.num_columns())
        .filter(|&l| file.projection.mask.leaf_included(l))
        .map(|l| group.column(l).uncompressed_size().max(0))
        .sum();
    rows <= WHOLE_MOST_ROWS && projected <= WHOLE_MOST_BYTES
}

/// Whether fastingest's own decoders take a row group of `rows` rows whole
/// (see [`decode_row_group`]): at most [`CHECKED_MOST_ROWS`], as they size
/// their output from the footer's count of rows. A footer that claims more
/// (a damaged file's billions: the fuzzer's claims made them ask for up to
/// 2^59 bytes at once, which aborts the process) goes to the crate, which
/// allocates a batch at a time and says what is wrong with the file. Above
/// [`WHOLE_MOST_ROWS`], each chunk's own page headers must count the same
/// rows (see [`rows_backed`]).
pub(super) fn decoded_here_whole(rows: i64) -> bool {
    rows > 0 && rows <= CHECKED_MOST_ROWS
}

/// Whether the footer's `rows` for a chunk (`bytes`, whole, of `column`)
/// may size its decoder's output: always up to [`WHOLE_MOST_ROWS`]; above,
/// only when its data pages' headers count as many (a column that is not
/// repeated: a value per row) or more (one that is: a row has at least
/// one). A damaged footer's count is then also a damaged page header's
/// count, not a single number's.
fn rows_backed(
    bytes: &[u8],
    chunk: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    rows: usize,
) -> bool {
    if rows as u64 <= WHOLE_MOST_ROWS as u64 {
        return true;
    }
    match pages::values_counted(bytes, chunk.compression()) {
        Some(values) if column.max_rep_level() > 0 => values >= rows as u64,
        Some(values) => values == rows as u64,
        None => false,
    }
}

/// The most rows, and uncompressed bytes of the projected columns, of a row
/// group decoded whole although it has more rows than a batch (see
/// [`decodes_whole`]). Decoded values can take several times their pages'
/// bytes (dictionary-encoded strings), so both are bounded. Up to as many
/// rows, fastingest's decoders take the footer's count on its word.
const WHOLE_MOST_ROWS: i64 = 1 << 23;
const WHOLE_MOST_BYTES: i64 = 128 << 20;

/// The most rows of a row group fastingest's decoders take whole, when
/// its chunks' page headers back the footer's count (see [`rows_backed`]):
/// a column's output then reserves at most 4 GiB (16-byte decimals). Spark
/// writes row groups by bytes (128 MB): 20 M rows of a few narrow columns
/// went to the crate a batch at a time, at 0.64× polars.
const CHECKED_MOST_ROWS: i64 = 1 << 28;

/// `batches` cut into batches of at most `rows` rows (slices: no copy).
pub(super) fn slice_batches(batches: Vec<RecordBatch>, rows: usize) -> Vec<RecordBatch> {
    let rows = rows.max(1);
    let mut out = Vec::new();
    for batch in batches {
        let mut at = 0;
        while at < batch.num_rows() {
            let len = rows.min(batch.num_rows() - at);
            out.push(batch.slice(at, len));
            at += len;
        }
    }
    out
}

/// The pages of column `leaf` of row group `rg` that `spans` holds when it
/// lacks the whole chunk (the plan fetched the dictionary page and the data
/// pages the page index chose: [`super::format`]'s `chunk_ranges`): those
/// pages end to end, and where the rows of the pages left out lie (see
/// [`pages::ChunkPages::with_gaps`]). `None` without an offset index, or
/// when a dictionary page is missing.
///
/// Pages that lie end to end in the file (a range of a sorted column keeps
/// a run of them) are handed out as the fetched bytes they are, without a
/// copy; pages with skipped ones between them are copied together.
fn fetched_pages(
    metadata: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    spans: &FetchedSpans,
) -> Option<(Bytes, Vec<(usize, usize)>)> {
    let group = metadata.row_group(rg);
    let rows = usize::try_from(group.num_rows()).ok()?;
    let pages = metadata
        .offset_index()?
        .get(rg)?
        .get(leaf)?
        .page_locations();
    let (start, _) = group.column(leaf).byte_range();
    let first = u64::try_from(pages.first()?.offset).ok()?;
    // The byte ranges held, in file order, and the gaps' places in them.
    let mut held: Vec<Range<u64>> = Vec::new();
    let mut len = 0usize;
    if first > start {
        held.push(start..first);
        len += usize::try_from(first - start).ok()?;
    }
    let mut gaps: Vec<(usize, usize)> = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let from = usize::try_from(page.first_row_index).ok()?;
        let to = match pages.get(i + 1) {
            Some(next) => usize::try_from(next.first_row_index).ok()?,
            None => rows,
        };
        let offset = u64::try_from(page.offset).ok()?;
        let size = u64::try_from(page.compressed_page_size).ok()?;
        let range = offset..offset.checked_add(size)?;
        if spans.holds(&range) {
            len += usize::try_from(size).ok()?;
            crate::plan::push_touching(&mut held, range);
            continue;
        }
        match gaps.last_mut() {
            // Pages left out one after another: one gap.
            Some((at, n)) if *at == len => *n += to.checked_sub(from)?,
            _ => gaps.push((len, to.checked_sub(from)?)),
        }
    }
    let bytes = match held.as_slice() {
        [one] => spans.get(one)?,
        _ => {
            let mut joined = Vec::with_capacity(len);
            for range in &held {
                joined.extend_from_slice(&spans.get(range)?);
            }
            Bytes::from(joined)
        }
    };
    Some((bytes, gaps))
}

/// The dictionary type a string or binary `column` read as `target`, with
/// a dictionary of `entries`, is decoded to as keys (see
/// [`decode_flat_columns`]); `None` for any other. The narrowest keys that
/// index it: less to write, and to read back when the filter runs.
fn keys_of(column: &ColumnDescriptor, target: &DataType, entries: usize) -> Option<DataType> {
    let values = match target {
        DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8,
        DataType::Binary | DataType::LargeBinary => DataType::Binary,
        _ => return None,
    };
    let key = match entries {
        0..=128 => DataType::Int8,
        129..=32_768 => DataType::Int16,
        _ => DataType::Int32,
    };
    let keys = DataType::Dictionary(Box::new(key), Box::new(values));
    flat::decodes(column, &keys).then_some(keys)
}

/// The top-level fields `file`'s projection reads from, in schema order.
pub(super) fn projected_roots(file: &PreparedFile) -> Vec<usize> {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    let mut roots: Vec<usize> = (0..descr.num_columns())
        .filter(|&l| file.projection.mask.leaf_included(l))
        .map(|l| descr.get_column_root_idx(l))
        .collect();
    roots.dedup();
    roots
}

/// The unit's columns `roots` (top-level fields the projection reads) that
/// fastingest's own decoders take (flat columns: [`flat`]; lists of numbers
/// and strings: [`lists`]), as (top-level field, its [`Pieces`]); the
/// others are left to the `parquet` crate. With a `selection` (a bit per
/// row of the unit), only the rows it sets. A string or binary column among `keyed`
/// whose pages are all dictionary-encoded comes as a dictionary array (its
/// keys and entries: no value copied out), for a filter to compare each
/// distinct value once. The columns are decoded in parallel: idle
/// decode threads help the one decoding this unit (see
/// [`decode_threads::run_all`]).
pub(super) fn decode_flat_columns(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    threads: usize,
    roots_wanted: &[usize],
    selection: Option<&BooleanBuffer>,
    keyed: &[usize],
) -> Result<Vec<(usize, Pieces)>> {
    let metadata = file.reader_metadata.metadata();
    let rg = file.plan.units[unit].index;
    let group = metadata.row_group(rg);
    let descr = metadata.file_metadata().schema_descr();
    let fields = file.reader_metadata.schema().fields();
    let rows = group.num_rows() as usize;
    let mut roots = Vec::new();
    let mut parts: Vec<Part<flat::Decoded<ArrayRef>>> = Vec::new();
    let mut unit_bytes = 0i64;
    let mapped = file.source.mapped();
    // A chunk is split only where the threads would otherwise wait: the
    // read has fewer units than threads, and it alone would take longer
    // than the threads' even share of what is decoded with it.
    let few_units = file.plan.units.len() < threads;
    // Nor a filter's columns (`keyed`): the filter reads each as one array,
    // and joining the pieces copied them (a filter on a 24 MB int64 chunk:
    // peak 142 → 161 MiB).
    let splits = few_units && keyed.is_empty();
    let wanted: HashSet<usize> = roots_wanted.iter().copied().collect();
    let all_work: i64 = (0..descr.num_columns())
        .filter(|&l| file.projection.mask.leaf_included(l))
        .filter(|&l| wanted.contains(&descr.get_column_root_idx(l)))
        .map(|l| decode_work(group.column(l)))
        .sum();
    for &root in roots_wanted {
        let leaves: Vec<usize> = (0..descr.num_columns())
            .filter(|&l| descr.get_column_root_idx(l) == root)
            .collect();
        let (Some(full), Some(&first_leaf)) = (fields.get(root), leaves.first()) else {
            continue;
        };
        // The field as the projection reads it: a struct (or a list of
        // structs) only some of whose fields are asked for holds only
        // those, its schema node too.
        let included = |l: usize| file.projection.mask.leaf_included(l);
        let full_node = &descr.root_schema().get_fields()[root];
        let Some((root_node, field)) = projected::cut_to(full_node, full, first_leaf, &included)
        else {
            continue;
        };
        let leaves: Vec<usize> = leaves.into_iter().filter(|&l| included(l)).collect();
        let columns: Vec<_> = leaves.iter().map(|&l| descr.column(l)).collect();
        // A struct or a list of structs is decoded here with each chunk
        // whole: under a selection, every row is decoded, then the selected
        // ones kept (the crate's reader took twice the time and memory of
        // the whole read for a tenth of the rows).
        if let DataType::Struct(_) = field.data_type() {
            let Some(shape) = structs::shape(&root_node, &columns, &field) else {
                continue;
            };
            let Some(held) = whole_chunks(group, &leaves, &columns, rows, spans, &mut unit_bytes)
            else {
                continue;
            };
            let metadata = Arc::clone(metadata);
            let keep = selection.cloned();
            roots.push((root, leaves[0]));
            let part: Part<_> = Box::new(move || {
                let group = metadata.row_group(rg);
                let chunks = held
                    .into_iter()
                    .zip(columns)
                    .map(|((leaf, bytes), column)| structs::FieldChunk {
                        bytes,
                        meta: group.column(leaf).clone(),
                        column,
                    })
                    .collect();
                let array = structs::decode(&shape, chunks, rows, threads)?;
                flat::selected_rows(array, keep.as_ref())
            });
            parts.push(releasing_chunks(mapped.as_ref(), group, &leaves, part));
            continue;
        }
        if let DataType::List(_)
        | DataType::LargeList(_)
        | DataType::FixedSizeList(..)
        | DataType::Map(..) = field.data_type()
        {
            // A list of structs of flat fields, or a map (a list of numbers
            // or strings is a single leaf's: below).
            let items =
                lists::struct_items(&root_node, &columns, field.data_type(), field.is_nullable());
            if let Some(items) = items {
                if let Some(held) =
                    whole_chunks(group, &leaves, &columns, rows, spans, &mut unit_bytes)
                {
                    let metadata = Arc::clone(metadata);
                    let keep = selection.cloned();
                    roots.push((root, leaves[0]));
                    let part: Part<_> = Box::new(move || {
                        let group = metadata.row_group(rg);
                        let chunks = held
                            .into_iter()
                            .map(|(leaf, bytes)| (bytes, group.column(leaf).clone()))
                            .collect();
                        let array = lists::decode_struct_items(chunks, &items, rows, threads)?;
                        flat::selected_rows(array, keep.as_ref())
                    });
                    parts.push(releasing_chunks(mapped.as_ref(), group, &leaves, part));
                }
                continue;
            }
        }
        let [leaf] = leaves.as_slice() else {
            continue;
        };
        let leaf = *leaf;
        let column = descr.column(leaf);
        let target = field.data_type().clone();
        let list = if flat::decodes(&column, &target) {
            None
        } else {
            match lists::shape(&root_node, &column, &target, field.is_nullable()) {
                Some(shape) => Some(shape),
                None => continue,
            }
        };
        let chunk = group.column(leaf);
        if chunk.crypto_metadata().is_some() {
            continue;
        }
        let (start, len) = chunk.byte_range();
        // The whole chunk, or, for a flat column under a selection, the
        // pages the page index chose (the others' rows are not selected).
        let (bytes, gaps) = match spans.get(&(start..start + len)) {
            Some(bytes) => (bytes, Vec::new()),
            None if list.is_none() && selection.is_some() => {
                match fetched_pages(metadata, rg, leaf, spans) {
                    Some(pages) => pages,
                    None => continue,
                }
            }
            None => continue,
        };
        // The footer's count of rows must be one the chunk's pages back; a
        // chunk whose pages were left out (`gaps`) cannot be counted, so
        // in a large row group the crate reads it.
        let backed = match gaps.is_empty() {
            true => rows_backed(&bytes, chunk, &column, rows),
            false => rows <= WHOLE_MOST_ROWS as usize,
        };
        if !backed {
            continue;
        }
        unit_bytes += chunk.uncompressed_size().max(0);
        let as_keys = match keyed.contains(&root) && list.is_none() {
            true => pages::dictionary_throughout(&bytes, chunk.compression())
                .and_then(|entries| keys_of(&column, &target, entries)),
            false => None,
        };
        // A large flat chunk read whole is decoded in runs of its pages on
        // several threads (see [`Pieces`]).
        let windows = match (&list, &as_keys, selection, gaps.is_empty()) {
            (None, None, None, true) if splits => {
                chunk_windows(&bytes, chunk, rows, threads, all_work)
            }
            _ => None,
        };
        if let Some(windows) = windows {
            let (start, _) = chunk.byte_range();
            for window in windows {
                let (metadata, bytes, column) =
                    (Arc::clone(metadata), bytes.clone(), column.clone());
                let target = target.clone();
                let read = start + window.bytes.start as u64..start + window.bytes.end as u64;
                roots.push((root, leaf));
                let part: Part<_> = Box::new(move || {
                    let chunk = metadata.row_group(rg).column(leaf);
                    flat::decode_window(bytes, chunk, &column, &target, &window)
                });
                parts.push(releasing(mapped.as_ref(), vec![read], part));
            }
            continue;
        }
        let metadata = Arc::clone(metadata);
        let selection = selection.cloned();
        roots.push((root, leaf));
        let part: Part<_> = Box::new(move || {
            let chunk = metadata.row_group(rg).column(leaf);
            let selection = selection.as_ref();
            if let Some(keys) = &as_keys {
                let gaps = gaps.clone();
                match flat::decode_column(
                    bytes.clone(),
                    chunk,
                    &column,
                    keys,
                    rows,
                    selection,
                    gaps,
                ) {
                    Err(flat::Failure::Unsupported) => {}
                    decoded => return decoded,
                }
            }
            match &list {
                None => flat::decode_column(bytes, chunk, &column, &target, rows, selection, gaps),
                Some(shape) => lists::decode_column(bytes, chunk, shape, rows, selection),
            }
        });
        parts.push(releasing_chunks(mapped.as_ref(), group, &[leaf], part));
    }
    let (roots, parts) = longest_first(file, group, roots, parts);
    let mut done: Vec<(usize, Pieces)> = Vec::new();
    // A column that failed in one of its pieces is left out whole.
    let mut failed: Option<usize> = None;
    for ((root, leaf), outcome) in roots
        .into_iter()
        .zip(decode_threads::run_all(sharing(threads, unit_bytes), parts))
    {
        if failed == Some(root) {
            continue;
        }
        // A decoder's panic (`run_all` caught it) is this file's error,
        // naming the column: not a crash, and not left to another decoder.
        let decoded = outcome.map_err(|panic| Error::Corrupt {
            location: file.source.location().to_string(),
            range: None,
            detail: format!(
                "row group {rg}, column {}: the decoder failed: {panic}",
                group.column(leaf).column_path()
            ),
            cause: None,
        })?;
        // Anything this decoder does not take, or finds wrong, goes to the
        // `parquet` crate: it decodes what the format allows that this
        // decoder does not expect (the corpora have such files), and says
        // what is wrong with a damaged column as it always has.
        match decoded {
            Ok(array) => match done.last_mut() {
                Some((last, pieces)) if *last == root => pieces.push(array),
                _ => done.push((root, vec![array])),
            },
            Err(failure) => {
                if let flat::Failure::Corrupt(detail) = failure {
                    let chunk = group.column(leaf);
                    log::debug!(
                        "{}: row group {rg}, column {}: left to the parquet crate: {detail}",
                        file.source.location(),
                        chunk.column_path()
                    );
                    let (start, len) = chunk.byte_range();
                    file.damage.note(Damage {
                        row_group: rg,
                        column: chunk.column_path().to_string(),
                        range: start..start.saturating_add(len),
                        detail,
                    });
                }
                if done.last().is_some_and(|(last, _)| *last == root) {
                    done.pop();
                }
                failed = Some(root);
            }
        }
    }
    // Pieces whose pages' counts of rows do not add up to the row group's
    // (a damaged header) go to the crate too, which says what is wrong.
    done.retain(|(_, pieces)| {
        pieces.len() < 2 || pieces.iter().map(|a| a.len()).sum::<usize>() == rows
    });
    // In the order asked (see [`longest_first`]).
    let asked: HashMap<usize, usize> = roots_wanted
        .iter()
        .enumerate()
        .map(|(i, &r)| (r, i))
        .collect();
    done.sort_by_key(|(root, _)| asked.get(root).copied());
    Ok(done)
}

/// A column decoded here: one array of all the unit's rows, or pieces of
/// consecutive rows that add up to them. Where a file's read has fewer
/// units than decode threads, a flat chunk that would take a thread longer
/// than the others take for all the rest is decoded as runs of its pages on
/// several threads at once (see [`chunk_windows`]): the strings of a row
/// group of 3 M rows took 58 of the read's 73 ms on one thread while the
/// other waited. Split anywhere else, chunks only cost more: each run reads
/// the dictionary again and writes its rows into another thread's memory
/// (one string column of four row groups: 47.2 → 52.9 ms; a Spark-like
/// file's chunks of a size: 31.3 → 33.1 ms).
pub(crate) type Pieces = Vec<ArrayRef>;

/// The runs of pages a flat `chunk` of `bytes` (`rows` rows) is decoded in
/// on up to `threads` threads, when its [`decode_work`] is more than a
/// thread's share of `all_work` (the columns decoded with it): one run per
/// [`BYTES_PER_PIECE`] it writes ([`decoded_bytes`]); `None` for one.
fn chunk_windows(
    bytes: &Bytes,
    chunk: &ColumnChunkMetaData,
    rows: usize,
    threads: usize,
    all_work: i64,
) -> Option<Vec<pages::PageWindow>> {
    let threads_i64 = i64::try_from(threads).unwrap_or(i64::MAX);
    if decode_work(chunk).saturating_mul(threads_i64) <= all_work {
        return None;
    }
    let pieces = usize::try_from(decoded_bytes(chunk) / BYTES_PER_PIECE)
        .unwrap_or(usize::MAX)
        .min(threads);
    match pieces {
        0 | 1 => None,
        // Pages too large to share out may make a single window.
        n => pages::page_windows(bytes, chunk.compression(), n, rows).filter(|w| w.len() > 1),
    }
}

/// `roots` (each part's top-level field and leaf) and their `parts`, the
/// longest work first (a column's pieces one after another, in order) when
/// a chunk was split into pieces (see [`Pieces`]): pieces decoded after
/// the other columns left one thread the last of them alone (the 3 M-row
/// file, steady: 75 ms with the pieces first and the rest in file order,
/// 65 ms longest first). Otherwise as they came, in file order.
fn longest_first<T>(
    file: &PreparedFile,
    group: &RowGroupMetaData,
    roots: Vec<(usize, usize)>,
    parts: Vec<Part<T>>,
) -> (Vec<(usize, usize)>, Vec<Part<T>>) {
    let split = roots.windows(2).any(|w| w[0].0 == w[1].0);
    if !split {
        return (roots, parts);
    }
    let descr = group.schema_descr();
    let mut work: HashMap<usize, (i64, i64)> = HashMap::new();
    for &(root, _) in &roots {
        work.entry(root).or_default().1 += 1;
    }
    for leaf in (0..descr.num_columns()).filter(|&l| file.projection.mask.leaf_included(l)) {
        if let Some((bytes, _)) = work.get_mut(&descr.get_column_root_idx(leaf)) {
            *bytes += decode_work(group.column(leaf));
        }
    }
    let mut order: Vec<(std::cmp::Reverse<i64>, usize)> = roots
        .iter()
        .enumerate()
        .map(|(i, (root, _))| {
            let (bytes, pieces) = work.get(root).copied().unwrap_or((0, 1));
            (std::cmp::Reverse(bytes / pieces.max(1)), i)
        })
        .collect();
    order.sort_unstable();
    let mut parts: Vec<Option<Part<T>>> = parts.into_iter().map(Some).collect();
    let reordered = order.iter().filter_map(|&(_, i)| parts[i].take()).collect();
    (order.iter().map(|&(_, i)| roots[i]).collect(), reordered)
}

/// About what decoding `chunk` costs: its decoded pages' bytes, twice for
/// strings and binary (a value at a time, each copied out; the 3 M-row
/// file's 69 MB of strings took 58 ms, its 84 MB of numbers 30), or a
/// value's width for each value where that is more (see
/// [`decoded_bytes`]).
fn decode_work(chunk: &ColumnChunkMetaData) -> i64 {
    let pages = chunk.uncompressed_size().max(0);
    let pages = match chunk.column_type() {
        parquet::basic::Type::BYTE_ARRAY => pages.saturating_mul(2),
        _ => pages,
    };
    pages.max(values_bytes(chunk))
}

/// About the bytes decoding `chunk` writes: its decoded pages' bytes, or a
/// value's width for each value where that is more. Pages of dictionary
/// indices are a fraction of what they decode to: 20 M rows of four words
/// are 5 MB of pages and 80 MB of string offsets alone, and their decode
/// took as long as 80 MB of int32; counted by their pages, they were
/// decoded on one thread after the others.
fn decoded_bytes(chunk: &ColumnChunkMetaData) -> i64 {
    chunk.uncompressed_size().max(0).max(values_bytes(chunk))
}

/// `chunk`'s values times the bytes each is decoded to at least (a string's
/// offset, a boolean none).
fn values_bytes(chunk: &ColumnChunkMetaData) -> i64 {
    use parquet::basic::Type;
    let width = match chunk.column_type() {
        Type::BOOLEAN => 0,
        Type::INT32 | Type::FLOAT | Type::BYTE_ARRAY => 4,
        Type::INT64 | Type::DOUBLE | Type::INT96 => 8,
        Type::FIXED_LEN_BYTE_ARRAY => i64::from(chunk.column_descr().type_length().max(0)),
    };
    chunk.num_values().max(0).saturating_mul(width)
}

/// Bytes a chunk's decode writes ([`decoded_bytes`]) for each thread that
/// decodes it (see [`Pieces`]).
const BYTES_PER_PIECE: i64 = 8 << 20;

/// `part`, then the mapped pages of the column chunks of `leaves` it
/// decodes given back (see [`MappedFile::release`]): a row group's span is
/// held until its last column is decoded, and the pages of those decoded
/// first stayed resident beside their output (a file of one 105 MB row
/// group peaked with 145 MiB of the file's pages mapped). fastingest's
/// decoders copy every value out of the pages; a column they leave to the
/// crate reads its pages again, faulted in from the page cache.
fn releasing_chunks<T: 'static>(
    mapped: Option<&Arc<MappedFile>>,
    group: &RowGroupMetaData,
    leaves: &[usize],
    part: Part<T>,
) -> Part<T> {
    let chunks: Vec<Range<u64>> = leaves
        .iter()
        .map(|&leaf| group.column(leaf))
        .map(|chunk| {
            let (start, len) = chunk.byte_range();
            start..start.saturating_add(len)
        })
        .collect();
    releasing(mapped, chunks, part)
}

/// `part`, then the mapped pages of `ranges` given back (see
/// [`releasing_chunks`]).
fn releasing<T: 'static>(
    mapped: Option<&Arc<MappedFile>>,
    ranges: Vec<Range<u64>>,
    part: Part<T>,
) -> Part<T> {
    let Some(mapped) = mapped else {
        return part;
    };
    if ranges.is_empty() {
        return part;
    }
    let mapped = Arc::clone(mapped);
    Box::new(move || {
        let decoded = part();
        for range in ranges {
            mapped.release(range);
        }
        decoded
    })
}

/// The whole column chunks of `leaves` in `spans` (leaf and bytes, in
/// order), their uncompressed bytes added to `unit_bytes`; `None` when one
/// is not there whole, or is encrypted.
fn whole_chunks(
    group: &RowGroupMetaData,
    leaves: &[usize],
    columns: &[ColumnDescPtr],
    rows: usize,
    spans: &FetchedSpans,
    unit_bytes: &mut i64,
) -> Option<Vec<(usize, Bytes)>> {
    let mut held = Vec::with_capacity(leaves.len());
    let mut bytes_of = 0i64;
    for (&leaf, column) in leaves.iter().zip(columns) {
        let chunk = group.column(leaf);
        if chunk.crypto_metadata().is_some() {
            return None;
        }
        let (start, len) = chunk.byte_range();
        let bytes = spans.get(&(start..start + len))?;
        if !rows_backed(&bytes, chunk, column, rows) {
            return None;
        }
        held.push((leaf, bytes));
        bytes_of += chunk.uncompressed_size().max(0);
    }
    *unit_bytes += bytes_of;
    Some(held)
}

/// Threads a unit of `bytes` (its columns' uncompressed pages) is shared
/// out to, of `threads`: one more for each [`BYTES_PER_HELPER`]. Handing a
/// column to another thread costs a wake-up (tens of µs on a VM); a small
/// row group's columns decode faster on one thread (the suite's
/// `mixed-card1000` file, 300 KB row groups: 2.2-2.6 ms a read on one thread,
/// 2.8 ms shared out; the `int` file's 2.9 MB ones: 5.1 ms shared, 5.5 ms
/// not).
fn sharing(threads: usize, bytes: i64) -> usize {
    let helpers = usize::try_from(bytes / BYTES_PER_HELPER).unwrap_or(0);
    threads.min(1 + helpers).max(1)
}

/// Uncompressed bytes of a unit's columns for each thread that helps.
const BYTES_PER_HELPER: i64 = 1 << 20;

/// The row group's batches: the columns decoded here (whole, or in pieces)
/// beside those the `parquet` crate decoded (as one batch or several, or
/// none when it had no columns), in projection order, under the schema the
/// crate gives the projection. A batch ends where a crate batch or a piece
/// ends, so that each takes a slice of one array of every column (no copy).
pub(super) fn merge(
    file: &PreparedFile,
    direct: Vec<(usize, Pieces)>,
    rest: Vec<RecordBatch>,
    rows: usize,
) -> Result<Vec<RecordBatch>> {
    let location = file.source.location();
    let schema = file.reader_metadata.schema();
    let misfit = |detail: String| Error::Corrupt {
        location: location.to_string(),
        range: None,
        detail,
        cause: None,
    };
    let rest_rows: usize = rest.iter().map(RecordBatch::num_rows).sum();
    if !rest.is_empty() && rest_rows != rows {
        return Err(misfit(format!(
            "the row group decoded to {rest_rows} rows of some columns and {rows} of others"
        )));
    }
    for (root, pieces) in &direct {
        let decoded: usize = pieces.iter().map(|a| a.len()).sum();
        if decoded != rows {
            return Err(misfit(format!(
                "the row group decoded to {decoded} rows of column {} and {rows} of others",
                schema.field(*root).name()
            )));
        }
    }
    let crate_arrays: Vec<(usize, &RecordBatch)> = starts(rest.iter().map(RecordBatch::num_rows))
        .zip(&rest)
        .collect();
    let mut ends: Vec<usize> = vec![rows];
    ends.extend(crate_arrays.iter().map(|(at, b)| at + b.num_rows()));
    for (_, pieces) in &direct {
        ends.extend(starts(pieces.iter().map(|a| a.len())).skip(1));
    }
    ends.retain(|&end| end <= rows && (end > 0 || rows == 0));
    ends.sort_unstable();
    ends.dedup();
    let mut batches = Vec::with_capacity(ends.len());
    let mut at = 0;
    for end in ends {
        let len = end - at;
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        let mut from_rest = 0;
        let crate_batch = crate_arrays
            .iter()
            .find(|(start, b)| *start <= at && at < start + b.num_rows().max(1));
        for root in projected_roots(file) {
            if let Some((_, pieces)) = direct.iter().find(|(r, _)| *r == root) {
                let Some(array) = rows_of(pieces, at, len) else {
                    return Err(misfit(format!("no piece holds rows {at}..{end}")));
                };
                // Typed as decoded: a struct read in part holds only the
                // fields asked for, as the crate's batches type it.
                let field = schema.field(root).clone();
                fields.push(field.with_data_type(array.data_type().clone()));
                columns.push(array);
            } else if let Some((start, batch)) =
                crate_batch.filter(|(_, b)| from_rest < b.num_columns())
            {
                fields.push(batch.schema().field(from_rest).clone());
                columns.push(batch.column(from_rest).slice(at - start, len));
                from_rest += 1;
            }
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        let batch = RecordBatch::try_new_with_options(schema, columns, &options)
            .map_err(|e| misfit(format!("the row group's columns do not line up: {e}")))?;
        batches.push(batch);
        at = end;
    }
    Ok(batches)
}

/// Rows `at..at + len` of a column's `pieces` (consecutive rows), where
/// one piece holds them all.
fn rows_of(pieces: &[ArrayRef], at: usize, len: usize) -> Option<ArrayRef> {
    let mut start = 0;
    for piece in pieces {
        if at < start + piece.len() || (len == 0 && at == start) {
            let from = at - start;
            return match (from, len == piece.len()) {
                (0, true) => Some(Arc::clone(piece)),
                _ => (from + len <= piece.len()).then(|| piece.slice(from, len)),
            };
        }
        start += piece.len();
    }
    None
}

/// The row each of consecutive runs of `lengths` starts at.
fn starts(lengths: impl Iterator<Item = usize>) -> impl Iterator<Item = usize> {
    lengths.scan(0usize, |at, len| {
        let start = *at;
        *at += len;
        Some(start)
    })
}

/// Rows per decoded batch: the whole row group (up to 2^20 rows), fewer
/// when fixed-length columns are wide, since the decoder reserves rows ×
/// width for them up front (at most [`BATCH_FIXED_BYTES`] a batch).
pub(super) fn batch_rows(file: &PreparedFile, num_rows: i64) -> usize {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    let widest = (0..descr.num_columns())
        .filter(|&l| file.projection.mask.leaf_included(l))
        .map(|l| descr.column(l))
        .filter(|c| c.physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY)
        .map(|c| c.type_length().max(1) as i64)
        .max()
        .unwrap_or(1);
    let by_width = (BATCH_FIXED_BYTES / widest).max(1);
    num_rows.clamp(1, (1 << 20).min(by_width)) as usize
}

/// The most bytes a batch's widest fixed-length column may take.
const BATCH_FIXED_BYTES: i64 = 256 << 20;

/// Checks the page headers of the unit's column chunks in `spans` before
/// the decoder allocates what they claim (see [`super::pages`]), and their
/// pages' checksums where the read asks (`Config::verify_checksums`): so
/// whichever decoder reads a page, the `parquet` crate's included, reads
/// bytes that match.
pub(super) fn check_unit_pages(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
) -> Result<()> {
    check_pages_of(file, unit, spans, |_| true)
}

/// [`check_unit_pages`] for the chunks of the leaves `of` accepts only.
pub(super) fn check_pages_of(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    of: impl Fn(usize) -> bool,
) -> Result<()> {
    let metadata = file.reader_metadata.metadata();
    let plan_unit = &file.plan.units[unit];
    let group = metadata.row_group(plan_unit.index);
    let checked = |&l: &usize| file.projection.mask.leaf_included(l) && of(l);
    for leaf in (0..group.num_columns()).filter(checked) {
        let chunk = group.column(leaf);
        let (start, len) = chunk.byte_range();
        let end = start + len;
        // The fetched ranges of this chunk (all of it, or its dictionary and
        // the pages a selection keeps): each starts at a page header.
        for range in plan_unit
            .ranges
            .iter()
            .filter(|r| r.start >= start && r.end <= end)
        {
            let Some(bytes) = spans.get(range) else {
                continue;
            };
            let codec = chunk.compression();
            super::pages::check_pages(&bytes, codec, file.verify_checksums)
                .map_err(|bad| bad_page(file, plan_unit.index, chunk, range.clone(), bad))?;
        }
    }
    Ok(())
}

/// The error for `bad`, a page of the column chunk `chunk` of row group
/// `rg` found in its fetched bytes `range` (of the file): it names the
/// page's bytes where its header was read, else the rest of the range.
pub(super) fn bad_page(
    file: &PreparedFile,
    rg: usize,
    chunk: &ColumnChunkMetaData,
    range: Range<u64>,
    bad: pages::BadPage,
) -> Error {
    let at = range.start + bad.offset as u64;
    let page_end = bad.end.map_or(range.end, |e| range.start + e as u64);
    Error::Corrupt {
        location: file.source.location().to_string(),
        range: Some(at..page_end),
        detail: format!(
            "row group {rg}, column {}: {}",
            chunk.column_path(),
            bad.detail
        ),
        cause: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_shared_out_by_its_size_up_to_the_threads() {
        let mib = 1 << 20;
        assert_eq!(sharing(2, 300 << 10), 1);
        assert_eq!(sharing(2, 0), 1);
        assert_eq!(sharing(2, 3 * mib), 2);
        assert_eq!(sharing(8, 3 * mib), 4);
        assert_eq!(sharing(1, 100 * mib), 1);
        assert_eq!(sharing(0, 100 * mib), 1);
    }
}
