//! Row filters in pyarrow's DNF form: an OR of ANDs of `column op literal`.
//! Used twice, by every format: to skip units (row groups, stripes) whose
//! statistics rule them out, and to drop the rows of the remaining ones that
//! do not match. Where the statistics come from is the format's business
//! (`parquet::prune`, `orc::prune`); this module compares them.

use std::collections::BTreeSet;

use arrow_arith::boolean::{and_kleene, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar};
use arrow_buffer::BooleanBuffer;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType, Schema};

use crate::error::{Error, Result};

mod by_key;
mod ieee;
mod literal;
mod membership;

use literal::Restated;

/// A comparison operator of a filter term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `==` or `=`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `in`
    In,
    /// `not in`
    NotIn,
}

impl CmpOp {
    /// Parses pyarrow's operator spelling.
    pub fn parse(op: &str) -> Result<Self> {
        Ok(match op.trim().to_ascii_lowercase().as_str() {
            "==" | "=" => CmpOp::Eq,
            "!=" => CmpOp::NotEq,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::LtEq,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::GtEq,
            "in" => CmpOp::In,
            "not in" => CmpOp::NotIn,
            other => {
                return Err(Error::InvalidArgument(format!(
                "unknown filter operator {other:?}; use one of ==, =, !=, <, <=, >, >=, in, not in"
            )))
            }
        })
    }

    fn is_set(self) -> bool {
        matches!(self, CmpOp::In | CmpOp::NotIn)
    }
}

/// `column op value`. `value` holds one literal, or the set for `in`/`not in`.
#[derive(Debug, Clone)]
pub struct Predicate {
    /// A top-level column name.
    pub column: String,
    /// The comparison.
    pub op: CmpOp,
    /// The literal(s), of any type castable to the column's.
    pub value: ArrayRef,
}

impl Predicate {
    /// `column op value`, for tests.
    #[cfg(test)]
    pub(crate) fn of(column: &str, op: CmpOp, value: ArrayRef) -> Self {
        Predicate {
            column: column.into(),
            op,
            value,
        }
    }

    /// Whether the predicate holds for a null value, as in pyarrow: a
    /// comparison with a null is null (the row is dropped); `in` matches a
    /// null where its values hold a null, `not in` where they do not (it is
    /// `not (x in values)`).
    pub(crate) fn holds_for_null(&self) -> bool {
        let set_has_null = self.value.logical_null_count() > 0;
        match self.op {
            CmpOp::In => set_has_null,
            CmpOp::NotIn => !set_has_null,
            _ => false,
        }
    }
}

/// A filter in disjunctive normal form: rows match when any conjunction has
/// all its predicates true (null counts as false, as in pyarrow).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// OR of these; each is an AND of predicates.
    pub disjuncts: Vec<Vec<Predicate>>,
}

