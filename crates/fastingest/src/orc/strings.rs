//! Top-level string and binary columns of an ORC stripe (`string`,
//! `varchar`, `char`, `binary`), decoded here rather than by `orc-rust`.
//!
//! Why: `orc-rust` reads each value's length through its integer decoder's
//! `std::io::Read` (a call and a small copy a value), keeps the lengths as
//! `i64`s, and builds a dictionary-encoded column as an Arrow dictionary
//! that it then casts to strings, a second pass over every value. Here the
//! lengths become offsets run by run, a direct column's bytes are
//! decompressed once straight into the values buffer and checked as UTF-8
//! in one pass, and a dictionary's entries (checked once) are copied into
//! place a fixed-size block at a time.
//!
//! What: `DIRECT_V2` (a length per value, then the values' bytes end to
//! end) and `DICTIONARY_V2` (the dictionary's lengths and bytes, then an
//! index per value), with the present stream. The version 1 encodings stay
//! with `orc-rust`.

use std::io::Read;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, StringArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType as ArrowType;
use orc_rust::proto::column_encoding::Kind as EncodingKind;
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::streams::{StreamReader, StripeStreams};

use super::integers::{readable, rle_runs, validity, whole, Rle, MOST_RESERVED_VALUES};
use crate::blocks::{pad_entries, BLOCK};
use crate::utf8::is_utf8;

/// The most bytes a column's values may take in one stripe: Arrow `string`
/// and `binary` offsets are 32-bit.
const MAX_BYTES: usize = i32::MAX as usize;

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encoding is one read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    is_text(orc, arrow).is_some()
}

/// `Some(true)` for a text column read as Arrow `string`, `Some(false)` for
/// a binary one read as `binary`, `None` for any other.
fn is_text(orc: &OrcType, arrow: &ArrowType) -> Option<bool> {
    match (orc, arrow) {
        (
            OrcType::String { .. } | OrcType::Varchar { .. } | OrcType::Char { .. },
            ArrowType::Utf8,
        ) => Some(true),
        (OrcType::Binary { .. }, ArrowType::Binary) => Some(false),
        _ => None,
    }
}

/// Column `index` of `stripe` (one [`may_decode`] accepted) decoded whole
/// (`None`: its encoding is not one read here).
pub(super) fn decode(
    streams: &StripeStreams,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let Some(utf8) = is_text(column.orc, arrow) else {
        return Ok(None);
    };
    let dictionary = matches!(
        column.encoding,
        EncodingKind::Dictionary | EncodingKind::DictionaryV2
    );
    let rle = Rle::of(column.encoding);
    let rows = column.rows;
    let validity = validity(streams, column)?;
    let valid = validity.as_ref().map_or(rows, |v| v.count_set_bits());
    let lengths = streams.get(column.id, Kind::Length);
    let data = streams.get(column.id, Kind::Data);
    let (ends, bytes) = if dictionary {
        let entries = column.dictionary_size;
        let dictionary = Dictionary::read(
            rle,
            readable(lengths),
            streams.get(column.id, Kind::DictionaryData),
            entries,
            utf8,
        )?;
        dictionary.gather(rle, readable(data), valid)?
    } else {
        let ends = value_ends(rle, readable(lengths), valid)?;
        let bytes = value_bytes(data, "data", &ends)?;
        if utf8 && !is_utf8(&bytes, 0, &ends) {
            return Err("a value is not valid UTF-8".into());
        }
        (ends, bytes)
    };
    let (offsets, nulls) = match validity {
        Some(bits) if valid < rows => (spread(&ends, &bits), Some(NullBuffer::new(bits))),
        _ => (ends, None),
    };
    // SAFETY: the offsets start at 0 and never fall (each is the end of a
    // value of a length from 0 to `MAX_BYTES`, or the one before it for a
    // null), and the last is the values' length (`value_bytes` and
    // `gather` cut them to it).
    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
    let values = Buffer::from_vec(bytes);
    let array: ArrayRef = if utf8 {
        // SAFETY: as above, and every value is valid UTF-8: a direct
        // column's values were checked together with where each ends, a
        // dictionary's entries when it was read.
        Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
    } else {
        // SAFETY: the offsets as above.
        Arc::new(unsafe { BinaryArray::new_unchecked(offsets, values, nulls) })
    };
    Ok(Some(array))
}

