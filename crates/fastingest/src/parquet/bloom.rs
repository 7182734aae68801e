//! Bloom filters: a row group whose column's bloom filter holds none of the
//! values an `==` or `in` filter asks for has no matching row, and none of
//! its column data is fetched.
//!
//! Why: minimums and maximums rule out nothing for a value looked up in a
//! column that is not sorted (an id, a user, a UUID), so such a lookup read
//! every row group whole: through a link, every byte of the file. The bloom
//! filters that writers add on request (pyarrow's `bloom_filter_options`,
//! Spark's `parquet.bloom.filter.enabled`, arrow-rs, DuckDB) are a few
//! hundred KB a column chunk and answer "certainly not here" for most row
//! groups. pyarrow and polars do not read them.
//!
//! A bloom filter is only trusted to say "not here" for a value whose bytes
//! are exactly what the writer hashed: the column's plain encoding, so only
//! for columns read as their natural type (integers, dates, timestamps,
//! strings, binary) and never for floats (`-0.0 == 0.0`, NaN). One that does
//! not parse, or lies outside the file, is passed over: the row group is
//! read and its rows filtered as without it, which is never a wrong answer.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Schema};
use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ParquetMetaData;

use super::flat;
use crate::error::Result;
use crate::fetch::{await_spans, unit_spans, FetchedSpans, Fetcher};
use crate::filter::{equal_values, Filter, Predicate};
use crate::known::Known;
use crate::pipeline::checked_plan;
use crate::plan::PlanUnit;
use crate::source::Source;

/// A row group's bloom filters are read only while they are at most this
/// share of the bytes the row group would fetch: past it, fetching them
/// costs about what they could save.
const MOST_BLOOM_SHARE: u64 = 2;

/// For each of `row_groups`, whether its bloom filters leave a match
/// possible for `filter`; `planned_bytes` are the bytes each would fetch.
/// Reads the bloom filters of the `==` and `in` predicates'
/// columns in one batch of requests (served from `known` where the footer
/// request brought them); without such a predicate, or without bloom
/// filters, no request is made and every row group stays.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn may_match(
    fetcher: &Fetcher,
    source: &Source,
    known: &Known,
    file_size: u64,
    metadata: &ParquetMetaData,
    schema: &Schema,
    filter: &Filter,
    row_groups: &[usize],
    planned_bytes: &[u64],
) -> Result<Vec<bool>> {
    let all = vec![true; row_groups.len()];
    if !fetcher.config().bloom_filters || row_groups.is_empty() {
        return Ok(all);
    }
    let lookups = lookups(metadata, schema, filter);
    if lookups.is_empty() {
        return Ok(all);
    }
    // The bloom filter ranges worth reading, per row group.
    let wanted: Vec<Vec<(usize, Range<u64>)>> = row_groups
        .iter()
        .zip(planned_bytes)
        .map(|(&rg, &planned)| {
            let ranges: Vec<(usize, Range<u64>)> = lookups
                .iter()
                .enumerate()
                .filter_map(|(i, l)| bloom_range(metadata, rg, l.leaf, file_size).map(|r| (i, r)))
                .collect();
            let bytes: u64 = ranges.iter().map(|(_, r)| r.end - r.start).sum();
            match bytes.saturating_mul(MOST_BLOOM_SHARE) <= planned {
                true => ranges,
                false => Vec::new(),
            }
        })
        .collect();
    if wanted.iter().all(Vec::is_empty) {
        return Ok(all);
    }
    let units: Vec<PlanUnit> = row_groups
        .iter()
        .zip(&wanted)
        .filter(|(_, ranges)| !ranges.is_empty())
        .map(|(&rg, ranges)| PlanUnit {
            index: rg,
            ranges: ranges.iter().map(|(_, r)| r.clone()).collect(),
        })
        .collect();
    let plan = checked_plan(source, file_size, units, fetcher, 1)?;
    let (futures, _guards) = fetcher.start_with(source, &plan, known);
    let mut fetched = Vec::new();
    for unit in &plan.units {
        fetched.extend(await_spans(unit_spans(&plan, &futures, unit)).await?);
    }
    fetched.sort_by_key(|(r, _)| r.start);
    fetched.dedup_by_key(|(r, _)| r.start);
    let spans = FetchedSpans::new(fetched);
    // Per lookup, per row group: whether the value may be there.
    let mut may = vec![vec![true; row_groups.len()]; lookups.len()];
    for (at, ranges) in wanted.iter().enumerate() {
        for (i, range) in ranges {
            let holds = spans
                .get(range)
                .and_then(|bytes| usable(Sbbf::from_bytes(&bytes).ok()?))
                .map(|bloom| lookups[*i].probes.iter().any(|p| bloom.check(&p[..])));
            if holds == Some(false) {
                may[*i][at] = false;
            }
        }
    }
    let keep = filter.prune_by(row_groups.len(), |p| {
        let i = lookups.iter().position(|l| std::ptr::eq(l.predicate, p))?;
        Some(may[i].clone())
    });
    let skipped = keep.iter().filter(|&&k| !k).count();
    fetcher.stats().add_bloom_skipped(skipped as u64);
    Ok(keep)
}

