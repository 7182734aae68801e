//! Top-level decimal columns of an ORC stripe, decoded here rather than by
//! `orc-rust`.
//!
//! Why: `orc-rust` reads each value's varint a byte at a time through
//! `std::io::Read` on its decompressor, and the scales through its integer
//! decoder's: a steady read of three decimal columns took 2.0 times as long
//! as pyarrow's.
//!
//! How a value is stored: its unscaled digits as a zigzag base-128 varint
//! of up to 128 bits in the data stream, and its scale in the secondary
//! stream (signed run length encoding v2), which a writer may vary from
//! value to value: each value is brought to the column's scale.
//!
//! Files of ORC's format version 1.9999 ("UNSTABLE-PRE-2.0": ORC 1.x
//! writers asked for the layout of version 2) store a decimal of up to 18
//! digits as its unscaled digits at the column's scale, a signed integer of
//! run length encoding v2, and no secondary stream ([`small_as_integers`]),
//! as the ORC C++ reader (pyarrow's) reads them. `orc-rust` 0.9 does not.

use std::io::Read;
use std::sync::Arc;

use arrow_array::types::Decimal128Type;
use arrow_array::ArrayRef;
use arrow_schema::{DataType as ArrowType, FieldRef, UnionFields};
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::streams::StripeStreams;

use super::integers::{
    cut_short, primitive_column, readable, rle_into, rle_runs, validity, Rle, Window,
};

/// The most bytes a varint of 128 bits takes.
const LONGEST_VARINT: usize = 19;

/// Bytes of the data stream looked at a time.
const AHEAD: usize = 4096;

/// The Arrow precision and scale of a decimal of precision 0, as Hive 0.11
/// wrote them (no precision, each value of its own scale): those the ORC
/// C++ reader (pyarrow's) gives them, each value brought to the scale (and
/// refused past 38 digits).
pub(super) const HIVE_11: (u8, i8) = (38, 6);

/// The Arrow type of a column of ORC type `orc`, which `orc-rust` types as
/// `arrow`, when it differs: Hive 0.11's decimals (`orc-rust` says precision
/// 0) read at [`HIVE_11`], at any depth in structs, lists, maps and unions
/// (`None`: none under it).
pub(super) fn arrow_type(orc: &OrcType, arrow: &ArrowType) -> Option<ArrowType> {
    // A field retyped where its column holds such decimals.
    let field_of = |orc: &OrcType, field: &FieldRef| {
        arrow_type(orc, field.data_type())
            .map(|t| Arc::new(field.as_ref().clone().with_data_type(t)))
    };
    match (orc, arrow) {
        (
            OrcType::Decimal {
                precision: 0,
                scale: 0,
                ..
            },
            _,
        ) => Some(ArrowType::Decimal128(HIVE_11.0, HIVE_11.1)),
        (OrcType::Struct { children, .. }, ArrowType::Struct(fields)) => {
            let retyped: Vec<Option<FieldRef>> = children
                .iter()
                .zip(fields)
                .map(|(child, field)| field_of(child.data_type(), field))
                .collect();
            retyped.iter().any(Option::is_some).then(|| {
                let fields = retyped
                    .into_iter()
                    .zip(fields)
                    .map(|(new, old)| new.unwrap_or_else(|| Arc::clone(old)));
                ArrowType::Struct(fields.collect())
            })
        }
        (OrcType::List { child, .. }, ArrowType::List(field)) => {
            field_of(child, field).map(ArrowType::List)
        }
        (OrcType::Map { key, value, .. }, ArrowType::Map(entries, sorted)) => {
            let ArrowType::Struct(pair) = entries.data_type() else {
                return None;
            };
            let [k, v] = &pair[..] else {
                return None;
            };
            let (new_k, new_v) = (field_of(key, k), field_of(value, v));
            if new_k.is_none() && new_v.is_none() {
                return None;
            }
            let pair = vec![
                new_k.unwrap_or_else(|| Arc::clone(k)),
                new_v.unwrap_or_else(|| Arc::clone(v)),
            ];
            let entries = entries
                .as_ref()
                .clone()
                .with_data_type(ArrowType::Struct(pair.into()));
            Some(ArrowType::Map(Arc::new(entries), *sorted))
        }
        (OrcType::Union { variants, .. }, ArrowType::Union(fields, mode)) => {
            let retyped: Vec<Option<FieldRef>> = variants
                .iter()
                .zip(fields.iter())
                .map(|(variant, (_, field))| field_of(variant, field))
                .collect();
            if retyped.iter().all(Option::is_none) {
                return None;
            }
            let fields: UnionFields = fields
                .iter()
                .zip(retyped)
                .map(|((id, old), new)| (id, new.unwrap_or_else(|| Arc::clone(old))))
                .collect();
            Some(ArrowType::Union(fields, *mode))
        }
        _ => None,
    }
}

