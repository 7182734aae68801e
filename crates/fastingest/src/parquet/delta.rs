//! The DELTA encodings of byte arrays, as v2 writers lay out strings (Spark
//! and DuckDB with Parquet v2, pyarrow when asked): `DELTA_LENGTH_BYTE_ARRAY`
//! (the lengths, then every value's bytes end to end) and `DELTA_BYTE_ARRAY`
//! (each value as how much of the previous one it starts with, and the rest).
//! Both count their lengths with `DELTA_BINARY_PACKED`, decoded here for
//! 32-bit values.
//!
//! Left to the `parquet` crate, a column of these went through its own
//! buffers, grown as it read: a 3 M-row file of two such string columns
//! peaked at 1.12x polars' memory. Anything these do not expect goes to the
//! crate, as with fastingest's other decoders.

use arrow_array::OffsetSizeTrait;

use super::flat::{Decoded, Failure};
use super::hybrid;
use super::thrift::Compact;

/// The most values a block may hold: writers use 128 (parquet-mr, Arrow);
/// a larger one is left to the `parquet` crate.
const MOST_PER_BLOCK: u64 = 1 << 16;

fn corrupt(detail: impl Into<String>) -> Failure {
    Failure::Corrupt(detail.into())
}

/// The `count` values of the `DELTA_BINARY_PACKED` run at the start of
/// `page` (32-bit values), and where the run ends.
pub(crate) fn binary_packed_i32(page: &[u8], count: usize) -> Decoded<(Vec<i32>, usize)> {
    let mut header = Compact::new(page);
    let block = header.varint().map_err(corrupt)?;
    let miniblocks = header.varint().map_err(corrupt)?;
    let total = header.varint().map_err(corrupt)?;
    let first = header.zigzag().map_err(corrupt)?;
    // A block's values split evenly into miniblocks of whole bytes at any
    // width (the format says multiples of 128 and 32).
    if block == 0 || miniblocks == 0 || block % miniblocks != 0 || (block / miniblocks) % 8 != 0 {
        return Err(corrupt(format!(
            "a delta run of blocks of {block} values in {miniblocks} miniblocks"
        )));
    }
    if block > MOST_PER_BLOCK {
        return Err(Failure::Unsupported);
    }
    // A run holds the page's values, no more: what follows it is found by
    // reading all of them.
    if total != count as u64 {
        return Err(corrupt(format!(
            "a delta run of {total} values where the page has {count}"
        )));
    }
    let (block, miniblocks) = (block as usize, miniblocks as usize);
    let per_miniblock = block / miniblocks;
    // Every block takes at least its smallest delta's byte and its
    // miniblocks' widths: a count the page cannot hold is refused before
    // anything is sized by it.
    let blocks = page.len() / (1 + miniblocks) + 1;
    if count > blocks.saturating_mul(block).saturating_add(1) {
        return Err(corrupt(format!(
            "{count} delta values in {} bytes",
            page.len()
        )));
    }
    let mut values: Vec<i32> = Vec::with_capacity(count);
    let mut at = header.pos;
    if count == 0 {
        return Ok((values, at));
    }
    let mut last =
        i32::try_from(first).map_err(|_| corrupt(format!("a first value of {first}")))?;
    values.push(last);
    let mut deltas = vec![0u32; per_miniblock];
    while values.len() < count {
        let mut block_header = Compact::new(&page[at..]);
        let min = block_header.zigzag().map_err(corrupt)?;
        let min = i32::try_from(min).map_err(|_| corrupt(format!("a smallest delta of {min}")))?;
        at += block_header.pos;
        let widths = page
            .get(at..at + miniblocks)
            .ok_or_else(|| corrupt("a delta block's bit widths are cut off"))?;
        at += miniblocks;
        for &width in widths {
            if values.len() == count {
                break;
            }
            if width > 32 {
                return Err(corrupt(format!("32-bit deltas of {width} bits")));
            }
            let size = per_miniblock * usize::from(width) / 8;
            let packed = page
                .get(at..at + size)
                .ok_or_else(|| corrupt("a delta miniblock is cut off"))?;
            at += size;
            hybrid::unpack(packed, width, &mut deltas);
            let wanted = (count - values.len()).min(per_miniblock);
            for &delta in &deltas[..wanted] {
                // Wrapping, as the writer took the differences.
                last = last.wrapping_add(min).wrapping_add(delta as i32);
                values.push(last);
            }
        }
    }
    Ok((values, at))
}