impl Filter {
    /// Checks the shape of the filter.
    pub fn new(disjuncts: Vec<Vec<Predicate>>) -> Result<Self> {
        if disjuncts.is_empty() || disjuncts.iter().any(|c| c.is_empty()) {
            return Err(Error::InvalidArgument(
                "filters must be a non-empty list of (column, op, value) tuples, or a list of such lists".into(),
            ));
        }
        for p in disjuncts.iter().flatten() {
            if !p.op.is_set() && p.value.len() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "filter on {:?}: operator {:?} takes one value",
                    p.column, p.op
                )));
            }
        }
        Ok(Filter { disjuncts })
    }

    /// Columns the filter reads.
    pub fn columns(&self) -> BTreeSet<String> {
        self.disjuncts
            .iter()
            .flatten()
            .map(|p| p.column.clone())
            .collect()
    }

    /// Checks that every literal can be compared with its column.
    pub fn check_types(&self, location: &str, schema: &Schema) -> Result<()> {
        for p in self.disjuncts.iter().flatten() {
            let field = schema
                .field_with_name(&p.column)
                .map_err(|_| Error::ColumnNotFound {
                    location: location.to_string(),
                    column: p.column.clone(),
                    available: schema.fields().iter().map(|f| f.name().clone()).collect(),
                })?;
            let target = value_type(field.data_type());
            if target.is_nested() {
                return Err(Error::InvalidArgument(format!(
                    "{location}: cannot filter on column {:?} of nested type {}",
                    p.column, target
                )));
            }
            literal::restate(p.op, &p.value, &target).map_err(|e| {
                Error::InvalidArgument(format!(
                    "{location}: cannot compare column {:?} ({}) with a value of type {}: {e}",
                    p.column,
                    field.data_type(),
                    p.value.data_type()
                ))
            })?;
        }
        Ok(())
    }

    /// The rows of `batch` that match (null as false).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        let mut any: Option<BooleanArray> = None;
        for conj in &self.disjuncts {
            let mut all: Option<BooleanArray> = None;
            for p in conj {
                let m = eval_predicate(batch, p)?;
                all = Some(match all {
                    None => m,
                    Some(a) => and_kleene(&a, &m)?,
                });
            }
            if let Some(all) = all {
                any = Some(match any {
                    None => all,
                    Some(a) => or_kleene(&a, &all)?,
                });
            }
        }
        Ok(any.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()])))
    }

    /// For each of `units` (row groups, stripes), whether its statistics
    /// allow a match. `min_max` gives a predicate's per-unit minimums and
    /// maximums (nulls where a unit has none), or `None` when the format
    /// cannot tell; missing or unusable statistics keep the unit (pruning
    /// only saves work, the rows are still filtered after decoding).
    pub fn prune<F>(&self, units: usize, min_max: F) -> Vec<bool>
    where
        F: Fn(&Predicate) -> Option<(ArrayRef, ArrayRef)>,
    {
        self.prune_by(units, |p| {
            min_max(p).and_then(|(mins, maxes)| may_match(&mins, &maxes, p))
        })
    }

    /// For each of `units`, whether it may hold a matching row, from
    /// `may_hold`'s answer for each predicate: per unit, whether a row of it
    /// may meet the predicate (`None`, or an answer of another length: it
    /// cannot tell, and the predicate rules nothing out).
    pub fn prune_by<F>(&self, units: usize, may_hold: F) -> Vec<bool>
    where
        F: Fn(&Predicate) -> Option<Vec<bool>>,
    {
        let mut keep = vec![false; units];
        for conj in &self.disjuncts {
            let mut conj_keep = vec![true; units];
            for p in conj {
                if let Some(may) = may_hold(p).filter(|m| m.len() == units) {
                    for (k, m) in conj_keep.iter_mut().zip(may) {
                        *k &= m;
                    }
                }
            }
            for (k, c) in keep.iter_mut().zip(conj_keep) {
                *k |= c;
            }
        }
        keep
    }
}

/// The rows of a file a filter leaves once some of its columns are decided.
#[derive(Debug, Clone)]
pub(crate) enum Rows {
    /// Every row (no filter, or one every row meets).
    All,
    /// The rows this filter keeps.
    Matching(Filter),
    /// None: the file need not be read.
    Nothing,
}

impl Rows {
    /// The filter to apply to the rows, if any.
    pub fn filter(&self) -> Option<&Filter> {
        match self {
            Rows::Matching(f) => Some(f),
            _ => None,
        }
    }
}

impl Filter {
    /// This filter over a file in which the columns of `known` (a one-row
    /// batch) hold that value on every row, and the columns `absent` names
    /// are null (`Predicate::holds_for_null`): their
    /// predicates are decided once, the others remain.
    pub(crate) fn given(
        &self,
        known: Option<&RecordBatch>,
        absent: impl Fn(&str) -> bool,
    ) -> Result<Rows, ArrowError> {
        let mut left: Vec<Vec<Predicate>> = Vec::new();
        for conj in &self.disjuncts {
            let mut rest = Vec::new();
            let mut holds = true;
            for p in conj {
                let known_column = known.filter(|k| k.column_by_name(&p.column).is_some());
                let decided = match known_column {
                    Some(k) => {
                        let m = eval_predicate(k, p)?;
                        Some(m.is_valid(0) && m.value(0))
                    }
                    None if absent(&p.column) => Some(p.holds_for_null()),
                    None => None,
                };
                match decided {
                    Some(true) => {}
                    Some(false) => holds = false,
                    None => rest.push(p.clone()),
                }
            }
            if !holds {
                continue;
            }
            if rest.is_empty() {
                return Ok(Rows::All);
            }
            left.push(rest);
        }
        Ok(if left.is_empty() {
            Rows::Nothing
        } else {
            Rows::Matching(Filter { disjuncts: left })
        })
    }
}

