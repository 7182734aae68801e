//! Late materialisation: a filtered read decodes a row group's filter
//! columns first, decides which rows the filter keeps, and then decodes
//! only those rows of the other columns.
//!
//! Why: decoding every column whole and filtering after wrote each column
//! out in full, read it back to copy the kept rows, and, in a fresh
//! process, faulted in fresh pages for all of it. Here a primitive column
//! keeps its selected rows page by page as it decodes (see
//! [`super::flat::decode_column`]), and a row group none of whose rows
//! match decodes nothing past its filter columns. The rows kept are the
//! same: the filter is evaluated on the same arrays the whole decode gives.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use arrow_schema::Schema;
use futures::TryStreamExt;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::ProjectionMask;

use super::decode::{
    batch_rows, check_unit_pages, crate_failure, crate_stream, decode_flat_columns,
    decoded_here_whole, decodes_whole, merge, projected_roots, slice_batches, Pieces,
};
use super::flat;
use super::format::PreparedFile;
use super::pages::data_page_bounds;
use super::prune;
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};
use crate::filter::Filter;

/// The rows of the row group at position `unit` of `file`'s plan, from its
/// row `from_row` on, that the file's filter keeps, decoded late (see the
/// module's notes; a stream decodes its first rows apart, and the rest
/// here); rows the page index left out are never candidates. `None` where
/// this does not apply (no filter; more rows than fastingest's decoders
/// take whole; a filter column they do not take; no other column to save),
/// and the caller decodes
/// the row group whole and filters it.
pub(crate) fn decode_row_group_filtered(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    fetcher: &Fetcher,
    from_row: usize,
) -> Result<Option<Vec<RecordBatch>>> {
    let Some(filter) = file.filter.as_ref() else {
        return Ok(None);
    };
    let metadata = file.reader_metadata.metadata();
    let rg = file.plan.units[unit].index;
    let num_rows = metadata.row_group(rg).num_rows();
    let rows_per_batch = batch_rows(file, num_rows);
    if !decoded_here_whole(num_rows) {
        return Ok(None);
    }
    let rows = num_rows as usize;
    // The rows the page index chose (its other pages were not fetched).
    let chosen = file.selections[unit]
        .as_ref()
        .map(|selection| selected_rows(selection, rows));
    let schema = file.reader_metadata.schema();
    let projected = projected_roots(file);
    let mut filter_roots = Vec::new();
    for name in filter.columns() {
        match schema.index_of(&name) {
            Ok(root) if projected.contains(&root) && decoded_here(file, root) => {
                filter_roots.push(root)
            }
            _ => return Ok(None),
        }
    }
    filter_roots.sort_unstable();
    let other_roots: Vec<usize> = projected
        .iter()
        .copied()
        .filter(|root| !filter_roots.contains(root))
        .collect();
    if filter_roots.is_empty() || other_roots.is_empty() {
        return Ok(None);
    }
    check_unit_pages(file, unit, spans)?;
    let threads = fetcher.config().decode_threads();
    // The rows the page index chose and the filter columns' page headers
    // allow: only those are decoded and filtered.
    let candidates = both(
        candidate_rows(file, unit, spans, filter, rows),
        chosen.clone(),
    );
    let candidates = after_row(candidates, from_row, rows);
    let held = candidates
        .as_ref()
        .map_or(rows, BooleanBuffer::count_set_bits);
    let decided = match held {
        0 => Vec::new(),
        // A string filter column of dictionary pages comes as keys: the
        // filter compares each distinct value once, and only the kept rows'
        // values are copied out (below).
        _ => decode_flat_columns(
            file,
            unit,
            spans,
            threads,
            &filter_roots,
            candidates.as_ref(),
            &filter_roots,
        )?
        .into_iter()
        .map(|(root, pieces)| Ok((root, one_array(pieces, file.source.location())?)))
        .collect::<Result<Vec<_>>>()?,
    };
    if held > 0 && decided.len() != filter_roots.len() {
        // A filter column its decoder left to the `parquet` crate.
        return Ok(None);
    }
    let location = file.source.location();
    // The filter's answer for each row decoded, then for each row.
    let matched = match held {
        0 => BooleanBuffer::new_unset(0),
        _ => kept_rows(file, filter, &decided, held)?,
    };
    let keep = match &candidates {
        Some(candidates) => spread_over(candidates, &matched),
        None => matched.clone(),
    };
    let kept = keep.count_set_bits();
    let batches = if kept == 0 {
        let fields: Vec<_> = projected.iter().map(|&r| schema.field(r).clone()).collect();
        let empty = Schema::new_with_metadata(fields, schema.metadata().clone());
        vec![RecordBatch::new_empty(Arc::new(empty))]
    } else {
        let every = kept == rows;
        let selection = (!every).then_some(&keep);
        let as_array = BooleanArray::new(keep.clone(), None);
        // The filter columns hold the rows decoded: cut to those matched.
        let matched_array = BooleanArray::new(matched.clone(), None);
        let mut direct = Vec::with_capacity(projected.len());
        for (root, array) in decided {
            let array = match kept == held {
                true => array,
                false => arrow_select::filter::filter(&array, &matched_array)
                    .map_err(|e| Error::from_arrow(location, e))?,
            };
            // A column decoded as keys, back to its own type.
            let wanted = schema.field(root).data_type();
            let array = match array.data_type() == wanted {
                true => array,
                false => {
                    arrow_cast::cast(&array, wanted).map_err(|e| Error::from_arrow(location, e))?
                }
            };
            direct.push((root, vec![array]));
        }
        direct.extend(decode_flat_columns(
            file,
            unit,
            spans,
            threads,
            &other_roots,
            selection,
            &[],
        )?);
        // The columns no decoder here took: the crate's, whole, then cut.
        let descr = metadata.file_metadata().schema_descr();
        let left: Vec<usize> = (0..descr.num_columns())
            .filter(|&l| {
                let root = descr.get_column_root_idx(l);
                file.projection.mask.leaf_included(l) && !direct.iter().any(|(r, _)| *r == root)
            })
            .collect();
        let rest = if left.is_empty() {
            Vec::new()
        } else {
            let mask = ProjectionMask::leaves(descr, left);
            // As one batch where the crate takes the row group as one (see
            // `decodes_whole`), else a batch at a time, each filtered by
            // its own rows' part of the mask.
            let batch_size = match decodes_whole(file, rg, rows_per_batch) {
                true => rows,
                false => rows_per_batch,
            };
            let stream = crate_stream(file, unit, spans.clone(), fetcher, mask, batch_size)?;
            let whole = futures::executor::block_on(stream.try_collect::<Vec<_>>())
                .map_err(|e| crate_failure(file, unit, spans, e))?;
            // The crate gives the rows the page index chose: the rows kept
            // among those.
            let as_array = match &chosen {
                Some(chosen) => arrow_select::filter::filter(
                    &as_array,
                    &BooleanArray::new(chosen.clone(), None),
                )
                .map_err(|e| Error::from_arrow(location, e))?
                .as_boolean()
                .clone(),
                None => as_array.clone(),
            };
            let mut at = 0;
            let mut kept_of_batches = Vec::with_capacity(whole.len());
            for batch in &whole {
                let len = batch.num_rows();
                if at + len > as_array.len() {
                    return Err(Error::Corrupt {
                        location: location.to_string(),
                        range: None,
                        detail: format!(
                            "row group {rg} decoded to more than its {} rows",
                            as_array.len()
                        ),
                        cause: None,
                    });
                }
                kept_of_batches.push(match every {
                    true => batch.clone(),
                    false => {
                        arrow_select::filter::filter_record_batch(batch, &as_array.slice(at, len))
                            .map_err(|e| Error::from_arrow(location, e))?
                    }
                });
                at += len;
            }
            kept_of_batches
        };
        merge(file, direct, rest, kept)?
    };
    Ok(Some(match kept > rows_per_batch {
        true => slice_batches(batches, rows_per_batch),
        false => batches,
    }))
}

