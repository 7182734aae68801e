//! A filter's literal restated in its column's type, so that comparing in
//! that type gives the answer of comparing the two values exactly.
//!
//! Casting the literal to the column's type and comparing there is wrong
//! wherever the cast loses something: `x < 2.5` over integers became
//! `x < 2`, `x == 0.1` over `float32` matched the `float32` nearest 0.1, and
//! `x > -1` over `uint8` was refused. pyarrow casts both sides to a common
//! type instead and refuses the casts that would lose precision; where it
//! answers, the exact comparison is its answer. So a literal the column's
//! type holds exactly is compared as is, and any other is replaced by its
//! neighbours in that type: `x < 2.5` is `x <= 2`, `x >= 2.5` is `x >= 3`,
//! `x == 2.5` holds for no row, `x > 300` over `uint8` for none,
//! `x < 300` for all but nulls.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float16Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    make_array, new_null_array, Array, ArrayRef, ArrowPrimitiveType, Decimal128Array,
    Decimal256Array, Float64Array, Int32Array, Int64Array, UInt64Array,
};
use arrow_buffer::i256;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType, TimeUnit};

use super::{cast_literal, CmpOp};

/// A predicate over a column of one type, as that type can answer it.
#[derive(Debug)]
pub(super) enum Restated {
    /// Compare the column with this literal (one value, or the set of
    /// `in` / `not in`), of the column's type.
    Compare(CmpOp, ArrayRef),
    /// Every non-null row gives this answer (null rows stay null).
    Always(bool),
}

/// `column op literal` restated for a column of type `column`. An error
/// where the two cannot be compared at all.
pub(super) fn restate(
    op: CmpOp,
    literal: &ArrayRef,
    column: &DataType,
) -> Result<Restated, ArrowError> {
    if literal.data_type() == column {
        return Ok(Restated::Compare(op, Arc::clone(literal)));
    }
    if literal.data_type() == &DataType::Null {
        // `None`, `[None]`, `[]`: nulls of the column's type.
        return Ok(Restated::Compare(op, new_null_array(column, literal.len())));
    }
    if matches!(op, CmpOp::In | CmpOp::NotIn) {
        return Ok(Restated::Compare(op, exact_members(literal, column)?));
    }
    if literal.is_null(0) {
        return Ok(Restated::Compare(op, new_null_array(column, 1)));
    }
    // A number against decimals, exactly: the cast (and the cast back) of a
    // float of more than ~15 digits, or of a decimal of a finer scale, to
    // the column's decimal rounds (`x < 6543605981154.28` over decimal(50,
    // 5) dropped 6543605981154.27976; `x == 1.234564` matched 1.23456).
    if let Some(neighbours) = number_in_decimals(literal, column)? {
        return Ok(by_neighbours(neighbours, op));
    }
    if let Some(exact) = round_trip(literal, column) {
        return Ok(Restated::Compare(op, exact));
    }
    let Some(neighbours) = neighbours(literal, column)? else {
        // Neither a number nor a time: the cast decides (strings, ...).
        return Ok(Restated::Compare(op, cast_literal(literal, column)?));
    };
    Ok(by_neighbours(neighbours, op))
}

/// `column op literal` where the literal's neighbours in the column's type
/// are `neighbours`.
fn by_neighbours(neighbours: Neighbours, op: CmpOp) -> Restated {
    match (neighbours, op) {
        (Neighbours::Exactly(value), op) => Restated::Compare(op, value),
        // NaN: ordered before, after or equal to nothing.
        (Neighbours::Unordered, op) => Restated::Always(op == CmpOp::NotEq),
        (Neighbours::Between { .. }, CmpOp::Eq) => Restated::Always(false),
        (Neighbours::Between { .. }, CmpOp::NotEq) => Restated::Always(true),
        (Neighbours::Between { below, .. }, CmpOp::Lt | CmpOp::LtEq) => match below {
            Some(b) => Restated::Compare(CmpOp::LtEq, b),
            None => Restated::Always(false),
        },
        (Neighbours::Between { above, .. }, _) => match above {
            Some(a) => Restated::Compare(CmpOp::GtEq, a),
            None => Restated::Always(false),
        },
    }
}

