//! Projection: which leaf columns to decode for the requested columns (top-level
//! names or dotted paths into structs) plus the filter's columns, and how to
//! build each output column from the decoded batch.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::{parquet_to_arrow_schema_by_columns, ProjectionMask};
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::schema::types::SchemaDescriptor;

use super::binary_types::{with_binary_type, BinaryType};
use super::dictionaries::{with_dictionaries, with_small_dictionary_values};
use super::int96::with_int96_unit;
use crate::error::{Error, Result};
use crate::pipeline::ReadOptions;

/// One output column: a path from a top-level decoded column into its structs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputColumn {
    /// `["a"]` for a top-level column, `["s", "x", "y"]` for the dotted `s.x.y`.
    pub path: Vec<String>,
}

/// What to decode and what to return.
#[derive(Debug, Clone)]
pub struct Projection {
    /// Leaves to decode.
    pub mask: ProjectionMask,
    /// Columns to return, in the caller's order (`None`: every decoded column).
    pub outputs: Option<Vec<OutputColumn>>,
    /// The schema of the returned batches.
    pub output_schema: SchemaRef,
}

fn available(schema: &Schema) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// How a read lays out the columns it decodes, beyond the file's own types:
/// the options of [`ReadOptions`] that change a column's Arrow type.
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout<'a> {
    /// String and binary columns returned as dictionaries (see
    /// [`super::dictionaries`]).
    pub read_dictionary: &'a [String],
    /// The layout of the other string and binary columns (see
    /// [`super::binary_types`]).
    pub binary_type: BinaryType,
    /// The unit of INT96 timestamps (see [`super::int96`]).
    pub int96_unit: Option<TimeUnit>,
}

impl<'a> Layout<'a> {
    pub fn of(options: &'a ReadOptions) -> Self {
        Layout {
            read_dictionary: &options.read_dictionary,
            binary_type: options.binary_type,
            int96_unit: options.int96_unit,
        }
    }
}

/// Plans the projection of `columns` (plus `filter_columns`, which are decoded
/// but not returned unless asked for), its columns laid out as `layout` says.
pub fn project(
    location: &str,
    metadata: &ParquetMetaData,
    file_schema: &SchemaRef,
    columns: Option<&[String]>,
    filter_columns: &BTreeSet<String>,
    layout: Layout<'_>,
) -> Result<Projection> {
    let descr = metadata.file_metadata().schema_descr();
    let not_found = |column: &str| Error::ColumnNotFound {
        location: location.to_string(),
        column: column.to_string(),
        available: available(file_schema),
    };
    // Resolve each requested name to a path of struct field names.
    let outputs: Option<Vec<OutputColumn>> = match columns {
        None => None,
        Some(cols) => Some(
            cols.iter()
                .map(|c| resolve_path(file_schema, c).ok_or_else(|| not_found(c)))
                .collect::<Result<_>>()?,
        ),
    };
    for f in filter_columns {
        if file_schema.field_with_name(f).is_err() {
            return Err(not_found(f));
        }
    }
    let mask = match &outputs {
        None => ProjectionMask::all(),
        Some(outs) => {
            let mut leaves = BTreeSet::new();
            for (i, col) in descr.columns().iter().enumerate() {
                let parts = col.path().parts();
                let root = descr.get_column_root(i).name();
                let wanted = outs.iter().any(|o| leaf_under(parts, root, &o.path))
                    || filter_columns.contains(root);
                if wanted {
                    leaves.insert(i);
                }
            }
            ProjectionMask::leaves(descr, leaves)
        }
    };
    // Like pyarrow's read_table: when the file embeds its Arrow schema, the
    // schema's metadata is that schema's own (e.g. pandas'), not every
    // key-value pair of the file; otherwise it is the file's key-value pairs.
    let kv = metadata.file_metadata().key_value_metadata();
    let embedded: Option<Vec<KeyValue>> = kv.and_then(|kv| {
        let only: Vec<KeyValue> = kv
            .iter()
            .filter(|e| e.key == "ARROW:schema")
            .cloned()
            .collect();
        (!only.is_empty()).then_some(only)
    });
    let decoded = parquet_to_arrow_schema_by_columns(descr, mask.clone(), embedded.as_ref().or(kv))
        .map_err(|e| Error::from_parquet(location, e))?;
    let decoded = Arc::new(decoded);
    let decoded = decoded_types(&decoded, descr, layout).unwrap_or(decoded);
    let mut md = decoded.metadata().clone();
    md.remove("ARROW:schema");
    let fields: Vec<FieldRef> = match &outputs {
        None => decoded.fields().iter().cloned().collect(),
        Some(outs) => outs
            .iter()
            .map(|o| output_field(&decoded, &o.path).ok_or_else(|| not_found(&o.path.join("."))))
            .collect::<Result<_>>()?,
    };
    Ok(Projection {
        mask,
        outputs,
        output_schema: Arc::new(Schema::new_with_metadata(fields, md)),
    })
}

