//! A top-level field cut to the leaves a projection reads (`columns=
//! ["s.a", "s.g.x"]`): its schema node holding only those leaves, and its
//! Arrow field typed as the `parquet` crate's reader types it under that
//! projection. With them, fastingest's own decoders ([`super::structs`],
//! [`super::lists`]) take a struct, or a list of structs, read in part just
//! as they take one read whole.
//!
//! Why: such a read was left to the crate's record reader, which took
//! about twice the time of fastingest's decoders on the whole struct.
//!
//! The crate's reader (its schema visitor) drops a struct's fields that
//! hold no projected leaf and keeps the others' Arrow fields (name,
//! nullability, metadata) with their types cut the same way. Projections
//! name struct fields only (dotted paths), so a list or a map is read whole
//! or not at all; any other cut (a map read in part the crate drops whole)
//! is left to the crate.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef};
use parquet::basic::Repetition;
use parquet::schema::types::{Type, TypePtr};

/// What a projection reads of a schema node.
enum Cut {
    /// Every leaf under it.
    All,
    /// None of them.
    Nothing,
    /// Some: the node holding only those, and its Arrow type.
    Part(TypePtr, DataType),
}

/// Top-level field `node` (Arrow `field`; its first leaf is column
/// `first_leaf`) cut to the leaves `included` keeps: the node and the
/// field as the crate reads them. `None` when it keeps no leaf, or when the
/// cut is one this module does not make (the caller leaves the field to the
/// crate).
pub(crate) fn cut_to(
    node: &TypePtr,
    field: &Field,
    first_leaf: usize,
    included: &dyn Fn(usize) -> bool,
) -> Option<(TypePtr, FieldRef)> {
    let mut next = first_leaf;
    match cut(node, field.data_type(), &mut next, included)? {
        Cut::All => Some((Arc::clone(node), Arc::new(field.clone()))),
        Cut::Nothing => None,
        Cut::Part(node, data_type) => {
            Some((node, Arc::new(field.clone().with_data_type(data_type))))
        }
    }
}

/// What `included` keeps of `node` (Arrow type `data_type`), whose first
/// leaf is column `*next`; `*next` moves past its leaves. `None`: a cut
/// this module does not make.
fn cut(
    node: &TypePtr,
    data_type: &DataType,
    next: &mut usize,
    included: &dyn Fn(usize) -> bool,
) -> Option<Cut> {
    let start = *next;
    let total = leaf_count(node);
    let kept = (start..start + total).filter(|&l| included(l)).count();
    if kept == total || kept == 0 {
        *next += total;
        return Some(match kept == total {
            true => Cut::All,
            false => Cut::Nothing,
        });
    }
    let info = node.get_basic_info();
    let repeated = info.has_repetition() && info.repetition() == Repetition::REPEATED;
    match data_type {
        DataType::Struct(fields) if node.is_group() && !repeated => {
            let children = node.get_fields();
            if children.len() != fields.len() {
                return None;
            }
            let mut kept_nodes = Vec::new();
            let mut kept_fields: Vec<FieldRef> = Vec::new();
            for (child, field) in children.iter().zip(fields.iter()) {
                if child.name() != field.name() {
                    return None;
                }
                match cut(child, field.data_type(), next, included)? {
                    Cut::All => {
                        kept_nodes.push(Arc::clone(child));
                        kept_fields.push(Arc::clone(field));
                    }
                    Cut::Nothing => {}
                    Cut::Part(child, data_type) => {
                        kept_nodes.push(child);
                        kept_fields
                            .push(Arc::new(field.as_ref().clone().with_data_type(data_type)));
                    }
                }
            }
            Some(Cut::Part(
                group_like(node, kept_nodes)?,
                DataType::Struct(kept_fields.into()),
            ))
        }
        _ => None,
    }
}

/// A group like `node` (name, repetition, annotations, field id) holding
/// `children` instead of its own.
fn group_like(node: &Type, children: Vec<TypePtr>) -> Option<TypePtr> {
    let info = node.get_basic_info();
    let mut builder = Type::group_type_builder(info.name())
        .with_fields(children)
        .with_converted_type(info.converted_type())
        .with_logical_type(info.logical_type_ref().cloned());
    if info.has_repetition() {
        builder = builder.with_repetition(info.repetition());
    }
    if info.has_id() {
        builder = builder.with_id(Some(info.id()));
    }
    builder.build().ok().map(Arc::new)
}