/// The neighbours of a number literal (float, integer, decimal) among a
/// decimal column's values, found exactly from the literal written out in
/// full ([`written_out`]) and cut at the column's scale. `None` for other
/// literals or columns.
fn number_in_decimals(
    literal: &ArrayRef,
    column: &DataType,
) -> Result<Option<Neighbours>, ArrowError> {
    let (&precision, &scale) = match column {
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => (p, s),
        _ => return Ok(None),
    };
    let Some(written) = written_out(literal.as_ref()) else {
        return Ok(None);
    };
    let max = i256::from_i128(10)
        .checked_pow(u32::from(precision))
        .map_or(i256::MAX, |p| p - i256::ONE);
    let min = i256::ZERO - max;
    let as_column = |v: i256| -> Result<ArrayRef, ArrowError> {
        Ok(match column {
            DataType::Decimal128(..) => {
                let v = v
                    .to_i128()
                    .ok_or_else(|| ArrowError::ComputeError(format!("{v} is not a {column}")))?;
                Arc::new(Decimal128Array::from(vec![v]).with_precision_and_scale(precision, scale)?)
            }
            _ => {
                Arc::new(Decimal256Array::from(vec![v]).with_precision_and_scale(precision, scale)?)
            }
        })
    };
    let (negative, whole, fraction) = match written {
        Written::Finite {
            negative,
            whole,
            fraction,
        } => (negative, whole, fraction),
        Written::NaN => return Ok(Some(Neighbours::Unordered)),
        Written::Infinite { negative } => {
            let (below, above) = match negative {
                false => (Some(as_column(max)?), None),
                true => (None, Some(as_column(min)?)),
            };
            return Ok(Some(Neighbours::Between { below, above }));
        }
    };
    // The magnitude in units of the column (10^-scale), cut toward zero,
    // and whether digits were cut; past the widest decimal, saturated.
    let digits: String = whole.chars().chain(fraction.chars()).collect();
    let point = i64::try_from(whole.len()).unwrap_or(i64::MAX) + i64::from(scale);
    let kept = usize::try_from(point.clamp(0, digits.len() as i64)).unwrap_or(0);
    let (units, cut) = digits.split_at(kept);
    // A literal of fewer digits after its point than the column's scale:
    // its units end in zeros.
    let zeros = usize::try_from(point - kept as i64).unwrap_or(0);
    let inexact = cut.bytes().any(|b| b != b'0');
    let units = units.trim_start_matches('0');
    let magnitude = match units.len() + zeros * usize::from(!units.is_empty()) {
        0 => i256::ZERO,
        n if n > 76 => i256::MAX,
        _ => i256::from_string(&format!("{units}{}", "0".repeat(zeros))).unwrap_or(i256::MAX),
    };
    let step = i256::from(i8::from(inexact));
    let (floor, ceil) = match negative {
        false => (magnitude, magnitude.checked_add(step).unwrap_or(i256::MAX)),
        true => {
            let negated = i256::ZERO - magnitude;
            (negated.checked_sub(step).unwrap_or(i256::MIN), negated)
        }
    };
    if floor == ceil && floor >= min && floor <= max {
        return Ok(Some(Neighbours::Exactly(as_column(floor)?)));
    }
    let below = (floor >= min).then(|| floor.min(max));
    let above = (ceil <= max).then(|| ceil.max(min));
    Ok(Some(Neighbours::Between {
        below: below.map(as_column).transpose()?,
        above: above.map(as_column).transpose()?,
    }))
}

/// How many digits finite `f` has after the point, written out exactly: as
/// `m × 2^e` with `m` odd, `-e` when `e < 0` (each halving adds one), else
/// none. At most 1074; printing that many loses nothing, and printing no
/// more keeps a filter's restating cheap (it runs for every page's
/// statistics): 0.1 has 55, 6543605981154.28 has 10.
fn fraction_digits(f: f64) -> usize {
    let bits = f.to_bits();
    let (mantissa, exponent) = match (bits >> 52) & 0x7ff {
        0 => (bits & ((1 << 52) - 1), -1074i64),
        e => ((bits & ((1 << 52) - 1)) | (1 << 52), e as i64 - 1075),
    };
    if mantissa == 0 {
        return 0;
    }
    let exponent = exponent + i64::from(mantissa.trailing_zeros());
    usize::try_from(-exponent).unwrap_or(0)
}

/// A number literal written out in decimal digits, exactly.
enum Written {
    Finite {
        negative: bool,
        /// The digits before the point, and after it.
        whole: String,
        fraction: String,
    },
    Infinite {
        negative: bool,
    },
    NaN,
}

