//! The top-level columns of a stripe that fastingest decodes itself:
//! integers and dates ([`integers`]), floats ([`floats`]), booleans
//! ([`booleans`]), strings and binary ([`strings`]), timestamps
//! ([`timestamps`]) and decimals ([`decimals`]), each reading its streams
//! from [`StripeStreams`].
//! `orc-rust` decodes every other column, and these too when a stripe has
//! them in an encoding not read here (version 1, from old writers).

use arrow_array::ArrayRef;
use arrow_schema::DataType as ArrowType;
use orc_rust::schema::DataType as OrcType;
use orc_rust::stripe::Stripe;

use super::streams::StripeStreams;
use super::{booleans, decimals, floats, integers, strings, timestamps};

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encoding is one read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    integers::may_decode(orc, arrow)
        || strings::may_decode(orc, arrow)
        || timestamps::may_decode(orc, arrow)
        || decimals::may_decode(orc, arrow)
        || booleans::may_decode(orc, arrow)
        || floats::may_decode(orc, arrow)
}

/// Each top-level column of `stripe` decoded whole when it is one decoded
/// here (`None`: `orc-rust` decodes it). `arrow` holds the Arrow types the
/// read returns, in the stripe's column order. An error names the column.
pub(super) fn decode_columns(
    stripe: &Stripe,
    streams: &StripeStreams,
    arrow: &[ArrowType],
) -> Result<Vec<Option<ArrayRef>>, String> {
    stripe
        .columns()
        .iter()
        .zip(arrow)
        .enumerate()
        .map(|(index, (column, arrow))| {
            let orc = column.data_type();
            let decoded = if strings::may_decode(orc, arrow) {
                strings::decode(stripe, streams, index, arrow)
            } else if timestamps::may_decode(orc, arrow) {
                timestamps::decode(stripe, streams, index, arrow)
            } else if decimals::may_decode(orc, arrow) {
                decimals::decode(stripe, streams, index, arrow)
            } else if booleans::may_decode(orc, arrow) {
                booleans::decode(stripe, streams, index)
            } else if floats::may_decode(orc, arrow) {
                floats::decode(stripe, streams, index, arrow)
            } else {
                integers::decode(stripe, streams, index, arrow)
            };
            decoded.map_err(|e| format!("column '{}': {e}", column.name()))
        })
        .collect()
}
