//! Parquet as a format of the read pipeline: open the footer, choose columns
//! and row groups (by index, by the filter's statistics and page index),
//! plan the byte ranges, and decode a row group from its fetched spans.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection};
use parquet::file::metadata::ParquetMetaData;

use super::bloom;
use super::decode::{
    decode_row_group, decode_row_group_head, decode_row_group_part, join_row_group_parts,
    row_group_parts,
};
use super::footer::{read_footer, Footer};
use super::prune::{page_row_ranges, prune_row_groups};
use super::select::{decoded_types, extract, project, validate_schema, Layout, Projection};
use crate::dataset::FileScope;
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::filter::Filter;
use crate::filter::Rows;
use crate::known::Known;
use crate::pipeline::{checked_plan, chosen_units, DecodedColumns, Format, Planned};
use crate::plan::{push_touching, FilePlan, PlanUnit};
use crate::source::Source;

/// Parquet, as the pipeline reads it.
pub(crate) struct Parquet;

/// One file's footer, its location, and the schema a full read returns.
pub type ParquetMetadata = (Source, Footer, SchemaRef);

impl Format for Parquet {
    const UNITS: &'static str = "row_groups";
    const UNIT: &'static str = "row group";
    const IN_REQUESTED_ORDER: bool = true;
    type File = PreparedFile;
    type Metadata = ParquetMetadata;

    async fn open(
        fetcher: &Fetcher,
        source: Source,
        scope: &FileScope<'_>,
    ) -> Result<ParquetMetadata> {
        let footer = footer_for(fetcher, &source, scope, false, false).await?;
        let layout = Layout::of(scope.options);
        let meta = arrow_metadata(source.location(), &footer, layout)?;
        // The schema a full read would return (same metadata rules).
        let all = project(
            source.location(),
            &footer.metadata,
            meta.schema(),
            None,
            &BTreeSet::new(),
            layout,
        )?;
        Ok((source, footer, all.output_schema))
    }

    async fn prepare(
        fetcher: &Fetcher,
        source: Source,
        scope: &FileScope<'_>,
    ) -> Result<PreparedFile> {
        prepare(fetcher, source, scope).await
    }
}

impl Planned for PreparedFile {
    fn source(&self) -> &Source {
        &self.source
    }

    fn plan(&self) -> &FilePlan {
        &self.plan
    }

    fn schema(&self) -> &SchemaRef {
        &self.projection.output_schema
    }