/// `literal`'s one value written out exactly: a float in full (every
/// finite f64 is a finite decimal fraction: see [`fraction_digits`]), an
/// integer, a decimal's digits with its point; `None` for other types.
fn written_out(literal: &dyn Array) -> Option<Written> {
    let split = |negative: bool, digits: String, scale: i64| {
        // `digits` (no sign) times 10^-scale.
        let (whole, fraction) = match scale {
            s if s <= 0 => (
                format!("{digits}{}", "0".repeat((-s) as usize)),
                String::new(),
            ),
            s => {
                let s = s as usize;
                let padded = format!("{}{digits}", "0".repeat(s.saturating_sub(digits.len())));
                let (w, f) = padded.split_at(padded.len() - s);
                (w.to_string(), f.to_string())
            }
        };
        Written::Finite {
            negative,
            whole,
            fraction,
        }
    };
    if let Some(f) = float(literal) {
        return Some(match f {
            f if f.is_nan() => Written::NaN,
            f if f.is_infinite() => Written::Infinite { negative: f < 0.0 },
            f => {
                let digits = fraction_digits(f);
                let text = format!("{:.digits$}", f.abs());
                let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
                Written::Finite {
                    negative: f.is_sign_negative() && f != 0.0,
                    whole: whole.to_string(),
                    fraction: fraction.to_string(),
                }
            }
        });
    }
    if let Some(n) = integer(literal) {
        return Some(split(n < 0, n.unsigned_abs().to_string(), 0));
    }
    let (value, scale) = match literal.data_type() {
        DataType::Decimal128(_, s) => (
            i256::from_i128(literal.as_primitive::<Decimal128Type>().value(0)),
            *s,
        ),
        DataType::Decimal256(_, s) => (literal.as_primitive::<Decimal256Type>().value(0), *s),
        _ => return None,
    };
    let negative = value < i256::ZERO;
    let text = value.to_string();
    Some(split(
        negative,
        text.trim_start_matches('-').to_string(),
        i64::from(scale),
    ))
}

/// The literal cast to `column`, where casting it back gives it again.
fn round_trip(literal: &ArrayRef, column: &DataType) -> Option<ArrayRef> {
    let cast = cast_literal(literal, column).ok()?;
    let back = cast_literal(&cast, literal.data_type()).ok()?;
    let same = cmp::eq(&back, literal).ok()?;
    (same.null_count() == 0 && same.value(0)).then_some(cast)
}

/// The values of an `in` set that `column`'s type holds exactly, cast to
/// it; the others cannot equal any row and are left out. A null stays (it
/// matches the null rows).
fn exact_members(set: &ArrayRef, column: &DataType) -> Result<ArrayRef, ArrowError> {
    let lenient = CastOptions {
        safe: true,
        ..Default::default()
    };
    // Between numbers (or times), values the cast cannot take become nulls,
    // told apart from the set's own nulls below; between other types the
    // strict cast's error stands ("abc" for an integer column).
    let cast = match cast_literal(set, column) {
        Ok(cast) => cast,
        Err(_) if is_number_or_time(set.data_type()) && is_number_or_time(column) => {
            cast_with_options(set, column, &lenient)?
        }
        Err(e) => return Err(e),
    };
    let back = cast_with_options(&cast, set.data_type(), &lenient)?;
    let same = cmp::eq(&back, set)?;
    let keep = arrow_array::BooleanArray::from_iter(
        (0..set.len()).map(|i| Some(set.is_null(i) || (same.is_valid(i) && same.value(i)))),
    );
    arrow_select::filter::filter(&cast, &keep)
}

fn is_number_or_time(t: &DataType) -> bool {
    t.is_numeric() || tick_nanos(t).is_some()
}

/// Where a literal no value of the column's type equals falls among them.
enum Neighbours {
    /// The greatest value below it and the least above it, of the
    /// column's type, where there is one.
    Between {
        below: Option<ArrayRef>,
        above: Option<ArrayRef>,
    },
    /// NaN.
    Unordered,
    /// It is this value of the column's type after all (a cast that did
    /// not take it back and forth, though it is whole and in range).
    Exactly(ArrayRef),
}

/// The neighbours of `literal` in `column`'s type, for numbers and times;
/// `None` for other types.
fn neighbours(literal: &ArrayRef, column: &DataType) -> Result<Option<Neighbours>, ArrowError> {
    if let Some(float) = float_neighbours(literal, column) {
        return Ok(Some(float));
    }
    let (Some(domain), Some(value)) = (Domain::of(column), Value::of(literal, column)) else {
        return Ok(None);
    };
    let (floor, ceil) = match value {
        Value::Ratio(num, den) => {
            let floor = num.div_euclid(den);
            (floor, floor + i128::from(num.rem_euclid(den) != 0))
        }
        Value::Float(f) if f.is_nan() => return Ok(Some(Neighbours::Unordered)),
        // Saturating: past i128 is past every column's range.
        Value::Float(f) => (f.floor() as i128, f.ceil() as i128),
    };
    if floor == ceil && (domain.min..=domain.max).contains(&floor) {
        return Ok(Some(Neighbours::Exactly(domain.literal(floor, column)?)));
    }
    let below = (floor >= domain.min).then(|| floor.min(domain.max));
    let above = (ceil <= domain.max).then(|| ceil.max(domain.min));
    Ok(Some(Neighbours::Between {
        below: below.map(|v| domain.literal(v, column)).transpose()?,
        above: above.map(|v| domain.literal(v, column)).transpose()?,
    }))
}