/// `schema` (as the `parquet` crate derives it from a footer) with the
/// types fastingest decodes into, or `None` when they are the same: a
/// dictionary of nulls as `null` (pyarrow writes one for a column of only
/// nulls, dictionary-typed, and reads it back as `null`; the decoder could
/// not build it anyway), dictionaries of large values as of small ones (as
/// pyarrow reads them), the other string and binary columns in the layout
/// `binary_type` names, the columns `read_dictionary` names as
/// dictionaries, and INT96 timestamps in the unit asked for (`descr`: the
/// file's Parquet schema, which tells them apart). The decoder's schema and
/// every projection's get the same.
pub(crate) fn decoded_types(
    schema: &SchemaRef,
    descr: &SchemaDescriptor,
    layout: Layout<'_>,
) -> Option<SchemaRef> {
    let Layout {
        read_dictionary,
        binary_type,
        int96_unit,
    } = layout;
    let mut fixed: Option<SchemaRef> = None;
    if let Some(unit) = int96_unit {
        fixed = with_int96_unit(schema, descr, unit);
    }
    if let Some(changed) = without_null_dictionaries(schema) {
        fixed = Some(changed);
    }
    if let Some(changed) = with_small_dictionary_values(fixed.as_ref().unwrap_or(schema)) {
        fixed = Some(changed);
    }
    if let Some(changed) = with_binary_type(fixed.as_ref().unwrap_or(schema), binary_type) {
        fixed = Some(changed);
    }
    if let Some(changed) = with_dictionaries(fixed.as_ref().unwrap_or(schema), read_dictionary) {
        fixed = Some(changed);
    }
    fixed
}

/// `schema` with every dictionary of nulls (at the top or in structs) as
/// plain `null`, or `None` when it has none.
fn without_null_dictionaries(schema: &SchemaRef) -> Option<SchemaRef> {
    fn fix(field: &FieldRef) -> Option<FieldRef> {
        let fixed = match field.data_type() {
            DataType::Dictionary(_, value) if value.as_ref() == &DataType::Null => DataType::Null,
            DataType::Struct(children) => DataType::Struct(changed_fields(children, fix)?),
            _ => return None,
        };
        Some(Arc::new(Field::clone(field).with_data_type(fixed)))
    }
    changed_schema(schema, fix)
}

/// `fields` with each field `change` returns in place of the old one, or
/// `None` when it changes none.
pub(crate) fn changed_fields(
    fields: &Fields,
    change: impl Fn(&FieldRef) -> Option<FieldRef>,
) -> Option<Fields> {
    let changed: Vec<Option<FieldRef>> = fields.iter().map(change).collect();
    if changed.iter().all(Option::is_none) {
        return None;
    }
    Some(
        fields
            .iter()
            .zip(changed)
            .map(|(f, c)| c.unwrap_or_else(|| Arc::clone(f)))
            .collect(),
    )
}

