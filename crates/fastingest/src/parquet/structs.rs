//! Top-level structs of flat fields (numbers, strings, binary, booleans,
//! decimals, dates and timestamps), of lists of numbers or strings, and of
//! such structs, at any depth, decoded a field at a time by
//! [`super::flat`] (and [`super::lists`]) into struct arrays.
//!
//! Why: the `parquet` crate reads a struct's fields with its record reader
//! (levels into 16-bit buffers, values grown and copied). A struct of an
//! int64, a double and an int32 (4 M rows, pyarrow's file) took 69 ms a
//! fresh read and peaked 75 MiB higher than the same fields as top-level
//! columns (42 ms), and 1.27× polars' peak.
//!
//! A field's definition levels count each nullable struct around it: its
//! value is there at the highest level, a struct from the level that counts
//! it on. Each nullable struct's validity is gathered from its first
//! field's levels as they are read ([`flat::gather_present`]); a list
//! field's give it at each row's first level entry.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, Fields};
use bytes::Bytes;
use parquet::basic::Repetition;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::schema::types::{ColumnDescriptor, Type};

use super::flat::{self, Decoded, Definition, Failure, Present, MOST_STRUCT_LEVELS};
use super::lists;
use super::projected;
use crate::pipeline::decode_threads::{self, Part};

/// How a top-level struct of flat fields (and structs of them) is laid out
/// in the file.
pub(crate) struct StructShape {
    root: Node,
    /// Each leaf's definition levels, in the file's order. (A leaf is a
    /// field that is not a struct: a flat field or a list.)
    definitions: Vec<Definition>,
    /// Each leaf's Arrow type, in the same order.
    types: Vec<DataType>,
    /// How each leaf is laid out beyond its definition levels.
    kinds: Vec<LeafKind>,
    /// The columns the leaves so far take.
    columns: usize,
}

/// A struct's leaf beyond its definition levels.
#[derive(Clone)]
enum LeafKind {
    /// A flat field: one column.
    Flat,
    /// A list of numbers or strings: one column.
    List(lists::Shape),
    /// A list of structs, or a map: a column per field of its structs.
    Items(lists::StructItems),
}

impl LeafKind {
    fn columns(&self) -> usize {
        match self {
            LeafKind::Items(items) => items.columns(),
            LeafKind::Flat | LeafKind::List(_) => 1,
        }
    }
}

/// A struct, or a leaf (a field that is not a struct).
enum Node {
    Struct {
        fields: Fields,
        /// The definition level from which the struct is there; `None` when
        /// it cannot be null.
        present_from: Option<u8>,
        /// The leaf (in the file's order) whose levels give its validity:
        /// its first.
        first_leaf: usize,
        children: Vec<Node>,
    },
    Leaf(usize),
}

/// The shape of top-level field `node` (Arrow `field`, its leaves'
/// `columns` in schema order; both cut to a projection's leaves, see
/// [`super::projected`]) when this module decodes it; `None` for any other
/// field (left to the `parquet` crate).
pub(crate) fn shape(
    node: &Type,
    columns: &[Arc<ColumnDescriptor>],
    field: &Field,
) -> Option<StructShape> {
    let mut shape = StructShape {
        root: Node::Leaf(0),
        definitions: Vec::with_capacity(columns.len()),
        types: Vec::with_capacity(columns.len()),
        kinds: Vec::with_capacity(columns.len()),
        columns: 0,
    };
    shape.root = walk(node, field, 0, columns, &mut shape)?;
    // A list that is a struct's first field gives that struct's validity.
    for (kind, definition) in shape.kinds.iter_mut().zip(&shape.definitions) {
        match kind {
            LeafKind::List(list) => list.gather = definition.present,
            LeafKind::Items(items) => items.gather = definition.present,
            LeafKind::Flat => {}
        }
    }
    let top_is_struct = matches!(shape.root, Node::Struct { .. });
    (top_is_struct && shape.columns == columns.len()).then_some(shape)
}