/// A column type whose values are integers in some unit: integers, times
/// (ticks).
struct Domain {
    min: i128,
    max: i128,
}

impl Domain {
    fn of(column: &DataType) -> Option<Domain> {
        let (min, max) = match column {
            DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
            DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
            DataType::Int32 | DataType::Date32 | DataType::Time32(_) => {
                (i32::MIN.into(), i32::MAX.into())
            }
            DataType::Int64
            | DataType::Date64
            | DataType::Time64(_)
            | DataType::Timestamp(_, _)
            | DataType::Duration(_) => (i64::MIN.into(), i64::MAX.into()),
            DataType::UInt8 => (0, u8::MAX.into()),
            DataType::UInt16 => (0, u16::MAX.into()),
            DataType::UInt32 => (0, u32::MAX.into()),
            DataType::UInt64 => (0, u64::MAX.into()),
            // (Decimals: `number_in_decimals`.)
            _ => return None,
        };
        Some(Domain { min, max })
    }

    /// `v` (within the domain) as a one-value array of `column`'s type.
    fn literal(&self, v: i128, column: &DataType) -> Result<ArrayRef, ArrowError> {
        let out_of_range = || ArrowError::ComputeError(format!("{v} is not a {column}"));
        let array: ArrayRef = match column {
            DataType::UInt64 => Arc::new(UInt64Array::from(vec![
                u64::try_from(v).map_err(|_| out_of_range())?
            ])),
            DataType::Date32 | DataType::Time32(_) => {
                let v = i32::try_from(v).map_err(|_| out_of_range())?;
                let data = Int32Array::from(vec![v]).into_data().into_builder();
                make_array(data.data_type(column.clone()).build()?)
            }
            DataType::Date64
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_) => {
                let v = i64::try_from(v).map_err(|_| out_of_range())?;
                let data = Int64Array::from(vec![v]).into_data().into_builder();
                make_array(data.data_type(column.clone()).build()?)
            }
            _ => {
                let v = i64::try_from(v).map_err(|_| out_of_range())?;
                let one: ArrayRef = Arc::new(Int64Array::from(vec![v]));
                cast_literal(&one, column)?
            }
        };
        Ok(array)
    }
}

/// A literal in the units of a column's domain.
enum Value {
    /// Exactly `num / den` units (`den` > 0).
    Ratio(i128, i128),
    /// A float, in units.
    Float(f64),
}

impl Value {
    /// `literal`'s one value in `column`'s units; `None` where the two are
    /// not both numbers or both times.
    fn of(literal: &ArrayRef, column: &DataType) -> Option<Value> {
        let scale = |s: i8| 10i128.checked_pow(u32::try_from(s).ok()?);
        if let Some(ticks) = tick_nanos(column) {
            let (raw, nanos) = temporal(literal)?;
            if time_kind(literal.data_type()) != time_kind(column) {
                return None;
            }
            return Some(Value::Ratio(raw.checked_mul(nanos)?, ticks));
        }
        let units = match column {
            t if t.is_integer() => 1,
            _ => return None,
        };
        if let Some(n) = integer(literal) {
            return Some(Value::Ratio(
                n.checked_mul(units).unwrap_or(n.signum() * i128::MAX),
                1,
            ));
        }
        match literal.data_type() {
            DataType::Decimal128(_, s) if *s >= 0 => {
                let n = literal.as_primitive::<Decimal128Type>().value(0);
                let big = n.checked_mul(units).unwrap_or(n.signum() * i128::MAX);
                Some(Value::Ratio(big, scale(*s)?))
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                Some(Value::Float(float(literal)? * units as f64))
            }
            _ => None,
        }
    }
}

/// An integer literal's value.
fn integer(literal: &dyn Array) -> Option<i128> {
    macro_rules! of {
        ($t:ty) => {
            literal.as_primitive::<$t>().value(0).into()
        };
    }
    Some(match literal.data_type() {
        DataType::Int8 => of!(Int8Type),
        DataType::Int16 => of!(Int16Type),
        DataType::Int32 => of!(Int32Type),
        DataType::Int64 => of!(Int64Type),
        DataType::UInt8 => of!(UInt8Type),
        DataType::UInt16 => of!(UInt16Type),
        DataType::UInt32 => of!(UInt32Type),
        DataType::UInt64 => of!(UInt64Type),
        _ => return None,
    })
}