/// [`changed_fields`] of a schema's top-level fields, its metadata kept.
pub(crate) fn changed_schema(
    schema: &Schema,
    change: impl Fn(&FieldRef) -> Option<FieldRef>,
) -> Option<SchemaRef> {
    let fields = changed_fields(schema.fields(), change)?;
    Some(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// Whether the leaf with Parquet path `parts` (root named `root`) lies under
/// the Arrow field path `path`. Parquet paths of lists and maps carry extra
/// levels (`list`, `element`, `key_value`), so only the root and struct levels
/// are compared.
fn leaf_under(parts: &[String], root: &str, path: &[String]) -> bool {
    if path.first().map(String::as_str) != Some(root) {
        return false;
    }
    path.len() <= parts.len() && parts[..path.len()] == path[..]
}

/// Turns `"a"` or `"s.x"` into a path of struct field names, preferring an
/// exact top-level match (a name may itself contain dots).
fn resolve_path(schema: &Schema, name: &str) -> Option<OutputColumn> {
    if schema.field_with_name(name).is_ok() {
        return Some(OutputColumn {
            path: vec![name.to_string()],
        });
    }
    let parts: Vec<String> = name.split('.').map(str::to_string).collect();
    let mut field = schema.field_with_name(&parts[0]).ok()?;
    for p in &parts[1..] {
        match field.data_type() {
            DataType::Struct(children) => {
                field = children.iter().find(|c| c.name() == p)?;
            }
            _ => return None,
        }
    }
    Some(OutputColumn { path: parts })
}

/// The field of the column at `path` in `decoded`. A field within a
/// nullable struct is nullable, whatever it says: a null struct makes it
/// null (see [`extract_column`]), and Arrow refuses nulls in a field that
/// may not hold them (pyarrow keeps the field's own flag, and its table
/// holds nulls it says it cannot).
fn output_field(decoded: &Schema, path: &[String]) -> Option<FieldRef> {
    let mut field: FieldRef = decoded
        .field_with_name(&path[0])
        .ok()
        .map(|f| Arc::new(f.clone()))?;
    let mut in_nullable = false;
    for p in &path[1..] {
        in_nullable |= field.is_nullable();
        field = match field.data_type() {
            DataType::Struct(children) => children.iter().find(|c| c.name() == p)?.clone(),
            _ => return None,
        };
    }
    Some(match in_nullable && !field.is_nullable() {
        true => Arc::new(field.as_ref().clone().with_nullable(true)),
        false => field,
    })
}

/// Builds the output batch from a decoded one.
pub fn extract(
    projection: &Projection,
    batch: &RecordBatch,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let columns: Vec<ArrayRef> = match &projection.outputs {
        None => batch.columns().to_vec(),
        Some(outs) => outs
            .iter()
            .map(|o| extract_column(batch, &o.path))
            .collect::<Result<_, _>>()?,
    };
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(&projection.output_schema), columns, &options)
}

fn extract_column(
    batch: &RecordBatch,
    path: &[String],
) -> Result<ArrayRef, arrow_schema::ArrowError> {
    let missing = || {
        arrow_schema::ArrowError::SchemaError(format!(
            "column {} missing from decoded batch",
            path.join(".")
        ))
    };
    let mut array = batch
        .column_by_name(&path[0])
        .cloned()
        .ok_or_else(missing)?;
    for p in &path[1..] {
        let s = array
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(missing)?;
        let child = s.column_by_name(p).cloned().ok_or_else(missing)?;
        // A null struct makes its children null too, as pyarrow does.
        array = match s.nulls() {
            Some(parent) if parent.null_count() > 0 => {
                let merged = arrow_buffer::NullBuffer::union(Some(parent), child.nulls());
                let data = child.to_data().into_builder().nulls(merged).build()?;
                arrow_array::make_array(data)
            }
            _ => child,
        };
    }
    Ok(array)
}

/// Rejects schemas that pyarrow rejects too, instead of guessing a meaning:
/// a map whose keys are not `required`.
pub fn validate_schema(location: &str, metadata: &ParquetMetaData) -> Result<()> {
    use parquet::basic::{ConvertedType, LogicalType, Repetition};
    use parquet::schema::types::Type;
    fn walk(location: &str, t: &Type, path: &str) -> Result<()> {
        if !t.is_group() {
            return Ok(());
        }
        let info = t.get_basic_info();
        let is_map = matches!(info.logical_type_ref(), Some(LogicalType::Map))
            || info.converted_type() == ConvertedType::MAP;
        if is_map {
            let key = t
                .get_fields()
                .first()
                .filter(|kv| kv.is_group())
                .and_then(|kv| kv.get_fields().first());
            if let Some(key) = key {
                if key.get_basic_info().repetition() != Repetition::REQUIRED {
                    return Err(Error::Corrupt {
                        location: location.to_string(),
                        range: None,
                        detail: format!(
                            "map column {path:?}: map keys must be annotated as required"
                        ),
                        cause: None,
                    });
                }
            }
        }
        for f in t.get_fields() {
            let child = if path.is_empty() {
                f.name().to_string()
            } else {
                format!("{path}.{}", f.name())
            };
            walk(location, f, &child)?;
        }
        Ok(())
    }
    walk(
        location,
        metadata.file_metadata().schema_descr().root_schema(),
        "",
    )
}
