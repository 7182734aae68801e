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
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer};
use arrow_schema::DataType as ArrowType;
use orc_rust::schema::DataType as OrcType;
use orc_rust::stripe::Stripe;

use orc_rust::proto::stream::Kind;

use super::integers::{bits, validity, whole};

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here.
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    matches!((orc, arrow), (OrcType::Boolean { .. }, ArrowType::Boolean))
}

/// Column `index` of `stripe` (one [`may_decode`] accepted) decoded whole.
pub(super) fn decode(stripe: &Stripe, index: usize) -> Result<Option<ArrayRef>, String> {
    let column = &stripe.columns()[index];
    let rows = stripe.number_of_rows();
    let validity = validity(stripe, index)?;
    let valid = validity.as_ref().map_or(rows, |v| v.count_set_bits());
    let data = stripe.stream_map().get_opt(column, Kind::Data);
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
/// `validity`, the null rows false.
fn spread(values: &BooleanBuffer, validity: &BooleanBuffer) -> BooleanBuffer {
    let mut out = BooleanBufferBuilder::new(validity.len());
    let mut k = 0;
    for (start, stop) in validity.set_slices() {
        out.append_n(start - out.len(), false);
        out.append_buffer(&values.slice(k, stop - start));
        k += stop - start;
    }
    out.append_n(validity.len() - out.len(), false);
    out.finish()
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
}
