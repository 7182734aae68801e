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
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use parquet::basic::Type as PhysicalType;
use parquet::schema::types::SchemaDescriptor;

use super::dictionaries::{child_paths, element_paths};
use super::select::{changed_fields, changed_schema};

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
    changed_schema(schema, |f| {
        retimed(f, std::slice::from_ref(f.name()), &int96, unit)
    })
}

/// `field` with the INT96 leaves under it in `unit`; `paths`: the Parquet
/// paths `field` may have (a list's element has two spellings).
fn retimed(
    field: &FieldRef,
    paths: &[String],
    int96: &HashSet<String>,
    unit: TimeUnit,
) -> Option<FieldRef> {
    let again = |f: &FieldRef, paths: Vec<String>| retimed(f, &paths, int96, unit);
    let fixed = match field.data_type() {
        DataType::Timestamp(was, zone) if paths.iter().any(|p| int96.contains(p)) => {
            if *was == unit {
                return None;
            }
            DataType::Timestamp(unit, zone.clone())
        }
        DataType::Struct(children) => DataType::Struct(changed_fields(children, |c| {
            again(c, child_paths(paths, c.name()))
        })?),
        DataType::List(item) => DataType::List(again(item, element_paths(paths, item.name()))?),
        DataType::LargeList(item) => {
            DataType::LargeList(again(item, element_paths(paths, item.name()))?)
        }
        DataType::FixedSizeList(item, n) => {
            DataType::FixedSizeList(again(item, element_paths(paths, item.name()))?, *n)
        }
        DataType::Map(entries, sorted) => {
            // The file names the entries `key_value`; an embedded Arrow
            // schema may call them otherwise (`entries`).
            let mut entry_paths = child_paths(paths, entries.name());
            entry_paths.extend(child_paths(paths, "key_value"));
            DataType::Map(again(entries, entry_paths)?, *sorted)
        }
        _ => return None,
    };
    Some(Arc::new(Field::clone(field).with_data_type(fixed)))
}