/// Casts strictly: a value that does not fit the target type is an error,
/// not a silent null (filter literals, partition values).
pub(crate) fn cast_literal(value: &ArrayRef, target: &DataType) -> Result<ArrayRef, ArrowError> {
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(value, target, &options)
}

/// Dictionary columns compare as their values.
fn value_type(dt: &DataType) -> DataType {
    match dt {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    }
}

fn eval_predicate(batch: &RecordBatch, p: &Predicate) -> Result<BooleanArray, ArrowError> {
    let col = batch.column_by_name(&p.column).ok_or_else(|| {
        ArrowError::SchemaError(format!("filter column {:?} was not decoded", p.column))
    })?;
    let target = value_type(col.data_type());
    let restated = literal::restate(p.op, &p.value, &target)?;
    let matched = match col.as_any_dictionary_opt() {
        // Each distinct value is compared once, and its answer taken by
        // every row's key (a null key gives a null answer): no value is
        // copied out of the dictionary (`read_dictionary`, partition keys).
        Some(dictionary) => {
            let per_value = decide(dictionary.values().as_ref(), &restated)?;
            by_key::answers_by_key(&per_value, dictionary.keys())?
        }
        None => decide(col.as_ref(), &restated)?,
    };
    if p.op.is_set() && matched.null_count() > 0 {
        return Ok(null_rows_as(&matched, p.holds_for_null()));
    }
    Ok(matched)
}

/// `left` against a restated predicate.
fn decide(left: &dyn Array, restated: &Restated) -> Result<BooleanArray, ArrowError> {
    match restated {
        Restated::Compare(op, lit) => compare(left, *op, lit),
        Restated::Always(answer) => {
            let bits = if *answer {
                BooleanBuffer::new_set(left.len())
            } else {
                BooleanBuffer::new_unset(left.len())
            };
            Ok(BooleanArray::new(bits, left.logical_nulls()))
        }
    }
}

/// `matched` with its null rows set to `answer`.
fn null_rows_as(matched: &BooleanArray, answer: bool) -> BooleanArray {
    let bits = match matched.nulls() {
        Some(valid) if answer => matched.values() | &!valid.inner(),
        Some(valid) => matched.values() & valid.inner(),
        None => matched.values().clone(),
    };
    BooleanArray::new(bits, None)
}

/// `left op lit` elementwise; `lit` has one element, or the set for in/not in.
fn compare(left: &dyn Array, op: CmpOp, lit: &ArrayRef) -> Result<BooleanArray, ArrowError> {
    let one = |i: usize| Scalar::new(lit.slice(i, 1));
    if let Some(answer) = ieee::compare(left, op, lit.as_ref()) {
        return Ok(answer);
    }
    match op {
        CmpOp::Eq => cmp::eq(&left, &one(0)),
        CmpOp::NotEq => cmp::neq(&left, &one(0)),
        CmpOp::Lt => cmp::lt(&left, &one(0)),
        CmpOp::LtEq => cmp::lt_eq(&left, &one(0)),
        CmpOp::Gt => cmp::gt(&left, &one(0)),
        CmpOp::GtEq => cmp::gt_eq(&left, &one(0)),
        CmpOp::In | CmpOp::NotIn => {
            let set_len = lit.len() - lit.null_count();
            // Floats always go by the hash set, whose NaN matches NaN as in
            // pyarrow (the comparison kernels tell NaNs apart by their bits).
            let hashed = (set_len > membership::COMPARE_EACH_UP_TO
                || left.data_type().is_floating())
            .then(|| membership::is_in(left, lit.as_ref()))
            .flatten();
            let hit = match hashed {
                Some(hit) => hit,
                None => equal_to_any(left, lit)?,
            };
            if op == CmpOp::In {
                Ok(hit)
            } else {
                not(&hit)
            }
        }
    }
}

