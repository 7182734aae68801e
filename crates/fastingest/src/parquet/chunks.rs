//! Raw column chunks: the plan's bytes exactly as the file stores them
//! (compressed, encoded), with the metadata a GPU decoder needs, and a
//! minimal Parquet file re-packed from them.
//!
//! The same plan, fetcher, retries and cache as a decoded read; only the
//! decoding is left to the consumer.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Compression;
use parquet::file::metadata::{
    FileMetaData, ParquetMetaData, ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::schema::types::{SchemaDescriptor, Type, TypePtr};

use super::format::prepare;
use super::select::{project, Layout};
use crate::dataset::FileScope;
use crate::error::{Error, Result};
use crate::fetch::{each_file, Fetcher};
use crate::known::Known;
use crate::pipeline::{
    check_single_file, checked_plan, fetch_pieces, with_files, PieceReceiver, RawFile, ReadOptions,
};
use crate::plan::{FilePlan, PlanUnit};
use crate::source::Source;

/// What a column chunk is, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Index of the chunk's file in [`ChunkLayout::files`].
    pub file: usize,
    /// The file, as the user named it.
    pub source: String,
    /// Row group in the file.
    pub row_group: usize,
    /// Leaf column index in the file's schema.
    pub leaf: usize,
    /// Dotted Parquet path of the leaf (`a`, `s.x`, `l.list.element`).
    pub column: String,
    /// Where the chunk starts in the file (its dictionary page, if any).
    pub file_offset: u64,
    /// The chunk's length in bytes (compressed, with page headers).
    pub length: u64,
    /// Compression codec (`SNAPPY`, `ZSTD`, `UNCOMPRESSED`, ...).
    pub codec: String,
    /// Values in the chunk, nulls and repeated values included.
    pub num_values: i64,
    /// Physical type (`INT32`, `BYTE_ARRAY`, ...).
    pub physical_type: String,
    /// Logical type, if the schema gives one (`String`, `Timestamp {..}`, ...).
    pub logical_type: Option<String>,
}

/// One file of a chunk read: its footer and what was selected.
#[derive(Debug, Clone)]
pub struct ChunkFile {
    /// Where the bytes come from.
    pub source: Source,
    /// The file's decoded footer.
    pub metadata: Arc<ParquetMetaData>,
    /// Selected row groups, in read order.
    pub row_groups: Vec<usize>,
    /// Selected leaf columns, in file order.
    pub leaves: Vec<usize>,
    /// The bytes the footer's round trip brought, as `(offset, bytes)`
    /// spans (served from memory instead of fetched again).
    known: Known,
}

impl ChunkFile {
    /// The file's top-level columns, in its order.
    fn column_names(&self) -> Vec<String> {
        let root = self.metadata.file_metadata().schema_descr().root_schema();
        root.get_fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect()
    }
}

/// Every chunk of a read, in file, row-group and column order.
#[derive(Debug, Clone, Default)]
pub struct ChunkLayout {
    /// The files read.
    pub files: Vec<ChunkFile>,
    /// The chunks.
    pub chunks: Vec<ChunkMeta>,
}

/// The chunks of a read with their bytes.
#[derive(Debug, Clone, Default)]
pub struct ChunkSet {
    /// What each chunk is.
    pub layout: ChunkLayout,
    /// Each chunk's bytes (views into the fetched spans, not copies).
    pub bytes: Vec<Bytes>,
}

/// A planned chunk read, ready to fetch.
pub struct ChunkPlan {
    /// What will arrive.
    pub layout: ChunkLayout,
    fetcher: Fetcher,
    plans: Vec<FilePlan>,
    options: ReadOptions,
}

/// Chunk bytes as they arrive: `(index into the layout's chunks, bytes)`,
/// in whatever order their spans complete.
pub type ChunkReceiver = PieceReceiver;