/// A float literal's value.
fn float(literal: &dyn Array) -> Option<f64> {
    Some(match literal.data_type() {
        DataType::Float16 => literal.as_primitive::<Float16Type>().value(0).to_f64(),
        DataType::Float32 => literal.as_primitive::<Float32Type>().value(0).into(),
        DataType::Float64 => literal.as_primitive::<Float64Type>().value(0),
        _ => return None,
    })
}

/// Nanoseconds a tick of a time type lasts.
fn tick_nanos(t: &DataType) -> Option<i128> {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    };
    Some(match t {
        DataType::Date32 => 86_400_000_000_000,
        DataType::Date64 => 1_000_000,
        DataType::Time32(u)
        | DataType::Time64(u)
        | DataType::Timestamp(u, _)
        | DataType::Duration(u) => unit(u),
        _ => return None,
    })
}

/// Times compare with times of their kind: instants (dates and
/// timestamps), times of day, durations.
fn time_kind(t: &DataType) -> u8 {
    match t {
        DataType::Time32(_) | DataType::Time64(_) => 1,
        DataType::Duration(_) => 2,
        _ => 0,
    }
}

/// A time literal's ticks and the nanoseconds of a tick. Time zones are
/// left as the cast leaves them (an instant is an instant).
fn temporal(literal: &dyn Array) -> Option<(i128, i128)> {
    macro_rules! of {
        ($t:ty) => {
            i128::from(literal.as_primitive::<$t>().value(0))
        };
    }
    let raw = match literal.data_type() {
        DataType::Date32 => of!(Date32Type),
        DataType::Date64 => of!(Date64Type),
        DataType::Time32(TimeUnit::Second) => of!(Time32SecondType),
        DataType::Time32(TimeUnit::Millisecond) => of!(Time32MillisecondType),
        DataType::Time64(TimeUnit::Microsecond) => of!(Time64MicrosecondType),
        DataType::Time64(TimeUnit::Nanosecond) => of!(Time64NanosecondType),
        DataType::Timestamp(TimeUnit::Second, _) => of!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => of!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => of!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => of!(TimestampNanosecondType),
        DataType::Duration(TimeUnit::Second) => of!(DurationSecondType),
        DataType::Duration(TimeUnit::Millisecond) => of!(DurationMillisecondType),
        DataType::Duration(TimeUnit::Microsecond) => of!(DurationMicrosecondType),
        DataType::Duration(TimeUnit::Nanosecond) => of!(DurationNanosecondType),
        _ => return None,
    };
    Some((raw, tick_nanos(literal.data_type())?))
}

/// A number's neighbours in a float column's type: the float nearest it and
/// the next one past it on the other side.
fn float_neighbours(literal: &ArrayRef, column: &DataType) -> Option<Neighbours> {
    let exact_int = integer(literal.as_ref());
    let value = match exact_int {
        Some(n) => n as f64,
        None => match literal.data_type() {
            DataType::Decimal128(_, s) => {
                literal.as_primitive::<Decimal128Type>().value(0) as f64 / 10f64.powi((*s).into())
            }
            _ => float(literal.as_ref())?,
        },
    };
    if value.is_nan() {
        return matches!(
            column,
            DataType::Float16 | DataType::Float32 | DataType::Float64
        )
        .then_some(Neighbours::Unordered);
    }
    // Whether the float `f` (exact in f64) lies below the literal.
    let below = |f: f64| match exact_int {
        // An f64 past 2^53 is an integer, and every literal integer fits i128.
        Some(n) if f.is_finite() => (f as i128) < n,
        _ => f < value,
    };
    type F16 = <Float16Type as ArrowPrimitiveType>::Native;
    // The float of the column's type nearest the value, and the step to the
    // next one of that type, both in f64 (which holds every f32 and f16).
    let (nearest, step): (f64, fn(f64, bool) -> f64) = match column {
        DataType::Float64 => (value, |f, up| if up { f.next_up() } else { f.next_down() }),
        DataType::Float32 => ((value as f32).into(), |f, up| {
            let f = f as f32;
            if up { f.next_up() } else { f.next_down() }.into()
        }),
        DataType::Float16 => (F16::from_f64(value).to_f64(), |f, up| {
            next_f16(f, F16::from_f64(f).to_bits(), up)
        }),
        _ => return None,
    };
    let (lo, hi) = if below(nearest) {
        (nearest, step(nearest, true))
    } else {
        (step(nearest, false), nearest)
    };
    // Exact: both are floats of the column's type.
    let of_column = |f: f64| arrow_cast::cast(&Float64Array::from(vec![f]), column).ok();
    Some(Neighbours::Between {
        below: Some(of_column(lo)?),
        above: Some(of_column(hi)?),
    })
}