/// The node for schema node `node` (Arrow `field`), inside structs whose
/// nullable ones count `outer` definition levels; its leaves' definitions
/// and types are added to `shape` in order.
fn walk(
    node: &Type,
    field: &Field,
    outer: u8,
    columns: &[Arc<ColumnDescriptor>],
    shape: &mut StructShape,
) -> Option<Node> {
    let optional = match node.get_basic_info().repetition() {
        Repetition::OPTIONAL => true,
        Repetition::REQUIRED => false,
        Repetition::REPEATED => return None,
    };
    if node.name() != field.name() || optional != field.is_nullable() {
        return None;
    }
    let level = outer.checked_add(u8::from(optional))?;
    if let DataType::List(_)
    | DataType::LargeList(_)
    | DataType::FixedSizeList(..)
    | DataType::Map(..) = field.data_type()
    {
        // A leaf: a list of numbers or strings, or of structs (a map too),
        // its levels above the structs'.
        if usize::from(outer) > MOST_STRUCT_LEVELS {
            return None;
        }
        let (first, count) = (shape.columns, projected::leaf_count(node));
        let list = match (count, columns.get(first)) {
            (1, Some(column)) => {
                lists::shape_within(node, column, field.data_type(), optional, outer)
            }
            _ => None,
        };
        let kind = match list {
            Some(list) => LeafKind::List(list),
            None => {
                let under = columns.get(first..first.checked_add(count)?)?;
                let items =
                    lists::struct_items_within(node, under, field.data_type(), optional, outer)?;
                LeafKind::Items(items)
            }
        };
        let definition = Definition { max: 0, present: 0 };
        return Some(push_leaf(shape, definition, field, kind));
    }
    let DataType::Struct(fields) = field.data_type() else {
        // A leaf: a flat field.
        let column = columns.get(shape.columns)?;
        let laid_out = !node.is_group()
            && column.max_rep_level() == 0
            && column.max_def_level() == i16::from(level)
            && flat::decodes_field(column, field.data_type());
        if !laid_out || usize::from(level) > MOST_STRUCT_LEVELS {
            return None;
        }
        let definition = Definition {
            max: level,
            present: 0,
        };
        return Some(push_leaf(shape, definition, field, LeafKind::Flat));
    };
    let children_nodes = node.get_fields();
    if !node.is_group() || fields.is_empty() || children_nodes.len() != fields.len() {
        return None;
    }
    let first_leaf = shape.definitions.len();
    let mut children = Vec::with_capacity(fields.len());
    for (child, arrow) in children_nodes.iter().zip(fields.iter()) {
        children.push(walk(child, arrow, level, columns, shape)?);
    }
    // The first leaf's levels give this struct's validity.
    let present_from = optional.then_some(level);
    if let Some(from) = present_from {
        shape.definitions.get_mut(first_leaf)?.present |= 1 << (from - 1);
    }
    Some(Node::Struct {
        fields: fields.clone(),
        present_from,
        first_leaf,
        children,
    })
}

/// Adds a leaf (Arrow `field`) to `shape`: its node.
fn push_leaf(
    shape: &mut StructShape,
    definition: Definition,
    field: &Field,
    kind: LeafKind,
) -> Node {
    let at = shape.definitions.len();
    shape.columns += kind.columns();
    shape.definitions.push(definition);
    shape.types.push(field.data_type().clone());
    shape.kinds.push(kind);
    Node::Leaf(at)
}

/// One leaf's column chunk: its bytes (the whole chunk), its metadata and
/// its descriptor.
pub(crate) struct FieldChunk {
    pub(crate) bytes: Bytes,
    pub(crate) meta: ColumnChunkMetaData,
    pub(crate) column: Arc<ColumnDescriptor>,
}

/// A leaf's array, and the validity of the structs it gives (see
/// [`Definition::present`]).
type DecodedLeaf = (ArrayRef, Option<Present>);

