//! Top-level boolean columns of an ORC stripe, decoded here rather than by
//! `orc-rust`.
//!
//! Why: `orc-rust` takes each value's bit on its own (a call to its byte
//! run decoder every 8 values) into a `Vec<bool>`, then packs that into an
//! Arrow bitmap. A boolean column's data stream is encoded as a present
//! stream is (byte runs of bits, most significant first), so it is decoded
//! here by the same code, a byte at a time.

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::DataType as ArrowType;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::streams::StripeStreams;

use orc_rust::proto::stream::Kind;

use super::integers::{bits, validity, whole};

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here.
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    matches!((orc, arrow), (OrcType::Boolean { .. }, ArrowType::Boolean))
}

/// Column `index` of `stripe` (one [`may_decode`] accepted) decoded whole.
pub(super) fn decode(
    streams: &StripeStreams,
    column: &ColumnAt,
) -> Result<Option<ArrayRef>, String> {
    let rows = column.rows;
    let validity = validity(streams, column)?;
    let valid = validity.as_ref().map_or(rows, |v| v.count_set_bits());
    let data = streams.get(column.id, Kind::Data);
    let data = whole(data, "data", valid.div_ceil(8).saturating_add(64))?.unwrap_or_default();
    let values = bits(&data, valid).map_err(|e| format!("its data stream: {e}"))?;
    let array = match validity {
        Some(validity) if valid < rows => {
            BooleanArray::new(spread(&values, &validity), Some(NullBuffer::new(validity)))
        }
        _ => BooleanArray::new(values, None),
    };
    Ok(Some(Arc::new(array)))
}

/// The bits of `values` (one a valid row) placed at the valid rows of
/// `validity`, the null rows false: 64 rows at a time, each word of
/// validity taking as many value bits as it has rows set (a copy per run of
/// valid rows was 60 % of a read with 10 % nulls).
fn spread(values: &BooleanBuffer, validity: &BooleanBuffer) -> BooleanBuffer {
    let rows = validity.len();
    let mut words: Vec<u64> = Vec::with_capacity(rows.div_ceil(64));
    let mut taken = 0;
    for mask in validity.bit_chunks().iter_padded() {
        let n = mask.count_ones() as usize;
        words.push(deposit(next_bits(values, taken, n), mask));
        taken += n;
    }
    BooleanBuffer::new(Buffer::from_vec(words), 0, rows)
}

/// `n` (at most 64) bits of `values` from bit `at`, the first lowest.
fn next_bits(values: &BooleanBuffer, at: usize, n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let bytes = values.values();
    let bit = values.offset() + at;
    let mut window = [0u8; 16];
    let from = bytes.get(bit / 8..).unwrap_or_default();
    let len = from.len().min(16);
    window[..len].copy_from_slice(&from[..len]);
    let word = (u128::from_le_bytes(window) >> (bit % 8)) as u64;
    if n == 64 {
        word
    } else {
        word & ((1u64 << n) - 1)
    }
}

/// The low bits of `bits` placed, in order, at the set bits of `mask`.
fn deposit(bits: u64, mask: u64) -> u64 {
    if mask == u64::MAX {
        return bits;
    }
    let (mut out, mut bits, mut mask) = (0u64, bits, mask);
    while mask != 0 {
        let lowest = mask & mask.wrapping_neg();
        out |= lowest & (bits & 1).wrapping_neg();
        bits >>= 1;
        mask &= mask - 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_on_the_valid_rows() {
        let values = BooleanBuffer::from(vec![true, false, true, true]);
        let validity = BooleanBuffer::from(vec![false, true, true, false, true, true, false]);
        let got: Vec<bool> = spread(&values, &validity).iter().collect();
        assert_eq!(got, [false, true, false, false, true, true, false]);
    }

    #[test]
    fn long_columns_spread_as_bit_by_bit() {
        // Rows past several words, runs of every length, and values read
        // from an offset into their buffer.
        let rows = 1000;
        let validity: Vec<bool> = (0..rows).map(|i| (i * 7 + i / 13) % 5 != 0).collect();
        let valid = validity.iter().filter(|&&v| v).count();
        let all: Vec<bool> = (0..valid + 3).map(|i| (i * 31 % 7) < 3).collect();
        let values = BooleanBuffer::from(all.clone()).slice(3, valid);
        let got: Vec<bool> = spread(&values, &BooleanBuffer::from(validity.clone()))
            .iter()
            .collect();
        let mut k = 3;
        let want: Vec<bool> = validity
            .iter()
            .map(|&v| {
                v && {
                    k += 1;
                    all[k - 1]
                }
            })
            .collect();
        assert_eq!(got, want);
        let full = BooleanBuffer::from(vec![true; 130]);
        let got = spread(&values.slice(0, 130), &full);
        assert_eq!(got, values.slice(0, 130));
    }
}