/// An `==` or `in` predicate that bloom filters can answer.
struct Lookup<'a> {
    predicate: &'a Predicate,
    /// The column's leaf in the file's schema.
    leaf: usize,
    /// The plain encoding of each value asked for: the bytes hashed.
    probes: Vec<Vec<u8>>,
}

/// The predicates of `filter` that bloom filters can answer.
fn lookups<'a>(metadata: &ParquetMetaData, schema: &Schema, filter: &'a Filter) -> Vec<Lookup<'a>> {
    let descr = metadata.file_metadata().schema_descr();
    let mut out = Vec::new();
    for p in filter.disjuncts.iter().flatten() {
        let Ok(root) = schema.index_of(&p.column) else {
            continue; // a partition column, say: not in the file
        };
        let Some(leaf) = (0..descr.num_columns()).find(|&l| descr.get_column_root_idx(l) == root)
        else {
            continue;
        };
        let column = descr.column(leaf);
        // Only where the values read are the values written (the type a
        // column decodes as by itself, or the same values labelled or
        // offset otherwise), so that their encoding is the one hashed.
        let read_as = schema.field(root).data_type();
        if !flat::decodes(&column, read_as) || column.physical_type() == PhysicalType::INT96 {
            continue;
        }
        let read_as = match read_as {
            DataType::Dictionary(_, value) => value.as_ref().clone(),
            other => other.clone(),
        };
        let Some(values) = equal_values(p, &read_as) else {
            continue;
        };
        if let Some(probes) = plain_encodings(&values) {
            out.push(Lookup {
                predicate: p,
                leaf,
                probes,
            });
        }
    }
    out
}

/// Each value's plain encoding (integers little-endian in their physical
/// width: 8, 16 and 32 bits as 32; strings and binary as their bytes);
/// timestamps as their `i64`, whatever zone labels them; `None` for types
/// not listed here (floats, decimals, booleans).
fn plain_encodings(values: &ArrayRef) -> Option<Vec<Vec<u8>>> {
    fn each<T: arrow_array::ArrowPrimitiveType, const N: usize>(
        values: &ArrayRef,
        encode: impl Fn(T::Native) -> [u8; N],
    ) -> Vec<Vec<u8>> {
        let values = values.as_primitive::<T>();
        values
            .values()
            .iter()
            .map(|&v| encode(v).to_vec())
            .collect()
    }
    Some(match values.data_type() {
        DataType::Int8 => each::<Int8Type, 4>(values, |v| i32::from(v).to_le_bytes()),
        DataType::Int16 => each::<Int16Type, 4>(values, |v| i32::from(v).to_le_bytes()),
        DataType::Int32 => each::<Int32Type, 4>(values, |v| v.to_le_bytes()),
        DataType::UInt8 => each::<UInt8Type, 4>(values, |v| u32::from(v).to_le_bytes()),
        DataType::UInt16 => each::<UInt16Type, 4>(values, |v| u32::from(v).to_le_bytes()),
        DataType::UInt32 => each::<UInt32Type, 4>(values, |v| v.to_le_bytes()),
        DataType::Int64 => each::<Int64Type, 8>(values, |v| v.to_le_bytes()),
        DataType::UInt64 => each::<UInt64Type, 8>(values, |v| v.to_le_bytes()),
        DataType::Date32 => each::<Date32Type, 4>(values, |v| v.to_le_bytes()),
        DataType::Timestamp(..) => {
            let cast = arrow_cast::cast(values, &DataType::Int64).ok()?;
            each::<Int64Type, 8>(&cast, |v| v.to_le_bytes())
        }
        DataType::Utf8 => bytes_of(
            values
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::as_bytes),
        ),
        DataType::LargeUtf8 => bytes_of(
            values
                .as_string::<i64>()
                .iter()
                .flatten()
                .map(str::as_bytes),
        ),
        DataType::Binary => bytes_of(values.as_binary::<i32>().iter().flatten()),
        DataType::LargeBinary => bytes_of(values.as_binary::<i64>().iter().flatten()),
        _ => return None,
    })
}