/// The `count` lengths of a `DELTA_LENGTH_BYTE_ARRAY` run at the start of
/// `page`, and the bytes of its values laid end to end after them.
fn lengths_and_bytes(page: &[u8], count: usize) -> Decoded<(Vec<i32>, &[u8])> {
    let (lengths, start) = binary_packed_i32(page, count)?;
    let mut total = 0usize;
    for &len in &lengths {
        let len =
            usize::try_from(len).map_err(|_| corrupt(format!("a byte array of {len} bytes")))?;
        total = total.saturating_add(len);
    }
    let values = page
        .get(start..start.saturating_add(total))
        .ok_or_else(|| {
            corrupt(format!(
                "{total} bytes of values with {} left in the page",
                page.len() - start
            ))
        })?;
    Ok((lengths, values))
}

/// Appends the `count` values of a `DELTA_LENGTH_BYTE_ARRAY` page to
/// `bytes` and each one's end in it to `ends`, after `room(bytes, n)` has
/// made room for `n` bytes in all; `Unsupported` past `most` bytes.
pub(crate) fn length_byte_arrays<O: OffsetSizeTrait>(
    page: &[u8],
    count: usize,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
    most: usize,
    room: impl FnOnce(&mut Vec<u8>, usize),
) -> Decoded<()> {
    let (lengths, values) = lengths_and_bytes(page, count)?;
    if bytes.len().saturating_add(values.len()) > most {
        return Err(Failure::Unsupported);
    }
    room(bytes, bytes.len() + values.len());
    let mut end = bytes.len();
    bytes.extend_from_slice(values);
    ends.reserve(count);
    for &len in &lengths {
        end += len as usize;
        ends.push(O::usize_as(end));
    }
    Ok(())
}