/// Decodes a row group's struct of `rows` rows from its columns' `chunks`
/// (one per column, in the file's order), the leaves shared out over up to
/// `threads` decode threads (a struct may be a row group's only column).
pub(crate) fn decode(
    shape: &StructShape,
    chunks: Vec<FieldChunk>,
    rows: usize,
    threads: usize,
) -> Decoded<ArrayRef> {
    if chunks.len() != shape.columns {
        return Err(Failure::Unsupported);
    }
    let mut chunks = chunks.into_iter();
    let parts: Vec<Part<Decoded<DecodedLeaf>>> = shape
        .types
        .iter()
        .zip(&shape.definitions)
        .zip(&shape.kinds)
        .map(|((data_type, &definition), kind)| {
            let (data_type, kind) = (data_type.clone(), kind.clone());
            let mine: Vec<FieldChunk> = chunks.by_ref().take(kind.columns()).collect();
            let part: Part<_> = Box::new(move || {
                let decode = || match &kind {
                    LeafKind::Items(items) => {
                        let chunks = mine.into_iter().map(|c| (c.bytes, c.meta)).collect();
                        lists::decode_struct_items(chunks, items, rows, threads)
                    }
                    LeafKind::List(list) => {
                        let [chunk] =
                            <[FieldChunk; 1]>::try_from(mine).map_err(|_| Failure::Unsupported)?;
                        lists::decode_column(chunk.bytes, &chunk.meta, list, rows, None)
                    }
                    LeafKind::Flat => {
                        let [chunk] =
                            <[FieldChunk; 1]>::try_from(mine).map_err(|_| Failure::Unsupported)?;
                        flat::decode_field(
                            chunk.bytes,
                            &chunk.meta,
                            &chunk.column,
                            &data_type,
                            rows,
                            definition,
                        )
                    }
                };
                Ok(match definition.present {
                    0 => (decode()?, None),
                    _ => {
                        let (leaf, present) = flat::gather_present(decode);
                        (leaf?, Some(present))
                    }
                })
            });
            part
        })
        .collect();
    let mut leaves = Vec::with_capacity(parts.len());
    let mut gathered: Vec<Option<Present>> = Vec::with_capacity(parts.len());
    for outcome in decode_threads::run_all(threads, parts) {
        // A leaf decoder's panic is raised again here, for the caller to
        // report as this column's.
        let (leaf, present) = outcome.unwrap_or_else(|panic| panic!("{panic}"))?;
        if leaf.len() != rows {
            return Err(Failure::Corrupt(format!(
                "a struct field of {} rows in a row group of {rows}",
                leaf.len()
            )));
        }
        leaves.push(Some(leaf));
        gathered.push(present);
    }
    build(&shape.root, &mut leaves, &mut gathered, rows)
}

