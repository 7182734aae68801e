//! A large row group decoded a slab of rows at a time, for a stream: each
//! slab's rows of every column come from the run of pages that holds them
//! (a column's dictionary page is read again by each slab), so a stream of
//! a file written as one large row group (Spark writes 128 MB ones: tens of
//! millions of rows of a narrow table) holds a few slabs decoded, not the
//! row group. Only row groups of flat columns are cut so; a column whose
//! pages cannot be cut (or that fastingest's decoders do not take) is
//! decoded for the slab by the `parquet` crate, which skips the rows before.
//!
//! A filtered stream decodes a slab late, as a filtered read decodes a row
//! group (see [`super::late`]): the filter columns' page headers first (a
//! slab none of whose pages can match decodes nothing), then the filter
//! columns, then the other columns only where some row matched.

use std::ops::Range;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use futures::TryStreamExt;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;

use super::decode::{
    bad_page, batch_rows, check_pages_of, crate_failure, crate_stream_of, merge, projected_roots,
    Pieces,
};
use super::format::{Damage, PreparedFile};
use super::{flat, late, pages};
use crate::error::{Error, Result};
use crate::fetch::{FetchedSpans, Fetcher};

/// The rows of each slab the row group at position `unit` of `file`'s plan
/// can be decoded in by a stream: a whole unit's batch (see
/// [`batch_rows`]), where the row group holds more than one, every column
/// read is a flat one (a filter's columns among them), and the page index
/// does not choose its rows (those decode the unit as they always have).
pub(crate) fn slab_rows(file: &PreparedFile, unit: usize) -> Option<usize> {
    if file.selections[unit].is_some() {
        return None;
    }
    let metadata = file.reader_metadata.metadata();
    let group = metadata.row_group(file.plan.units[unit].index);
    let rows = usize::try_from(group.num_rows()).ok()?;
    let slab = batch_rows(file, group.num_rows());
    if rows <= slab {
        return None;
    }
    let roots = projected_roots(file);
    let leaves = flat_leaves(file, &roots)?;
    if file.filter.is_some() && filter_positions(file, &roots).is_none() {
        return None;
    }
    let encrypted = leaves
        .iter()
        .any(|&l| group.column(l).crypto_metadata().is_some());
    (!encrypted).then_some(slab)
}

/// The one leaf of each of `roots`, where each is a flat column (read whole)
/// that fastingest's decoders take.
fn flat_leaves(file: &PreparedFile, roots: &[usize]) -> Option<Vec<usize>> {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    let fields = file.reader_metadata.schema().fields();
    roots
        .iter()
        .map(|&root| {
            let mut leaves =
                (0..descr.num_columns()).filter(|&l| descr.get_column_root_idx(l) == root);
            let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
                return None;
            };
            let column = descr.column(leaf);
            let target = fields.get(root)?.data_type();
            let flat = file.projection.mask.leaf_included(leaf)
                && column.max_rep_level() == 0
                && flat::decodes(&column, target);
            flat.then_some(leaf)
        })
        .collect()
}

/// The places among `roots` of the file's filter's columns (each once, in
/// order), where every one is among them; `None` without a filter or where
/// one is not.
fn filter_positions(file: &PreparedFile, roots: &[usize]) -> Option<Vec<usize>> {
    let filter = file.filter.as_ref()?;
    let schema = file.reader_metadata.schema();
    let mut places = filter
        .columns()
        .into_iter()
        .map(|name| {
            let root = schema.index_of(&name).ok()?;
            roots.iter().position(|&r| r == root)
        })
        .collect::<Option<Vec<usize>>>()?;
    places.sort_unstable();
    places.dedup();
    Some(places)
}

/// Rows `rows` of the row group at position `unit` of `file`'s plan (cut by
/// [`slab_rows`]) from its fetched `spans`: each column's run of pages that
/// holds them decoded here and cut to them, or, where that fails, the
/// `parquet` crate's decode of those rows of the column.
pub(crate) fn decode_row_group_slab(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
    rows: Range<usize>,
) -> Result<Vec<RecordBatch>> {
    let roots = projected_roots(file);
    let Some(leaves) = flat_leaves(file, &roots) else {
        let descr = file
            .reader_metadata
            .metadata()
            .file_metadata()
            .schema_descr();
        let every = (0..descr.num_columns()).collect();
        let decoded = crate_slab(file, unit, &spans, fetcher, rows.clone(), every)?;
        return merge(file, Vec::new(), decoded, rows.len());
    };
    let columns: Vec<(usize, usize)> = roots.into_iter().zip(leaves).collect();
    decode_slab_columns(file, unit, &spans, fetcher, rows, &columns)
}