    fn column_names(&self) -> Vec<String> {
        let schema = self.reader_metadata.schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    fn known_bytes(&self) -> Known {
        self.known.get()
    }

    fn release_known_bytes(&self) {
        self.known.release()
    }

    fn decode(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<Vec<RecordBatch>> {
        decode_row_group(self, unit, spans, fetcher)
    }

    fn decode_filtered(
        &self,
        unit: usize,
        spans: &FetchedSpans,
        fetcher: &Fetcher,
        from_row: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        super::late::decode_row_group_filtered(self, unit, spans, fetcher, from_row)
    }

    fn decode_parts(&self, unit: usize) -> Option<Vec<Vec<Range<u64>>>> {
        row_group_parts(self, unit)
    }

    fn decode_part(
        &self,
        unit: usize,
        part: usize,
        spans: &FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<DecodedColumns> {
        decode_row_group_part(self, unit, part, spans, fetcher)
    }

    fn join_parts(
        &self,
        unit: usize,
        parts: Vec<DecodedColumns>,
        spans: FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<Vec<RecordBatch>> {
        join_row_group_parts(self, unit, parts, spans, fetcher)
    }

    fn decodes_head(&self, unit: usize) -> bool {
        // Rows chosen by the page index are decoded by the crate with their
        // selection; a head would have to follow it.
        self.selections[unit].is_none()
    }

    fn decode_head(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
        rows: usize,
    ) -> Result<Option<RecordBatch>> {
        decode_row_group_head(self, unit, spans, fetcher, rows)
    }

    fn slab_rows(&self, unit: usize) -> Option<usize> {
        super::slabs::slab_rows(self, unit)
    }

    fn decode_slab(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
        rows: Range<usize>,
    ) -> Result<Vec<RecordBatch>> {
        super::slabs::decode_row_group_slab(self, unit, spans, fetcher, rows)
    }

    fn decode_slab_filtered(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
        rows: Range<usize>,
    ) -> Result<Option<Vec<RecordBatch>>> {
        super::slabs::decode_row_group_slab_filtered(self, unit, spans, fetcher, rows)
    }

    fn output(&self, batch: RecordBatch) -> Result<RecordBatch> {
        extract(&self.projection, &batch).map_err(|e| Error::from_arrow(self.source.location(), e))
    }

    fn unit_rows(&self, unit: usize) -> u64 {
        let row_group = self.plan.units[unit].index;
        self.footer.metadata.row_group(row_group).num_rows().max(0) as u64
    }

    fn unit_decoded_bytes(&self, unit: usize) -> u64 {
        // The row group's uncompressed size, in the share its compressed
        // size gives the column chunks read.
        let planned = &self.plan.units[unit];
        let row_group = self.footer.metadata.row_group(planned.index);
        let read = planned.bytes();
        let compressed = row_group.compressed_size().max(1) as u64;
        let uncompressed = row_group.total_byte_size().max(0) as u64;
        (uncompressed as f64 * (read as f64 / compressed as f64).min(1.0)) as u64
    }
}

/// One file, planned and ready to fetch.
#[derive(Debug, Clone)]
pub struct PreparedFile {
    /// Where the bytes come from.
    pub source: Source,
    /// The decoded footer (its `tail` moved to `known`).
    pub footer: Footer,
    /// The footer as the Arrow reader sees it (Arrow schema resolved).
    pub reader_metadata: ArrowReaderMetadata,
    /// Columns to decode and return.
    pub projection: Projection,
    /// The byte ranges to fetch, one unit per selected row group.
    pub plan: FilePlan,
    /// Per unit of the plan: the rows the page index leaves, if it was used.
    pub selections: Vec<Option<RowSelection>>,
    /// The columns asked of this file (`None`: all of them).
    pub columns: Option<Vec<String>>,
    /// The rows to keep, as this file can tell (`None`: all).
    pub filter: Option<Filter>,
    /// The bytes the footer request brought (taken out of `footer`), until
    /// the read lets go of them.
    pub known: KnownBytes,
    /// Column chunks fastingest's decoders found damaged.
    pub(crate) damage: DamageSeen,
    /// Whether its pages' checksums are checked (`Config::verify_checksums`).
    pub(crate) verify_checksums: bool,
}

/// A column chunk fastingest's decoders found damaged and left to the
/// `parquet` crate, which says what is wrong in its own words, naming
/// neither the column nor its bytes: if it fails too, its error is told with
/// this (see `decode::crate_failure`).
#[derive(Debug, Clone)]
pub(crate) struct Damage {
    pub row_group: usize,
    /// The column's path, quoted.
    pub column: String,
    /// The chunk's bytes in the file.
    pub range: Range<u64>,
    /// What the decoder found.
    pub detail: String,
}

/// The first [`Damage`] found in each row group of a file. Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct DamageSeen(Arc<std::sync::Mutex<Vec<Damage>>>);

impl DamageSeen {
    pub(crate) fn note(&self, damage: Damage) {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.iter().any(|d| d.row_group == damage.row_group) {
            seen.push(damage);
        }
    }

    pub(crate) fn in_row_group(&self, row_group: usize) -> Option<Damage> {
        let seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        seen.iter().find(|d| d.row_group == row_group).cloned()
    }
}

/// The end of a file that its footer request brought (all of it, for a
/// small file), from where in the file it starts: later fetches of the file
/// are served from it, until [`KnownBytes::release`]. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct KnownBytes(Arc<std::sync::Mutex<Known>>);

impl KnownBytes {
    fn new(known: Known) -> Self {
        KnownBytes(Arc::new(std::sync::Mutex::new(known)))
    }

    /// The bytes, unless released.
    pub fn get(&self) -> Known {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Lets go of the bytes (fetches after this make requests).
    pub fn release(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Known::default();
    }
}

/// The footer as the Arrow reader sees it, decoding into
/// [`decoded_types`] (the columns laid out as `layout` says). The schema
/// Arrow writers embed in the footer is decoded here, and a damaged one can
/// trip an assertion in the decoder: that is a corrupt footer, not a
/// crashed read.
fn arrow_metadata(
    location: &str,
    footer: &Footer,
    layout: Layout<'_>,
) -> Result<ArrowReaderMetadata> {
    // A footer kept for later reads keeps its Arrow readings too.
    let key = format!("{layout:?}");
    if let Some(kept) = super::memo::arrow_reading(&footer.metadata, &key) {
        return Ok(kept);
    }
    let made = arrow_metadata_of(location, footer, layout)?;
    super::memo::keep_arrow_reading(&footer.metadata, key, &made);
    Ok(made)
}

/// [`arrow_metadata`], made from the footer.
fn arrow_metadata_of(
    location: &str,
    footer: &Footer,
    layout: Layout<'_>,
) -> Result<ArrowReaderMetadata> {
    // Nothing is shared with the closure but the metadata it only reads.
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ArrowReaderMetadata::try_new(Arc::clone(&footer.metadata), ArrowReaderOptions::new())
    }));
    match made {
        Ok(made) => {
            let mut made = made.map_err(|e| Error::from_parquet(location, e))?;
            check_fields(location, made.schema().fields())?;
            let descr = footer.metadata.file_metadata().schema_descr();
            if let Some(fixed) = decoded_types(made.schema(), descr, layout) {
                let options = ArrowReaderOptions::new().with_schema(fixed);
                made = ArrowReaderMetadata::try_new(Arc::clone(&footer.metadata), options)
                    .map_err(|e| Error::from_parquet(location, e))?;
            }
            Ok(made)
        }
        Err(panic) => Err(Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail: format!(
                "the footer's Arrow schema (ARROW:schema) is damaged ({})",
                crate::error::panic_text(&*panic)
            ),
            cause: None,
        }),
    }
}

/// The schema reaches Python through Arrow's C interface, which refuses
/// some things a footer can say: a name with a NUL byte in it (names are C
/// strings), a decimal's precision out of its type's range (pyarrow takes
/// 1-38 for 128-bit decimals; a damaged footer said 127). Either, at any
/// depth, is refused here, naming the file, rather than failing the
/// hand-over with pyarrow's own error.
fn check_fields(location: &str, fields: &arrow_schema::Fields) -> Result<()> {
    for field in fields {
        let refused = |detail: String| Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail,
            cause: None,
        };
        if field.name().contains('\0') {
            return Err(refused(format!(
                "column {:?} has a NUL byte in its name",
                field.name()
            )));
        }
        if let Some((precision, most)) = decimal_precision(field.data_type()) {
            if !(1..=most).contains(&precision) {
                return Err(refused(format!(
                    "column {:?} is a decimal of precision {precision}, outside 1-{most}",
                    field.name()
                )));
            }
        }
        let children = match field.data_type() {
            arrow_schema::DataType::Struct(children) => children.clone(),
            arrow_schema::DataType::List(f)
            | arrow_schema::DataType::LargeList(f)
            | arrow_schema::DataType::FixedSizeList(f, _)
            | arrow_schema::DataType::ListView(f)
            | arrow_schema::DataType::LargeListView(f)
            | arrow_schema::DataType::Map(f, _) => arrow_schema::Fields::from(vec![f.clone()]),
            _ => continue,
        };
        check_fields(location, &children)?;
    }
    Ok(())
}