/// The rows of the row group at `unit` that its filter columns' data page
/// headers say the filter may keep (see [`prune::header_row_ranges`]);
/// `None` when they allow every row or cannot tell.
pub(super) fn candidate_rows(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    filter: &Filter,
    rows: usize,
) -> Option<BooleanBuffer> {
    let metadata = file.reader_metadata.metadata();
    let group = metadata.row_group(file.plan.units[unit].index);
    let descr = metadata.file_metadata().schema_descr();
    let schema = file.reader_metadata.schema();
    // Each filter column's chunk, its leaf and the type it reads as.
    let mut chunks = Vec::new();
    for name in filter.columns() {
        let root = schema.index_of(&name).ok()?;
        let leaf = (0..descr.num_columns()).find(|&l| descr.get_column_root_idx(l) == root)?;
        let chunk = group.column(leaf);
        let (start, len) = chunk.byte_range();
        let bytes = spans.get(&(start..start + len))?;
        let target = schema.field(root).data_type().clone();
        chunks.push((name, bytes, chunk.compression(), descr.column(leaf), target));
    }
    let ranges = prune::header_row_ranges(filter, rows, |column| {
        let (_, bytes, codec, descr, target) = chunks.iter().find(|c| c.0 == column)?;
        let pages = data_page_bounds(bytes, *codec)?;
        Some((pages, descr.as_ref(), target.clone()))
    })?;
    if ranges.len() == 1 && ranges[0] == (0..rows) {
        return None;
    }
    let mut allowed = BooleanBufferBuilder::new(rows);
    let mut at = 0;
    for range in ranges {
        allowed.append_n(range.start - at, false);
        allowed.append_n(range.len(), true);
        at = range.end;
    }
    allowed.append_n(rows - at, false);
    Some(allowed.finish())
}