/// Reads the column chunks `options` select (columns, row groups, and row
/// groups a filter's statistics leave) from `sources`.
pub async fn read_chunks(sources: &[String], options: &ReadOptions) -> Result<ChunkSet> {
    let plan = plan_chunks_fetched_next(sources, options).await?;
    let (layout, mut arriving) = plan.fetch();
    let mut bytes = vec![Bytes::new(); layout.chunks.len()];
    while let Some(next) = arriving.recv().await {
        let (i, b) = next?;
        bytes[i] = b;
    }
    Ok(ChunkSet { layout, bytes })
}

/// Reads the footers and plans a chunk read without fetching column data.
pub async fn plan_chunks(sources: &[String], options: &ReadOptions) -> Result<ChunkPlan> {
    plan_chunks_scoped(sources, options, false).await
}

/// [`plan_chunks`] for a plan fetched as soon as it is made
/// ([`read_chunks`], the upload to a device): all of one remote file may
/// then have its start asked for beside its footer, as a decoded read's does
/// (see `Config::start_prefetch`).
pub(crate) async fn plan_chunks_fetched_next(
    sources: &[String],
    options: &ReadOptions,
) -> Result<ChunkPlan> {
    plan_chunks_scoped(sources, options, true).await
}

async fn plan_chunks_scoped(
    sources: &[String],
    options: &ReadOptions,
    fetched_next: bool,
) -> Result<ChunkPlan> {
    let fetcher = options.fetcher();
    let fetcher_ref = &fetcher;
    let planned = with_files(sources, options, |dataset| async move {
        check_single_file(&dataset.files, options, "row_groups")?;
        let planned = each_file(
            fetcher_ref,
            dataset.scoped(options),
            &|f: Fetcher, (s, scope)| async move {
                plan_file(&f, s, &scope.decoded_next(fetched_next)).await
            },
        )
        .await?;
        // A column no file holds is an error here as in a decoded read.
        let held: Vec<Vec<String>> = planned.iter().map(|(f, _)| f.column_names()).collect();
        dataset.check_columns_held(options, &held)?;
        Ok(planned)
    })
    .await?;
    let mut layout = ChunkLayout::default();
    let mut plans = Vec::with_capacity(planned.len());
    for (i, (file, plan)) in planned.into_iter().enumerate() {
        layout.chunks.extend(chunk_metas(i, &file));
        layout.files.push(file);
        plans.push(plan);
    }
    Ok(ChunkPlan {
        layout,
        fetcher,
        plans,
        options: options.clone(),
    })
}

impl ChunkPlan {
    /// Starts fetching in the background; chunks are sent as their spans
    /// complete. Dropping the receiver cancels the fetch.
    pub fn fetch(self) -> (ChunkLayout, ChunkReceiver) {
        let ChunkPlan {
            layout,
            fetcher,
            plans,
            options,
        } = self;
        let pieces: Vec<(usize, Range<u64>)> = layout
            .chunks
            .iter()
            .map(|c| (c.file, c.file_offset..c.file_offset + c.length))
            .collect();
        let files = layout
            .files
            .iter()
            .zip(plans)
            .map(|(file, plan)| RawFile {
                source: Arc::clone(&file.source),
                plan,
                known: file.known.clone(),
            })
            .collect();
        let arriving = fetch_pieces(fetcher, files, &pieces, options.cache);
        (layout, arriving)
    }

    /// Bytes the chunks take.
    pub fn bytes_needed(&self) -> u64 {
        self.layout.chunks.iter().map(|c| c.length).sum()
    }
}

