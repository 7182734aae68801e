//! Floats compared as pyarrow compares them, by IEEE 754: NaN is neither
//! below, above nor equal to anything (`!=` holds), and -0.0 equals 0.0.
//! arrow's comparison kernels order floats totally instead (NaN above
//! every number and equal to itself, -0.0 below 0.0), which kept NaN rows
//! for `x > 1` and dropped -0.0 rows for `x == 0`.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType;

use super::CmpOp;

/// `left op literal` for a float column and a one-value literal of its
/// type; `None` for other types and for `in` / `not in`.
pub(super) fn compare(left: &dyn Array, op: CmpOp, literal: &dyn Array) -> Option<BooleanArray> {
    if matches!(op, CmpOp::In | CmpOp::NotIn) {
        return None; // sets are matched by `membership`
    }
    Some(match left.data_type() {
        DataType::Float16 => typed::<Float16Type>(left, op, literal)?,
        DataType::Float32 => typed::<Float32Type>(left, op, literal)?,
        DataType::Float64 => typed::<Float64Type>(left, op, literal)?,
        _ => return None,
    })
}

fn typed<T>(left: &dyn Array, op: CmpOp, literal: &dyn Array) -> Option<BooleanArray>
where
    T: ArrowPrimitiveType,
    T::Native: PartialOrd,
{
    let left: &PrimitiveArray<T> = left.as_primitive_opt()?;
    let literal: &PrimitiveArray<T> = literal.as_primitive_opt()?;
    if literal.is_null(0) {
        return Some(BooleanArray::new_null(left.len()));
    }
    let v = literal.value(0);
    let values = left.values();
    let n = left.len();
    // One loop per operator, so that each compiles to a tight loop.
    let bits = match op {
        CmpOp::Eq => BooleanBuffer::collect_bool(n, |i| values[i] == v),
        CmpOp::NotEq => BooleanBuffer::collect_bool(n, |i| values[i] != v),
        CmpOp::Lt => BooleanBuffer::collect_bool(n, |i| values[i] < v),
        CmpOp::LtEq => BooleanBuffer::collect_bool(n, |i| values[i] <= v),
        CmpOp::Gt => BooleanBuffer::collect_bool(n, |i| values[i] > v),
        CmpOp::GtEq => BooleanBuffer::collect_bool(n, |i| values[i] >= v),
        CmpOp::In | CmpOp::NotIn => return None,
    };
    Some(BooleanArray::new(bits, left.logical_nulls()))
}