/// Whether each row of `left` equals one of the non-null values of `set`,
/// one comparison pass per value (null where the row is null).
fn equal_to_any(left: &dyn Array, set: &ArrayRef) -> Result<BooleanArray, ArrowError> {
    let mut acc: Option<BooleanArray> = None;
    for i in 0..set.len() {
        if set.is_null(i) {
            continue;
        }
        let m = cmp::eq(&left, &Scalar::new(set.slice(i, 1)))?;
        acc = Some(match acc {
            None => m,
            Some(a) => or_kleene(&a, &m)?,
        });
    }
    Ok(match acc {
        Some(a) => a,
        // An empty set matches nothing (non-null rows are false).
        None => {
            let f = BooleanArray::from(vec![false; left.len()]);
            BooleanArray::new(f.values().clone(), left.logical_nulls())
        }
    })
}

/// The values a row's value must equal for `p` to hold, in the type of its
/// column (`column`; a dictionary's value type): the literal of `==`, the
/// members of an `in` set that the type holds. `None` for any other
/// operator, and for a null literal or a set holding a null (`in` then
/// matches the null rows, which no value stands for).
pub(crate) fn equal_values(p: &Predicate, column: &DataType) -> Option<ArrayRef> {
    if !matches!(p.op, CmpOp::Eq | CmpOp::In) || p.value.logical_null_count() > 0 {
        return None;
    }
    match literal::restate(p.op, &p.value, &value_type(column)).ok()? {
        Restated::Compare(op, values) if op == p.op && values.logical_null_count() == 0 => {
            Some(values)
        }
        _ => None,
    }
}

/// For each (row group or page) with these min/max statistics, whether it may
/// hold a matching row; `None` when the statistics cannot tell.
pub(crate) fn may_match(mins: &ArrayRef, maxes: &ArrayRef, p: &Predicate) -> Option<Vec<bool>> {
    let stat_type = mins.data_type().clone();
    let is_float = stat_type.is_floating();
    if p.op == CmpOp::In && p.value.logical_null_count() > 0 {
        return None; // null rows match, and min/max do not count them
    }
    let (op, lit) = match literal::restate(p.op, &p.value, &stat_type).ok()? {
        Restated::Compare(op, lit) => (op, lit),
        Restated::Always(answer) => return Some(vec![answer; mins.len()]),
    };
    let within = |one: &ArrayRef| -> Option<BooleanArray> {
        and_kleene(
            &compare(mins, CmpOp::LtEq, one).ok()?,
            &compare(maxes, CmpOp::GtEq, one).ok()?,
        )
        .ok()
    };
    let may: BooleanArray = match op {
        CmpOp::Eq => within(&lit)?,
        CmpOp::Lt => compare(mins, CmpOp::Lt, &lit).ok()?,
        CmpOp::LtEq => compare(mins, CmpOp::LtEq, &lit).ok()?,
        CmpOp::Gt => compare(maxes, CmpOp::Gt, &lit).ok()?,
        CmpOp::GtEq => compare(maxes, CmpOp::GtEq, &lit).ok()?,
        CmpOp::NotEq if !is_float => {
            // Only a unit whose every value equals the literal is ruled out.
            let all_eq = and_kleene(
                &compare(mins, CmpOp::Eq, &lit).ok()?,
                &compare(maxes, CmpOp::Eq, &lit).ok()?,
            )
            .ok()?;
            not(&all_eq).ok()?
        }
        CmpOp::In => {
            // NaN is in no unit's range, yet `in` matches it.
            if is_float && has_nan(&lit)? {
                return None;
            }
            let mut acc: Option<BooleanArray> = None;
            for i in 0..lit.len() {
                let m = within(&lit.slice(i, 1))?;
                acc = Some(match acc {
                    None => m,
                    Some(a) => or_kleene(&a, &m).ok()?,
                });
            }
            // No value of the set is of the column's type: nothing matches.
            acc.unwrap_or_else(|| BooleanArray::from(vec![false; mins.len()]))
        }
        CmpOp::NotEq | CmpOp::NotIn => return None,
    };
    // A float unit whose minimum or maximum is NaN (older writers) tells
    // nothing; unknown (null) means "may match".
    let nan_bound = if is_float {
        Some((has_nan_each(mins)?, has_nan_each(maxes)?))
    } else {
        None
    };
    Some(
        (0..may.len())
            .map(|i| {
                may.is_null(i)
                    || may.value(i)
                    || nan_bound.as_ref().is_some_and(|(lo, hi)| lo[i] || hi[i])
            })
            .collect(),
    )
}

