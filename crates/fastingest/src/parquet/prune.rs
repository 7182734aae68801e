//! Parquet's statistics for filters: row-group minimums and maximums from
//! the footer, and page ranges from the page index or, for a row group
//! whose filter columns are at hand, from their data pages' headers.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, Date32Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeBinaryArray, LargeStringArray, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Schema, TimeUnit};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::ColumnDescriptor;

use super::flat;
use super::pages::PageBounds;
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
    allowed_ranges(filter, n, |p| {
        predicate_page_ranges(metadata, schema, rg, p)
    })
}

/// The rows of `rows` that `filter` may keep, as sorted, disjoint row
/// ranges, from `ranges_for`'s ranges of each predicate (`None`: it cannot
/// tell); `None` when no predicate could tell.
fn allowed_ranges(
    filter: &Filter,
    rows: usize,
    ranges_for: impl Fn(&Predicate) -> Option<Vec<Range<usize>>>,
) -> Option<Vec<Range<usize>>> {
    let mut any: Vec<Range<usize>> = Vec::new();
    let mut told = false;
    for conj in &filter.disjuncts {
        let mut all: Vec<Range<usize>> = std::iter::once(0..rows).collect();
        for p in conj {
            if let Some(ranges) = ranges_for(p) {
                told = true;
                all = intersect(&all, &ranges);
            }
        }
        any = union(&any, &all);
    }
    told.then_some(any)
}

/// The rows of a row group of `rows` rows that `filter` may keep, by the
/// minimums and maximums its filter columns' data page headers give
/// (`pages_of` a column: each data page's bounds, with the column's type
/// in the file and in the read). `None` when they cannot tell.
///
/// Why: a range of a sorted column (a time range) keeps the rows of a few
/// pages of a row group, and most writers (pyarrow, polars) give each data
/// page's bounds in its header but write no page index; without them the
/// filter columns were decoded whole to find those rows.
pub(crate) fn header_row_ranges<'a>(
    filter: &Filter,
    rows: usize,
    pages_of: impl Fn(&str) -> Option<(Vec<PageBounds<'a>>, &'a ColumnDescriptor, DataType)>,
) -> Option<Vec<Range<usize>>> {
    allowed_ranges(filter, rows, |p| {
        let (pages, column, target) = pages_of(&p.column)?;
        if pages.iter().map(|page| page.values).sum::<usize>() != rows {
            return None;
        }
        let (mins, maxes) = bounds_arrays(&pages, column, &target)?;
        let may = may_match(&mins, &maxes, p)?;
        Some(ranges_where(may, pages.iter().map(|page| page.values)))
    })
}

/// The rows of the units `may` allows, each unit `counts` rows in turn.
fn ranges_where(
    may: impl IntoIterator<Item = bool>,
    counts: impl IntoIterator<Item = usize>,
) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut row = 0usize;
    for (keep, len) in may.into_iter().zip(counts) {
        if keep {
            crate::plan::push_touching(&mut out, row..row + len);
        }
        row += len;
    }
    out
}