/// Rows `rows` of the row group at position `unit` (cut by [`slab_rows`])
/// that the file's filter keeps, decoded late (see the module's notes), as
/// no batch at all where it keeps none; `None` where that does not apply
/// (no filter, no other column to save, a filter column left to the
/// `parquet` crate), and the caller decodes the slab whole and filters it.
pub(crate) fn decode_row_group_slab_filtered(
    file: &PreparedFile,
    unit: usize,
    spans: FetchedSpans,
    fetcher: &Fetcher,
    rows: Range<usize>,
) -> Result<Option<Vec<RecordBatch>>> {
    let Some(filter) = file.filter.as_ref() else {
        return Ok(None);
    };
    let roots = projected_roots(file);
    let (Some(leaves), Some(places)) = (flat_leaves(file, &roots), filter_positions(file, &roots))
    else {
        return Ok(None);
    };
    if places.is_empty() || places.len() == roots.len() {
        return Ok(None);
    }
    let columns: Vec<(usize, usize)> = roots.into_iter().zip(leaves).collect();
    let metadata = file.reader_metadata.metadata();
    let total =
        usize::try_from(metadata.row_group(file.plan.units[unit].index).num_rows()).unwrap_or(0);
    // Pages whose statistics rule the slab's rows out are not decoded.
    let allowed = late::candidate_rows(file, unit, &spans, filter, total);
    if allowed.is_some_and(|a| a.slice(rows.start, rows.len()).count_set_bits() == 0) {
        return Ok(Some(Vec::new()));
    }
    let mut decided = Vec::with_capacity(places.len());
    for &at in &places {
        match slab_column(file, unit, &spans, rows.clone(), columns[at], None)? {
            Some(array) => decided.push((columns[at].0, array)),
            None => return Ok(None),
        }
    }
    let matched = late::kept_rows(file, filter, &decided, rows.len())?;
    let kept = matched.count_set_bits();
    if kept == 0 {
        return Ok(Some(Vec::new()));
    }
    let every = kept == rows.len();
    let location = file.source.location();
    let mask = BooleanArray::new(matched.clone(), None);
    // The filter columns cut to the rows kept; the others decode only
    // those (a page holding none is passed over), or, left to the crate,
    // decode the slab and are cut after.
    let mut direct: Vec<(usize, Pieces)> = Vec::with_capacity(columns.len());
    for (root, array) in decided {
        let array = match every {
            true => array,
            false => arrow_select::filter::filter(&array, &mask)
                .map_err(|e| Error::from_arrow(location, e))?,
        };
        direct.push((root, vec![array]));
    }
    let keep_rows = (!every).then_some(&matched);
    let mut rest = Vec::new();
    for at in (0..columns.len()).filter(|at| !places.contains(at)) {
        match slab_column(file, unit, &spans, rows.clone(), columns[at], keep_rows)? {
            Some(array) => direct.push((columns[at].0, vec![array])),
            None => rest.push(columns[at].1),
        }
    }
    if rest.is_empty() {
        return Ok(Some(merge(file, direct, Vec::new(), kept)?));
    }
    let whole = crate_slab(file, unit, &spans, fetcher, rows, rest)?;
    let cut = match every {
        true => whole,
        false => keep(file, whole, &matched)?,
    };
    Ok(Some(merge(file, direct, cut, kept)?))
}

/// The batches of `slab` cut to the rows `matched` (a bit per row of the
/// slab, in order) keeps, those left with none left out.
fn keep(
    file: &PreparedFile,
    slab: Vec<RecordBatch>,
    matched: &BooleanBuffer,
) -> Result<Vec<RecordBatch>> {
    let location = file.source.location();
    let mut at = 0;
    let mut kept = Vec::with_capacity(slab.len());
    for batch in slab {
        let len = batch.num_rows();
        if at + len > matched.len() {
            return Err(Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: format!("a slab of {} rows decoded to more", matched.len()),
                cause: None,
            });
        }
        let mask = BooleanArray::new(matched.slice(at, len), None);
        let batch = arrow_select::filter::filter_record_batch(&batch, &mask)
            .map_err(|e| Error::from_arrow(location, e))?;
        if batch.num_rows() > 0 {
            kept.push(batch);
        }
        at += len;
    }
    Ok(kept)
}

