//! A large row group decoded a slab of rows at a time, for a stream: each
//! slab's rows of every column come from the run of pages that holds them
//! (a column's dictionary page is read again by each slab), so a stream of
//! a file written as one large row group (Spark writes 128 MB ones: tens of
//! millions of rows of a narrow table) holds a few slabs decoded, not the
//! row group. Only row groups of flat columns are cut so; a column whose
//! pages cannot be cut (or that fastingest's decoders do not take) is
//! decoded for the slab by the `parquet` crate, which skips the rows before.

use std::ops::Range;

use arrow_array::RecordBatch;
use futures::TryStreamExt;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;

use super::decode::{
    bad_page, batch_rows, check_pages_of, crate_failure, crate_stream_of, merge, projected_roots,
    Pieces,
};
use super::format::{Damage, PreparedFile};
use super::{flat, pages};
use crate::error::Result;
use crate::fetch::{FetchedSpans, Fetcher};

/// The rows of each slab the row group at position `unit` of `file`'s plan
/// can be decoded in by a stream: a whole unit's batch (see
/// [`batch_rows`]), where the row group holds more than one, every column
/// read is a flat one, and neither a filter nor the page index chooses its
/// rows (those decode the unit as they always have).
pub(crate) fn slab_rows(file: &PreparedFile, unit: usize) -> Option<usize> {
    if file.selections[unit].is_some() || file.filter.is_some() {
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
    let metadata = file.reader_metadata.metadata();
    let rg = file.plan.units[unit].index;
    let group = metadata.row_group(rg);
    let total = usize::try_from(group.num_rows()).unwrap_or(0);
    let descr = metadata.file_metadata().schema_descr();
    let fields = file.reader_metadata.schema().fields();
    let roots = projected_roots(file);
    let Some(leaves) = flat_leaves(file, &roots) else {
        return to_crate(
            file,
            unit,
            &spans,
            fetcher,
            rows,
            Vec::new(),
            (0..descr.num_columns()).collect(),
        );
    };
    let mut direct: Vec<(usize, Pieces)> = Vec::with_capacity(roots.len());
    let mut rest = Vec::new();
    for (&root, &leaf) in roots.iter().zip(&leaves) {
        let chunk = group.column(leaf);
        let (start, len) = chunk.byte_range();
        let range = start..start.saturating_add(len);
        let Some(bytes) = spans.get(&range) else {
            rest.push(leaf);
            continue;
        };
        let codec = chunk.compression();
        let cut = pages::slab_window(&bytes, codec, rows.clone(), total, file.verify_checksums)
            .map_err(|bad| bad_page(file, rg, chunk, range.clone(), bad))?;
        let Some((window, first_row)) = cut else {
            rest.push(leaf);
            continue;
        };
        let column = descr.column(leaf);
        let target = fields[root].data_type();
        match flat::decode_window(bytes, chunk, &column, target, &window) {
            Ok(array) if array.len() == window.rows => {
                let slab = array.slice(rows.start - first_row, rows.len());
                direct.push((root, vec![slab]));
            }
            Ok(_) => rest.push(leaf),
            Err(failure) => {
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
                rest.push(leaf);
            }
        }
    }
    if rest.is_empty() {
        return merge(file, direct, Vec::new(), rows.len());
    }
    to_crate(file, unit, &spans, fetcher, rows, direct, rest)
}

/// Rows `rows` of the leaves `rest` decoded by the `parquet` crate (which
/// skips the rows before them), beside the columns decoded here
/// (`direct`), as the slab's batches. The crate reads the pages of those
/// chunks from their start: they are checked first, as for a whole unit.
fn to_crate(
    file: &PreparedFile,
    unit: usize,
    spans: &FetchedSpans,
    fetcher: &Fetcher,
    rows: Range<usize>,
    direct: Vec<(usize, Pieces)>,
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
    let decoded = futures::executor::block_on(stream.try_collect::<Vec<_>>())
        .map_err(|e| crate_failure(file, unit, spans, e))?;
    merge(file, direct, decoded, rows.len())
}
