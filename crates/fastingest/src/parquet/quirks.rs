//! Known mistakes of old writers in a footer's column chunks, corrected as
//! pyarrow corrects them, so that their files read there read here too.
//!
//! - A dictionary page offset below 4 names no page (none starts inside
//!   the leading `PAR1`): Dremio 3.2 wrote 0 for chunks whose dictionary
//!   page is at their data page offset (parquet-testing's
//!   `dict-page-offset-zero.parquet`). It is dropped: the chunk starts at
//!   its data page, and a dictionary page there is read as one.
//! - parquet-mr 1.2.8 and older left each dictionary page's header out of
//!   its chunk's size (PARQUET-816, IMPALA-694), so the chunk's last page
//!   runs past its end (parquet-testing's `nation.dict-malformed.parquet`).
//!   pyarrow adds up to 100 bytes to every chunk of such files; here a
//!   chunk grows by that much at most, and never into the next chunk, a
//!   page index, a bloom filter or the footer.

use parquet::errors::Result;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use super::footer::with_row_groups;

/// The most bytes a chunk of a file from parquet-mr 1.2.8 or older grows
/// by (pyarrow's allowance for a dictionary page header).
const MOST_HEADER_LEFT_OUT: i64 = 100;

/// `metadata` with the mistakes above corrected; as it is when it has none.
/// `data_end`: where the footer starts, for a data file's footer (a summary
/// file's chunks lie in other files, and are not grown).
pub(super) fn corrected(
    metadata: ParquetMetaData,
    data_end: Option<u64>,
) -> Result<ParquetMetaData> {
    let created_by = metadata.file_metadata().created_by();
    let Some(data_end) = data_end.filter(|_| left_headers_out(created_by)) else {
        return dictionary_offsets_dropped(metadata);
    };
    corrected_chunks(metadata, Some(data_end))
}

/// `metadata` with only the dictionary page offsets that name no page
/// dropped.
fn dictionary_offsets_dropped(metadata: ParquetMetaData) -> Result<ParquetMetaData> {
    let any = metadata
        .row_groups()
        .iter()
        .any(|rg| rg.columns().iter().any(names_no_page));
    match any {
        true => corrected_chunks(metadata, None),
        false => Ok(metadata),
    }
}

/// `metadata` with dictionary page offsets that name no page dropped, and,
/// given the footer's start, each chunk grown for the header left out.
fn corrected_chunks(metadata: ParquetMetaData, data_end: Option<u64>) -> Result<ParquetMetaData> {
    let short_chunks = data_end.is_some();
    // Where each chunk may grow to: the next chunk, page index or bloom
    // filter, or the footer.
    let mut starts: Vec<i64> = metadata
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .flat_map(|c| {
            let index = [c.column_index_offset(), c.offset_index_offset()];
            [Some(chunk_start(c)), c.bloom_filter_offset()]
                .into_iter()
                .chain(index)
                .flatten()
        })
        .chain(data_end.map(|end| end as i64))
        .collect();
    starts.sort_unstable();
    let mut row_groups = Vec::with_capacity(metadata.num_row_groups());
    for group in metadata.row_groups() {
        let mut builder = group.clone().into_builder();
        let columns = builder
            .take_columns()
            .into_iter()
            .map(|c| {
                let c = match names_no_page(&c) {
                    true => c.into_builder().set_dictionary_page_offset(None).build()?,
                    false => c,
                };
                if !short_chunks {
                    return Ok(c);
                }
                // Offsets and sizes as the footer has them: a sum that
                // overflows is left for the chunk checks to refuse.
                let Some(end) = chunk_start(&c).checked_add(c.compressed_size()) else {
                    return Ok(c);
                };
                let next = starts[starts.partition_point(|&s| s < end)..]
                    .first()
                    .copied()
                    .unwrap_or(end);
                let grow = next.saturating_sub(end).clamp(0, MOST_HEADER_LEFT_OUT);
                let size = c.compressed_size().saturating_add(grow);
                c.into_builder().set_total_compressed_size(size).build()
            })
            .collect::<Result<Vec<_>>>()?;
        row_groups.push(builder.set_column_metadata(columns).build()?);
    }
    Ok(with_row_groups(metadata.file_metadata(), row_groups))
}

/// Where chunk `c` starts, once a dictionary page offset that names no page
/// is dropped.
fn chunk_start(c: &ColumnChunkMetaData) -> i64 {
    match c.dictionary_page_offset() {
        Some(at) if at >= 4 => at,
        _ => c.data_page_offset(),
    }
}

/// Whether `c`'s dictionary page offset is one no page can have.
fn names_no_page(c: &ColumnChunkMetaData) -> bool {
    c.dictionary_page_offset().is_some_and(|at| at < 4)
}