/// How many columns (primitive leaves) schema node `node` holds.
pub(crate) fn leaf_count(node: &Type) -> usize {
    match node.is_group() {
        true => node.get_fields().iter().map(|f| leaf_count(f)).sum(),
        false => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{
        Array, ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
    };
    use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
    use arrow_schema::{Fields, Schema};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    use parquet::file::metadata::ParquetMetaData;
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::SchemaDescriptor;

    const ROWS: usize = 3_000;

    /// A struct of int32 `x` and string `y`, `n` of them, some null (and
    /// some of their fields).
    fn pairs(n: usize, salt: usize) -> StructArray {
        let x = Int32Array::from_iter((0..n).map(|i| (i % 6 != 1).then_some((i * salt) as i32)));
        let y =
            StringArray::from_iter((0..n).map(|i| (i % 5 != 2).then(|| format!("y{}", i % 31))));
        StructArray::new(
            Fields::from(vec![
                Field::new("x", DataType::Int32, true),
                Field::new("y", DataType::Utf8, true),
            ]),
            vec![Arc::new(x) as ArrayRef, Arc::new(y)],
            Some(NullBuffer::from_iter((0..n).map(|i| i % 9 != 4))),
        )
    }

    /// Columns `id`; `s`: struct{a int64, b string, g struct{x, y}, h
    /// list<int32>, m map<string, int64>}; `ls`: list<struct{a int32, b
    /// string, p struct{x, y}}>; written, with the file's metadata and schema.
    fn nested_file() -> (Bytes, ParquetMetaData, SchemaDescriptor, Arc<Schema>) {
        let a = Int64Array::from_iter((0..ROWS).map(|i| (i % 4 != 0).then_some(i as i64)));
        let b = StringArray::from_iter((0..ROWS).map(|i| Some(format!("b{}", i % 17))));
        let mut h = ListBuilder::new(Int32Builder::new());
        let mut m = MapBuilder::new(
            None,
            StringBuilder::new(),
            arrow_array::builder::Int64Builder::new(),
        );
        for i in 0..ROWS {
            for k in 0..i % 4 {
                h.values().append_value((i + k) as i32);
                m.keys().append_value(format!("k{k}"));
                m.values().append_value((i * k) as i64);
            }
            h.append(i % 10 != 3);
            m.append(i % 8 != 5).unwrap();
        }
        let (h, m) = (h.finish(), m.finish());
        let s_fields = Fields::from(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("g", pairs(1, 1).data_type().clone(), true),
            Field::new("h", h.data_type().clone(), true),
            Field::new("m", m.data_type().clone(), true),
        ]);
        let s = StructArray::new(
            s_fields,
            vec![
                Arc::new(a) as ArrayRef,
                Arc::new(b),
                Arc::new(pairs(ROWS, 3)),
                Arc::new(h),
                Arc::new(m),
            ],
            Some(NullBuffer::from_iter((0..ROWS).map(|i| i % 11 != 7))),
        );
        let items = ROWS * 3 / 2;
        let item = StructArray::new(
            Fields::from(vec![
                Field::new("a", DataType::Int32, false),
                Field::new("b", DataType::Utf8, true),
                Field::new("p", pairs(1, 1).data_type().clone(), true),
            ]),
            vec![
                Arc::new(Int32Array::from_iter_values((0..items).map(|i| i as i32))) as ArrayRef,
                Arc::new(StringArray::from_iter(
                    (0..items).map(|i| (i % 3 != 0).then(|| format!("i{}", i % 23))),
                )),
                Arc::new(pairs(items, 5)),
            ],
            Some(NullBuffer::from_iter((0..items).map(|i| i % 13 != 6))),
        );
        let offsets: Vec<i32> = (0..=ROWS)
            .map(|r| ((r * 3 / 2).min(items)) as i32)
            .collect();
        let ls = ListArray::new(
            Arc::new(Field::new("element", item.data_type().clone(), true)),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(item),
            Some(NullBuffer::from_iter((0..ROWS).map(|i| i % 7 != 2))),
        );
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", s.data_type().clone(), true),
            Field::new("ls", ls.data_type().clone(), true),
        ]));
        let id = Arc::new(Int64Array::from_iter_values(0..ROWS as i64));
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![id, Arc::new(s), Arc::new(ls)]).unwrap();
        let props = WriterProperties::builder()
            .set_data_page_size_limit(2048)
            .set_write_batch_size(256)
            .build();
        let (file, meta, descr) = crate::parquet::written::written_and_parsed(&batch, props);
        // The schema the crate reads the file with (its embedded one).
        let read = ParquetRecordBatchReaderBuilder::try_new(file.clone()).unwrap();
        let schema = Arc::clone(read.schema());
        (file, meta, descr, schema)
    }

    /// A column read: its field and its array.
    type Column = (FieldRef, ArrayRef);

    /// Top-level field `root` read with only `leaves` (of the file's): the
    /// cut this module makes (if any), decoded here, and the crate's
    /// column under the same projection (if it keeps the field).
    fn read_both_ways(root: usize, leaves: &[usize]) -> (Option<Column>, Option<Column>) {
        let (file, meta, descr, schema) = nested_file();
        let mask = ProjectionMask::leaves(&descr, leaves.iter().copied());
        let theirs = ParquetRecordBatchReaderBuilder::try_new(file.clone())
            .unwrap()
            .with_projection(mask)
            .with_batch_size(ROWS)
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let name = schema.field(root).name();
        let theirs = theirs.schema().index_of(name).ok().map(|at| {
            (
                Arc::new(theirs.schema().field(at).clone()),
                Arc::clone(theirs.column(at)),
            )
        });
        let all: Vec<usize> = (0..descr.num_columns())
            .filter(|&l| descr.get_column_root_idx(l) == root)
            .collect();
        let node = &descr.root_schema().get_fields()[root];
        let included = |l: usize| leaves.contains(&l);
        let ours = cut_to(node, schema.field(root), all[0], &included).map(|(node, field)| {
            let kept: Vec<usize> = all.iter().copied().filter(|&l| included(l)).collect();
            let columns: Vec<_> = kept.iter().map(|&l| descr.column(l)).collect();
            let group = meta.row_group(0);
            let bytes = |leaf: usize| {
                let (start, len) = group.column(leaf).byte_range();
                file.slice(start as usize..(start + len) as usize)
            };
            let array = match field.data_type() {
                DataType::Struct(_) => {
                    let shape = crate::parquet::structs::shape(&node, &columns, &field)
                        .expect("a struct read in part is taken");
                    let chunks = kept
                        .iter()
                        .zip(&columns)
                        .map(|(&leaf, column)| crate::parquet::structs::FieldChunk {
                            bytes: bytes(leaf),
                            meta: group.column(leaf).clone(),
                            column: Arc::clone(column),
                        })
                        .collect();
                    crate::parquet::structs::decode(&shape, chunks, ROWS, 2).unwrap()
                }
                _ => {
                    let items = crate::parquet::lists::struct_items(
                        &node,
                        &columns,
                        field.data_type(),
                        field.is_nullable(),
                    )
                    .expect("a list of structs read in part is taken");
                    let chunks = kept
                        .iter()
                        .map(|&leaf| (bytes(leaf), group.column(leaf).clone()))
                        .collect();
                    crate::parquet::lists::decode_struct_items(chunks, &items, ROWS, 2)
                        .unwrap_or_else(|e| panic!("leaves {leaves:?}: {e:?}"))
                }
            };
            (field, array)
        });
        (ours, theirs)
    }

    // Leaves: 0 id; s: 1 a, 2 b, 3 g.x, 4 g.y, 5 h, 6 m.key, 7 m.value;
    // ls: 8 a, 9 b, 10 p.x, 11 p.y.

    #[test]
    fn a_struct_read_in_part_is_typed_and_decoded_as_the_crate_reads_it() {
        for leaves in [
            vec![1],
            vec![2],
            vec![1, 2],
            vec![3],
            vec![4],
            vec![2, 4],
            vec![1, 3, 4],
            vec![5],
            vec![4, 5],
            vec![6, 7],
            vec![2, 5, 6, 7],
            vec![1, 2, 3, 4, 5, 6, 7],
        ] {
            let (ours, theirs) = read_both_ways(1, &leaves);
            let (ours, theirs) = (ours.expect("taken"), theirs.expect("kept by the crate"));
            assert_eq!(ours.0, theirs.0, "leaves {leaves:?}: the field");
            assert_eq!(ours.1.to_data(), theirs.1.to_data(), "leaves {leaves:?}");
        }
    }

    #[test]
    fn a_list_of_structs_is_read_whole_or_left_alone() {
        for leaves in [vec![8, 9, 10, 11], vec![0, 8, 9, 10, 11]] {
            let (ours, theirs) = read_both_ways(2, &leaves);
            let (ours, theirs) = (ours.expect("taken"), theirs.expect("kept by the crate"));
            assert_eq!(ours.0, theirs.0, "leaves {leaves:?}: the field");
            assert_eq!(ours.1.to_data(), theirs.1.to_data(), "leaves {leaves:?}");
        }
        // In part (no projection asks for that): the crate's.
        let (ours, theirs) = read_both_ways(2, &[8, 10]);
        assert!(ours.is_none() && theirs.is_some());
    }

    #[test]
    fn a_map_read_in_part_and_fields_not_read_are_left_alone() {
        let (_, _, descr, schema) = nested_file();
        let s = &descr.root_schema().get_fields()[1];
        // A map's keys without its values: the crate drops the map whole.
        assert!(cut_to(s, schema.field(1), 1, &|l| l == 6).is_none());
        assert!(cut_to(s, schema.field(1), 1, &|l| l == 1 || l == 7).is_none());
        // No leaf of the field read: nothing to cut.
        assert!(cut_to(s, schema.field(1), 1, &|l| l == 0).is_none());
        // Every leaf read: the field itself, node and all.
        let (node, field) = cut_to(s, schema.field(1), 1, &|_| true).unwrap();
        assert!(Arc::ptr_eq(&node, s));
        assert_eq!(field.as_ref(), schema.field(1));
    }
}
