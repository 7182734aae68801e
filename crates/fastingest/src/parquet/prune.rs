//! Parquet's statistics for filters: row-group minimums and maximums from
//! the footer, and page ranges from the page index.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::metadata::ParquetMetaData;

use crate::filter::{may_match, Filter, Predicate};

/// For each row group, whether its statistics allow a match.
pub(crate) fn prune_row_groups(
    filter: &Filter,
    metadata: &ParquetMetaData,
    schema: &Schema,
) -> Vec<bool> {
    filter.prune(metadata.num_row_groups(), |p| {
        row_group_min_max(metadata, schema, p)
    })
}

/// The row groups' minimums and maximums of `p`'s column.
fn row_group_min_max(
    metadata: &ParquetMetaData,
    schema: &Schema,
    p: &Predicate,
) -> Option<(ArrayRef, ArrayRef)> {
    let descr = metadata.file_metadata().schema_descr();
    let conv = StatisticsConverter::try_new(&p.column, schema, descr).ok()?;
    let rgs = metadata.row_groups();
    let mins = conv.row_group_mins(rgs.iter()).ok()?;
    let maxes = conv.row_group_maxes(rgs.iter()).ok()?;
    Some((mins, maxes))
}

/// The rows of row group `rg` that the page index allows, as sorted,
/// disjoint row ranges; `None` when there is no page index or it cannot
/// tell (then every row is read).
pub(crate) fn page_row_ranges(
    filter: &Filter,
    metadata: &ParquetMetaData,
    schema: &Schema,
    rg: usize,
) -> Option<Vec<Range<usize>>> {
    let n = metadata.row_group(rg).num_rows() as usize;
    let mut any: Vec<Range<usize>> = Vec::new();
    let mut told = false;
    for conj in &filter.disjuncts {
        let mut all: Vec<Range<usize>> = std::iter::once(0..n).collect();
        for p in conj {
            if let Some(ranges) = predicate_page_ranges(metadata, schema, rg, p) {
                told = true;
                all = intersect(&all, &ranges);
            }
        }
        any = union(&any, &all);
    }
    told.then_some(any)
}

fn predicate_page_ranges(
    metadata: &ParquetMetaData,
    schema: &Schema,
    rg: usize,
    p: &Predicate,
) -> Option<Vec<Range<usize>>> {
    let descr = metadata.file_metadata().schema_descr();
    let conv = StatisticsConverter::try_new(&p.column, schema, descr).ok()?;
    conv.parquet_column_index()?;
    let (ci, oi) = (metadata.column_index()?, metadata.offset_index()?);
    let mins = conv.data_page_mins(ci, oi, [&rg]).ok()?;
    let maxes = conv.data_page_maxes(ci, oi, [&rg]).ok()?;
    let counts = conv
        .data_page_row_counts(oi, metadata.row_groups(), [&rg])
        .ok()??;
    let may = may_match(&mins, &maxes, p)?;
    if may.len() != counts.len() {
        return None;
    }
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut row = 0usize;
    for (i, keep) in may.into_iter().enumerate() {
        let len = counts.value(i) as usize;
        if keep {
            match out.last_mut() {
                Some(last) if last.end == row => last.end = row + len,
                _ => out.push(row..row + len),
            }
        }
        row += len;
    }
    Some(out)
}

/// Rows in both sorted, disjoint range lists.
fn intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Rows in either sorted, disjoint range list.
fn union(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut all: Vec<Range<usize>> = a.iter().chain(b).cloned().collect();
    all.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in all {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::single_range_in_vec_init)]
    use super::*;

    #[test]
    fn range_algebra() {
        assert_eq!(intersect(&[0..10, 20..30], &[5..25]), vec![5..10, 20..25]);
        assert_eq!(union(&[0..10, 20..30], &[5..25]), vec![0..30]);
        assert_eq!(intersect(&[0..10], &[]), Vec::<Range<usize>>::new());
    }
}