/// Whether each value of a float array is NaN (false for nulls).
fn has_nan_each(values: &ArrayRef) -> Option<Vec<bool>> {
    let as_f64 = arrow_cast::cast(values, &DataType::Float64).ok()?;
    let f = as_f64.as_primitive::<arrow_array::types::Float64Type>();
    Some(
        (0..f.len())
            .map(|i| f.is_valid(i) && f.value(i).is_nan())
            .collect(),
    )
}

/// Whether a float array holds a NaN.
fn has_nan(values: &ArrayRef) -> Option<bool> {
    Some(has_nan_each(values)?.into_iter().any(|b| b))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, Int32Array, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    /// The rows `op value` keeps of `column`, as a filter evaluates them.
    fn evaluate(column: ArrayRef, op: CmpOp, value: ArrayRef) -> Vec<Option<bool>> {
        let schema = Schema::new(vec![Field::new("c", column.data_type().clone(), true)]);
        let batch = RecordBatch::try_new(Arc::new(schema), vec![column]).unwrap();
        let filter = Filter::new(vec![vec![Predicate {
            column: "c".into(),
            op,
            value,
        }]])
        .unwrap();
        filter.evaluate(&batch).unwrap().iter().collect()
    }

    #[test]
    fn a_dictionary_column_is_compared_as_its_values() {
        // Null keys, a null entry, an entry no row uses, entries used twice.
        let values = StringArray::from(vec![Some("b"), None, Some("a"), Some("unused")]);
        let keys = Int32Array::from(vec![Some(0), None, Some(2), Some(1), Some(0), Some(2)]);
        let dictionary: ArrayRef =
            Arc::new(DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).unwrap());
        let plain: ArrayRef = arrow_cast::cast(&dictionary, &DataType::Utf8).unwrap();
        let one: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        let set: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("b")]));
        for (op, value) in [
            (CmpOp::Eq, &one),
            (CmpOp::NotEq, &one),
            (CmpOp::Lt, &one),
            (CmpOp::GtEq, &one),
            (CmpOp::In, &set),
            (CmpOp::NotIn, &set),
        ] {
            let got = evaluate(Arc::clone(&dictionary), op, Arc::clone(value));
            let want = evaluate(Arc::clone(&plain), op, Arc::clone(value));
            assert_eq!(got, want, "{op:?}");
        }
        assert_eq!(
            evaluate(Arc::clone(&dictionary), CmpOp::Eq, one),
            [Some(false), None, Some(true), None, Some(false), Some(true)]
        );
    }

    #[test]
    fn long_in_lists_match_the_comparison_of_each_value() {
        use arrow_array::{
            BinaryArray, Date32Array, Decimal128Array, Float64Array, Int8Array, LargeStringArray,
            StringViewArray, TimestampMicrosecondArray, UInt64Array,
        };
        // Each case: a column (nulls, edge values) and a list of more than
        // `COMPARE_EACH_UP_TO` values, some present, some not, one null.
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("w{}", i * 7 % 23))
                .collect::<Vec<_>>()
        };
        let col_words: Vec<Option<String>> = words(200)
            .into_iter()
            .enumerate()
            .map(|(i, w)| (i % 9 != 4).then_some(w))
            .chain([
                Some(String::new()),
                Some("a long string past twelve bytes".into()),
            ])
            .collect();
        let mut set_words: Vec<Option<String>> = (0..12).map(|i| Some(format!("w{i}"))).collect();
        set_words.extend([
            None,
            Some(String::new()),
            Some("a long string past twelve bytes".into()),
        ]);
        let floats = [
            0.0,
            -0.0,
            f64::NAN,
            1.5,
            -2.25,
            f64::INFINITY,
            7.0,
            1e300,
            3.0,
        ];
        let col_floats: Vec<Option<f64>> = (0..90)
            .map(|i| {
                (i % 11 != 3).then(|| floats[i % floats.len()] * if i % 2 == 0 { 1.0 } else { 2.0 })
            })
            .collect();
        let set_floats: Vec<Option<f64>> = vec![
            Some(-0.0),
            Some(f64::NAN),
            Some(3.0),
            Some(14.0),
            Some(1e300),
            Some(8.0),
            Some(9.0),
            Some(10.0),
            Some(-4.5),
            None,
        ];
        let ints: Vec<Option<i64>> = (0..300)
            .map(|i| (i % 13 != 0).then_some(i * 37 % 101 - 50))
            .collect();
        let set_ints: Vec<Option<i64>> = (-20..20).step_by(3).map(Some).chain([None]).collect();
        let cases: Vec<(ArrayRef, ArrayRef)> = vec![
            (
                Arc::new(StringArray::from(col_words.clone())),
                Arc::new(StringArray::from(set_words.clone())),
            ),
            (
                Arc::new(LargeStringArray::from(col_words.clone())),
                Arc::new(LargeStringArray::from(set_words.clone())),
            ),
            (
                Arc::new(StringViewArray::from(col_words.clone())),
                Arc::new(StringViewArray::from(set_words.clone())),
            ),
            (
                Arc::new(BinaryArray::from_iter(
                    col_words.iter().map(|w| w.as_deref().map(str::as_bytes)),
                )),
                Arc::new(BinaryArray::from_iter(
                    set_words.iter().map(|w| w.as_deref().map(str::as_bytes)),
                )),
            ),
            (
                Arc::new(Float64Array::from(col_floats)),
                Arc::new(Float64Array::from(set_floats)),
            ),
            (
                Arc::new(arrow_array::Int64Array::from(ints.clone())),
                Arc::new(arrow_array::Int64Array::from(set_ints.clone())),
            ),
            (
                Arc::new(Int8Array::from_iter(
                    ints.iter().map(|v| v.map(|v| v as i8)),
                )),
                Arc::new(Int8Array::from_iter(
                    set_ints.iter().map(|v| v.map(|v| v as i8)),
                )),
            ),
            (
                Arc::new(UInt64Array::from_iter(
                    ints.iter().map(|v| v.map(|v| v as u64)),
                )),
                Arc::new(UInt64Array::from_iter(
                    set_ints.iter().map(|v| v.map(|v| v as u64)),
                )),
            ),
            (
                Arc::new(Date32Array::from_iter(
                    ints.iter().map(|v| v.map(|v| v as i32)),
                )),
                Arc::new(Date32Array::from_iter(
                    set_ints.iter().map(|v| v.map(|v| v as i32)),
                )),
            ),
            (
                Arc::new(TimestampMicrosecondArray::from(ints.clone()).with_timezone("UTC")),
                Arc::new(TimestampMicrosecondArray::from(set_ints.clone()).with_timezone("UTC")),
            ),
            (
                Arc::new(
                    Decimal128Array::from_iter(ints.iter().map(|v| v.map(i128::from)))
                        .with_precision_and_scale(20, 2)
                        .unwrap(),
                ),
                Arc::new(
                    Decimal128Array::from_iter(set_ints.iter().map(|v| v.map(i128::from)))
                        .with_precision_and_scale(20, 2)
                        .unwrap(),
                ),
            ),
        ];
        for (column, set) in cases {
            let what = column.data_type().clone();
            assert!(set.len() - set.null_count() > membership::COMPARE_EACH_UP_TO);
            let hashed = membership::is_in(column.as_ref(), set.as_ref())
                .unwrap_or_else(|| panic!("{what}: no hashed path"));
            let each = equal_to_any(column.as_ref(), &set).unwrap();
            assert_eq!(hashed, each, "{what}");
            assert!(
                hashed.true_count() > 0 && hashed.false_count() > 0,
                "{what}"
            );
            // And through a filter, `not in` included: every set holds a
            // null, so a null row is in it (pyarrow's `is_in`).
            assert!(set.null_count() > 0 && column.null_count() > 0);
            let want_not: Vec<_> = each.iter().map(|v| Some(v.is_some_and(|b| !b))).collect();
            assert_eq!(
                evaluate(Arc::clone(&column), CmpOp::NotIn, Arc::clone(&set)),
                want_not,
                "{what}"
            );
        }
    }
}
