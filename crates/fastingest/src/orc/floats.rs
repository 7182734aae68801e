//! Top-level `float` and `double` columns of an ORC stripe, decoded here
//! rather than by `orc-rust`.
//!
//! A floating point column's data stream is its values' IEEE 754 bytes,
//! little endian, one after the other: Arrow's own layout. So the stream's
//! chunks are copied straight into the column's buffer, with no zeros
//! written first. `orc-rust` zero-fills an array of every 64 Ki rows and
//! reads into it through `std::io::Read` from its copy of the whole stream
//! (see [`super::streams`]); in a new process both were fresh pages.

use std::mem::{size_of, MaybeUninit};
use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::ArrayRef;
use arrow_schema::DataType as ArrowType;
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::integers::{primitive_column, validity};
use super::streams::{StreamReader, StripeStreams};

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here. Big-endian machines leave it to `orc-rust`.
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    cfg!(target_endian = "little")
        && matches!(
            (orc, arrow),
            (OrcType::Float { .. }, ArrowType::Float32)
                | (OrcType::Double { .. }, ArrowType::Float64)
        )
}

/// Column `index` of `stripe` (one [`may_decode`] accepted) decoded whole.
pub(super) fn decode(
    streams: &StripeStreams,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let rows = column.rows;
    let validity = validity(streams, column)?;
    let data = streams.get(column.id, Kind::Data);
    let array: ArrayRef = match arrow {
        ArrowType::Float32 => Arc::new(primitive_column::<Float32Type>(
            validity,
            rows,
            |n, out| values_into(data, n, out),
        )?),
        _ => Arc::new(primitive_column::<Float64Type>(
            validity,
            rows,
            |n, out| values_into(data, n, out),
        )?),
    };
    Ok(Some(array))
}

/// A float type: any bytes are a value of it, so its values may be copied
/// from their little-endian bytes.
trait Plain: Copy {}
impl Plain for f32 {}
impl Plain for f64 {}

/// Reads `count` values from `stream` into `out`. Space for them is
/// reserved a compression block's worth at a time, never more than the
/// stream has given: a damaged footer may claim any number of rows.
fn values_into<T: Plain>(
    stream: Option<StreamReader>,
    count: usize,
    out: &mut Vec<T>,
) -> Result<(), String> {
    if count == 0 {
        return Ok(());
    }
    let mut stream = stream.ok_or_else(|| format!("it has no data stream for {count} values"))?;
    /// Values read per step when `out` has no room reserved.
    const STEP: usize = 1 << 16;
    while out.len() < count {
        if out.capacity() == out.len() {
            out.reserve((count - out.len()).min(STEP));
        }
        let n = (out.capacity() - out.len()).min(count - out.len());
        let room = &mut out.spare_capacity_mut()[..n];
        // SAFETY: `MaybeUninit<T>` of a float is as many `MaybeUninit<u8>`
        // as the float's size, with no invalid bit patterns once written.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                room.as_mut_ptr().cast::<MaybeUninit<u8>>(),
                n * size_of::<T>(),
            )
        };
        stream
            .fill(bytes)
            .map_err(|e| format!("its data stream holds fewer than {count} values: {e}"))?;
        // SAFETY: `fill` wrote every byte of the `n` values.
        unsafe { out.set_len(out.len() + n) };
    }
    Ok(())
}