/// Whether `orc` is one of Hive 0.11's decimals (precision 0).
pub(super) fn is_hive_11(orc: &OrcType) -> bool {
    matches!(
        orc,
        OrcType::Decimal {
            precision: 0,
            scale: 0,
            ..
        }
    )
}

/// The most digits a decimal stored as an integer has.
const INTEGER_DIGITS: u8 = 18;

/// Whether a file of ORC format version `version` (as `orc-rust` gives it:
/// "0.12", "1.9999") stores its decimals of up to [`INTEGER_DIGITS`] digits
/// as integers.
pub(super) fn small_as_integers(version: &str) -> bool {
    version == "1.9999"
}

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encoding is one read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    match (orc, arrow) {
        (
            OrcType::Decimal {
                precision, scale, ..
            },
            ArrowType::Decimal128(p, s),
        ) if *precision == 0 => (*p, *s) == HIVE_11,
        (
            OrcType::Decimal {
                precision, scale, ..
            },
            ArrowType::Decimal128(p, s),
        ) => *precision == *p as u32 && *scale as i64 == *s as i64 && *p <= 38,
        _ => false,
    }
}

/// Column `index` of `stripe`, read as Arrow type `arrow` (one
/// [`may_decode`] accepted), decoded whole (`None`: its encoding is not one
/// read here). Files that store decimals of up to 18 digits as integers
/// ([`small_as_integers`]) say so in `column.decimal_integers`.
pub(super) fn decode(
    streams: &StripeStreams,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let ArrowType::Decimal128(precision, scale) = *arrow else {
        return Ok(None);
    };
    let rows = column.rows;
    let digits = streams.get(column.id, Kind::Data);
    if column.decimal_integers && precision <= INTEGER_DIGITS {
        // In run length encoding v2 whatever encoding the stripe names (a
        // Java writer names `DIRECT`), as the ORC C++ reader reads them.
        let array =
            primitive_column::<Decimal128Type>(validity(streams, column)?, rows, |n, out| {
                rle_into(Rle::V2, readable(digits), n, out)
            })?;
        let array = array
            .with_precision_and_scale(precision, scale)
            .map_err(|e| e.to_string())?;
        return Ok(Some(Arc::new(array)));
    }
    // The scales in run length encoding v2, or v1 (Hive 0.11's files).
    let Some(rle) = Rle::direct(column.encoding) else {
        return Ok(None);
    };
    let scales = streams.get(column.id, Kind::Secondary);
    let most = 10i128.pow(38).unsigned_abs();
    let array = primitive_column::<Decimal128Type>(validity(streams, column)?, rows, |n, out| {
        varints_into(readable(digits), n, out)?;
        let mut at = 0;
        let each = |run: &[i64], start: usize| {
            let slots = &mut out[at..at + run.len()];
            at += run.len();
            if run.iter().all(|&s| s == scale as i64) {
                return Ok(());
            }
            for (slot, &from) in slots.iter_mut().zip(run) {
                // Brought to the column's scale, and refused past 38
                // digits (as the ORC C++ reader refuses Hive 0.11's).
                *slot = rescale(*slot, from, scale as i64)
                    .filter(|v| v.unsigned_abs() < most)
                    .ok_or_else(|| {
                        format!(
                            "a value of scale {from} does not fit 38 digits at the \
                                 column's scale {scale} (run at byte {start} of the secondary \
                                 stream)"
                        )
                    })?;
            }
            Ok(())
        };
        rle_runs(rle, readable(scales), "secondary", n, true, each)
    })?;
    let array = array
        .with_precision_and_scale(precision, scale)
        .map_err(|e| e.to_string())?;
    Ok(Some(Arc::new(array)))
}

