//! The top-level columns of a stripe that fastingest decodes itself:
//! integers and dates ([`integers`]), floats ([`floats`]), booleans
//! ([`booleans`]), strings and binary ([`strings`]), timestamps
//! ([`timestamps`]) and decimals ([`decimals`]), each reading its streams
//! from [`StripeStreams`].
//! `orc-rust` decodes every other column, and these too when a stripe has
//! them in an encoding not read here (version 1, from old writers).

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType as ArrowType;
use orc_rust::schema::DataType as OrcType;
use orc_rust::stripe::Stripe;

use super::streams::StripeStreams;
use super::{booleans, decimals, floats, integers, strings, timestamps};
use crate::pipeline::decode_threads::{self, Part};

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
/// read returns, in the stripe's column order; `decimal_integers`: the
/// file stores small decimals as integers
/// ([`decimals::small_as_integers`]). An error names the column.
///
/// The columns are shared out over up to `threads` decode threads (the
/// caller's and those idle, see [`decode_threads::run_all`]): a file of one
/// stripe, as most files under 64 MiB are, was decoded on one core.
pub(super) fn decode_columns(
    stripe: Arc<Stripe>,
    streams: Arc<StripeStreams>,
    arrow: &[ArrowType],
    decimal_integers: bool,
    threads: usize,
) -> Result<Vec<Option<ArrayRef>>, String> {
    let parts: Vec<Part<Result<Option<ArrayRef>, String>>> = arrow
        .iter()
        .enumerate()
        .map(|(index, arrow)| {
            let (stripe, streams, arrow) =
                (Arc::clone(&stripe), Arc::clone(&streams), arrow.clone());
            Box::new(move || decode_column(&stripe, &streams, index, &arrow, decimal_integers))
                as Part<_>
        })
        .collect();
    decode_threads::run_all(threads, parts)
        .into_iter()
        .zip(stripe.columns())
        .map(|(outcome, column)| {
            // A decoder's panic (`run_all` caught it) is this column's error.
            let decoded = outcome.map_err(|panic| format!("the decoder failed: {panic}"));
            decoded
                .and_then(|decoded| decoded)
                .map_err(|e| format!("column '{}': {e}", column.name()))
        })
        .collect()
}

/// Column `index` of `stripe`, by the decoder for its type.
fn decode_column(
    stripe: &Stripe,
    streams: &StripeStreams,
    index: usize,
    arrow: &ArrowType,
    decimal_integers: bool,
) -> Result<Option<ArrayRef>, String> {
    let orc = stripe.columns()[index].data_type();
    if strings::may_decode(orc, arrow) {
        strings::decode(stripe, streams, index, arrow)
    } else if timestamps::may_decode(orc, arrow) {
        timestamps::decode(stripe, streams, index, arrow)
    } else if decimals::may_decode(orc, arrow) {
        decimals::decode(stripe, streams, index, arrow, decimal_integers)
    } else if booleans::may_decode(orc, arrow) {
        booleans::decode(stripe, streams, index)
    } else if floats::may_decode(orc, arrow) {
        floats::decode(stripe, streams, index, arrow)
    } else {
        integers::decode(stripe, streams, index, arrow)
    }
}