/// `0`, then the end of each of `count` values whose lengths the column's
/// length stream holds (unsigned run length encoding v2).
fn value_ends(rle: Rle, lengths: impl Read, count: usize) -> Result<Vec<i32>, String> {
    let mut ends = Vec::with_capacity(count.min(MOST_RESERVED_VALUES) + 1);
    ends.push(0i32);
    let mut end = 0usize;
    rle_runs(rle, lengths, "length", count, false, |run, start| {
        // Summed without a branch a value, then checked once a run: each
        // length is below 2^63 (`as u64` of a value read as `i64` bits),
        // so 512 of them cannot wrap a sum that started below 2^31.
        let mut longest = 0u64;
        ends.extend(run.iter().map(|&len| {
            longest = longest.max(len as u64);
            end = end.wrapping_add(len as usize);
            end as i32
        }));
        if longest as usize > MAX_BYTES || end > MAX_BYTES {
            return Err(format!(
                "its values take more than 2 GiB in one stripe, more than Arrow's 32-bit \
                 offsets hold (run at byte {start} of the length stream)"
            ));
        }
        Ok(())
    })?;
    Ok(ends)
}

/// The values' bytes from the column's `kind` stream, as many as `ends`
/// says; refused when the stream holds fewer.
fn value_bytes(stream: Option<StreamReader>, kind: &str, ends: &[i32]) -> Result<Vec<u8>, String> {
    let total = ends.last().map_or(0, |&end| end as usize);
    let mut bytes = whole(stream, kind, total)?.unwrap_or_default();
    if bytes.len() < total {
        return Err(format!(
            "its {kind} stream holds {} bytes where its lengths add up to {total}",
            bytes.len()
        ));
    }
    bytes.truncate(total);
    Ok(bytes)
}

/// The offsets of `validity.len()` rows from `ends` (`0`, then the end of
/// each valid row's value): a null row ends where the row before it did.
fn spread(ends: &[i32], validity: &BooleanBuffer) -> Vec<i32> {
    let rows = validity.len();
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0);
    let (mut row, mut k) = (0, 0);
    for (start, stop) in validity.set_slices() {
        offsets.extend(std::iter::repeat_n(ends[k], start - row));
        offsets.extend_from_slice(&ends[k + 1..k + 1 + (stop - start)]);
        k += stop - start;
        row = stop;
    }
    offsets.extend(std::iter::repeat_n(ends[k], rows - row));
    offsets
}

/// A stripe's dictionary of one column: its entries end to end, with a
/// [`BLOCK`] of slack after them.
struct Dictionary {
    bytes: Vec<u8>,
    /// `0`, then each entry's end.
    ends: Vec<i32>,
    /// The longest entry's length.
    longest: usize,
}

impl Dictionary {
    /// The `entries` entries of the dictionary: their lengths from the
    /// length stream, their bytes from the dictionary data stream; for a
    /// text column each must be valid UTF-8.
    fn read(
        rle: Rle,
        lengths: impl Read,
        data: Option<StreamReader>,
        entries: usize,
        utf8: bool,
    ) -> Result<Self, String> {
        let ends = value_ends(rle, lengths, entries)
            .map_err(|e| format!("its dictionary's lengths: {e}"))?;
        let mut bytes = value_bytes(data, "dictionary data", &ends)?;
        if utf8 && !is_utf8(&bytes, 0, &ends) {
            return Err("a dictionary entry is not valid UTF-8".into());
        }
        let longest = pad_entries(&mut bytes, &ends);
        Ok(Dictionary {
            bytes,
            ends,
            longest,
        })
    }