/// Footer, selection and a whole-chunk plan for one file.
async fn plan_file(
    fetcher: &Fetcher,
    source: Source,
    scope: &FileScope<'_>,
) -> Result<(ChunkFile, FilePlan)> {
    // The decoded read's planning chooses the row groups (index, filter
    // statistics, page index); chunks are then taken whole.
    let prepared = prepare(fetcher, source, scope).await?;
    let location = prepared.source.location().to_string();
    let metadata = Arc::clone(&prepared.footer.metadata);
    // Only the requested columns: a filter's columns pruned row groups but
    // are not returned (without a filter, the read's projection is that).
    let mask = match &prepared.filter {
        None => prepared.projection.mask.clone(),
        Some(_) => {
            project(
                &location,
                &metadata,
                prepared.reader_metadata.schema(),
                prepared.columns.as_deref(),
                &BTreeSet::new(),
                Layout::default(),
            )?
            .mask
        }
    };
    let descr = metadata.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&l| mask.leaf_included(l))
        .collect();
    // A row group without rows has no chunk worth a request (pyarrow writes
    // one for an empty table, with only a dictionary page in it).
    let row_groups: Vec<usize> = prepared
        .plan
        .units
        .iter()
        .map(|u| u.index)
        .filter(|&rg| metadata.row_group(rg).num_rows() > 0)
        .collect();
    let mut units = Vec::with_capacity(row_groups.len());
    for &rg in &row_groups {
        let mut ranges = Vec::with_capacity(leaves.len());
        for &leaf in &leaves {
            let (start, len) = chunk_range(&location, &metadata, rg, leaf)?;
            ranges.push(start..start + len);
        }
        units.push(PlanUnit { index: rg, ranges });
    }
    // Planned as a decoded read is: the same slices, the same bounds check.
    let plan = checked_plan(
        &prepared.source,
        prepared.footer.file_size,
        units,
        fetcher,
        scope.files_in_read(),
    )?;
    let file = ChunkFile {
        known: prepared.known.get(),
        source: prepared.source,
        metadata,
        row_groups,
        leaves,
    };
    Ok((file, plan))
}

/// A chunk's byte range, checked (the footer may hold anything).
fn chunk_range(
    location: &str,
    metadata: &ParquetMetaData,
    rg: usize,
    leaf: usize,
) -> Result<(u64, u64)> {
    let c = metadata.row_group(rg).column(leaf);
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
    let len = c.compressed_size();
    if start < 0 || len < 0 || c.data_page_offset() < start {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail: format!(
                "row group {rg}, column {}: invalid chunk offsets (start {start}, data page {}, length {len})",
                c.column_path(),
                c.data_page_offset()
            ),
            cause: None,
        });
    }
    Ok((start as u64, len as u64))
}

fn chunk_metas(file_index: usize, file: &ChunkFile) -> Vec<ChunkMeta> {
    let descr = file.metadata.file_metadata().schema_descr();
    let mut out = Vec::with_capacity(file.row_groups.len() * file.leaves.len());
    for &rg in &file.row_groups {
        let meta = file.metadata.row_group(rg);
        for &leaf in &file.leaves {
            let c = meta.column(leaf);
            let col = descr.column(leaf);
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            out.push(ChunkMeta {
                file: file_index,
                source: file.source.location().to_string(),
                row_group: rg,
                leaf,
                column: col.path().string(),
                file_offset: start as u64,
                length: c.compressed_size() as u64,
                codec: codec_name(c.compression()).to_string(),
                num_values: c.num_values(),
                physical_type: col.physical_type().to_string(),
                logical_type: col.logical_type_ref().map(|t| format!("{t:?}")),
            });
        }
    }
    out
}

/// A codec's name as the format spells it (and pyarrow shows it): `ZSTD`, not
/// the reader's `ZSTD(ZstdLevel(1))` (the level is the writer's, not in the file).
pub fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::UNCOMPRESSED => "UNCOMPRESSED",
        Compression::SNAPPY => "SNAPPY",
        Compression::GZIP(_) => "GZIP",
        Compression::LZO => "LZO",
        Compression::BROTLI(_) => "BROTLI",
        Compression::LZ4 => "LZ4",
        Compression::ZSTD(_) => "ZSTD",
        Compression::LZ4_RAW => "LZ4_RAW",
    }
}

