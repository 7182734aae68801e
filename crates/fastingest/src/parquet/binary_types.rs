//! `binary_type`: every string and binary column of a read in one Arrow
//! layout, whatever the file's writer chose.
//!
//! Why: Arrow `string` copies each row's bytes into one value buffer. On a
//! dictionary-encoded column that is most of the read (every row's bytes
//! copied out of the dictionary page), and a process that hands the table on
//! to polars or DataFusion pays again: both work on string views and rebuild
//! a `string` column into them. `binary_view` asks for `string_view` and
//! `binary_view` instead: 16 bytes a row, short values inline, longer ones
//! pointing into the pages' own bytes.
//!
//! pyarrow's `binary_type` keyword is ignored when the file carries its Arrow
//! schema (as every file pyarrow and polars write does); here it applies to
//! every file. Dictionary columns (from the file's Arrow schema or
//! `read_dictionary`) stay dictionaries.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use super::select::{changed_fields, changed_schema};

/// The Arrow layout of Parquet's string and binary (`BYTE_ARRAY`) columns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BinaryType {
    /// As the file's Arrow schema has them, else `string` and `binary`.
    #[default]
    AsWritten,
    /// `string` and `binary`: 32-bit offsets.
    Binary,
    /// `large_string` and `large_binary`: 64-bit offsets.
    LargeBinary,
    /// `string_view` and `binary_view`.
    View,
}

impl BinaryType {
    /// The layout of that name (`binary`, `large_binary`, `binary_view`,
    /// pyarrow's type names), or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "binary" => Some(BinaryType::Binary),
            "large_binary" => Some(BinaryType::LargeBinary),
            "binary_view" => Some(BinaryType::View),
            _ => None,
        }
    }

    /// The (string, binary) types of this layout; `None` for `AsWritten`.
    fn types(self) -> Option<(DataType, DataType)> {
        match self {
            BinaryType::AsWritten => None,
            BinaryType::Binary => Some((DataType::Utf8, DataType::Binary)),
            BinaryType::LargeBinary => Some((DataType::LargeUtf8, DataType::LargeBinary)),
            BinaryType::View => Some((DataType::Utf8View, DataType::BinaryView)),
        }
    }
}

/// `schema` with every string and binary field (at any depth, dictionaries
/// apart) in the layout `binary_type` names, or `None` when that changes
/// nothing.
pub(crate) fn with_binary_type(schema: &Schema, binary_type: BinaryType) -> Option<SchemaRef> {
    let (string, binary) = binary_type.types()?;
    changed_schema(schema, |f| relaid(f, &string, &binary))
}

fn relaid(field: &FieldRef, string: &DataType, binary: &DataType) -> Option<FieldRef> {
    let again = |f: &FieldRef| relaid(f, string, binary);
    let fixed = match field.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => string.clone(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => binary.clone(),
        DataType::Struct(children) => DataType::Struct(changed_fields(children, again)?),
        DataType::List(item) => DataType::List(again(item)?),
        DataType::LargeList(item) => DataType::LargeList(again(item)?),
        DataType::FixedSizeList(item, n) => DataType::FixedSizeList(again(item)?, *n),
        DataType::Map(entries, sorted) => DataType::Map(again(entries)?, *sorted),
        _ => return None,
    };
    (&fixed != field.data_type()).then(|| Arc::new(Field::clone(field).with_data_type(fixed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Fields;

    fn schema() -> Schema {
        let entries = Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::LargeBinary, true),
            ])),
            false,
        );
        let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("big", DataType::LargeUtf8, true),
            Field::new("i", DataType::Int64, true),
            Field::new("d", dictionary, true),
            Field::new_list("l", Field::new("element", DataType::Binary, true), true),
            Field::new("m", DataType::Map(Arc::new(entries), false), true),
            Field::new(
                "pair",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Utf8, true)), 2),
                true,
            ),
        ])
    }

    fn types(schema: &Schema) -> Vec<String> {
        schema
            .fields()
            .iter()
            .map(|f| f.data_type().to_string())
            .collect()
    }

    #[test]
    fn every_string_and_binary_field_takes_the_layout_and_nothing_else_changes() {
        let views = with_binary_type(&schema(), BinaryType::View).unwrap();
        let got = types(&views);
        assert_eq!(got[0], "Utf8View");
        assert_eq!(got[1], "Utf8View");
        assert_eq!(got[2], "Int64");
        assert_eq!(got[3], "Dictionary(Int32, Utf8)");
        assert!(got[4].contains("BinaryView"), "{}", got[4]);
        assert!(
            got[5].contains("Utf8View") && got[5].contains("BinaryView"),
            "{}",
            got[5]
        );
        assert!(got[6].contains("Utf8View"), "{}", got[6]);
        assert!(views.fields()[0].is_nullable());

        let large = with_binary_type(&schema(), BinaryType::LargeBinary).unwrap();
        assert_eq!(types(&large)[0], "LargeUtf8");
        assert!(types(&large)[4].contains("LargeBinary"));
    }

    #[test]
    fn a_layout_the_schema_already_has_or_none_asked_changes_nothing() {
        assert!(with_binary_type(&schema(), BinaryType::AsWritten).is_none());
        let plain = Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("i", DataType::Int64, true),
        ]);
        assert!(with_binary_type(&plain, BinaryType::Binary).is_none());
        assert!(with_binary_type(&plain, BinaryType::View).is_some());
    }

    #[test]
    fn names_are_pyarrows_binary_type_names() {
        assert_eq!(BinaryType::from_name("binary_view"), Some(BinaryType::View));
        assert_eq!(
            BinaryType::from_name("large_binary"),
            Some(BinaryType::LargeBinary)
        );
        assert_eq!(BinaryType::from_name("binary"), Some(BinaryType::Binary));
        assert_eq!(BinaryType::from_name("string_view"), None);
    }
}