/// The half-precision float after (`up`) or before `f` (of bits `bits`),
/// as an f64 (exact).
fn next_f16(f: f64, bits: u16, up: bool) -> f64 {
    type F16 = <Float16Type as ArrowPrimitiveType>::Native;
    let magnitude = bits & 0x7fff;
    let negative = bits & 0x8000 != 0;
    let next = if magnitude == 0 {
        // From either zero to the smallest subnormal of the sign asked.
        if up {
            0x0001
        } else {
            0x8001
        }
    } else if up != negative {
        bits + 1 // away from zero
    } else {
        bits - 1 // towards zero
    };
    if f.is_infinite() && (f > 0.0) == up {
        return f;
    }
    F16::from_bits(next).to_f64()
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, TimestampMicrosecondArray};

    use super::*;

    fn restated(op: CmpOp, literal: ArrayRef, column: &DataType) -> String {
        match restate(op, &literal, column).unwrap() {
            Restated::Always(answer) => format!("always {answer}"),
            Restated::Compare(op, value) => {
                let shown = arrow_cast::display::array_value_to_string(&value, 0).unwrap();
                format!("{op:?} {shown}")
            }
        }
    }

    fn f64s(v: f64) -> ArrayRef {
        Arc::new(Float64Array::from(vec![v]))
    }

    fn i64s(v: i64) -> ArrayRef {
        Arc::new(Int64Array::from(vec![v]))
    }

    #[test]
    fn fractions_over_integers_become_their_neighbours() {
        let int = DataType::Int32;
        assert_eq!(restated(CmpOp::Lt, f64s(2.5), &int), "LtEq 2");
        assert_eq!(restated(CmpOp::LtEq, f64s(2.5), &int), "LtEq 2");
        assert_eq!(restated(CmpOp::Gt, f64s(2.5), &int), "GtEq 3");
        assert_eq!(restated(CmpOp::GtEq, f64s(-2.5), &int), "GtEq -2");
        assert_eq!(restated(CmpOp::Eq, f64s(2.5), &int), "always false");
        assert_eq!(restated(CmpOp::NotEq, f64s(2.5), &int), "always true");
        assert_eq!(restated(CmpOp::Eq, f64s(2.0), &int), "Eq 2");
        assert_eq!(restated(CmpOp::Gt, f64s(f64::NAN), &int), "always false");
        assert_eq!(restated(CmpOp::NotEq, f64s(f64::NAN), &int), "always true");
        assert_eq!(
            restated(CmpOp::Lt, f64s(f64::INFINITY), &int),
            "LtEq 2147483647"
        );
        assert_eq!(
            restated(CmpOp::Gt, f64s(f64::INFINITY), &int),
            "always false"
        );
    }

    #[test]
    fn numbers_past_a_columns_range_hold_for_all_rows_or_none() {
        let byte = DataType::UInt8;
        assert_eq!(restated(CmpOp::Gt, i64s(-1), &byte), "GtEq 0");
        assert_eq!(restated(CmpOp::Lt, i64s(-1), &byte), "always false");
        assert_eq!(restated(CmpOp::Lt, i64s(300), &byte), "LtEq 255");
        assert_eq!(restated(CmpOp::GtEq, i64s(300), &byte), "always false");
        assert_eq!(restated(CmpOp::Eq, i64s(300), &byte), "always false");
        let decimal = DataType::Decimal128(5, 2);
        assert_eq!(restated(CmpOp::Gt, i64s(-1000), &decimal), "GtEq -999.99");
        assert_eq!(restated(CmpOp::Eq, i64s(1), &decimal), "Eq 1.00");
    }

    #[test]
    fn floats_against_decimals_are_compared_exactly() {
        // 6543605981154.28 is the double 6543605981154.2802734375: over
        // decimal(50, 5) its neighbours are .28027 and .28028 (a cast
        // through f64 units put it at .27968, dropping .27976).
        let wide = DataType::Decimal256(50, 5);
        let f = 6543605981154.28;
        assert_eq!(
            restated(CmpOp::Lt, f64s(f), &wide),
            "LtEq 6543605981154.28027"
        );
        assert_eq!(
            restated(CmpOp::Gt, f64s(f), &wide),
            "GtEq 6543605981154.28028"
        );
        assert_eq!(restated(CmpOp::Eq, f64s(f), &wide), "always false");
        assert_eq!(
            restated(CmpOp::Lt, f64s(-f), &wide),
            "LtEq -6543605981154.28028"
        );
        let narrow = DataType::Decimal128(38, 10);
        assert_eq!(
            restated(CmpOp::LtEq, f64s(f), &narrow),
            "LtEq 6543605981154.2802734375"
        );
        assert_eq!(
            restated(CmpOp::Eq, f64s(f), &narrow),
            "Eq 6543605981154.2802734375"
        );
        // 0.1 is a little more than 0.1.
        let cents = DataType::Decimal128(5, 2);
        assert_eq!(restated(CmpOp::Gt, f64s(0.1), &cents), "GtEq 0.11");
        assert_eq!(restated(CmpOp::LtEq, f64s(0.1), &cents), "LtEq 0.10");
        assert_eq!(restated(CmpOp::Eq, f64s(2.5), &cents), "Eq 2.50");
        assert_eq!(restated(CmpOp::Eq, f64s(-0.0), &cents), "Eq 0.00");
        // Past the column's range, infinities, NaN, a negative scale.
        assert_eq!(restated(CmpOp::Lt, f64s(1e300), &cents), "LtEq 999.99");
        assert_eq!(restated(CmpOp::Gt, f64s(1e300), &cents), "always false");
        assert_eq!(
            restated(CmpOp::Gt, f64s(-1e300), &wide),
            "GtEq -999999999999999999999999999999999999999999999.99999"
        );
        assert_eq!(
            restated(CmpOp::Lt, f64s(f64::NEG_INFINITY), &wide),
            "always false"
        );
        assert_eq!(
            restated(CmpOp::Lt, f64s(f64::INFINITY), &cents),
            "LtEq 999.99"
        );
        assert_eq!(restated(CmpOp::NotEq, f64s(f64::NAN), &wide), "always true");
        let hundreds = DataType::Decimal128(5, -2);
        assert_eq!(restated(CmpOp::Lt, f64s(250.0), &hundreds), "LtEq 200");
        assert_eq!(restated(CmpOp::Eq, f64s(300.0), &hundreds), "Eq 300");
        assert_eq!(restated(CmpOp::Gt, f64s(1e-300), &cents), "GtEq 0.01");
    }

    #[test]
    fn a_float_is_written_out_to_its_last_digit_and_no_further() {
        for (f, digits) in [
            (0.1, 55),
            (0.5, 1),
            (2.0, 0),
            (1e300, 0),
            (6543605981154.28, 10),
            (-0.375, 3),
            (f64::MIN_POSITIVE, 1022),
            (5e-324, 1074),
            (0.0, 0),
        ] {
            assert_eq!(fraction_digits(f), digits, "{f:e}");
            // One more digit is a zero: nothing was cut.
            let text = format!("{:.*}", digits + 1, f);
            assert!(text.ends_with('0'), "{f:e}: {text}");
            if digits > 0 {
                assert!(!format!("{:.*}", digits, f).ends_with('0'), "{f:e}");
            }
        }
    }

    #[test]
    fn decimals_and_integers_against_wide_decimals_are_compared_exactly() {
        let wide = DataType::Decimal256(50, 5);
        let finer: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1_234_564])
                .with_precision_and_scale(7, 6)
                .unwrap(),
        );
        // 1.234564: between 1.23456 and 1.23457, equal to neither (a cast
        // rounded it to 1.23456, which `==` then matched).
        assert_eq!(
            restated(CmpOp::Eq, Arc::clone(&finer), &wide),
            "always false"
        );
        assert_eq!(
            restated(CmpOp::Lt, Arc::clone(&finer), &wide),
            "LtEq 1.23456"
        );
        assert_eq!(
            restated(CmpOp::Gt, Arc::clone(&finer), &wide),
            "GtEq 1.23457"
        );
        let negative: ArrayRef = Arc::new(
            Decimal256Array::from(vec![i256::from_i128(-1_234_564)])
                .with_precision_and_scale(60, 6)
                .unwrap(),
        );
        assert_eq!(restated(CmpOp::Lt, negative, &wide), "LtEq -1.23457");
        let coarse: ArrayRef = Arc::new(
            Decimal128Array::from(vec![12])
                .with_precision_and_scale(3, -2)
                .unwrap(),
        );
        assert_eq!(restated(CmpOp::Eq, coarse, &wide), "Eq 1200.00000");
        assert_eq!(restated(CmpOp::Eq, i64s(-7), &wide), "Eq -7.00000");
        // Integers past a narrow decimal's range: all rows or none, not an
        // error from the cast.
        let narrow = DataType::Decimal256(40, 30);
        assert_eq!(
            restated(CmpOp::Lt, i64s(10_i64.pow(15)), &narrow),
            format!("LtEq {}.{}", "9".repeat(10), "9".repeat(30))
        );
        assert_eq!(
            restated(CmpOp::Gt, i64s(10_i64.pow(15)), &narrow),
            "always false"
        );
        assert_eq!(
            restated(CmpOp::Eq, i64s(3), &DataType::Decimal128(5, 2)),
            "Eq 3.00"
        );
    }

    #[test]
    fn decimals_and_times_round_towards_the_comparison() {
        let decimal = DataType::Decimal128(5, 2);
        let more_digits: ArrayRef = Arc::new(
            Decimal128Array::from(vec![2501])
                .with_precision_and_scale(4, 3)
                .unwrap(),
        );
        assert_eq!(
            restated(CmpOp::GtEq, Arc::clone(&more_digits), &decimal),
            "GtEq 2.51"
        );
        assert_eq!(restated(CmpOp::Lt, more_digits, &decimal), "LtEq 2.50");
        assert_eq!(restated(CmpOp::GtEq, f64s(2.501), &decimal), "GtEq 2.51");
        let millis = DataType::Timestamp(TimeUnit::Millisecond, None);
        let micros: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![-500]));
        assert_eq!(
            restated(CmpOp::Gt, Arc::clone(&micros), &millis),
            "GtEq 1970-01-01T00:00:00"
        );
        assert_eq!(
            restated(CmpOp::Lt, micros, &millis),
            "LtEq 1969-12-31T23:59:59.999"
        );
    }

    #[test]
    fn a_number_a_float_type_cannot_hold_is_placed_between_two_of_them() {
        let f32_type = DataType::Float32;
        let tenth = 0.1f32;
        assert!(f64::from(tenth) > 0.1);
        assert_eq!(
            restated(CmpOp::Gt, f64s(0.1), &f32_type),
            format!("GtEq {tenth}")
        );
        assert_eq!(
            restated(CmpOp::LtEq, f64s(0.1), &f32_type),
            format!("LtEq {}", tenth.next_down())
        );
        assert_eq!(restated(CmpOp::Eq, f64s(0.1), &f32_type), "always false");
        assert_eq!(
            restated(CmpOp::Eq, i64s(16_777_217), &f32_type),
            "always false"
        );
        assert_eq!(
            restated(CmpOp::Gt, i64s(16_777_217), &f32_type),
            "GtEq 16777218.0"
        );
        assert_eq!(
            restated(CmpOp::Lt, i64s(16_777_217), &f32_type),
            "LtEq 16777216.0"
        );
        assert_eq!(restated(CmpOp::Gt, f64s(1e300), &f32_type), "GtEq inf");
        assert_eq!(
            restated(CmpOp::Lt, f64s(1e300), &f32_type),
            "LtEq 3.4028235e38"
        );
        assert_eq!(
            restated(CmpOp::Lt, i64s(i64::MAX), &DataType::Float64),
            "LtEq 9.223372036854775e18" // 2^63 less one step: i64::MAX lies above it
        );
        // Half precision: 0.1 lies between 0.0999755859375 and 0.10003662109375.
        let half = DataType::Float16;
        assert_eq!(restated(CmpOp::Gt, f64s(0.1), &half), "GtEq 0.10003662");
        assert_eq!(restated(CmpOp::Lt, f64s(0.1), &half), "LtEq 0.099975586");
        assert_eq!(restated(CmpOp::Gt, f64s(-1e-9), &half), "GtEq -0");
        assert_eq!(restated(CmpOp::Gt, f64s(1e9), &half), "GtEq inf");
    }

    #[test]
    fn sets_keep_the_values_the_column_can_hold() {
        let set: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.5),
            Some(2.0),
            None,
            Some(f64::NAN),
            Some(1e30),
        ]));
        let Restated::Compare(CmpOp::In, kept) =
            restate(CmpOp::In, &set, &DataType::Int64).unwrap()
        else {
            panic!("a set stays a set")
        };
        let kept = kept.as_primitive::<Int64Type>();
        assert_eq!(kept.iter().collect::<Vec<_>>(), [Some(2), None]);
        let words: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["two"]));
        assert!(restate(CmpOp::In, &words, &DataType::Int64).is_err());
    }
}