/// The array of `node` from its decoded `leaves` (each taken once) and the
/// structs' validity `gathered` from them.
fn build(
    node: &Node,
    leaves: &mut [Option<ArrayRef>],
    gathered: &mut [Option<Present>],
    rows: usize,
) -> Decoded<ArrayRef> {
    let (fields, present_from, first_leaf, children) = match node {
        Node::Leaf(at) => return leaves[*at].take().ok_or(Failure::Unsupported),
        Node::Struct {
            fields,
            present_from,
            first_leaf,
            children,
        } => (fields, present_from, first_leaf, children),
    };
    let nulls = match present_from {
        None => None,
        Some(from) => {
            let bits = gathered
                .get_mut(*first_leaf)
                .and_then(Option::as_mut)
                .map(|present| std::mem::take(&mut present[usize::from(*from) - 1]))
                .ok_or(Failure::Unsupported)?;
            if bits.len() != rows {
                return Err(Failure::Corrupt(
                    "a struct's levels do not give a bit per row".into(),
                ));
            }
            bits.into_nulls()
        }
    };
    let arrays = children
        .iter()
        .map(|child| build(child, leaves, gathered, rows))
        .collect::<Decoded<Vec<_>>>()?;
    let array = StructArray::try_new(fields.clone(), arrays, nulls)
        .map_err(|e| Failure::Corrupt(e.to_string()))?;
    Ok(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{
        Array, BooleanArray, Float64Array, Int32Array, Int64Array, ListArray, RecordBatch,
        StringArray,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::Schema;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    /// A struct column of `rows` rows: int64, double, string, bool, int32
    /// fields; `struct_nulls` / `field_nulls` put nulls at either level;
    /// `required_fields` makes the fields non-nullable (then without
    /// nulls of their own).
    fn struct_column(
        rows: usize,
        struct_nulls: bool,
        field_nulls: bool,
        required_fields: bool,
    ) -> StructArray {
        let null = |i: usize| field_nulls && !required_fields && i % 7 == 3;
        let children: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter(
                (0..rows).map(|i| (!null(i)).then_some(i as i64 * 1_000_003)),
            )),
            Arc::new(Float64Array::from_iter(
                (0..rows).map(|i| (!null(i + 1)).then_some(i as f64 / 3.0)),
            )),
            Arc::new(StringArray::from_iter(
                (0..rows).map(|i| (!null(i + 2)).then(|| format!("v{}", i % 97))),
            )),
            Arc::new(BooleanArray::from_iter(
                (0..rows).map(|i| (!null(i + 3)).then_some(i % 3 == 0)),
            )),
            Arc::new(Int32Array::from_iter(
                (0..rows).map(|i| (!null(i + 4)).then_some((i % 1000) as i32)),
            )),
        ];
        let fields: Fields = ["a", "b", "c", "d", "e"]
            .iter()
            .zip(&children)
            .map(|(name, child)| Field::new(*name, child.data_type().clone(), !required_fields))
            .collect();
        let nulls = struct_nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 11 != 5)));
        StructArray::new(fields, children, nulls)
    }

    /// `array` (a nullable column "s" beside an int64 "id") written with
    /// `version`'s pages, then its first row group decoded here and by the
    /// `parquet` crate.
    fn decoded_both_ways(
        array: StructArray,
        struct_nullable: bool,
        version: WriterVersion,
        dictionary: bool,
    ) -> (Option<ArrayRef>, ArrayRef) {
        let rows = array.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", array.data_type().clone(), struct_nullable),
        ]));
        let id = Arc::new(Int64Array::from_iter_values(0..rows as i64));
        let batch = RecordBatch::try_new(schema.clone(), vec![id, Arc::new(array)]).unwrap();
        // (v2's defaults without a dictionary, the DELTA encodings, are the
        // crate's to decode: a field in one leaves its struct to the crate.)
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_encoding(parquet::basic::Encoding::PLAIN)
            .set_dictionary_enabled(dictionary)
            .set_data_page_size_limit(4096)
            .set_write_batch_size(512)
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let (file, meta, descr) = crate::parquet::written::written_and_parsed(&batch, props);
        let leaves: Vec<usize> = (1..descr.num_columns()).collect();
        let field = schema.field(1);
        let columns: Vec<_> = leaves.iter().map(|&l| descr.column(l)).collect();
        let node = &descr.root_schema().get_fields()[1];
        let ours = shape(node, &columns, field).map(|shape| {
            let group = meta.row_group(0);
            let chunks = leaves
                .iter()
                .map(|&leaf| {
                    let meta = group.column(leaf);
                    let (start, len) = meta.byte_range();
                    FieldChunk {
                        bytes: file.slice(start as usize..(start + len) as usize),
                        meta: meta.clone(),
                        column: descr.column(leaf),
                    }
                })
                .collect();
            decode(&shape, chunks, rows, 2)
                .unwrap_or_else(|e| panic!("{version:?}, dictionary {dictionary}: {e:?}"))
        });
        let theirs = crate::parquet::written::read_by_crate(file, rows);
        (ours, Arc::clone(theirs.column(1)))
    }

    #[test]
    fn a_struct_of_flat_fields_decodes_as_the_parquet_crate_reads_it() {
        let rows = 5_000;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for (struct_nulls, field_nulls, required_fields) in [
                    (false, false, false),
                    (true, false, false),
                    (false, true, false),
                    (true, true, false),
                    (true, false, true),
                    (false, false, true),
                ] {
                    let case = format!(
                        "{version:?}, dictionary {dictionary}, struct nulls {struct_nulls}, \
                         field nulls {field_nulls}, required fields {required_fields}"
                    );
                    let array = struct_column(rows, struct_nulls, field_nulls, required_fields);
                    let (ours, theirs) = decoded_both_ways(array, true, version, dictionary);
                    let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                    assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
                    let ours = ours.as_any().downcast_ref::<StructArray>().unwrap();
                    assert_eq!(
                        ours.null_count(),
                        if struct_nulls { rows.div_ceil(11) } else { 0 },
                        "{case}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_required_struct_has_no_validity_of_its_own() {
        let array = struct_column(3_000, false, true, false);
        let (ours, theirs) = decoded_both_ways(array, false, WriterVersion::PARQUET_1_0, true);
        let ours = ours.expect("a required struct of flat fields is taken");
        assert_eq!(ours.to_data(), theirs.to_data());
        assert!(ours.nulls().is_none());
        let ours = ours.as_any().downcast_ref::<StructArray>().unwrap();
        assert!(ours.column(0).null_count() > 0, "its fields keep theirs");
    }

    #[test]
    fn structs_within_structs_decode_as_the_parquet_crate_reads_them() {
        let rows = 4_000;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for (outer_nulls, inner_nulls, field_nulls) in [
                (false, false, false),
                (true, false, false),
                (false, true, true),
                (true, true, true),
            ] {
                let case = format!("{version:?}, nulls: outer {outer_nulls}, inner {inner_nulls}, fields {field_nulls}");
                let inner = struct_column(rows, inner_nulls, field_nulls, false);
                let deeper = StructArray::new(
                    Fields::from(vec![Field::new("inner", inner.data_type().clone(), true)]),
                    vec![Arc::new(inner.clone()) as ArrayRef],
                    inner_nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 13 != 2))),
                );
                let outer = StructArray::new(
                    Fields::from(vec![
                        Field::new("n", DataType::Int64, true),
                        Field::new("inner", inner.data_type().clone(), true),
                        Field::new("deeper", deeper.data_type().clone(), true),
                    ]),
                    vec![
                        Arc::new(Int64Array::from_iter(
                            (0..rows).map(|i| (i % 3 != 0).then_some(i as i64)),
                        )) as ArrayRef,
                        Arc::new(inner),
                        Arc::new(deeper),
                    ],
                    outer_nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 17 != 8))),
                );
                let (ours, theirs) = decoded_both_ways(outer, true, version, true);
                let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
            }
        }
    }

    /// Lists of int32 for `rows` rows (`i % 5` items); null rows where
    /// `nulls` (every 9th), a null item in every fourth.
    fn int_lists(rows: usize, nulls: bool) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..rows).map(|i| {
                let items = (0..i % 5).map(|k| (k % 4 != 1).then_some((i * 7 + k) as i32));
                (!(nulls && i % 9 == 4)).then(|| items.collect::<Vec<_>>())
            }),
        ))
    }

    /// Lists of strings, none null (`i % 3` items), and lists of lists of
    /// int32 with nulls at each level.
    fn string_lists(rows: usize) -> ArrayRef {
        let mut lists = ListBuilder::new(StringBuilder::new());
        for i in 0..rows {
            for k in 0..i % 3 {
                lists.values().append_value(format!("s{}", (i + k) % 41));
            }
            lists.append(true);
        }
        Arc::new(lists.finish())
    }

    fn int_list_lists(rows: usize) -> ArrayRef {
        let mut lists = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
        for i in 0..rows {
            for k in 0..i % 4 {
                for j in 0..(i + k) % 3 {
                    lists
                        .values()
                        .values()
                        .append_option((j != 1).then_some(j as i32));
                }
                lists.values().append(k != 2);
            }
            lists.append(i % 10 != 7);
        }
        Arc::new(lists.finish())
    }

    #[test]
    fn structs_holding_lists_decode_as_the_parquet_crate_reads_them() {
        let rows = 3_000;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for (struct_nulls, list_first, list_nulls) in [
                    (false, false, false),
                    (true, true, false),
                    (true, true, true),
                    (true, false, true),
                    (false, true, true),
                ] {
                    let case = format!(
                        "{version:?}, dictionary {dictionary}, struct nulls {struct_nulls}, \
                         list first {list_first}, list nulls {list_nulls}"
                    );
                    let ints = int_lists(rows, list_nulls);
                    let n: ArrayRef = Arc::new(Int64Array::from_iter(
                        (0..rows).map(|i| (i % 6 != 0).then_some(i as i64)),
                    ));
                    let mut fields = vec![
                        (Field::new("l", ints.data_type().clone(), true), ints),
                        (
                            Field::new("s", string_lists(1).data_type().clone(), false),
                            string_lists(rows),
                        ),
                        (
                            Field::new("ll", int_list_lists(1).data_type().clone(), true),
                            int_list_lists(rows),
                        ),
                    ];
                    let at = if list_first { fields.len() } else { 0 };
                    fields.insert(at, (Field::new("n", DataType::Int64, true), n));
                    let (fields, children): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
                    let nulls =
                        struct_nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 11 != 5)));
                    let array = StructArray::new(Fields::from(fields), children, nulls);
                    let inner_type = array.data_type().clone();
                    let (ours, theirs) =
                        decoded_both_ways(array.clone(), true, version, dictionary);
                    let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                    assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
                    assert_eq!(
                        ours.null_count(),
                        if struct_nulls { rows.div_ceil(11) } else { 0 },
                        "{case}"
                    );
                    // The same struct within a nullable struct whose only
                    // field it is: that struct's validity from the
                    // first list's levels (when it leads).
                    let outer = StructArray::new(
                        Fields::from(vec![Field::new("inner", inner_type, true)]),
                        vec![Arc::new(array) as ArrayRef],
                        Some(NullBuffer::from_iter((0..rows).map(|i| i % 13 != 3))),
                    );
                    let (ours, theirs) = decoded_both_ways(outer, true, version, dictionary);
                    let ours = ours.unwrap_or_else(|| panic!("not taken within: {case}"));
                    assert_eq!(ours.to_data(), theirs.to_data(), "within: {case}");
                }
            }
        }
    }

    /// `items` in lists of 2-6 items (every 8th list null when `nulls`).
    fn in_lists(items: StructArray, nulls: bool) -> ListArray {
        let lengths: Vec<usize> = (0..)
            .map(|i| i % 5 + 2)
            .scan(0, |total, n| {
                *total += n;
                (*total <= items.len()).then_some(n)
            })
            .collect();
        let rows = lengths.len();
        let items = items.slice(0, lengths.iter().sum());
        let offsets = arrow_buffer::OffsetBuffer::from_lengths(lengths);
        let item = Arc::new(Field::new("element", items.data_type().clone(), true));
        let valid = nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 8 != 5)));
        ListArray::new(item, offsets, Arc::new(items), valid)
    }

    #[test]
    fn structs_holding_lists_of_structs_and_maps_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::builder::{Int64Builder, MapBuilder};
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for (struct_nulls, nulls, items_first) in [
                (false, false, true),
                (true, true, true),
                (true, true, false),
            ] {
                let case =
                    format!("{version:?}, nulls {struct_nulls} {nulls}, first {items_first}");
                // Items of string, int64, double, boolean and int32 fields.
                let list = in_lists(struct_column(20_000, nulls, nulls, false), nulls);
                let rows = list.len();
                let mut map = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
                for i in 0..rows {
                    for k in 0..i % 3 {
                        map.keys().append_value(format!("k{k}"));
                        map.values()
                            .append_option((k != 1 || !nulls).then_some(i as i64));
                    }
                    map.append(!nulls || i % 6 != 1).unwrap();
                }
                let map = map.finish();
                let n: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
                let mut fields = vec![
                    (
                        Field::new("items", list.data_type().clone(), true),
                        Arc::new(list) as ArrayRef,
                    ),
                    (
                        Field::new("m", map.data_type().clone(), true),
                        Arc::new(map),
                    ),
                ];
                let at = if items_first { fields.len() } else { 0 };
                fields.insert(at, (Field::new("n", DataType::Int64, false), n));
                let (fields, children): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
                let nulls =
                    struct_nulls.then(|| NullBuffer::from_iter((0..rows).map(|i| i % 7 != 2)));
                let array = StructArray::new(Fields::from(fields), children, nulls);
                let (ours, theirs) = decoded_both_ways(array, true, version, true);
                let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
            }
        }
    }

    #[test]
    fn a_struct_holding_lists_of_structs_holding_structs_decodes_as_the_crate_reads_it() {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for nulls in [false, true] {
                let case = format!("{version:?}, nulls {nulls}");
                // Numbers, strings and booleans, in structs in structs in
                // lists in a struct.
                let inner = struct_column(3_000, nulls, nulls, false);
                let items = StructArray::new(
                    Fields::from(vec![
                        Field::new("n", DataType::Int64, false),
                        Field::new("s", inner.data_type().clone(), true),
                    ]),
                    vec![
                        Arc::new(Int64Array::from_iter_values(0..3_000)) as ArrayRef,
                        Arc::new(inner),
                    ],
                    nulls.then(|| NullBuffer::from_iter((0..3_000).map(|i| i % 6 != 1))),
                );
                let list = in_lists(items, nulls);
                let with_list = StructArray::new(
                    Fields::from(vec![Field::new("l", list.data_type().clone(), true)]),
                    vec![Arc::new(list) as ArrayRef],
                    None,
                );
                let (ours, theirs) = decoded_both_ways(with_list, true, version, true);
                let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
            }
        }
    }

    #[test]
    fn a_definition_level_above_the_most_is_refused() {
        // Width-2 levels, one repeated run of 3 (the most is 2).
        let levels = [(4u8 << 1), 3];
        let mut buf = (levels.len() as u32).to_le_bytes().to_vec();
        buf.extend_from_slice(&levels);
        let page = flat::DataPage {
            buf: &buf,
            rows: 4,
            encoding: parquet::basic::Encoding::PLAIN,
            rep_levels: None,
            levels: Some(4..4 + levels.len()),
            definition: Definition { max: 2, present: 0 },
            values: buf.len(),
        };
        let mut validity = flat::Bits::default();
        match flat::page_levels(&page, &mut validity) {
            Err(Failure::Corrupt(detail)) => assert!(detail.contains("level of 3"), "{detail}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
