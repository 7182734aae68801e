//! `read_dictionary`: string and binary columns returned as Arrow
//! dictionaries (`dictionary<int32, string|binary>`), as pyarrow's argument
//! of that name does. A dictionary-encoded column chunk then decodes to its
//! indices and its dictionary page's values, without a copy of each row's
//! bytes; pandas sees a `Categorical`.
//!
//! Columns are named by their Parquet column path, dot-joined (`name`,
//! `struct.field`, `list.list.element`, `map.key_value.key`). As in pyarrow,
//! a path that names no string or binary leaf of a file changes nothing
//! there: a dataset's files need not all have the column.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use super::leaf_paths::with_leaves_retyped;
use super::select::{changed_fields, changed_schema};

/// `schema` (decoded from a Parquet file's footer) with the string and
/// binary leaves that `paths` name as dictionaries, or `None` when `paths`
/// change nothing.
pub(crate) fn with_dictionaries(schema: &Schema, paths: &[String]) -> Option<SchemaRef> {
    if paths.is_empty() {
        return None;
    }
    let wanted: HashSet<&str> = paths.iter().map(String::as_str).collect();
    let dictionary_of =
        |values: DataType| DataType::Dictionary(Box::new(DataType::Int32), Box::new(values));
    with_leaves_retyped(schema, |leaf, paths| {
        if !paths.iter().any(|p| wanted.contains(p.as_str())) {
            return None;
        }
        match leaf {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Some(dictionary_of(DataType::Utf8))
            }
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
                Some(dictionary_of(DataType::Binary))
            }
            _ => None,
        }
    })
}

/// `schema` with every dictionary of large strings or large binary (at any
/// depth) as a dictionary of strings or binary, as pyarrow reads them back
/// (pandas 3 writes its categories of `str` as `large_string`), or `None`
/// when it has none.
pub(crate) fn with_small_dictionary_values(schema: &Schema) -> Option<SchemaRef> {
    changed_schema(schema, small_values)
}

fn small_values(field: &FieldRef) -> Option<FieldRef> {
    let fixed = match field.data_type() {
        DataType::Dictionary(key, values) => {
            let small = match values.as_ref() {
                DataType::LargeUtf8 => DataType::Utf8,
                DataType::LargeBinary => DataType::Binary,
                _ => return None,
            };
            DataType::Dictionary(key.clone(), Box::new(small))
        }
        DataType::Struct(children) => DataType::Struct(changed_fields(children, small_values)?),
        DataType::List(item) => DataType::List(small_values(item)?),
        DataType::LargeList(item) => DataType::LargeList(small_values(item)?),
        DataType::FixedSizeList(item, n) => DataType::FixedSizeList(small_values(item)?, *n),
        DataType::Map(entries, sorted) => DataType::Map(small_values(entries)?, *sorted),
        _ => return None,
    };
    Some(Arc::new(Field::clone(field).with_data_type(fixed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Fields;

    fn dictionary(values: DataType) -> DataType {
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(values))
    }

    fn schema() -> Schema {
        let item = Arc::new(Field::new("element", DataType::Utf8, true));
        let entries = Field::new(
            "key_value",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::LargeBinary, true),
            ])),
            false,
        );
        Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Binary, false),
            Field::new("i", DataType::Int64, true),
            Field::new("big", DataType::LargeUtf8, true),
            Field::new(
                "st",
                DataType::Struct(Fields::from(vec![
                    Field::new("x", DataType::Utf8, true),
                    Field::new("y", DataType::Int32, true),
                ])),
                true,
            ),
            Field::new("l", DataType::List(item), true),
            Field::new("m", DataType::Map(Arc::new(entries), false), true),
        ])
        .with_metadata([("k".to_string(), "v".to_string())].into())
    }

    fn types(schema: &Schema) -> Vec<DataType> {
        schema
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect()
    }

    #[test]
    fn named_string_and_binary_leaves_become_dictionaries() {
        let before = schema();
        let names = ["s", "b", "big"].map(String::from);
        let after = with_dictionaries(&before, &names).unwrap();
        let t = types(&after);
        assert_eq!(t[0], dictionary(DataType::Utf8));
        assert_eq!(t[1], dictionary(DataType::Binary));
        // pyarrow reads a large string column asked for this way as a
        // dictionary of (small) strings too.
        assert_eq!(t[3], dictionary(DataType::Utf8));
        assert_eq!(&t[2], before.field(2).data_type());
        assert_eq!(&t[4..], &types(&before)[4..]);
        // Names, nullability and the schema's metadata are kept.
        assert!(!after.field(1).is_nullable());
        assert_eq!(after.field(0).name(), "s");
        assert_eq!(after.metadata(), before.metadata());
    }

    #[test]
    fn nested_leaves_are_named_by_their_parquet_paths() {
        let before = schema();
        let names = ["st.x", "l.list.element", "m.key_value.value"].map(String::from);
        let after = with_dictionaries(&before, &names).unwrap();
        let DataType::Struct(children) = after.field(4).data_type() else {
            panic!("not a struct")
        };
        assert_eq!(children[0].data_type(), &dictionary(DataType::Utf8));
        assert_eq!(children[1].data_type(), &DataType::Int32);
        let DataType::List(item) = after.field(5).data_type() else {
            panic!("not a list")
        };
        assert_eq!(item.data_type(), &dictionary(DataType::Utf8));
        assert_eq!(item.name(), "element");
        let DataType::Map(entries, _) = after.field(6).data_type() else {
            panic!("not a map")
        };
        let DataType::Struct(kv) = entries.data_type() else {
            panic!("entries not a struct")
        };
        assert_eq!(kv[0].data_type(), &DataType::Utf8);
        assert_eq!(kv[1].data_type(), &dictionary(DataType::Binary));
    }

    #[test]
    fn dictionaries_of_large_values_become_dictionaries_of_small_ones() {
        let large =
            |key: DataType, values: DataType| DataType::Dictionary(Box::new(key), Box::new(values));
        let item = Arc::new(Field::new(
            "element",
            large(DataType::Int32, DataType::LargeUtf8),
            true,
        ));
        let before = Schema::new(vec![
            Field::new("c", large(DataType::Int8, DataType::LargeUtf8), true),
            Field::new("b", large(DataType::Int32, DataType::LargeBinary), true),
            Field::new("l", DataType::List(item), true),
            Field::new("s", large(DataType::Int16, DataType::Utf8), true),
            Field::new("big", DataType::LargeUtf8, true),
        ]);
        let after = with_small_dictionary_values(&before).unwrap();
        let t = types(&after);
        assert_eq!(t[0], large(DataType::Int8, DataType::Utf8));
        assert_eq!(t[1], large(DataType::Int32, DataType::Binary));
        let DataType::List(item) = &t[2] else {
            panic!("not a list")
        };
        assert_eq!(item.data_type(), &large(DataType::Int32, DataType::Utf8));
        // Already small, or no dictionary: as they were.
        assert_eq!(&t[3..], &types(&before)[3..]);
        assert!(with_small_dictionary_values(&schema()).is_none());
    }

    #[test]
    fn names_of_other_types_groups_or_nothing_change_nothing() {
        let before = schema();
        for names in [
            vec![],
            vec!["i"],
            vec!["st"],
            vec!["l"],
            vec!["nope"],
            vec!["st.y"],
        ] {
            let names: Vec<String> = names.into_iter().map(String::from).collect();
            assert!(with_dictionaries(&before, &names).is_none(), "{names:?}");
        }
    }
}