fn bytes_of<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<Vec<u8>> {
    values.map(<[u8]>::to_vec).collect()
}

/// The bytes of leaf `leaf`'s bloom filter in row group `rg`, where the
/// footer gives its place and length and it lies within the file.
fn bloom_range(
    metadata: &ParquetMetaData,
    rg: usize,
    leaf: usize,
    file_size: u64,
) -> Option<Range<u64>> {
    let chunk = metadata.row_group(rg).column(leaf);
    let start = u64::try_from(chunk.bloom_filter_offset()?).ok()?;
    let len = u64::try_from(chunk.bloom_filter_length()?).ok()?;
    let end = start.checked_add(len)?;
    (len > 0 && end <= file_size).then_some(start..end)
}

/// `bloom`, unless it has no block to look in (a header that says zero
/// bytes parses, and every lookup would then index an empty table).
fn usable(bloom: Sbbf) -> Option<Sbbf> {
    (bloom.num_blocks() > 0).then_some(bloom)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        BinaryArray, Date32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
        LargeBinaryArray, LargeStringArray, RecordBatch, StringArray, TimestampMicrosecondArray,
        UInt16Array, UInt32Array, UInt64Array, UInt8Array,
    };
    use parquet::arrow::arrow_reader::ArrowReaderMetadata;
    use parquet::file::metadata::ParquetMetaDataReader;
    use parquet::file::properties::WriterProperties;

    use super::*;
    use crate::filter::CmpOp;
    use crate::parquet::written::written;

    const ROWS: i64 = 400;

    /// Every type whose bloom filter is trusted, with the values `0..ROWS`
    /// spread over its range (`v * step + offset` in its own width).
    fn columns(step: i64) -> Vec<(&'static str, ArrayRef)> {
        let v = move |i: i64| i * step;
        vec![
            (
                "i8",
                Arc::new(Int8Array::from_iter_values(
                    (0..ROWS).map(|i| (v(i) % 250 - 125) as i8),
                )),
            ),
            (
                "i16",
                Arc::new(Int16Array::from_iter_values(
                    (0..ROWS).map(|i| (v(i) - 30_000) as i16),
                )),
            ),
            (
                "i32",
                Arc::new(Int32Array::from_iter_values(
                    (0..ROWS).map(|i| v(i) as i32 - 70_000),
                )),
            ),
            (
                "u8",
                Arc::new(UInt8Array::from_iter_values(
                    (0..ROWS).map(|i| (v(i) % 250 + 5) as u8),
                )),
            ),
            (
                "u16",
                Arc::new(UInt16Array::from_iter_values(
                    (0..ROWS).map(|i| (v(i) + 60_000) as u16),
                )),
            ),
            (
                "u32",
                Arc::new(UInt32Array::from_iter_values(
                    (0..ROWS).map(|i| v(i) as u32 + 4_000_000_000),
                )),
            ),
            (
                "i64",
                Arc::new(Int64Array::from_iter_values(
                    (0..ROWS).map(|i| v(i) * 1_000_003 - (1 << 40)),
                )),
            ),
            (
                "u64",
                Arc::new(UInt64Array::from_iter_values(
                    (0..ROWS).map(|i| v(i) as u64 + (1 << 63)),
                )),
            ),
            (
                "day",
                Arc::new(Date32Array::from_iter_values(
                    (0..ROWS).map(|i| v(i) as i32 - 1_000),
                )),
            ),
            (
                "ts",
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values(
                        (0..ROWS).map(|i| v(i) * 1_000_001),
                    )
                    .with_timezone("UTC"),
                ),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..ROWS).map(|i| format!("s{}", v(i))),
                )),
            ),
            (
                "ls",
                Arc::new(LargeStringArray::from_iter_values(
                    (0..ROWS).map(|i| format!("l{}", v(i))),
                )),
            ),
            (
                "b",
                Arc::new(BinaryArray::from_iter_values(
                    (0..ROWS).map(|i| v(i).to_le_bytes()),
                )),
            ),
            (
                "lb",
                Arc::new(LargeBinaryArray::from_iter_values(
                    (0..ROWS).map(|i| v(i).to_be_bytes()),
                )),
            ),
        ]
    }

    #[test]
    fn values_are_looked_up_as_the_parquet_crate_hashed_them() {
        // Even multiples written; odd ones are in no bloom filter.
        let written_values = columns(2);
        let batch = RecordBatch::try_from_iter(written_values.clone()).unwrap();
        let props = WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .set_bloom_filter_fpp(0.01)
            .set_bloom_filter_max_ndv(ROWS as u64)
            .build();
        let file = written(&batch, props);
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        let absent = columns(1);
        for (leaf, ((name, present), (_, odd))) in written_values.iter().zip(&absent).enumerate() {
            let chunk = meta.row_group(0).column(leaf);
            let bloom = Sbbf::read_from_column_chunk(chunk, &file).unwrap().unwrap();
            let found = |values: &ArrayRef| -> Vec<bool> {
                let probes = plain_encodings(values).unwrap();
                assert_eq!(probes.len(), values.len(), "{name}");
                probes.iter().map(|p| bloom.check(&p[..])).collect()
            };
            // No value written may be missed: that would be a wrong answer.
            assert!(
                found(present).iter().all(|&f| f),
                "{name}: a written value missed"
            );
            // Of the odd values (i8 and u8 wrap, so some are written), the
            // bloom filter rules out most: its lookups are the writer's.
            let odd_found = found(odd).iter().filter(|&&f| f).count();
            assert!(
                odd_found < ROWS as usize * 3 / 4,
                "{name}: {odd_found} odd values found"
            );
        }
    }

    #[test]
    fn only_equality_on_columns_read_as_written_is_looked_up() {
        let batch = RecordBatch::try_from_iter(vec![
            ("i", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            (
                "f",
                Arc::new(Float64Array::from(vec![0.0, -0.0])) as ArrayRef,
            ),
            ("s", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
        ])
        .unwrap();
        let file = written(&batch, WriterProperties::default());
        let reader = ArrowReaderMetadata::load(&file, Default::default()).unwrap();
        let (meta, schema) = (reader.metadata(), reader.schema());
        let one = |v: i64| Arc::new(Int64Array::from(vec![v])) as ArrayRef;
        let filter = Filter::new(vec![vec![
            Predicate::of("i", CmpOp::Eq, one(1)),
            Predicate::of("i", CmpOp::Gt, one(1)),
            Predicate::of("i", CmpOp::NotIn, one(1)),
            Predicate::of("f", CmpOp::Eq, Arc::new(Float64Array::from(vec![0.0]))),
            Predicate::of(
                "s",
                CmpOp::In,
                Arc::new(StringArray::from(vec![Some("a"), None])),
            ),
            Predicate::of("s", CmpOp::In, Arc::new(StringArray::from(vec!["a", "z"]))),
            Predicate::of("absent", CmpOp::Eq, one(1)),
        ]])
        .unwrap();
        let found = lookups(meta, schema, &filter);
        let described: Vec<(&str, CmpOp, usize, usize)> = found
            .iter()
            .map(|l| {
                (
                    l.predicate.column.as_str(),
                    l.predicate.op,
                    l.leaf,
                    l.probes.len(),
                )
            })
            .collect();
        // `==` on the integers and the `in` set without a null only.
        assert_eq!(
            described,
            vec![("i", CmpOp::Eq, 0, 1), ("s", CmpOp::In, 2, 2)]
        );
        assert_eq!(found[1].probes, vec![b"a".to_vec(), b"z".to_vec()]);
    }

    #[test]
    fn a_bloom_filter_without_blocks_is_not_used() {
        assert!(usable(Sbbf::new(&[])).is_none());
        assert!(usable(Sbbf::new(&[0; 32])).is_some());
    }
}