/// `value` of scale `from` at scale `to`: digits added, or cut off towards
/// zero (`None`: it does not fit, or a scale is past 38).
fn rescale(value: i128, from: i64, to: i64) -> Option<i128> {
    let shift = to.checked_sub(from)?;
    let power = 10i128.checked_pow(u32::try_from(shift.unsigned_abs()).ok()?);
    match (shift, power) {
        (0, _) => Some(value),
        (1.., Some(power)) => value.checked_mul(power),
        (..0, Some(power)) => Some(value / power),
        // Dividing by more than 10^38 leaves no digit of an i128.
        (..0, None) => Some(0),
        _ => None,
    }
}

/// Decodes `count` zigzag varints of up to 128 bits from `stream` into `out`.
fn varints_into(stream: impl Read, count: usize, out: &mut Vec<i128>) -> Result<(), String> {
    let mut window = Window::new(stream);
    while out.len() < count {
        let start = window.position();
        let data = window
            .ahead(AHEAD)
            .map_err(|e| format!("its data stream cannot be decompressed: {e}"))?;
        let mut at = 0;
        while out.len() < count {
            let Some((value, used)) = varint128(&data[at..]) else {
                break;
            };
            out.push(value);
            at += used;
        }
        if out.len() < count && data.len() - at >= LONGEST_VARINT {
            return Err(format!(
                "a value's varint is longer than {LONGEST_VARINT} bytes (at byte {} of the \
                 data stream)",
                start + at
            ));
        }
        if at == 0 {
            // Not one whole varint left, and fewer bytes than the longest
            // takes: the stream ends here.
            return Err(cut_short(out.len(), count));
        }
        window.advance(at);
    }
    Ok(())
}

/// The zigzag varint at the start of `data` and its length in bytes
/// (`None`: `data` ends inside it, or it is longer than 19 bytes).
#[inline]
fn varint128(data: &[u8]) -> Option<(i128, usize)> {
    // Most values take at most 9 bytes (63 bits): gathered in a `u64`
    // first (shifts of a `u128` doubled the decode).
    let mut low = 0u64;
    for (i, &b) in data.iter().enumerate().take(9) {
        low |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Some((unzigzag(low as u128), i + 1));
        }
    }
    let mut value = low as u128;
    for (i, &b) in data.iter().enumerate().take(LONGEST_VARINT).skip(9) {
        value |= ((b & 0x7f) as u128) << (7 * i);
        if b & 0x80 == 0 {
            return Some((unzigzag(value), i + 1));
        }
    }
    None
}

fn unzigzag(value: u128) -> i128 {
    (value >> 1) as i128 ^ -((value & 1) as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zigzag_varint(v: i128) -> Vec<u8> {
        let mut z = ((v << 1) ^ (v >> 127)) as u128;
        let mut out = Vec::new();
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    #[test]
    fn varints_of_every_length_decode_across_windows() {
        let values: Vec<i128> = (0..5000i128)
            .map(|i| match i % 5 {
                0 => i,
                1 => -i,
                2 => i128::MAX - i,
                3 => i128::MIN + i,
                _ => (i * 7_919) << (i % 100),
            })
            .collect();
        let stream: Vec<u8> = values.iter().flat_map(|&v| zigzag_varint(v)).collect();
        assert!(stream.len() > 2 * AHEAD);
        let mut got = Vec::new();
        varints_into(&stream[..], values.len(), &mut got).unwrap();
        assert_eq!(got, values);
        let err =
            varints_into(&stream[..stream.len() - 1], values.len(), &mut Vec::new()).unwrap_err();
        assert!(err.contains("ends after 4999 of 5000"), "{err}");
        let err = varints_into(&[0x80; 40][..], 1, &mut Vec::new()).unwrap_err();
        assert!(err.contains("longer than 19 bytes"), "{err}");
    }

    #[test]
    fn values_are_brought_to_the_columns_scale() {
        assert_eq!(rescale(123, 2, 2), Some(123));
        assert_eq!(rescale(123, 1, 3), Some(12_300));
        assert_eq!(rescale(-12_345, 4, 2), Some(-123));
        assert_eq!(rescale(i128::MAX / 10, 0, 2), None);
        assert_eq!(rescale(5, 60, 2), Some(0));
        assert_eq!(rescale(5, 0, 60), None);
    }
}