/// A bit per row of the `rows` a row selection chooses.
fn selected_rows(selection: &RowSelection, rows: usize) -> BooleanBuffer {
    let mut bits = BooleanBufferBuilder::new(rows);
    for run in selection.iter() {
        bits.append_n(run.row_count, !run.skip);
    }
    // A selection shorter than the row group leaves the rest out.
    if bits.len() < rows {
        bits.append_n(rows - bits.len(), false);
    }
    bits.truncate(rows);
    bits.finish()
}

/// The rows both `a` and `b` allow (`None`: every row).
fn both(a: Option<BooleanBuffer>, b: Option<BooleanBuffer>) -> Option<BooleanBuffer> {
    match (a, b) {
        (Some(a), Some(b)) => Some(&a & &b),
        (a, b) => a.or(b),
    }
}

/// `candidates` (a bit per row; `None`: every row) less the rows before
/// `from_row`.
fn after_row(
    candidates: Option<BooleanBuffer>,
    from_row: usize,
    rows: usize,
) -> Option<BooleanBuffer> {
    if from_row == 0 {
        return candidates;
    }
    let from_row = from_row.min(rows);
    let mut after = BooleanBufferBuilder::new(rows);
    after.append_n(from_row, false);
    after.append_n(rows - from_row, true);
    let after = after.finish();
    Some(match candidates {
        Some(candidates) => &candidates & &after,
        None => after,
    })
}

/// The rows of `candidates` (a bit per row) that `matched` (a bit per
/// candidate, in order) keeps, as a bit per row.
fn spread_over(candidates: &BooleanBuffer, matched: &BooleanBuffer) -> BooleanBuffer {
    let rows: Vec<usize> = candidates.set_indices().collect();
    let mut keep = BooleanBufferBuilder::new(candidates.len());
    keep.append_n(candidates.len(), false);
    for i in matched.set_indices() {
        keep.set_bit(rows[i], true);
    }
    keep.finish()
}

/// Whether top-level field `root` of `file` is one column that
/// fastingest's flat decoder takes (what a filter compares: no lists).
fn decoded_here(file: &PreparedFile, root: usize) -> bool {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    let mut leaves = (0..descr.num_columns()).filter(|&l| descr.get_column_root_idx(l) == root);
    let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
        return false;
    };
    let field = file.reader_metadata.schema().field(root).clone();
    flat::decodes(&descr.column(leaf), field.data_type())
}

/// A filter column as one array (a filter's columns are not split into
/// pieces, see [`super::decode::Pieces`]; were one, its pieces are joined).
fn one_array(mut pieces: Pieces, location: &str) -> Result<arrow_array::ArrayRef> {
    if pieces.len() == 1 {
        return Ok(pieces.remove(0));
    }
    let pieces: Vec<&dyn arrow_array::Array> = pieces.iter().map(|a| a.as_ref()).collect();
    arrow_select::concat::concat(&pieces).map_err(|e| Error::from_arrow(location, e))
}

/// The rows of the row group `filter` keeps (a null answer drops the row),
/// from its filter columns `decided` (top-level field, array).
pub(super) fn kept_rows(
    file: &PreparedFile,
    filter: &Filter,
    decided: &[(usize, arrow_array::ArrayRef)],
    rows: usize,
) -> Result<BooleanBuffer> {
    let location = file.source.location();
    let schema = file.reader_metadata.schema();
    // Each field as decoded (a string column may be its dictionary).
    let fields: Vec<_> = decided
        .iter()
        .map(|(r, a)| {
            schema
                .field(*r)
                .clone()
                .with_data_type(a.data_type().clone())
        })
        .collect();
    let arrays = decided.iter().map(|(_, a)| Arc::clone(a)).collect();
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(|e| Error::from_arrow(location, e))?;
    let matched = filter
        .evaluate(&batch)
        .map_err(|e| Error::from_arrow(location, e))?;
    Ok(match matched.nulls() {
        Some(valid) => matched.values() & valid.inner(),
        None => matched.values().clone(),
    })
}