/// Appends the `count` values of a `DELTA_BYTE_ARRAY` page to `bytes` and
/// each one's end in it to `ends`, as [`length_byte_arrays`] does: each
/// value is a prefix of the one before it in the page, then a suffix (the
/// suffixes are a `DELTA_LENGTH_BYTE_ARRAY` run after the prefixes').
pub(crate) fn byte_arrays<O: OffsetSizeTrait>(
    page: &[u8],
    count: usize,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
    most: usize,
    room: impl FnOnce(&mut Vec<u8>, usize),
) -> Decoded<()> {
    let (prefixes, at) = binary_packed_i32(page, count)?;
    let (suffixes, suffix_bytes) = lengths_and_bytes(&page[at..], count)?;
    let mut total = suffix_bytes.len();
    for &prefix in &prefixes {
        let prefix =
            usize::try_from(prefix).map_err(|_| corrupt(format!("a prefix of {prefix} bytes")))?;
        total = total.saturating_add(prefix);
    }
    if bytes.len().saturating_add(total) > most {
        return Err(Failure::Unsupported);
    }
    room(bytes, bytes.len() + total);
    ends.reserve(count);
    let mut previous = bytes.len()..bytes.len();
    let mut suffix_at = 0;
    for (&prefix, &suffix) in prefixes.iter().zip(&suffixes) {
        // Both checked as not negative above.
        let (prefix, suffix) = (prefix as usize, suffix as usize);
        if prefix > previous.len() {
            return Err(corrupt(format!(
                "a prefix of {prefix} bytes of a value of {}",
                previous.len()
            )));
        }
        let start = bytes.len();
        bytes.extend_from_within(previous.start..previous.start + prefix);
        bytes.extend_from_slice(&suffix_bytes[suffix_at..suffix_at + suffix]);
        suffix_at += suffix;
        previous = start..bytes.len();
        ends.push(O::usize_as(bytes.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
    use arrow_schema::DataType;
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, Encoding};
    use parquet::file::metadata::ParquetMetaDataReader;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    use super::*;

    /// Strings with nulls, empty ones, shared prefixes and long ones, in
    /// pages of a few hundred values.
    fn strings() -> StringArray {
        (0..5_000)
            .map(|i: usize| match i % 7 {
                0 => None,
                1 => Some(String::new()),
                2 => Some(format!("prefix-{:05}", i / 3)),
                3 => Some("é".repeat(i % 40)),
                _ => Some(format!("{i}").repeat(1 + i % 9)),
            })
            .collect()
    }

    #[test]
    fn delta_encoded_strings_decode_here_to_what_was_written() {
        let values = strings();
        for encoding in [
            Encoding::DELTA_BYTE_ARRAY,
            Encoding::DELTA_LENGTH_BYTE_ARRAY,
        ] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                let case = format!("{encoding} {version:?}");
                let props = WriterProperties::builder()
                    .set_writer_version(version)
                    .set_dictionary_enabled(false)
                    .set_encoding(encoding)
                    .set_compression(Compression::SNAPPY)
                    .set_data_page_row_count_limit(300)
                    .set_write_batch_size(100)
                    .build();
                let batch =
                    RecordBatch::try_from_iter([("s", Arc::new(values.clone()) as ArrayRef)])
                        .unwrap();
                let mut file = Vec::new();
                let mut writer =
                    ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
                writer.write(&batch).unwrap();
                writer.close().unwrap();
                let file = Bytes::from(file);
                let meta = ParquetMetaDataReader::new()
                    .parse_and_finish(&file)
                    .unwrap();
                let chunk = meta.row_group(0).column(0);
                assert!(chunk.encodings().any(|e| e == encoding), "{case}");
                let (start, len) = chunk.byte_range();
                let bytes = file.slice(start as usize..(start + len) as usize);
                let column = meta.file_metadata().schema_descr().column(0);
                // Decoded by fastingest's decoder, not left to the crate.
                let array = super::super::flat::decode_column(
                    bytes,
                    chunk,
                    &column,
                    &DataType::Utf8,
                    values.len(),
                    None,
                    Vec::new(),
                )
                .unwrap_or_else(|e| panic!("{case}: {e:?}"));
                assert_eq!(array.as_ref(), &values as &dyn Array, "{case}");
            }
        }
    }

    /// A `DELTA_BINARY_PACKED` run of `values`, as the format lays it out:
    /// blocks of 128 values in 4 miniblocks.
    fn packed(values: &[i32]) -> Vec<u8> {
        fn uleb(mut v: u64, out: &mut Vec<u8>) {
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(byte);
                    return;
                }
                out.push(byte | 0x80);
            }
        }
        let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        uleb(128, &mut out);
        uleb(4, &mut out);
        uleb(values.len() as u64, &mut out);
        uleb(
            zigzag(values.first().copied().unwrap_or(0).into()),
            &mut out,
        );
        let deltas: Vec<i32> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
        for block in deltas.chunks(128) {
            let min = *block.iter().min().unwrap();
            uleb(zigzag(min.into()), &mut out);
            let minis: Vec<Vec<u32>> = block
                .chunks(32)
                .map(|m| m.iter().map(|d| d.wrapping_sub(min) as u32).collect())
                .collect();
            let widths: Vec<u8> = (0..4)
                .map(|i| {
                    minis.get(i).map_or(0, |m: &Vec<u32>| {
                        (32 - m.iter().max().unwrap().leading_zeros()) as u8
                    })
                })
                .collect();
            out.extend(&widths);
            for (m, &width) in minis.iter().zip(&widths) {
                let mut bits = vec![0u8; 32 * usize::from(width) / 8];
                for (i, &v) in m.iter().enumerate() {
                    for b in 0..usize::from(width) {
                        if v >> b & 1 == 1 {
                            let at = i * usize::from(width) + b;
                            bits[at / 8] |= 1 << (at % 8);
                        }
                    }
                }
                out.extend(bits);
            }
        }
        out
    }

    #[test]
    fn list_items_in_delta_pages_decode_here() {
        use super::super::byte_arrays::Values;
        use super::super::lists::Leaf;
        let words: [&[u8]; 5] = [b"tag-1", b"tag-12", b"", b"tag-2", b"other"];
        let lengths: Vec<i32> = words.iter().map(|w| w.len() as i32).collect();
        // DELTA_LENGTH_BYTE_ARRAY: the lengths, then the bytes.
        let mut by_length = packed(&lengths);
        by_length.extend(words.concat());
        // DELTA_BYTE_ARRAY: how much of the value before each shares, then
        // the rest as DELTA_LENGTH_BYTE_ARRAY.
        let shared = [0, 5, 0, 0, 0];
        let rest: Vec<&[u8]> = words.iter().zip(shared).map(|(w, n)| &w[n..]).collect();
        let mut by_prefix = packed(&shared.map(|n| n as i32));
        by_prefix.extend(packed(
            &rest.iter().map(|r| r.len() as i32).collect::<Vec<_>>(),
        ));
        by_prefix.extend(rest.concat());
        for (encoding, page) in [
            (Encoding::DELTA_LENGTH_BYTE_ARRAY, &by_length),
            (Encoding::DELTA_BYTE_ARRAY, &by_prefix),
        ] {
            let mut leaf = Values::<i32>::new(true, 10);
            // Two pages of the same values: ends carry on.
            leaf.append(encoding, page, words.len(), &mut Vec::new())
                .unwrap_or_else(|e| panic!("{encoding}: {e:?}"));
            leaf.append(encoding, page, words.len(), &mut Vec::new())
                .unwrap();
            let array = leaf.into_array(None, 10).unwrap();
            let got = array.as_any().downcast_ref::<StringArray>().unwrap();
            let want: Vec<&str> = words
                .iter()
                .chain(&words)
                .map(|w| std::str::from_utf8(w).unwrap())
                .collect();
            assert_eq!(got, &StringArray::from(want), "{encoding}");
        }
        // A value that is not UTF-8 is refused.
        let mut bad = packed(&[2]);
        bad.extend([0xc3, 0x28]);
        let mut leaf = Values::<i32>::new(true, 1);
        let refused = leaf.append(Encoding::DELTA_LENGTH_BYTE_ARRAY, &bad, 1, &mut Vec::new());
        assert!(matches!(refused, Err(Failure::Corrupt(_))));
    }

    #[test]
    fn binary_packed_runs_read_back_and_end_where_their_bytes_do() {
        let cases: Vec<Vec<i32>> = vec![
            vec![],
            vec![7],
            vec![3, 3, 3, 3],
            (0..129).collect(),
            (0..1_000).map(|i| (i * 7919) % 1_000 - 500).collect(),
            vec![i32::MIN, i32::MAX, 0, -1, i32::MAX],
        ];
        for values in cases {
            let mut run = packed(&values);
            let end = run.len();
            run.extend(b"after");
            let (got, at) = binary_packed_i32(&run, values.len()).unwrap();
            assert_eq!(got, values);
            assert_eq!(at, end, "{} values", values.len());
        }
    }

    #[test]
    fn binary_packed_runs_that_lie_are_refused() {
        let run = packed(&(0..300).collect::<Vec<_>>());
        // Other than the values the run holds (what follows it would be
        // looked for in the wrong place), or the run cut short.
        for count in [0, 299, 301] {
            assert!(
                matches!(binary_packed_i32(&run, count), Err(Failure::Corrupt(_))),
                "{count}"
            );
        }
        for cut in [1, 5, run.len() / 2, run.len() - 1] {
            assert!(binary_packed_i32(&run[..cut], 300).is_err(), "cut at {cut}");
        }
        // A width past 32 bits, and blocks that do not split into miniblocks.
        let mut wide = packed(&(0..10).collect::<Vec<_>>());
        // Header of 5 bytes, the block's smallest delta, then its 4 widths.
        for byte in &mut wide[6..10] {
            *byte = 40;
        }
        assert!(binary_packed_i32(&wide, 10).is_err());
        let odd = [0x81, 0x01, 0x03, 0x02, 0x00];
        assert!(matches!(
            binary_packed_i32(&odd, 2),
            Err(Failure::Corrupt(_))
        ));
        // A claim of a million values in a few bytes is refused before
        // anything is sized by it.
        // Blocks of 128 in 4 miniblocks, 2,000,000 values, first 0.
        let claim = [0x80, 0x01, 0x04, 0x80, 0x89, 0x7a, 0x00];
        assert!(matches!(
            binary_packed_i32(&claim, 1_000_000),
            Err(Failure::Corrupt(_))
        ));
    }
}