    fn len(&self) -> usize {
        self.ends.len() - 1
    }

    /// The values of `count` rows whose entries the data stream indexes
    /// (unsigned run length encoding v2): `0` and each value's end, and
    /// the values end to end.
    fn gather(
        &self,
        rle: Rle,
        indexes: impl Read,
        count: usize,
    ) -> Result<(Vec<i32>, Vec<u8>), String> {
        let entries = self.len();
        let mut picked: Vec<u32> = Vec::with_capacity(count.min(MOST_RESERVED_VALUES));
        rle_runs(rle, indexes, "data", count, false, |run, start| {
            // Checked once a run, as in `value_ends`.
            let mut highest = 0u64;
            picked.extend(run.iter().map(|&i| {
                highest = highest.max(i as u64);
                i as u32
            }));
            if run.is_empty() || (highest as usize) < entries {
                return Ok(());
            }
            Err(format!(
                "index {highest} past the dictionary's {entries} entries (run at byte {start} \
                 of the data stream)"
            ))
        })?;
        // Sized exactly first: the values of a few hundred short entries
        // can take far more than the dictionary.
        let total: u64 = picked
            .iter()
            .map(|&i| (self.ends[i as usize + 1] - self.ends[i as usize]) as u64)
            .sum();
        if total > MAX_BYTES as u64 {
            return Err(
                "its values take more than 2 GiB in one stripe, more than Arrow's 32-bit \
                 offsets hold"
                    .into(),
            );
        }
        let total = total as usize;
        let mut ends = Vec::with_capacity(picked.len() + 1);
        ends.push(0i32);
        let mut bytes = Vec::with_capacity(total + BLOCK);
        // SAFETY (each arm): every index was checked against the
        // dictionary's length, every entry is at most the block size
        // chosen, and the values' room is their exact total plus a block.
        match self.longest {
            0..=16 => unsafe { self.copy_blocks::<16>(&picked, &mut ends, &mut bytes) },
            17..=32 => unsafe { self.copy_blocks::<32>(&picked, &mut ends, &mut bytes) },
            33..=BLOCK => unsafe { self.copy_blocks::<BLOCK>(&picked, &mut ends, &mut bytes) },
            _ => {
                for &i in &picked {
                    let i = i as usize;
                    let entry = &self.bytes[self.ends[i] as usize..self.ends[i + 1] as usize];
                    bytes.extend_from_slice(entry);
                    ends.push(bytes.len() as i32);
                }
            }
        }
        debug_assert_eq!(bytes.len(), total);
        Ok((ends, bytes))
    }