/// The pages' minimums and maximums as arrays of `target`, the type
/// `column` reads as (nulls where a page gives none, or one that does not
/// convert); `None` for a type whose bounds this does not read (decimals,
/// booleans, INT96, a type the read converts to).
fn bounds_arrays(
    pages: &[PageBounds<'_>],
    column: &ColumnDescriptor,
    target: &DataType,
) -> Option<(ArrayRef, ArrayRef)> {
    let natural = flat::natural_type(column)?;
    let same_values = match (&natural, target) {
        (DataType::Utf8, DataType::LargeUtf8) | (DataType::Binary, DataType::LargeBinary) => true,
        (natural, target) => natural == target,
    };
    if !same_values || column.physical_type() == PhysicalType::INT96 {
        return None;
    }
    let mins = bounds_array(pages.iter().map(|p| p.min), target)?;
    let maxes = bounds_array(pages.iter().map(|p| p.max), target)?;
    Some((mins, maxes))
}

/// Plain-encoded bounds (`None`: not given) as an array of `target`.
fn bounds_array<'a>(
    bounds: impl Iterator<Item = Option<&'a [u8]>> + Clone,
    target: &DataType,
) -> Option<ArrayRef> {
    fn le<const N: usize>(b: Option<&[u8]>) -> Option<[u8; N]> {
        b?.try_into().ok()
    }
    let i32s = || bounds.clone().map(|b| le::<4>(b).map(i32::from_le_bytes));
    let u32s = || bounds.clone().map(|b| le::<4>(b).map(u32::from_le_bytes));
    let i64s = || bounds.clone().map(|b| le::<8>(b).map(i64::from_le_bytes));
    let text = || {
        bounds
            .clone()
            .map(|b| b.and_then(|b| std::str::from_utf8(b).ok()))
    };
    Some(match target {
        DataType::Int8 => Arc::new(
            i32s()
                .map(|v| v.and_then(|v| i8::try_from(v).ok()))
                .collect::<Int8Array>(),
        ),
        DataType::Int16 => Arc::new(
            i32s()
                .map(|v| v.and_then(|v| i16::try_from(v).ok()))
                .collect::<Int16Array>(),
        ),
        DataType::Int32 => Arc::new(i32s().collect::<Int32Array>()),
        DataType::Date32 => Arc::new(i32s().collect::<Date32Array>()),
        DataType::UInt8 => Arc::new(
            u32s()
                .map(|v| v.and_then(|v| u8::try_from(v).ok()))
                .collect::<UInt8Array>(),
        ),
        DataType::UInt16 => Arc::new(
            u32s()
                .map(|v| v.and_then(|v| u16::try_from(v).ok()))
                .collect::<UInt16Array>(),
        ),
        DataType::UInt32 => Arc::new(u32s().collect::<UInt32Array>()),
        DataType::Int64 => Arc::new(i64s().collect::<Int64Array>()),
        DataType::UInt64 => Arc::new(
            bounds
                .clone()
                .map(|b| le::<8>(b).map(u64::from_le_bytes))
                .collect::<UInt64Array>(),
        ),
        DataType::Timestamp(unit, zone) => {
            let values = i64s();
            match unit {
                TimeUnit::Second => Arc::new(
                    values
                        .collect::<TimestampSecondArray>()
                        .with_timezone_opt(zone.clone()),
                ),
                TimeUnit::Millisecond => Arc::new(
                    values
                        .collect::<TimestampMillisecondArray>()
                        .with_timezone_opt(zone.clone()),
                ),
                TimeUnit::Microsecond => Arc::new(
                    values
                        .collect::<TimestampMicrosecondArray>()
                        .with_timezone_opt(zone.clone()),
                ),
                TimeUnit::Nanosecond => Arc::new(
                    values
                        .collect::<TimestampNanosecondArray>()
                        .with_timezone_opt(zone.clone()),
                ),
            }
        }
        DataType::Float32 => Arc::new(
            bounds
                .clone()
                .map(|b| le::<4>(b).map(f32::from_le_bytes))
                .collect::<Float32Array>(),
        ),
        DataType::Float64 => Arc::new(
            bounds
                .clone()
                .map(|b| le::<8>(b).map(f64::from_le_bytes))
                .collect::<Float64Array>(),
        ),
        DataType::Utf8 => Arc::new(text().collect::<StringArray>()),
        DataType::LargeUtf8 => Arc::new(text().collect::<LargeStringArray>()),
        DataType::Binary => Arc::new(bounds.collect::<BinaryArray>()),
        DataType::LargeBinary => Arc::new(bounds.collect::<LargeBinaryArray>()),
        _ => return None,
    })
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
    Some(ranges_where(
        may,
        counts.values().iter().map(|&n| n as usize),
    ))
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

    use crate::filter::CmpOp;
    use arrow_array::Int64Array;
    use parquet::schema::types::SchemaDescriptor;

    fn column(message: &str) -> parquet::schema::types::ColumnDescPtr {
        let schema = parquet::schema::parser::parse_message_type(message).unwrap();
        SchemaDescriptor::new(Arc::new(schema)).column(0)
    }

    #[test]
    fn page_header_bounds_allow_the_pages_that_may_match() {
        let v = column("message m { optional int64 v; }");
        let bytes: Vec<[u8; 8]> = [0i64, 99, 100, 199, 200, 299, 400, 499]
            .map(i64::to_le_bytes)
            .to_vec();
        // Four pages of 100 rows; the third gives no bounds (all nulls).
        let pages = || {
            let b = |i: usize| Some(&bytes[i][..]);
            vec![
                PageBounds {
                    values: 100,
                    min: b(0),
                    max: b(1),
                },
                PageBounds {
                    values: 100,
                    min: b(2),
                    max: b(3),
                },
                PageBounds {
                    values: 100,
                    min: None,
                    max: None,
                },
                PageBounds {
                    values: 100,
                    min: b(6),
                    max: b(7),
                },
            ]
        };
        let lit = |x: i64| Arc::new(Int64Array::from(vec![x])) as ArrayRef;
        let ranges = |filter: Vec<Vec<Predicate>>| {
            let filter = Filter::new(filter).unwrap();
            header_row_ranges(&filter, 400, |name| {
                (name == "v").then(|| (pages(), v.as_ref(), DataType::Int64))
            })
        };
        // A range within the second page: it, and the page that tells nothing.
        assert_eq!(
            ranges(vec![vec![
                Predicate::of("v", CmpOp::GtEq, lit(150)),
                Predicate::of("v", CmpOp::Lt, lit(180)),
            ]]),
            Some(vec![100..300])
        );
        // OR: each side's pages.
        assert_eq!(
            ranges(vec![
                vec![Predicate::of("v", CmpOp::Eq, lit(5))],
                vec![Predicate::of("v", CmpOp::Gt, lit(450))],
            ]),
            Some(vec![0..100, 200..400])
        );
        // A column whose pages are not at hand tells nothing.
        assert_eq!(
            ranges(vec![vec![Predicate::of("w", CmpOp::Eq, lit(5))]]),
            None
        );
        // Pages that do not add up to the row group's rows are not used.
        let filter = Filter::new(vec![vec![Predicate::of("v", CmpOp::Eq, lit(5))]]).unwrap();
        let short = header_row_ranges(&filter, 500, |_| {
            Some((pages(), v.as_ref(), DataType::Int64))
        });
        assert_eq!(short, None);
        // Nor are bounds of a type the read converts to.
        let other = header_row_ranges(&filter, 400, |_| {
            Some((pages(), v.as_ref(), DataType::Float64))
        });
        assert_eq!(other, None);
    }

    #[test]
    fn string_bounds_that_are_not_utf8_tell_nothing_of_their_page() {
        let s = column("message m { required binary s (STRING); }");
        let bad = [0xffu8, 0xfe];
        let pages = vec![
            PageBounds {
                values: 10,
                min: Some(b"a"),
                max: Some(b"c"),
            },
            PageBounds {
                values: 10,
                min: Some(&bad),
                max: Some(&bad),
            },
            PageBounds {
                values: 10,
                min: Some(b"x"),
                max: Some(b"z"),
            },
        ];
        let value = Arc::new(StringArray::from(vec!["b"])) as ArrayRef;
        let filter = Filter::new(vec![vec![Predicate::of("s", CmpOp::Eq, value)]]).unwrap();
        let ranges = header_row_ranges(&filter, 30, |_| {
            Some((pages.clone(), s.as_ref(), DataType::Utf8))
        });
        assert_eq!(ranges, Some(vec![0..20]));
    }

    #[test]
    fn range_algebra() {
        assert_eq!(intersect(&[0..10, 20..30], &[5..25]), vec![5..10, 20..25]);
        assert_eq!(union(&[0..10, 20..30], &[5..25]), vec![0..30]);
        assert_eq!(intersect(&[0..10], &[]), Vec::<Range<usize>>::new());
    }
}