/// A decimal type's precision and the most its width holds.
fn decimal_precision(data_type: &arrow_schema::DataType) -> Option<(u8, u8)> {
    use arrow_schema::DataType;
    match *data_type {
        DataType::Decimal32(p, _) => Some((p, 9)),
        DataType::Decimal64(p, _) => Some((p, 18)),
        DataType::Decimal128(p, _) => Some((p, 38)),
        DataType::Decimal256(p, _) => Some((p, 76)),
        _ => None,
    }
}

/// The footer of one file: from its dataset's `_metadata` summary when that
/// can be trusted for it (no request; without the page index, which lives
/// in the file: a filter prunes row groups by the summary's statistics),
/// else read from the file.
///
/// A small remote file whose column data is wanted (`needs_data`) reads its
/// own footer: that one request brings the whole file, while planning it
/// from the summary would add the summary's round trip before its data.
async fn footer_for(
    fetcher: &Fetcher,
    source: &Source,
    scope: &FileScope<'_>,
    with_page_index: bool,
    needs_data: bool,
) -> Result<Footer> {
    let whole_in_one_request = !source.is_local()
        && source
            .listed_version()
            .is_some_and(|v| v.size <= fetcher.config().small_file);
    let summary = scope
        .summary()
        .filter(|_| !(needs_data && whole_in_one_request));
    if let Some(entry) = summary {
        if let Some(footer) = entry.file.footer(fetcher, source, &entry.path).await {
            return Ok(footer);
        }
    }
    // A read that wants all of a remote file of unknown size gets its start
    // in the footer's round trip (a small file needs no second one).
    read_footer(
        fetcher,
        source,
        with_page_index,
        scope.reads_whole_file(),
        needs_data && scope.wants_all_chunks(),
    )
    .await
}