/// Rows `rows` of `columns` (top-level field, its leaf) of the row group at
/// position `unit`: each column's run of pages decoded here, or, for those
/// where that fails, the `parquet` crate's decode.
fn decode_slab_columns(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    fetcher: &Fetcher,
    rows: Range<usize>,
    columns: &[(usize, usize)],
) -> Result<Vec<RecordBatch>> {
    let mut direct = Vec::with_capacity(columns.len());
    let mut rest = Vec::new();
    for &(root, leaf) in columns {
        match slab_column(file, unit, spans, rows.clone(), (root, leaf), None)? {
            Some(array) => direct.push((root, vec![array])),
            None => rest.push(leaf),
        }
    }
    let decoded = match rest.is_empty() {
        true => Vec::new(),
        false => crate_slab(file, unit, spans, fetcher, rows.clone(), rest)?,
    };
    merge(file, direct, decoded, rows.len())
}

/// Rows `rows` of top-level field `root` (leaf `leaf`) of the row group at
/// position `unit`, decoded here from the run of its pages that holds
/// them, or only those of them `keep` (a bit per row of `rows`) keeps;
/// `None` where they are left to the `parquet` crate (the chunk not
/// fetched, pages that cannot be cut, a decoder that does not take them;
/// damage is noted for the crate's message).
fn slab_column(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    rows: Range<usize>,
    (root, leaf): (usize, usize),
    keep: Option<&BooleanBuffer>,
) -> Result<Option<ArrayRef>> {
    let metadata = file.reader_metadata.metadata();
    let rg = file.plan.units[unit].index;
    let group = metadata.row_group(rg);
    let total = usize::try_from(group.num_rows()).unwrap_or(0);
    let chunk = group.column(leaf);
    let (start, len) = chunk.byte_range();
    let range = start..start.saturating_add(len);
    let Some(bytes) = spans.get(&range) else {
        return Ok(None);
    };
    let codec = chunk.compression();
    let cut = pages::slab_window(&bytes, codec, rows.clone(), total, file.verify_checksums)
        .map_err(|bad| bad_page(file, rg, chunk, range.clone(), bad))?;
    let Some((window, first_row)) = cut else {
        return Ok(None);
    };
    let column = metadata.file_metadata().schema_descr().column(leaf);
    let target = file
        .reader_metadata
        .schema()
        .field(root)
        .data_type()
        .clone();
    let decoded = match keep {
        None => flat::decode_window(bytes, chunk, &column, &target, &window),
        Some(keep) => {
            let selection = within_window(keep, rows.start - first_row, window.rows);
            flat::decode_window_selected(bytes, chunk, &column, &target, &window, &selection)
        }
    };
    match (decoded, keep) {
        (Ok(array), None) if array.len() == window.rows => {
            Ok(Some(array.slice(rows.start - first_row, rows.len())))
        }
        (Ok(array), Some(keep)) if array.len() == keep.count_set_bits() => Ok(Some(array)),
        (Ok(_), _) => Ok(None),
        (Err(failure), _) => {
            if let flat::Failure::Corrupt(detail) = failure {
                log::debug!(
                    "{}: row group {rg}, column {}: left to the parquet crate: {detail}",
                    file.source.location(),
                    chunk.column_path()
                );
                file.damage.note(Damage {
                    row_group: rg,
                    column: chunk.column_path().to_string(),
                    range,
                    detail,
                });
            }
            Ok(None)
        }
    }
}

/// Rows `rows` of the leaves `rest` of the row group at position `unit`,
/// decoded by the `parquet` crate (which skips the rows before them), as
/// batches of those leaves' top-level fields. The crate reads the pages of
/// those chunks from their start: they are checked first, as for a whole
/// unit.
fn crate_slab(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    fetcher: &Fetcher,
    rows: Range<usize>,
    rest: Vec<usize>,
) -> Result<Vec<RecordBatch>> {
    let descr = file
        .reader_metadata
        .metadata()
        .file_metadata()
        .schema_descr();
    check_pages_of(file, unit, spans, |leaf| rest.contains(&leaf))?;
    let included = rest
        .into_iter()
        .filter(|&l| file.projection.mask.leaf_included(l));
    let mask = ProjectionMask::leaves(descr, included);
    let selection = RowSelection::from(vec![
        RowSelector::skip(rows.start),
        RowSelector::select(rows.len()),
    ]);
    let stream = crate_stream_of(
        file,
        unit,
        spans.clone(),
        fetcher,
        mask,
        rows.len().max(1),
        Some(selection),
    )?;
    futures::executor::block_on(stream.try_collect::<Vec<_>>())
        .map_err(|e| crate_failure(file, unit, spans, e))
}

/// `keep` (a bit per row of a slab that starts `before` rows into a window
/// of `rows` rows) as a bit per row of the window.
fn within_window(keep: &BooleanBuffer, before: usize, rows: usize) -> BooleanBuffer {
    let mut bits = BooleanBufferBuilder::new(rows);
    bits.append_n(before, false);
    bits.append_buffer(keep);
    bits.append_n(rows.saturating_sub(before + keep.len()), false);
    bits.finish()
}