/// Whether a file `created_by` this writer left dictionary page headers out
/// of its chunk sizes: parquet-mr before 1.2.9, or of no version (as pyarrow
/// reads a bare "parquet-mr": version 0).
fn left_headers_out(created_by: Option<&str>) -> bool {
    let Some(rest) = created_by.and_then(|by| by.strip_prefix("parquet-mr")) else {
        return false;
    };
    let Some(version) = rest.trim_start().strip_prefix("version") else {
        return rest.trim().is_empty();
    };
    let mut parts = version
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next()) < (1, 2, 9)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::file::metadata::ParquetMetaDataReader;

    /// A file of two row groups of two dictionary-encoded columns written by
    /// `created_by`: its footer, and where the footer starts.
    fn written(created_by: &str) -> (ParquetMetaData, u64) {
        let ints: ArrayRef = Arc::new(Int64Array::from_iter_values((0..2_000).map(|i| i % 7)));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..2_000).map(|i| format!("n{}", i % 5)),
        ));
        let batch = RecordBatch::try_from_iter([("i", ints), ("s", names)]).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_created_by(created_by.to_string())
            .set_max_row_group_row_count(Some(1_000))
            .build();
        let file = crate::parquet::written::written(&batch, props);
        let n = file.len();
        let footer = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as u64;
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        (metadata, n as u64 - 8 - footer)
    }

    /// `metadata` with every chunk's size cut by `by` and, with `zero`, its
    /// dictionary page offset made 0 (its data page offset then the
    /// dictionary page's).
    fn damaged(metadata: &ParquetMetaData, by: i64, zero: bool) -> ParquetMetaData {
        let groups = metadata
            .row_groups()
            .iter()
            .map(|g| {
                let mut builder = g.clone().into_builder();
                let columns = builder
                    .take_columns()
                    .into_iter()
                    .map(|c| {
                        let start = c.byte_range().0 as i64;
                        let size = c.compressed_size() - by;
                        let mut b = c.into_builder().set_total_compressed_size(size);
                        if zero {
                            b = b
                                .set_dictionary_page_offset(Some(0))
                                .set_data_page_offset(start);
                        }
                        b.build().unwrap()
                    })
                    .collect();
                builder.set_column_metadata(columns).build().unwrap()
            })
            .collect();
        with_row_groups(metadata.file_metadata(), groups)
    }

    fn ranges(metadata: &ParquetMetaData) -> Vec<(u64, u64)> {
        let chunks = metadata.row_groups().iter().flat_map(|g| g.columns());
        chunks.map(|c| c.byte_range()).collect()
    }

    #[test]
    fn chunks_of_old_parquet_mr_grow_back_to_the_next_chunk_and_no_further() {
        let (metadata, footer) = written("parquet-mr version 1.2.8 (build x)");
        let want = ranges(&metadata);
        assert_eq!(want.len(), 4);
        // Cut by 15 bytes: grown back to where the next chunk (or the
        // footer) starts.
        let fixed = corrected(damaged(&metadata, 15, false), Some(footer)).unwrap();
        assert_eq!(ranges(&fixed), want);
        // Cut by 150: grown by 100 at most.
        let fixed = corrected(damaged(&metadata, 150, false), Some(footer)).unwrap();
        let grown: Vec<_> = want.iter().map(|&(s, l)| (s, l - 50)).collect();
        assert_eq!(ranges(&fixed), grown);
        // A summary's chunks (no footer start) and a newer writer's stay.
        let cut = ranges(&damaged(&metadata, 15, false));
        assert_eq!(
            ranges(&corrected(damaged(&metadata, 15, false), None).unwrap()),
            cut
        );
        let (newer, footer) = written("parquet-mr version 1.2.9");
        let cut = ranges(&damaged(&newer, 15, false));
        assert_eq!(
            ranges(&corrected(damaged(&newer, 15, false), Some(footer)).unwrap()),
            cut
        );
    }

    #[test]
    fn a_dictionary_page_offset_of_0_is_dropped_and_the_chunk_starts_at_its_data_page() {
        let (metadata, footer) = written("parquet-cpp-arrow version 20.0.0");
        let want = ranges(&metadata);
        let zeroed = damaged(&metadata, 0, true);
        // As the footer says: every chunk from byte 0.
        assert!(ranges(&zeroed).iter().all(|&(start, _)| start == 0));
        let fixed = corrected(zeroed, Some(footer)).unwrap();
        assert_eq!(ranges(&fixed), want);
        let chunks = fixed.row_groups().iter().flat_map(|g| g.columns());
        assert!(chunks
            .into_iter()
            .all(|c| c.dictionary_page_offset().is_none()));
    }

    #[test]
    fn parquet_mr_before_1_2_9_left_headers_out() {
        for old in [
            "parquet-mr",
            "parquet-mr version 1.2.8",
            "parquet-mr version 1.2.8 (build abc)",
            "parquet-mr version 1.0.0-SNAPSHOT",
        ] {
            assert!(left_headers_out(Some(old)), "{old}");
        }
        for fine in [
            "parquet-mr version 1.2.9",
            "parquet-mr version 1.10.1 (build a89df8f9932b6ef6633d06069e50c9b7970bebd1)",
            "parquet-mr version 1.12.3",
            "parquet-cpp-arrow version 14.0.0",
            "parquet-mr-fork 1.0",
            "impala version 1.0",
        ] {
            assert!(!left_headers_out(Some(fine)), "{fine}");
        }
        assert!(!left_headers_out(None));
    }
}