/// Reads the footer and plans the fetch of one file.
pub(crate) async fn prepare(
    fetcher: &Fetcher,
    source: Source,
    scope: &FileScope<'_>,
) -> Result<PreparedFile> {
    let location = source.location().to_string();
    fetcher.stats().add_file();
    // The page index is only worth its bytes when a filter can use it.
    let needs_data = !scope.needs_no_columns();
    let mut footer = footer_for(fetcher, &source, scope, scope.filters(), needs_data).await?;
    // Held once, by `known`, so that releasing it frees it.
    let known = KnownBytes::new(footer.known_bytes());
    footer.tail = Bytes::new();
    footer.start = Vec::new();
    let layout = Layout::of(scope.options);
    let reader_metadata = arrow_metadata(&location, &footer, layout)?;
    validate_schema(&location, &footer.metadata)?;
    let file_schema = Arc::clone(reader_metadata.schema());
    let (columns, rows) = scope.in_file(|c| file_schema.field_with_name(c).is_ok())?;
    let filter = rows.filter();
    let filter_columns: BTreeSet<String> = filter.map(Filter::columns).unwrap_or_default();
    if let Some(f) = filter {
        f.check_types(&location, &file_schema)?;
    }
    let projection = project(
        &location,
        &footer.metadata,
        &file_schema,
        columns.as_deref(),
        &filter_columns,
        layout,
    )?;
    let mut row_groups =
        chosen_units::<Parquet>(&location, scope.options, footer.metadata.num_row_groups())?;
    if matches!(rows, Rows::Nothing) {
        row_groups.clear();
    }
    if let Some(f) = filter {
        let keep = prune_row_groups(f, &footer.metadata, &file_schema);
        row_groups.retain(|&i| keep[i]);
    }
    let (mut kept, mut selections) =
        select_pages(filter, &footer.metadata, &file_schema, row_groups);
    if let Some(f) = filter {
        let planned: Vec<u64> = kept
            .iter()
            .zip(&selections)
            .map(|(&rg, selection)| {
                let ranges = chunk_ranges(&footer.metadata, &projection, rg, selection.as_ref());
                ranges.iter().map(|r| r.end - r.start).sum()
            })
            .collect();
        let may_match = bloom::may_match(
            fetcher,
            &source,
            &known.get(),
            footer.file_size,
            &footer.metadata,
            &file_schema,
            f,
            &kept,
            &planned,
        )
        .await?;
        (kept, selections) = kept
            .into_iter()
            .zip(selections)
            .zip(may_match)
            .filter_map(|(unit, may)| may.then_some(unit))
            .unzip();
    }
    let units = kept
        .iter()
        .zip(&selections)
        .map(|(&rg, selection)| PlanUnit {
            index: rg,
            ranges: chunk_ranges(&footer.metadata, &projection, rg, selection.as_ref()),
        })
        .collect();
    let plan = checked_plan(
        &source,
        footer.file_size,
        units,
        fetcher,
        scope.files_in_read(),
    )?;
    let filter = filter.cloned();
    Ok(PreparedFile {
        source,
        footer,
        reader_metadata,
        projection,
        plan,
        selections,
        columns,
        filter,
        known,
        damage: DamageSeen::default(),
        verify_checksums: fetcher.config().verify_checksums,
    })
}