    /// Appends the entries `picked` indexes to `bytes`, each copied as one
    /// block of `B` bytes (a couple of vector moves; a `memcpy` call a
    /// value cost more than the copy of a short one), and each one's end
    /// to `ends`.
    ///
    /// # Safety
    /// Every index must be below [`Self::len`], every entry at most `B`
    /// bytes long (`B <= BLOCK`), and `bytes` must be empty with room for
    /// the entries' total plus `B`.
    unsafe fn copy_blocks<const B: usize>(
        &self,
        picked: &[u32],
        ends: &mut Vec<i32>,
        bytes: &mut Vec<u8>,
    ) {
        const { assert!(B <= BLOCK) };
        let (src, starts) = (self.bytes.as_ptr(), self.ends.as_ptr());
        let dst = bytes.as_mut_ptr();
        let mut end = 0usize;
        ends.extend(picked.iter().map(|&i| {
            let i = i as usize;
            // SAFETY: the caller's promises: `i + 1` indexes `ends`; an
            // entry's block ends within the `BLOCK` of slack past the last
            // entry; the values written so far plus this block end within
            // the room (their total plus `B`).
            unsafe {
                let (start, stop) = (*starts.add(i) as usize, *starts.add(i + 1) as usize);
                std::ptr::copy_nonoverlapping(src.add(start), dst.add(end), B);
                end += stop - start;
            }
            end as i32
        }));
        // SAFETY: every byte below `end` was written by an entry's block.
        unsafe { bytes.set_len(end) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream of unsigned run length encoding v2 holding `values` as
    /// direct runs of 8-bit values.
    fn direct_runs(values: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for run in values.chunks(512) {
            let n = run.len() - 1;
            // Direct, width code 7 (8 bits), 9-bit length less one.
            out.push(0x40 | (7 << 1) | (n >> 8) as u8);
            out.push(n as u8);
            out.extend_from_slice(run);
        }
        out
    }

    #[test]
    fn nulls_repeat_the_end_of_the_row_before() {
        let ends = value_ends(Rle::V2, &direct_runs(&[3, 0, 2])[..], 3).unwrap();
        assert_eq!(ends, [0, 3, 3, 5]);
        let validity = BooleanBuffer::from(vec![false, true, false, true, true, false]);
        assert_eq!(spread(&ends, &validity), [0, 0, 3, 3, 3, 5, 5]);
        let none = BooleanBuffer::from(vec![false, false]);
        assert_eq!(spread(&[0], &none), [0, 0, 0]);
    }

    #[test]
    fn lengths_past_32_bit_offsets_are_refused() {
        // A short repeat of three lengths of 2^31 (4 bytes each).
        let stream = [0x18, 0x80, 0x00, 0x00, 0x00];
        let err = value_ends(Rle::V2, &stream[..], 3).unwrap_err();
        assert!(err.contains("more than 2 GiB"), "{err}");
        // 2^31 - 1 is the longest one value may be.
        let stream = [0x18, 0x7f, 0xff, 0xff, 0xff];
        assert_eq!(value_ends(Rle::V2, &stream[..], 1).unwrap(), [0, i32::MAX]);
        let err = value_ends(Rle::V2, &direct_runs(&[1, 2])[..], 3).unwrap_err();
        assert!(err.contains("ends after 2 of 3"), "{err}");
    }

    fn dictionary(entries: &[&[u8]]) -> Dictionary {
        let mut ends = vec![0i32];
        let mut bytes = Vec::new();
        for e in entries {
            bytes.extend_from_slice(e);
            ends.push(bytes.len() as i32);
        }
        let longest = entries.iter().map(|e| e.len()).max().unwrap_or(0);
        bytes.resize(bytes.len() + BLOCK, 0);
        Dictionary {
            bytes,
            ends,
            longest,
        }
    }

    #[test]
    fn every_block_size_gathers_the_entries_picked() {
        for len in [0, 1, 15, 16, 17, 32, 33, 64, 65, 200] {
            let a = vec![b'a'; len];
            let b: Vec<u8> = (0..len).map(|i| b'0' + (i % 10) as u8).collect();
            let entries: [&[u8]; 3] = [&a, b"xy", &b];
            let dictionary = dictionary(&entries);
            let picked: Vec<u8> = (0..1100).map(|i| [2, 0, 1, 2, 2][i % 5]).collect();
            let (ends, bytes) = dictionary
                .gather(Rle::V2, &direct_runs(&picked)[..], picked.len())
                .unwrap();
            let want: Vec<u8> = picked
                .iter()
                .flat_map(|&i| entries[i as usize].iter().copied())
                .collect();
            assert_eq!(bytes, want, "entries of {len} bytes");
            assert_eq!(ends.len(), picked.len() + 1);
            assert_eq!(*ends.last().unwrap() as usize, want.len());
            assert!(ends.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn an_index_past_the_dictionary_is_refused() {
        let dictionary = dictionary(&[b"a", b"b"]);
        let err = dictionary
            .gather(Rle::V2, &direct_runs(&[0, 1, 2, 1])[..], 4)
            .unwrap_err();
        assert!(
            err.contains("index 2 past the dictionary's 2 entries"),
            "{err}"
        );
        assert!(dictionary
            .gather(Rle::V2, &direct_runs(&[1, 0, 1])[..], 3)
            .is_ok());
    }
}
