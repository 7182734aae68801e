//! The columns of a stripe that fastingest decodes itself: integers and
//! dates ([`integers`]), floats ([`floats`]), booleans ([`booleans`]),
//! strings and binary ([`strings`]), timestamps ([`timestamps`]) and
//! decimals ([`decimals`]), each reading its streams from
//! [`StripeStreams`], in either version of ORC's run length encodings
//! ([`integers::Rle`]); and structs, lists, maps and unions of them
//! ([`nested`]). `orc-rust` decodes every other column (a type or encoding
//! not read here, or a struct, list, map or union with one under it).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType as ArrowType;
use orc_rust::proto::column_encoding::Kind as EncodingKind;
use orc_rust::schema::DataType as OrcType;
use orc_rust::stripe::Stripe;

use super::streams::StripeStreams;
use super::{booleans, decimals, floats, integers, nested, strings, timestamps};
use crate::pipeline::decode_threads::{self, Part};

/// A column of a stripe as its decoder sees it.
pub(super) struct ColumnAt<'a> {
    /// Its ORC column id: its streams' key.
    pub(super) id: u32,
    pub(super) orc: &'a OrcType,
    /// Its encoding in this stripe, and the entries of its dictionary.
    pub(super) encoding: EncodingKind,
    pub(super) dictionary_size: usize,
    /// The values it holds: the stripe's rows at the top level, its
    /// parent's valid entries inside a struct, list or map.
    pub(super) rows: usize,
    /// The zone its writer wrote `timestamp` values in.
    pub(super) zone: Option<chrono_tz::Tz>,
    /// Whether the file stores small decimals as integers
    /// ([`decimals::small_as_integers`]).
    pub(super) decimal_integers: bool,
}

/// `orc` and every type under it (a struct's fields, a list's items, a
/// map's keys and values, a union's variants), parents first.
pub(super) fn types_under(orc: &OrcType) -> Vec<&OrcType> {
    let mut found = vec![orc];
    let mut at = 0;
    while let Some(&ty) = found.get(at) {
        match ty {
            OrcType::Struct { children, .. } => {
                found.extend(children.iter().map(|c| c.data_type()));
            }
            OrcType::List { child, .. } => found.push(child),
            OrcType::Map { key, value, .. } => found.extend([&**key, &**value]),
            OrcType::Union { variants, .. } => found.extend(variants),
            _ => {}
        }
        at += 1;
    }
    found
}

/// Each column id's encoding in a stripe and the entries of its dictionary.
pub(super) type Encodings = HashMap<u32, (EncodingKind, usize)>;

/// The encodings of `stripe`'s columns and all their descendants.
fn encodings(stripe: &Stripe) -> Encodings {
    let mut found = HashMap::new();
    let mut pending = stripe.columns().to_vec();
    while let Some(column) = pending.pop() {
        let kind = (column.encoding().kind(), column.dictionary_size());
        found.insert(column.column_id(), kind);
        pending.extend(column.children());
    }
    found
}

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encodings are ones read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    integers::may_decode(orc, arrow)
        || strings::may_decode(orc, arrow)
        || timestamps::may_decode(orc, arrow)
        || decimals::may_decode(orc, arrow)
        || booleans::may_decode(orc, arrow)
        || floats::may_decode(orc, arrow)
        || nested::may_decode(orc, arrow)
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
    let encodings = Arc::new(encodings(&stripe));
    let parts: Vec<Part<Result<Option<ArrayRef>, String>>> = arrow
        .iter()
        .enumerate()
        .map(|(index, arrow)| {
            let (stripe, streams, encodings, arrow) = (
                Arc::clone(&stripe),
                Arc::clone(&streams),
                Arc::clone(&encodings),
                arrow.clone(),
            );
            Box::new(move || {
                let top = &stripe.columns()[index];
                let column = ColumnAt {
                    id: top.column_id(),
                    orc: top.data_type(),
                    encoding: top.encoding().kind(),
                    dictionary_size: top.dictionary_size(),
                    rows: stripe.number_of_rows(),
                    zone: stripe.writer_tz(),
                    decimal_integers,
                };
                decode_column(&streams, &encodings, &column, &arrow)
            }) as Part<_>
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

/// `column`, by the decoder for its type (`None`: one not read here);
/// `encodings` gives those of its children.
pub(super) fn decode_column(
    streams: &StripeStreams,
    encodings: &Encodings,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let orc = column.orc;
    if strings::may_decode(orc, arrow) {
        strings::decode(streams, column, arrow)
    } else if timestamps::may_decode(orc, arrow) {
        timestamps::decode(streams, column, arrow)
    } else if decimals::may_decode(orc, arrow) {
        decimals::decode(streams, column, arrow)
    } else if booleans::may_decode(orc, arrow) {
        booleans::decode(streams, column)
    } else if floats::may_decode(orc, arrow) {
        floats::decode(streams, column, arrow)
    } else if integers::may_decode(orc, arrow) {
        integers::decode(streams, column, arrow)
    } else {
        nested::decode(streams, encodings, column, arrow)
    }
}