/// Within `row_groups`, the rows the page index leaves for `filter`: the row
/// groups still worth reading, and for each the row selection (`None`: all
/// rows). A row group none of whose pages can match is dropped.
fn select_pages(
    filter: Option<&Filter>,
    metadata: &ParquetMetaData,
    file_schema: &arrow_schema::Schema,
    row_groups: Vec<usize>,
) -> (Vec<usize>, Vec<Option<RowSelection>>) {
    let Some(filter) = filter else {
        let n = row_groups.len();
        return (row_groups, vec![None; n]);
    };
    let mut kept = Vec::with_capacity(row_groups.len());
    let mut selections = Vec::with_capacity(row_groups.len());
    for rg in row_groups {
        match page_row_ranges(filter, metadata, file_schema, rg) {
            Some(rows) if rows.is_empty() => continue,
            Some(rows) => {
                let n = metadata.row_group(rg).num_rows() as usize;
                selections.push(Some(RowSelection::from_consecutive_ranges(
                    rows.into_iter(),
                    n,
                )));
            }
            None => selections.push(None),
        }
        kept.push(rg);
    }
    (kept, selections)
}

/// The byte ranges row group `rg` needs: whole column chunks, or, when a row
/// selection and the offset index exist, the dictionary page and only the data
/// pages holding selected rows (the pages the decoder will ask for).
fn chunk_ranges(
    metadata: &ParquetMetaData,
    projection: &Projection,
    rg: usize,
    selection: Option<&RowSelection>,
) -> Vec<Range<u64>> {
    let descr = metadata.file_metadata().schema_descr();
    let meta = metadata.row_group(rg);
    let num_rows = meta.num_rows() as usize;
    let selected: Option<Vec<Range<usize>>> = selection.map(|s| {
        let mut out = Vec::new();
        let mut row = 0usize;
        for sel in s.iter() {
            if !sel.skip {
                out.push(row..row + sel.row_count);
            }
            row += sel.row_count;
        }
        out
    });
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for leaf in (0..descr.num_columns()).filter(|&l| projection.mask.leaf_included(l)) {
        let (start, len) = meta.column(leaf).byte_range();
        let pages = metadata
            .offset_index()
            .and_then(|oi| oi.get(rg))
            .and_then(|cols| cols.get(leaf))
            .map(|o| o.page_locations());
        match (&selected, pages) {
            (Some(rows), Some(pages)) if !pages.is_empty() => {
                // A chunk's pages that lie end to end are one range: one
                // span holds them, and the decoder takes them as fetched.
                let mut push = |range: Range<u64>| push_touching(&mut ranges, range);
                let first = pages[0].offset as u64;
                if first > start {
                    push(start..first); // dictionary page
                }
                for (i, page) in pages.iter().enumerate() {
                    let from = page.first_row_index as usize;
                    let to = pages
                        .get(i + 1)
                        .map_or(num_rows, |p| p.first_row_index as usize);
                    if rows.iter().any(|r| r.start < to && from < r.end) {
                        let off = page.offset as u64;
                        push(off..off + page.compressed_page_size as u64);
                    }
                }
            }
            _ => ranges.push(start..start.saturating_add(len)),
        }
    }
    ranges
}
