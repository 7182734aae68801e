//! `coerce_int96_timestamp_unit`: Parquet's legacy INT96 timestamps (Spark,
//! Hive and Impala write them) read in the unit asked for, at any depth.
//!
//! An INT96 value is a Julian day and the nanoseconds into it. In
//! nanoseconds, an `i64` holds only the days of 1677-2262, and Spark writes
//! days far outside them (`0001-01-01` as a "no date" sentinel, its minimum
//! `-290308-12-21`): those wrap, in pyarrow as in the `parquet` crate. In
//! microseconds they fit. The file's Parquet schema says which leaves are
//! INT96; their Arrow fields (after the embedded Arrow schema's hints) get
//! the unit, and both decoders convert to any unit the schema asks for.

use std::collections::HashSet;

use arrow_schema::{DataType, Schema, SchemaRef, TimeUnit};
use parquet::basic::Type as PhysicalType;
use parquet::schema::types::SchemaDescriptor;

use super::leaf_paths::with_leaves_retyped;

/// `schema` with every INT96 timestamp of the file `descr` describes in
/// `unit`, or `None` when that changes nothing.
pub(crate) fn with_int96_unit(
    schema: &Schema,
    descr: &SchemaDescriptor,
    unit: TimeUnit,
) -> Option<SchemaRef> {
    let int96: HashSet<String> = descr
        .columns()
        .iter()
        .filter(|c| c.physical_type() == PhysicalType::INT96)
        .map(|c| c.path().string())
        .collect();
    if int96.is_empty() {
        return None;
    }
    with_leaves_retyped(schema, |leaf, paths| match leaf {
        DataType::Timestamp(was, zone)
            if *was != unit && paths.iter().any(|p| int96.contains(p)) =>
        {
            Some(DataType::Timestamp(unit, zone.clone()))
        }
        _ => None,
    })
}
