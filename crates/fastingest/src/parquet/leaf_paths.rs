//! An Arrow schema's leaves walked beside the Parquet column paths they may
//! have, for the options that name or pick leaves by their Parquet path
//! (`read_dictionary`, INT96 columns).

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use super::select::{changed_fields, changed_schema};

/// `schema` with each leaf (at any depth in structs, lists and maps) of the
/// type `retype` gives it, from the leaf's type and its possible Parquet
/// paths; `None` where `retype` changes no leaf.
pub(super) fn with_leaves_retyped(
    schema: &Schema,
    retype: impl Fn(&DataType, &[String]) -> Option<DataType>,
) -> Option<SchemaRef> {
    changed_schema(schema, |f| {
        retyped(f, std::slice::from_ref(f.name()), &retype)
    })
}

/// `field` with the leaves under it retyped, or `None` when none is.
/// `paths`: the Parquet paths `field` may have.
fn retyped(
    field: &FieldRef,
    paths: &[String],
    retype: &impl Fn(&DataType, &[String]) -> Option<DataType>,
) -> Option<FieldRef> {
    let under = |f: &FieldRef, paths: Vec<String>| retyped(f, &paths, retype);
    let fixed = match field.data_type() {
        DataType::Struct(children) => DataType::Struct(changed_fields(children, |c| {
            under(c, child_paths(paths, c.name()))
        })?),
        DataType::List(item) => DataType::List(under(item, element_paths(paths, item.name()))?),
        DataType::LargeList(item) => {
            DataType::LargeList(under(item, element_paths(paths, item.name()))?)
        }
        // Stored as a list; only its Arrow schema says it has a fixed size.
        DataType::FixedSizeList(item, n) => {
            DataType::FixedSizeList(under(item, element_paths(paths, item.name()))?, *n)
        }
        DataType::Map(entries, sorted) => {
            // The entries are the repeated group: a struct of the key and the
            // value. The file names the group (`key_value` by the spec), but
            // an embedded Arrow schema may call it otherwise (`entries`).
            let mut entry_paths = child_paths(paths, entries.name());
            entry_paths.extend(child_paths(paths, "key_value"));
            DataType::Map(under(entries, entry_paths)?, *sorted)
        }
        leaf => retype(leaf, paths)?,
    };
    Some(Arc::new(Field::clone(field).with_data_type(fixed)))
}

/// The paths of a struct's child `name`.
fn child_paths(paths: &[String], name: &str) -> Vec<String> {
    paths.iter().map(|p| format!("{p}.{name}")).collect()
}

/// The paths of a list's element `name`: the standard three-level list has
/// a repeated group between them (`tags.list.element`, the path pyarrow
/// names); a two-level list has none (`tags.element`).
fn element_paths(paths: &[String], name: &str) -> Vec<String> {
    paths
        .iter()
        .flat_map(|p| [format!("{p}.list.{name}"), format!("{p}.{name}")])
        .collect()
}
