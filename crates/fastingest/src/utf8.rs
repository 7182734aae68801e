//! The UTF-8 check of string values laid end to end, shared by the
//! Parquet and ORC string decoders: one pass over all the bytes, then one
//! look at the byte after each value, rather than a check per value.

use arrow_array::OffsetSizeTrait;

/// Whether the values that start at `start` of `bytes` and end at `ends`
/// are each valid UTF-8: their bytes together are, and no value ends
/// inside a character (so none starts inside one either).
pub(crate) fn is_utf8<O: OffsetSizeTrait>(bytes: &[u8], start: usize, ends: &[O]) -> bool {
    let is_continuation = |b: u8| (b as i8) < -0x40;
    simdutf8::basic::from_utf8(&bytes[start..]).is_ok()
        && ends.iter().all(|&end| {
            bytes
                .get(end.as_usize())
                .is_none_or(|&b| !is_continuation(b))
        })
}