impl ChunkSet {
    /// A minimal Parquet file holding exactly these row groups and columns:
    /// the chunks' bytes back to back, and a footer rewritten with their new
    /// offsets (page indexes and bloom filters left out). Chunks of several
    /// files join into one file when their selected schemas agree.
    pub fn to_parquet_bytes(&self) -> Result<Vec<u8>> {
        let files = &self.layout.files;
        let Some(first) = files.first() else {
            return Err(Error::InvalidArgument(
                "the chunk set is empty: nothing to write".into(),
            ));
        };
        let first_meta = first.metadata.file_metadata();
        let schema = Arc::new(SchemaDescriptor::new(pruned_schema(first)?));
        for f in &files[1..] {
            let other = pruned_schema(f)?;
            if other != schema.root_schema_ptr() {
                return Err(Error::SchemaMismatch {
                    location: f.source.location().to_string(),
                    first: first.source.location().to_string(),
                    detail: "the selected columns have different Parquet schemas".into(),
                });
            }
        }
        let mut out: Vec<u8> = b"PAR1".to_vec();
        let mut row_groups = Vec::new();
        let mut num_rows = 0i64;
        let mut chunks = self.layout.chunks.iter().zip(&self.bytes).peekable();
        for (fi, file) in files.iter().enumerate() {
            for &rg in &file.row_groups {
                let original = file.metadata.row_group(rg);
                let rg_start = out.len() as i64;
                let mut columns = Vec::with_capacity(file.leaves.len());
                for &leaf in &file.leaves {
                    let (meta, bytes) = chunks
                        .next_if(|(m, _)| m.file == fi && m.row_group == rg && m.leaf == leaf)
                        .ok_or_else(|| {
                            Error::InvalidArgument(
                                "the chunk set's chunks do not match its files".into(),
                            )
                        })?;
                    if bytes.len() as u64 != meta.length {
                        return Err(Error::InvalidArgument(format!(
                            "{}: chunk of row group {rg}, column {} holds {} bytes, expected {}",
                            meta.source,
                            meta.column,
                            bytes.len(),
                            meta.length
                        )));
                    }
                    let shift = out.len() as i64 - meta.file_offset as i64;
                    let c = original.column(leaf).clone();
                    let moved = c
                        .clone()
                        .into_builder()
                        .set_data_page_offset(c.data_page_offset() + shift)
                        .set_dictionary_page_offset(c.dictionary_page_offset().map(|o| o + shift))
                        .set_index_page_offset(None)
                        .set_bloom_filter_offset(None)
                        .set_bloom_filter_length(None)
                        .set_offset_index_offset(None)
                        .set_offset_index_length(None)
                        .set_column_index_offset(None)
                        .set_column_index_length(None)
                        .build()
                        .map_err(|e| Error::from_parquet(&meta.source, e))?;
                    columns.push(moved);
                    out.extend_from_slice(bytes);
                }
                let sorting = sorting_after_pruning(original, &file.leaves);
                let group = RowGroupMetaData::builder(Arc::clone(&schema))
                    .set_num_rows(original.num_rows())
                    .set_total_byte_size(columns.iter().map(|c| c.uncompressed_size()).sum())
                    .set_column_metadata(columns)
                    .set_sorting_columns(sorting)
                    .set_file_offset(rg_start)
                    .set_ordinal(row_groups.len() as i16)
                    .build()
                    .map_err(|e| Error::from_parquet(file.source.location(), e))?;
                num_rows += original.num_rows();
                row_groups.push(group);
            }
        }
        let kv = rewritten_key_values(first)?;
        let file_meta = FileMetaData::new(
            first_meta.version(),
            num_rows,
            first_meta.created_by().map(str::to_string),
            kv,
            schema,
            None,
        );
        let metadata = ParquetMetaData::new(file_meta, row_groups);
        // Writes the footer, its length and the closing magic.
        ParquetMetaDataWriter::new(&mut out, &metadata)
            .finish()
            .map_err(|e| cannot_write(first, e))?;
        Ok(out)
    }
}

impl ChunkFile {
    /// The file's footer as Thrift bytes (without the trailing length and
    /// magic), with the original offsets: what cuDF's hybrid-scan reader is
    /// built from. Page indexes are not included.
    pub fn footer_bytes(&self) -> Result<Vec<u8>> {
        let fm = self.metadata.file_metadata().clone();
        let plain = ParquetMetaData::new(fm, self.metadata.row_groups().to_vec());
        let mut out = Vec::new();
        ParquetMetaDataWriter::new(&mut out, &plain)
            .finish()
            .map_err(|e| cannot_write(self, e))?;
        out.truncate(out.len().saturating_sub(8));
        Ok(out)
    }
}

/// The footer could be read but not written back (e.g. a logical type the
/// writer does not know).
fn cannot_write(file: &ChunkFile, e: parquet::errors::ParquetError) -> Error {
    Error::Unsupported {
        location: file.source.location().to_string(),
        detail: format!("cannot write a Parquet footer for its chunks: {e}"),
        cause: None,
    }
}

/// The file's schema with only the selected leaves (and the groups above them).
fn pruned_schema(file: &ChunkFile) -> Result<TypePtr> {
    let descr = file.metadata.file_metadata().schema_descr();
    let keep: BTreeSet<Vec<String>> = file
        .leaves
        .iter()
        .map(|&l| descr.column(l).path().parts().to_vec())
        .collect();
    let mut path = Vec::new();
    prune(descr.root_schema_ptr(), &mut path, &keep, true).unwrap_or_else(|| {
        Err(Error::InvalidArgument(format!(
            "{}: no columns selected",
            file.source.location()
        )))
    })
}

fn prune(
    node: TypePtr,
    path: &mut Vec<String>,
    keep: &BTreeSet<Vec<String>>,
    root: bool,
) -> Option<Result<TypePtr>> {
    if !node.is_group() {
        return keep.contains(path).then_some(Ok(node));
    }
    let mut fields = Vec::new();
    for child in node.get_fields() {
        path.push(child.name().to_string());
        let kept = prune(Arc::clone(child), path, keep, false);
        path.pop();
        match kept {
            Some(Ok(t)) => fields.push(t),
            Some(Err(e)) => return Some(Err(e)),
            None => {}
        }
    }
    if fields.is_empty() {
        return None;
    }
    if fields.len() == node.get_fields().len() {
        return Some(Ok(node));
    }
    let info = node.get_basic_info();
    let mut b = Type::group_type_builder(info.name())
        .with_fields(fields)
        .with_converted_type(info.converted_type())
        .with_logical_type(info.logical_type_ref().cloned())
        .with_id(info.has_id().then(|| info.id()));
    if !root && info.has_repetition() {
        b = b.with_repetition(info.repetition());
    }
    Some(
        b.build()
            .map(Arc::new)
            .map_err(|e| Error::InvalidArgument(e.to_string())),
    )
}

/// The row group's sort order over the kept columns: the prefix of sorting
/// columns that were all kept, renumbered.
fn sorting_after_pruning(
    rg: &RowGroupMetaData,
    leaves: &[usize],
) -> Option<Vec<parquet::file::metadata::SortingColumn>> {
    let sorting = rg.sorting_columns()?;
    let mut out = Vec::new();
    for s in sorting {
        match leaves.iter().position(|&l| l as i32 == s.column_idx) {
            Some(new) => {
                let mut s = s.clone();
                s.column_idx = new as i32;
                out.push(s);
            }
            None => break,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The file's key-value metadata, with an embedded Arrow schema narrowed to
/// the kept columns (readers apply it by position).
fn rewritten_key_values(
    file: &ChunkFile,
) -> Result<Option<Vec<parquet::file::metadata::KeyValue>>> {
    let fm = file.metadata.file_metadata();
    let Some(kv) = fm.key_value_metadata() else {
        return Ok(None);
    };
    if !kv.iter().any(|e| e.key == "ARROW:schema") {
        return Ok(Some(kv.clone()));
    }
    let descr = fm.schema_descr();
    let mask = parquet::arrow::ProjectionMask::leaves(descr, file.leaves.iter().copied());
    let location = file.source.location();
    let schema = parquet::arrow::parquet_to_arrow_schema_by_columns(descr, mask, Some(kv))
        .map_err(|e| Error::from_parquet(location, e))?;
    let mut md = schema.metadata().clone();
    md.remove("ARROW:schema");
    let encoded = parquet::arrow::encode_arrow_schema(&schema.with_metadata(md));
    Ok(Some(
        kv.iter()
            .map(|e| {
                if e.key == "ARROW:schema" {
                    parquet::file::metadata::KeyValue::new(e.key.clone(), encoded.clone())
                } else {
                    e.clone()
                }
            })
            .collect(),
    ))
}
