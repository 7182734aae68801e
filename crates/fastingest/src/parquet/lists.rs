//! Lists of numbers and strings (`list<int32>`, `list<list<float>>`,
//! `list<string>`, at any depth, each level nullable or not) decoded
//! straight from their pages.
//!
//! Why: the `parquet` crate rebuilds each list level in its own pass over
//! every level of the column, one `i16` at a time, and builds each level's
//! validity bit by bit; on the suite's `list<list<int32>>` file that was
//! 60 % of a read's CPU (`ListArrayReader::consume_batch`,
//! `read_rep_levels`, `build_filtered_validity_bitmap`). Here the levels are
//! read into bytes once and every list level is built in one pass, with a
//! short path for the common entry: one more value of the innermost list.
//!
//! Lists of structs of such leaves (`list<struct<key: string, value:
//! int64>>`) are too ([`struct_items`]): the crate read them at 0.63× pyarrow
//! (a fresh read of 1 M rows of two-field structs, 160.8 against 101.3 ms).
//! So are lists of structs whose fields are such lists beside a flat one
//! (`list<struct<id: int32, points: list<int32>>>`), and lists that are
//! fields of structs ([`shape_within`], for [`super::structs`]).
//!
//! Only the standard three-level LIST layout (an annotated group holding one
//! repeated group holding the element) with a numeric, string or binary
//! leaf is taken, into `List`, `LargeList` or `FixedSizeList` (and strings
//! into `Utf8` or `LargeUtf8`: polars writes the large types into a file's
//! Arrow schema; pyarrow writes embeddings as fixed-size lists) with the
//! nullability the file says; anything else is [`Failure::Unsupported`] and
//! goes to the crate.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeListArray, LargeListArray,
    ListArray, MapArray, OffsetSizeTrait, PrimitiveArray, StructArray, UInt32Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Fields, TimeUnit as ArrowTimeUnit};
use bytes::Bytes;
use parquet::basic::{ConvertedType, Encoding, LogicalType, Repetition};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::schema::types::{ColumnDescriptor, Type};

use super::byte_arrays;
use super::byte_stream_split;
use super::flat::{
    self, dictionary_of, each_run, gather, i32_of, next_page_with, numeric_values, plain, scatter,
    scatter_in_place, Bits, Decoded, Failure, NextPage, MOST_STRUCT_LEVELS,
};
use super::hybrid::{unpack_chunks, unpack_narrow_to_bytes, Run};
use super::level_masks::{kept_bits, ones_below, set_bits, LevelBlock, MOST_LEVEL};
use super::pages::ChunkPages;
use crate::memory::reserve_unfaulted;
use crate::nontemporal::Reads;
use crate::pipeline::decode_threads::{self, Part};

/// One list level of a column, outermost first.
#[derive(Clone)]
struct ListLevel {
    /// The list's item field in the Arrow type.
    item: FieldRef,
    /// The definition level from which the list is there (below: null).
    present: u8,
    /// Whether the list can be null.
    nullable: bool,
    /// Whether its offsets are `i64` (`LargeList`): built as `i32` (a
    /// row group's chunk holds fewer items) and widened at the end.
    large: bool,
    /// For a `FixedSizeList`: the items every list holds (built as a
    /// list, then checked and made fixed-size, see [`fixed_size_lists`]).
    fixed: Option<i32>,
    /// For a map (its items the key-value entries): whether its keys are
    /// sorted, as the Arrow type says.
    map: Option<bool>,
}

/// How a list column is laid out in its levels.
#[derive(Clone)]
pub(crate) struct Shape {
    lists: Vec<ListLevel>,
    /// The Arrow type of the values.
    leaf: DataType,
    leaf_nullable: bool,
    max_def: u8,
    /// For a list that is a field of structs ([`super::structs`]): the
    /// structs' validity to gather from its levels at each row's start, as
    /// [`flat::Definition::present`] asks it of a flat field.
    pub(crate) gather: u8,
    /// For a list field of a list's structs: the definition level from
    /// which the items' struct is there, for the build to note at each
    /// item slot as it goes ([`Assembled::slot_structs`]), instead of a
    /// pass over the levels after.
    slot_structs: Option<u8>,
}

fn repetition(node: &Type) -> Option<Repetition> {
    let info = node.get_basic_info();
    info.has_repetition().then(|| info.repetition())
}

fn is_list(node: &Type) -> bool {
    let info = node.get_basic_info();
    matches!(info.logical_type_ref(), Some(LogicalType::List))
        || info.converted_type() == ConvertedType::LIST
}

fn is_map(node: &Type) -> bool {
    let info = node.get_basic_info();
    matches!(info.logical_type_ref(), Some(LogicalType::Map))
        || info.converted_type() == ConvertedType::MAP
}

/// The layout of leaf `column` of top-level field `root` (the file's schema
/// node) when this module decodes it into `target` (the Arrow type the
/// crate gives the field, `nullable` or not); `None` otherwise.
pub(crate) fn shape(
    root: &Type,
    column: &ColumnDescriptor,
    target: &DataType,
    nullable: bool,
) -> Option<Shape> {
    shape_within(root, column, target, nullable, 0)
}

/// [`shape`] for a list that is a field of structs whose nullable ones
/// count `outer` definition levels (its own start above them).
pub(crate) fn shape_within(
    root: &Type,
    column: &ColumnDescriptor,
    target: &DataType,
    nullable: bool,
    outer: u8,
) -> Option<Shape> {
    let walked = walk_lists(root, target, nullable, outer)?;
    if walked.element.is_group() {
        return None;
    }
    let def = walked.def.checked_add(u8::from(walked.optional))?;
    let ty = walked.item_type;
    (leaf_values_taken(column, ty) && levels_match(column, def, walked.lists.len())).then(|| {
        Shape {
            lists: walked.lists,
            leaf: ty.clone(),
            leaf_nullable: walked.optional,
            max_def: def,
            gather: 0,
            slot_structs: None,
        }
    })
}

/// The list levels from a top-level field down to its innermost element.
struct Walked<'a> {
    lists: Vec<ListLevel>,
    /// The definition level at which the innermost list has an item.
    def: u8,
    /// The innermost element's node and Arrow type, and whether it may be
    /// null.
    element: &'a Type,
    item_type: &'a DataType,
    optional: bool,
}

/// Walks the standard three-level LIST layout from `root` (Arrow type
/// `target`, `nullable` or not, inside structs that count `outer`
/// definition levels) down to the innermost element; `None` for any other
/// layout, or a field that is not a list. A MAP level (an annotated group
/// holding one repeated group of key and value) ends the walk: its element
/// is that repeated group, a struct that is never null.
fn walk_lists<'a>(
    root: &'a Type,
    target: &'a DataType,
    nullable: bool,
    outer: u8,
) -> Option<Walked<'a>> {
    let mut node = root;
    let mut ty = target;
    let mut optional = repetition(node)? == Repetition::OPTIONAL;
    if optional != nullable {
        return None;
    }
    let mut def: u8 = outer;
    let mut lists = Vec::new();
    while let DataType::List(item)
    | DataType::LargeList(item)
    | DataType::FixedSizeList(item, _)
    | DataType::Map(item, _) = ty
    {
        let large = matches!(ty, DataType::LargeList(_));
        let fixed = match ty {
            DataType::FixedSizeList(_, size) if *size < 0 => return None,
            DataType::FixedSizeList(_, size) => Some(*size),
            _ => None,
        };
        let map = match ty {
            DataType::Map(_, sorted) => Some(*sorted),
            _ => None,
        };
        // An annotated group holding one repeated group holding the element.
        let annotated = match map {
            Some(_) => is_map(node),
            None => is_list(node),
        };
        if !node.is_group() || !annotated || repetition(node)? == Repetition::REPEATED {
            return None;
        }
        let [repeated] = node.get_fields() else {
            return None;
        };
        if !repeated.is_group() || repetition(repeated)? != Repetition::REPEATED {
            return None;
        }
        def += u8::from(optional);
        lists.push(ListLevel {
            item: Arc::clone(item),
            present: def,
            nullable: optional,
            large,
            fixed,
            map,
        });
        def = def.checked_add(1)?;
        if map.is_some() {
            if item.is_nullable() {
                return None;
            }
            return Some(Walked {
                lists,
                def,
                element: repeated,
                item_type: item.data_type(),
                optional: false,
            });
        }
        let [element] = repeated.get_fields() else {
            return None;
        };
        optional = match repetition(element)? {
            Repetition::OPTIONAL => true,
            Repetition::REQUIRED => false,
            Repetition::REPEATED => return None,
        };
        if optional != item.is_nullable() {
            return None;
        }
        node = element;
        ty = item.data_type();
    }
    (!lists.is_empty()).then_some(Walked {
        lists,
        def,
        element: node,
        item_type: ty,
        optional,
    })
}

/// Whether this module decodes leaf `column`'s values into `ty`.
fn leaf_values_taken(column: &ColumnDescriptor, ty: &DataType) -> bool {
    let numeric = matches!(
        ty,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Timestamp(..)
            | DataType::Utf8
            | DataType::Binary
            | DataType::LargeUtf8
            | DataType::LargeBinary
    );
    let same_values = match (flat::value_type(column), ty) {
        (None, _) => false,
        (Some(DataType::Timestamp(unit, _)), DataType::Timestamp(want, _)) => unit == *want,
        (Some(DataType::Utf8), DataType::LargeUtf8)
        | (Some(DataType::Binary), DataType::LargeBinary) => true,
        (Some(natural), _) => natural == *ty,
    };
    numeric && same_values
}

/// Whether leaf `column` has the levels of `lists` list levels and a most
/// definition level of `def`.
fn levels_match(column: &ColumnDescriptor, def: u8, lists: usize) -> bool {
    i16::from(def) == column.max_def_level()
        && usize::try_from(column.max_rep_level()).ok() == Some(lists)
}

/// How a list of structs of flat fields (`list<struct<key: string, value:
/// int64>>`, at any list depth), or of lists of numbers or strings beside
/// at least one flat field (`list<struct<id: int32, points: list<float>>>`),
/// is laid out: the list levels, as for a list of numbers, then a leaf per
/// field, each with the same repetition levels (a list field's with its
/// own below them).
#[derive(Clone)]
pub(crate) struct StructItems {
    lists: Vec<ListLevel>,
    /// The definition level from which an item is there (a slot of the
    /// innermost list, null or not).
    slot_from: u8,
    /// The definition level from which the item's struct is not null (none:
    /// it cannot be).
    struct_present: Option<u8>,
    fields: Fields,
    /// The items' struct's fields: leaves, or structs of them.
    children: Vec<ItemNode>,
    leaves: Vec<StructLeaf>,
    /// For a list of structs that is a field of structs
    /// ([`super::structs`]): the structs' validity to gather from its first
    /// flat field's levels at each row's start (see [`Shape::gather`]).
    pub(crate) gather: u8,
}

impl StructItems {
    /// The columns it is read from: one per field of its structs.
    pub(crate) fn columns(&self) -> usize {
        self.leaves.len()
    }
}

/// A field of a [`StructItems`] list's struct: a leaf, or a struct within
/// it (of flat fields and such structs).
#[derive(Clone)]
enum ItemNode {
    Leaf(usize),
    Struct {
        fields: Fields,
        /// The definition level from which it is not null (none: it
        /// cannot be); its first leaf's levels say it.
        present_from: Option<u8>,
        first_leaf: usize,
        children: Vec<ItemNode>,
    },
}

/// One leaf of a [`StructItems`] list's struct (a field, or a field of a
/// struct within it).
#[derive(Clone)]
struct StructLeaf {
    /// The Arrow type of its values (a list field's items').
    data_type: DataType,
    nullable: bool,
    max_def: u8,
    /// A list field's own list levels, below the items' lists; empty for a
    /// flat field.
    own_lists: Vec<ListLevel>,
    /// The levels from which the structs within the item whose first leaf
    /// this is are not null (their validity comes from its levels).
    gives: Vec<u8>,
}

/// The layout of top-level field `root` (the file's schema node, Arrow
/// type `target`, `nullable` or not) when it is a list of structs whose
/// fields (leaves `columns`, in order) this module decodes; `None`
/// otherwise.
pub(crate) fn struct_items(
    root: &Type,
    columns: &[Arc<ColumnDescriptor>],
    target: &DataType,
    nullable: bool,
) -> Option<StructItems> {
    struct_items_within(root, columns, target, nullable, 0)
}

/// [`struct_items`] for a list of structs that is a field of structs whose
/// nullable ones count `outer` definition levels.
pub(crate) fn struct_items_within(
    root: &Type,
    columns: &[Arc<ColumnDescriptor>],
    target: &DataType,
    nullable: bool,
    outer: u8,
) -> Option<StructItems> {
    let walked = walk_lists(root, target, nullable, outer)?;
    let DataType::Struct(fields) = walked.item_type else {
        return None;
    };
    let element = walked.element;
    if !element.is_group() || is_list(element) {
        return None;
    }
    let base = walked.def.checked_add(u8::from(walked.optional))?;
    let mut walk = ItemWalk {
        columns,
        item_lists: &walked.lists,
        leaves: Vec::with_capacity(columns.len()),
    };
    let children = walk.fields(element, fields, base, true)?;
    let leaves = walk.leaves;
    // A flat field gives the items' lists and the struct's validity.
    if leaves.len() != columns.len() || leaves.iter().all(|leaf| !leaf.own_lists.is_empty()) {
        return None;
    }
    Some(StructItems {
        slot_from: walked.def,
        struct_present: walked.optional.then_some(base),
        fields: fields.clone(),
        children,
        leaves,
        lists: walked.lists,
        gather: 0,
    })
}

/// The leaves of a list's items' struct as they are walked, and the
/// columns they take, in order.
struct ItemWalk<'a> {
    columns: &'a [Arc<ColumnDescriptor>],
    item_lists: &'a [ListLevel],
    leaves: Vec<StructLeaf>,
}

impl ItemWalk<'_> {
    /// The nodes of the fields (Arrow `fields`) of struct `node`, whose
    /// fields are there from definition level `base`. List fields only
    /// `in_items` (the items' struct itself, not a struct within it).
    fn fields(
        &mut self,
        node: &Type,
        fields: &Fields,
        base: u8,
        in_items: bool,
    ) -> Option<Vec<ItemNode>> {
        let children = node.get_fields();
        if fields.is_empty() || children.len() != fields.len() {
            return None;
        }
        children
            .iter()
            .zip(fields.iter())
            .map(|(child, field)| self.field(child, field, base, in_items))
            .collect()
    }

    fn field(
        &mut self,
        child: &Type,
        field: &arrow_schema::Field,
        base: u8,
        in_items: bool,
    ) -> Option<ItemNode> {
        if child.name() != field.name() {
            return None;
        }
        let at = self.leaves.len();
        let column = self.columns.get(at)?;
        if let DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) =
            field.data_type()
        {
            // A list of numbers or strings, its levels below the struct's.
            let own = walk_lists(child, field.data_type(), field.is_nullable(), base)?;
            let max_def = own.def.checked_add(u8::from(own.optional))?;
            let lists = self.item_lists.len() + own.lists.len();
            let taken = in_items
                && !own.element.is_group()
                && leaf_values_taken(column, own.item_type)
                && levels_match(column, max_def, lists);
            if !taken {
                return None;
            }
            self.leaves.push(StructLeaf {
                data_type: own.item_type.clone(),
                nullable: own.optional,
                max_def,
                own_lists: own.lists,
                gives: Vec::new(),
            });
            return Some(ItemNode::Leaf(at));
        }
        let optional = match repetition(child)? {
            Repetition::OPTIONAL => true,
            Repetition::REQUIRED => false,
            Repetition::REPEATED => return None,
        };
        if optional != field.is_nullable() {
            return None;
        }
        let level = base.checked_add(u8::from(optional))?;
        if let DataType::Struct(fields) = field.data_type() {
            // A struct within the item: its validity from its first leaf's
            // levels, which must be a flat field's.
            if !child.is_group() || is_list(child) || is_map(child) {
                return None;
            }
            let children = self.fields(child, fields, level, false)?;
            let first = self.leaves.get_mut(at)?;
            let present_from = optional.then_some(level);
            if let Some(from) = present_from {
                first.gives.push(from);
            }
            return Some(ItemNode::Struct {
                fields: fields.clone(),
                present_from,
                first_leaf: at,
                children,
            });
        }
        let taken = !child.is_group()
            && leaf_values_taken(column, field.data_type())
            && levels_match(column, level, self.item_lists.len());
        if !taken {
            return None;
        }
        self.leaves.push(StructLeaf {
            data_type: field.data_type().clone(),
            nullable: optional,
            max_def: level,
            own_lists: Vec::new(),
            gives: Vec::new(),
        });
        Some(ItemNode::Leaf(at))
    }
}

/// Decodes a row group's list of structs of `rows` rows from its fields'
/// column chunks (`chunks`, one per field, in order, each whole): the list
/// levels and the struct's validity from the first flat field's levels,
/// each field's values into the items' slots. Every field must have that
/// field's lists and structs, level for level. The fields' pages are read
/// on up to `threads` decode threads (a list of structs may be a row
/// group's only column), and the lists of the first flat field and of
/// each list field built there too; they are checked against each other
/// after.
pub(crate) fn decode_struct_items(
    chunks: Vec<(Bytes, ColumnChunkMetaData)>,
    items: &StructItems,
    rows: usize,
    threads: usize,
) -> Decoded<ArrayRef> {
    if chunks.len() != items.leaves.len() {
        return Err(Failure::Unsupported);
    }
    let Some(reference) = items.leaves.iter().position(|l| l.own_lists.is_empty()) else {
        return Err(Failure::Unsupported);
    };
    // Levels below this are the lists' and the struct's, which every field
    // repeats.
    let shared_below = items.struct_present.unwrap_or(items.slot_from);
    let shapes: Vec<Shape> = items
        .leaves
        .iter()
        .map(|leaf| {
            let mut lists = items.lists.clone();
            lists.extend(leaf.own_lists.iter().cloned());
            Shape {
                lists,
                leaf: leaf.data_type.clone(),
                leaf_nullable: has_holes(leaf, items),
                max_def: leaf.max_def,
                gather: 0,
                // A list field notes the items' null structs as it builds.
                slot_structs: match leaf.own_lists.is_empty() {
                    true => None,
                    false => items.struct_present,
                },
            }
        })
        .collect();
    let parts: Vec<Part<Decoded<FieldRead>>> = chunks
        .into_iter()
        .zip(&shapes)
        .enumerate()
        .map(|(at, ((bytes, meta), shape))| {
            let shape = shape.clone();
            let builds_lists = at == reference || !items.leaves[at].own_lists.is_empty();
            let part: Part<_> = Box::new(move || {
                let mut pages =
                    ChunkPages::new(bytes, meta.compression()).ok_or(Failure::Unsupported)?;
                let expected = usize::try_from(meta.num_values())
                    .unwrap_or(0)
                    .min(MOST_RESERVED);
                let (levels, count, finish) = read_leaf(&mut pages, &shape, expected)?;
                let built = builds_lists
                    .then(|| assemble(&levels.reps, &levels.defs, &shape, rows, None))
                    .transpose()?;
                Ok((levels, built, count, finish))
            });
            part
        })
        .collect();
    // A field reader's panic is raised again here, for the caller to
    // report as this column's.
    let mut read = decode_threads::run_all(threads, parts)
        .into_iter()
        .map(|outcome| outcome.unwrap_or_else(|panic| panic!("{panic}")).map(Some))
        .collect::<Decoded<Vec<_>>>()?;
    // The reference field first: it gives the lists the others must have.
    let order = std::iter::once(reference).chain((0..read.len()).filter(|&i| i != reference));
    let mut first: Option<(Levels, Assembled)> = None;
    let mut struct_validity = None;
    // The validity of the structs within the items, by their first leaf and
    // the level from which they are not null.
    let mut within: Vec<(usize, u8, Bits)> = Vec::new();
    let mut children: Vec<Option<ArrayRef>> = vec![None; read.len()];
    for at in order {
        let field = read[at].take().ok_or(Failure::Unsupported)?;
        let leaf = &items.leaves[at];
        if !leaf.own_lists.is_empty() {
            let Some((_, shared)) = &first else {
                return Err(Failure::Unsupported);
            };
            let nulls = struct_validity.as_ref();
            children[at] = Some(list_field(field, leaf, shared, nulls, items)?);
            continue;
        }
        let (levels, built, count, finish) = field;
        let (validity, slots) = match &first {
            None => {
                let mut built = built.ok_or(Failure::Unsupported)?;
                if items.gather != 0 {
                    gather_at_rows(&levels, items.gather);
                }
                let slots = built.leaf_slots;
                if let Some(present) = items.struct_present {
                    struct_validity =
                        Some(slot_bits(&levels.defs, items.slot_from, present, slots)?);
                }
                for &from in &leaf.gives {
                    within.push((
                        at,
                        from,
                        slot_bits(&levels.defs, items.slot_from, from, slots)?,
                    ));
                }
                let validity = built.leaf_validity.take();
                first = Some((levels, built));
                (validity, slots)
            }
            Some((shared, built)) => {
                let same = levels.reps == shared.reps
                    && levels.defs.len() == shared.defs.len()
                    && levels
                        .defs
                        .iter()
                        .zip(&shared.defs)
                        .all(|(&d, &s)| d.min(shared_below) == s.min(shared_below));
                if !same {
                    return Err(disagree());
                }
                let slots = built.leaf_slots;
                for &from in &leaf.gives {
                    within.push((
                        at,
                        from,
                        slot_bits(&levels.defs, items.slot_from, from, slots)?,
                    ));
                }
                let validity = has_holes(leaf, items)
                    .then(|| slot_bits(&levels.defs, items.slot_from, leaf.max_def, slots))
                    .transpose()?;
                (validity, slots)
            }
        };
        let valid = validity.as_ref().map_or(slots, |v| v.count_ones(0));
        if count != valid {
            return Err(Failure::Corrupt(format!(
                "{count} values for {valid} valid struct fields in lists"
            )));
        }
        children[at] = Some(finish(validity, slots)?);
    }
    let Some((_, built)) = first else {
        return Err(Failure::Unsupported);
    };
    let fields = items
        .children
        .iter()
        .map(|node| build_item(node, &mut children, &mut within))
        .collect::<Decoded<Vec<_>>>()?;
    let nulls = struct_validity.and_then(Bits::into_nulls);
    let array = StructArray::try_new(items.fields.clone(), fields, nulls)
        .map_err(|e| Failure::Corrupt(e.to_string()))?;
    let lists = Shape {
        lists: items.lists.clone(),
        leaf: array.data_type().clone(),
        leaf_nullable: items.struct_present.is_some(),
        max_def: 0,
        gather: 0,
        slot_structs: None,
    };
    wrap(&lists, built, Arc::new(array))
}

/// The array of a field of the items' struct, from its leaves' arrays
/// `leaves` (each taken once) and the validity of the structs within the
/// items (`within`, each taken once).
fn build_item(
    node: &ItemNode,
    leaves: &mut [Option<ArrayRef>],
    within: &mut Vec<(usize, u8, Bits)>,
) -> Decoded<ArrayRef> {
    let (fields, present_from, first_leaf, children) = match node {
        ItemNode::Leaf(at) => {
            return leaves
                .get_mut(*at)
                .and_then(Option::take)
                .ok_or(Failure::Unsupported)
        }
        ItemNode::Struct {
            fields,
            present_from,
            first_leaf,
            children,
        } => (fields, present_from, first_leaf, children),
    };
    let nulls = match present_from {
        None => None,
        Some(from) => {
            let at = within
                .iter()
                .position(|(leaf, level, _)| leaf == first_leaf && level == from)
                .ok_or(Failure::Unsupported)?;
            within.swap_remove(at).2.into_nulls()
        }
    };
    let arrays = children
        .iter()
        .map(|child| build_item(child, leaves, within))
        .collect::<Decoded<Vec<_>>>()?;
    let array = StructArray::try_new(fields.clone(), arrays, nulls)
        .map_err(|e| Failure::Corrupt(e.to_string()))?;
    Ok(Arc::new(array))
}

/// Whether a flat field `leaf` of the items' structs has item slots
/// without a value: where it is null, or where a struct around it is (a
/// required field of a nullable struct too).
fn has_holes(leaf: &StructLeaf, items: &StructItems) -> bool {
    match leaf.own_lists.is_empty() {
        true => leaf.max_def > items.slot_from,
        false => leaf.nullable,
    }
}

fn disagree() -> Failure {
    Failure::Corrupt("a struct's fields disagree on its lists or nulls".into())
}

/// A field's pages read: its levels, its lists built from them (for the
/// first flat field and list fields), its count of values, and how to put
/// them in their slots.
type FieldRead = (Levels, Option<Assembled>, usize, FinishLeaf);

/// List field `leaf` of the items' structs, from its pages as `read` (its
/// lists built: the items', then its own): its own lists around its
/// values, a list per item slot. Its levels must give the items' lists as
/// the reference field's did (`shared`), and the same null structs
/// (`struct_validity`, a bit per item slot).
fn list_field(
    read: FieldRead,
    leaf: &StructLeaf,
    shared: &Assembled,
    struct_validity: Option<&Bits>,
    items: &StructItems,
) -> Decoded<ArrayRef> {
    let (levels, built, count, finish) = read;
    let mut built = built.ok_or(Failure::Unsupported)?;
    let depth = items.lists.len();
    let same_lists = built.lists[..depth]
        .iter()
        .zip(&shared.lists)
        .all(|(mine, theirs)| mine.offsets == theirs.offsets)
        && built.lists[depth].offsets.len() == shared.leaf_slots;
    if !same_lists {
        return Err(disagree());
    }
    match (built.slot_structs.take(), struct_validity) {
        // Noted as the lists were built.
        (Some(noted), Some(validity)) if noted == *validity => {}
        (Some(_), _) => return Err(disagree()),
        (None, _) => check_slot_structs(&levels, items, struct_validity)?,
    }
    let valid = built
        .leaf_validity
        .as_ref()
        .map_or(built.leaf_slots, |v| v.count_ones(0));
    if count != valid {
        return Err(Failure::Corrupt(format!(
            "{count} values for {valid} valid list items"
        )));
    }
    let values = finish(built.leaf_validity.take(), built.leaf_slots)?;
    let own = built.lists.split_off(depth);
    wrap_levels(&leaf.own_lists, own, built.leaf_slots, values)
}

/// That a list field's `levels` give the items' null structs as
/// `struct_validity` (a bit per item slot) says them, where its lists were
/// built without noting them (deeper than two levels).
fn check_slot_structs(
    levels: &Levels,
    items: &StructItems,
    struct_validity: Option<&Bits>,
) -> Decoded<()> {
    let depth = items.lists.len();
    if let (Some(present), Some(validity)) = (items.struct_present, struct_validity) {
        // The items' null structs, as this field's levels say them: at
        // each entry that starts an item slot.
        let mut slot = 0usize;
        for (&r, &d) in levels.reps.iter().zip(&levels.defs) {
            if usize::from(r) <= depth && d >= items.slot_from {
                if validity.bit(slot) != (d >= present) {
                    return Err(disagree());
                }
                slot += 1;
            }
        }
        if slot != validity.len() {
            return Err(disagree());
        }
    }
    Ok(())
}

/// A bit for each item slot among `defs` (an entry at level `slot_from` or
/// more): set where its level is `from` or more. Checked to be `slots` bits.
fn slot_bits(defs: &[u8], slot_from: u8, from: u8, slots: usize) -> Decoded<Bits> {
    let mut bits = Bits::with_capacity(slots);
    if slot_from.max(from) > MOST_LEVEL {
        for &d in defs.iter().filter(|&&d| d >= slot_from) {
            bits.push(d >= from);
        }
    } else {
        // 64 entries at a time (see `level_masks`): most are slots.
        crate::simd::wide(
            defs.len(),
            #[inline(always)]
            || {
                for block in defs.chunks(64) {
                    let d = LevelBlock::new(block);
                    let slot = d.at_least(slot_from) & flat::low_bits(block.len());
                    let there = kept_bits(d.at_least(from), slot, block.len());
                    bits.append_word(there, slot.count_ones() as usize);
                }
            },
        );
    }
    match bits.len() == slots {
        true => Ok(bits),
        false => Err(Failure::Corrupt(format!(
            "{} item slots where the lists hold {slots}",
            bits.len()
        ))),
    }
}

/// A leaf's values read densely from its pages, made into the array of its
/// item slots once their validity (none: all valid) and count are known.
type FinishLeaf = Box<dyn FnOnce(Option<Bits>, usize) -> Decoded<ArrayRef> + Send>;

/// Reads every page of one leaf of `shape` (see [`read_pages`]): its levels,
/// how many values it holds, and how to put them in their slots.
fn read_leaf(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
) -> Decoded<(Levels, usize, FinishLeaf)> {
    macro_rules! values {
        ($t:ty, $n:literal, $convert:expr) => {
            numbers_leaf::<$t, $n>(pages, shape, expected, $convert)?
        };
    }
    Ok(match &shape.leaf {
        DataType::Boolean => {
            let mut leaf = Booleans::new(expected);
            let levels = read_pages(pages, shape, expected, &mut leaf)?;
            let count = leaf.len();
            let finish: FinishLeaf =
                Box::new(move |validity, slots| leaf.into_array(validity, slots));
            (levels, count, finish)
        }
        DataType::Utf8 => bytes_leaf::<i32>(pages, shape, expected, true)?,
        DataType::Binary => bytes_leaf::<i32>(pages, shape, expected, false)?,
        DataType::LargeUtf8 => bytes_leaf::<i64>(pages, shape, expected, true)?,
        DataType::LargeBinary => bytes_leaf::<i64>(pages, shape, expected, false)?,
        numeric => numeric_values!(numeric, values, return Err(Failure::Unsupported)),
    })
}

/// [`read_leaf`] for numbers of `N`-byte physical values.
fn numbers_leaf<T: ArrowPrimitiveType, const N: usize>(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
    convert: impl Fn([u8; N]) -> T::Native,
) -> Decoded<(Levels, usize, FinishLeaf)> {
    let mut leaf = Numbers::<T::Native, _, N>::for_leaf::<T>(shape, expected, convert)?;
    let levels = read_pages(pages, shape, expected, &mut leaf)?;
    let values = leaf.values;
    let count = values.len();
    let data_type = shape.leaf.clone();
    let finish: FinishLeaf = Box::new(move |validity, slots| {
        let (values, nulls) = in_slots(values, validity, slots);
        let array = PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls);
        Ok(Arc::new(array.with_data_type(data_type)) as ArrayRef)
    });
    Ok((levels, count, finish))
}

/// [`read_leaf`] for strings (`utf8`) or binary with offsets of type `O`.
fn bytes_leaf<O: OffsetSizeTrait>(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
    utf8: bool,
) -> Decoded<(Levels, usize, FinishLeaf)> {
    let mut leaf = byte_arrays::Values::<O>::new(utf8, expected);
    let levels = read_pages(pages, shape, expected, &mut leaf)?;
    let count = leaf.len();
    let finish: FinishLeaf = Box::new(move |validity, slots| leaf.into_array(validity, slots));
    Ok((levels, count, finish))
}

/// Decodes one column chunk of `rows` rows from `bytes` (the whole chunk,
/// which starts at file offset `meta.byte_range().0`) as laid out by
/// `shape`, into the list type `shape` was made for.
pub(crate) fn decode_column(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    shape: &Shape,
    rows: usize,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    let pages = ChunkPages::new(bytes, meta.compression()).ok_or(Failure::Unsupported)?;
    // Every buffer is sized once from the chunk's count of levels (a claim
    // of the file's, so capped: past it they grow as they must); grown by
    // doubling they were twice the memory, all of it fresh pages.
    let levels = usize::try_from(meta.num_values())
        .unwrap_or(0)
        .min(MOST_RESERVED);
    // A sparse selection builds the lists of its rows alone; a dense one
    // (many short gaps, each stepped over by itself) builds every row's
    // and is cut after, which costs less.
    let sparse = selection.filter(|s| runs_of_set_bits(s) * SPARSE_SLICES <= s.len());
    macro_rules! values {
        ($t:ty, $n:literal, $convert:expr) => {
            lists_of::<$t, $n>(pages, shape, rows, levels, $convert, sparse)?
        };
    }
    let array = match &shape.leaf {
        DataType::Boolean => lists_of_booleans(pages, shape, rows, levels, sparse)?,
        DataType::Utf8 => lists_of_bytes::<i32>(pages, shape, rows, levels, true, sparse)?,
        DataType::Binary => lists_of_bytes::<i32>(pages, shape, rows, levels, false, sparse)?,
        DataType::LargeUtf8 => lists_of_bytes::<i64>(pages, shape, rows, levels, true, sparse)?,
        DataType::LargeBinary => lists_of_bytes::<i64>(pages, shape, rows, levels, false, sparse)?,
        numeric => numeric_values!(numeric, values, return Err(Failure::Unsupported)),
    };
    match (selection, sparse) {
        (Some(keep), None) => flat::selected_rows(array, Some(keep)),
        _ => Ok(array),
    }
}

/// How many runs of set bits `bits` holds, a word at a time (walking the
/// runs one by one cost more than the sparse build saved).
fn runs_of_set_bits(bits: &BooleanBuffer) -> usize {
    let chunks = bits.bit_chunks();
    let mut runs = 0usize;
    let mut carry = 0u64; // the previous word's last bit
    for word in chunks
        .iter()
        .chain(std::iter::once(chunks.remainder_bits()))
    {
        runs += (word & !((word << 1) | carry)).count_ones() as usize;
        carry = word >> 63;
    }
    runs
}

/// A selection of rows is sparse when its runs of selected rows are at
/// most one in this many rows (see [`decode_column`]). Two list columns of
/// 2 M rows (page cache warm, steady): 1 % of the rows kept at random,
/// 44 ms built sparse against 71 built whole and cut; 10 % (a run every 11
/// rows), 88 ms sparse against 79 whole.
const SPARSE_SLICES: usize = 16;

/// The values of a list column's leaf, decoded densely (nulls take no
/// room) page by page.
pub(super) trait Leaf {
    /// Values appended so far.
    fn len(&self) -> usize;

    /// Takes the chunk's dictionary page of `count` plain values.
    fn dictionary(&mut self, page: &[u8], count: usize) -> Decoded<()>;

    /// Appends a data page's `valid` values, `encoding`-encoded in `values`.
    fn append(
        &mut self,
        encoding: Encoding,
        values: &[u8],
        valid: usize,
        scratch: &mut Vec<u32>,
    ) -> Decoded<()>;

    /// Told after each page that `done` of the chunk's `expected` level
    /// entries are read: room for the rest at the rate so far. Numbers and
    /// booleans have room for `expected` from the start; variable-length
    /// values grow as they come, and a buffer grown page by page (doubled,
    /// the old ones freed) held about twice its values at the read's peak.
    fn project(&mut self, _done: usize, _expected: usize) {}
}

/// Numbers of `N`-byte physical values, `convert`ed.
struct Numbers<V, F, const N: usize> {
    values: Vec<V>,
    dictionary: Option<Vec<V>>,
    convert: F,
}

impl<V: Copy, F: Fn([u8; N]) -> V, const N: usize> Numbers<V, F, N> {
    /// The values of `shape`'s leaf as Arrow type `T` (whose native type is
    /// `V`), room for `expected` of them; refused when `T` is not the leaf's
    /// type.
    fn for_leaf<T: ArrowPrimitiveType<Native = V>>(
        shape: &Shape,
        expected: usize,
        convert: F,
    ) -> Decoded<Self> {
        if !PrimitiveArray::<T>::is_compatible(&shape.leaf) {
            return Err(Failure::Unsupported);
        }
        Ok(Numbers {
            values: Vec::with_capacity(expected),
            dictionary: None,
            convert,
        })
    }
}

impl<V: Copy, F: Fn([u8; N]) -> V, const N: usize> Leaf for Numbers<V, F, N> {
    fn len(&self) -> usize {
        self.values.len()
    }

    fn dictionary(&mut self, page: &[u8], count: usize) -> Decoded<()> {
        let mut entries = Vec::new();
        plain(page, count, &self.convert, &mut entries, Reads::Soon)?;
        self.dictionary = Some(entries);
        Ok(())
    }

    fn append(
        &mut self,
        encoding: Encoding,
        values: &[u8],
        valid: usize,
        scratch: &mut Vec<u32>,
    ) -> Decoded<()> {
        match encoding {
            Encoding::PLAIN => plain(values, valid, &self.convert, &mut self.values, Reads::Later),
            Encoding::BYTE_STREAM_SPLIT => byte_stream_split::decode(
                values,
                valid,
                &self.convert,
                &mut self.values,
                Reads::Later,
            ),
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let dictionary = dictionary_of(&self.dictionary)?;
                gather(
                    values,
                    valid,
                    dictionary,
                    scratch,
                    &mut self.values,
                    Reads::Later,
                )
            }
            _ => Err(Failure::Unsupported),
        }
    }
}

/// Booleans, a bit each.
struct Booleans {
    values: Bits,
}

impl Booleans {
    fn new(expected: usize) -> Self {
        Booleans {
            values: Bits::with_capacity(expected),
        }
    }

    /// Keeps the values in `runs` (in order), drops the others.
    fn keep_runs(&mut self, runs: &[Range<usize>]) {
        let mut kept = Bits::with_capacity(runs.iter().map(|r| r.len()).sum());
        for run in runs {
            let mut at = run.start;
            while at < run.end {
                let n = (run.end - at).min(64);
                kept.append_word(self.values.bits_at(at, n), n);
                at += n;
            }
        }
        self.values = kept;
    }

    /// The array of `slots` item slots, the values in the valid ones as
    /// `validity` says (none: all valid), false under the nulls.
    fn into_array(self, validity: Option<Bits>, slots: usize) -> Decoded<ArrayRef> {
        let values = match &validity {
            Some(valid) if self.values.len() != slots => {
                // A word of the validity at a time: as many values as it
                // has set bits, moved to them (at once where all are set).
                let mut spread = Bits::with_capacity(slots);
                let mut next = 0;
                for (set, n) in valid.words_in(0, slots) {
                    let count = set.count_ones() as usize;
                    let mut values = self.values.bits_at(next, count);
                    next += count;
                    let word = match count == n {
                        true => values,
                        false => {
                            let (mut word, mut left) = (0u64, set);
                            while left != 0 {
                                word |= (values & 1) << left.trailing_zeros();
                                values >>= 1;
                                left &= left - 1;
                            }
                            word
                        }
                    };
                    spread.append_word(word, n);
                }
                spread
            }
            _ => self.values,
        };
        if values.len() != slots {
            return Err(Failure::Corrupt(format!(
                "{} booleans for {slots} item slots",
                values.len()
            )));
        }
        let nulls = validity.and_then(Bits::into_nulls);
        Ok(Arc::new(BooleanArray::new(values.finish(), nulls)))
    }
}

impl Leaf for Booleans {
    fn len(&self) -> usize {
        self.values.len()
    }

    fn dictionary(&mut self, _page: &[u8], _count: usize) -> Decoded<()> {
        Err(Failure::Unsupported)
    }

    fn append(
        &mut self,
        encoding: Encoding,
        values: &[u8],
        valid: usize,
        _scratch: &mut Vec<u32>,
    ) -> Decoded<()> {
        flat::append_booleans(encoding, values, valid, &mut self.values)
    }
}

/// A list column of booleans.
fn lists_of_booleans(
    mut pages: ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    let mut leaf = Booleans::new(expected);
    let (mut built, runs) = read_lists(&mut pages, shape, rows, expected, &mut leaf, selection)?;
    if let Some(runs) = runs {
        leaf.keep_runs(&runs);
    }
    let validity = built.leaf_validity.take();
    let array = leaf.into_array(validity, built.leaf_slots)?;
    wrap(shape, built, array)
}

/// A list column's repetition and definition levels, every page's appended.
struct Levels {
    reps: Vec<u8>,
    defs: Vec<u8>,
}

/// The most entries a buffer is sized for ahead of decoding.
const MOST_RESERVED: usize = 1 << 26;

fn lists_of<T: ArrowPrimitiveType, const N: usize>(
    mut pages: ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    convert: impl Fn([u8; N]) -> T::Native,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    let mut leaf = Numbers::<T::Native, _, N>::for_leaf::<T>(shape, expected, convert)?;
    let (mut built, runs) = read_lists(&mut pages, shape, rows, expected, &mut leaf, selection)?;
    if let Some(runs) = runs {
        let held = runs.iter().map(|r| r.len()).sum();
        let mut kept = Vec::with_capacity(held);
        for run in runs {
            kept.extend_from_slice(&leaf.values[run]);
        }
        leaf.values = kept;
    }
    // The values of the leaf slots: the valid ones in order, nulls between.
    let (values, nulls) = in_slots(leaf.values, built.leaf_validity.take(), built.leaf_slots);
    let leaf = PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
        .with_data_type(shape.leaf.clone());
    wrap(shape, built, Arc::new(leaf))
}

/// A leaf's dense `values` put in its `slots` as `validity` (none: all
/// valid) says, nulls between, and the nulls. Slots that are all valid
/// take the values as they are (a nullable leaf with no null in the row
/// group: no second buffer, no copy).
fn in_slots<T: Copy + Default>(
    values: Vec<T>,
    validity: Option<Bits>,
    slots: usize,
) -> (Vec<T>, Option<arrow_buffer::NullBuffer>) {
    match validity {
        Some(validity) if values.len() != slots => {
            let mut values = values;
            // In place: a second buffer of the column's size was most of a
            // list column's peak beside its output (`list<int64>` with a
            // tenth of its items null: 112 MiB over the imports for 35 MiB
            // returned).
            if !scatter_in_place(&mut values, &validity, slots) {
                let mut out = Vec::with_capacity(slots);
                scatter(&validity, 0, slots, &values, &mut out);
                values = out;
            }
            (values, validity.into_nulls())
        }
        Some(validity) => (values, validity.into_nulls()),
        None => (values, None),
    }
}

/// A list column of strings (`utf8`) or binary, whose leaf has offsets of
/// type `O`.
fn lists_of_bytes<O: OffsetSizeTrait>(
    mut pages: ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    utf8: bool,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    let mut leaf = byte_arrays::Values::<O>::new(utf8, expected);
    let (mut built, runs) = read_lists(&mut pages, shape, rows, expected, &mut leaf, selection)?;
    if let Some(runs) = runs {
        leaf.keep_runs(&runs);
    }
    let validity = built.leaf_validity.take();
    let array = leaf.into_array(validity, built.leaf_slots)?;
    wrap(shape, built, array)
}

/// Reads the chunk's pages into `leaf` and builds its list levels (of the
/// rows `selection` sets, if any: then with the runs of the leaf's values
/// those rows hold), checking that the leaf got a value for every valid
/// slot.
fn read_lists(
    pages: &mut ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    leaf: &mut impl Leaf,
    selection: Option<&BooleanBuffer>,
) -> Decoded<(Assembled, Option<Vec<Range<usize>>>)> {
    // Read whole (no selection, below), with no structs around it.
    let whole_one_level = shape.gather == 0
        && shape.lists.len() == 1
        && shape.max_def <= MOST_LEVEL
        && shape.slot_structs.is_none();
    let (built, runs, valid) = match selection {
        None if whole_one_level => {
            let built = read_one_level_by_page(pages, shape, rows, expected, leaf)?;
            let valid = built.valid_leaf_slots();
            (built, None, valid)
        }
        _ => read_levels_then_lists(pages, shape, rows, expected, leaf, selection)?,
    };
    if leaf.len() != valid {
        return Err(Failure::Corrupt(format!(
            "{} values for {valid} valid list items",
            leaf.len()
        )));
    }
    Ok((built, runs))
}

/// The lists built, the runs of the leaf's values the selected rows hold
/// (with a selection) and the valid leaf slots.
type BuiltLists = (Assembled, Option<Vec<Range<usize>>>, usize);

/// [`read_lists`] by [`read_pages`], then [`assemble`] over the whole
/// chunk's levels.
fn read_levels_then_lists(
    pages: &mut ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    leaf: &mut impl Leaf,
    selection: Option<&BooleanBuffer>,
) -> Decoded<BuiltLists> {
    let levels = read_pages(pages, shape, expected, leaf)?;
    if shape.gather != 0 {
        gather_at_rows(&levels, shape.gather);
    }
    Ok(match selection {
        None => {
            let built = assemble(&levels.reps, &levels.defs, shape, rows, None)?;
            let valid = built.valid_leaf_slots();
            (built, None, valid)
        }
        Some(selection) => {
            let (reps, defs) = (&levels.reps, &levels.defs);
            let kept = kept_entries(reps, defs, shape.max_def, rows, selection)?;
            let built = assemble(reps, defs, shape, rows, Some(&kept))?;
            (built, Some(kept.values_kept), kept.values)
        }
    })
}

/// [`read_levels_then_lists`] for a list of one level read whole (most
/// list columns: `list<float>` embeddings, `list<string>` tags): each
/// page's levels are built into the list as soon as they are read, then
/// dropped. Why: the whole chunk's levels are two bytes for every item; a
/// 128-float embedding column held 64 MB of them beside its 128 MB of
/// floats (peak 372 MiB against polars' 304). A list may run on into the
/// next page: its offsets count the items of every page before.
fn read_one_level_by_page(
    pages: &mut ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    leaf: &mut impl Leaf,
) -> Decoded<Assembled> {
    let level = &shape.lists[0];
    // Sized as `assemble` sizes them (left unfaulted past what is written).
    let (mut list, mut leaf_validity) = reserve_unfaulted(|| {
        let lists = (rows + 1).min(MOST_RESERVED);
        let list = ListOut {
            offsets: Vec::with_capacity(lists),
            validity: level.nullable.then(|| Bits::with_capacity(lists)),
        };
        let leaf_validity = shape
            .leaf_nullable
            .then(|| Bits::with_capacity(expected.min(MOST_RESERVED)));
        (list, leaf_validity)
    });
    let mut levels = Levels {
        reps: Vec::new(),
        defs: Vec::new(),
    };
    let mut slots = 0;
    let mut first = true;
    read_pages_into(pages, shape, expected, leaf, &mut levels, |levels| {
        let Some(&r) = levels.reps.first() else {
            return Ok(());
        };
        if first && r != 0 {
            return Err(first_not_a_row());
        }
        first = false;
        let all = 0..levels.reps.len();
        slots = assemble_one_level(
            &levels.reps,
            &levels.defs,
            std::slice::from_ref(&all),
            level.present,
            shape.max_def,
            &mut list,
            &mut leaf_validity,
            slots,
        )?;
        levels.reps.clear();
        levels.defs.clear();
        Ok(())
    })?;
    Ok(Assembled {
        lists: vec![list],
        leaf_validity,
        leaf_slots: slots,
        rows,
        slot_structs: None,
    })
}

/// Hands the structs around a list the validity `asked` for (see
/// [`Shape::gather`]), a bit per row: set where the row's first level
/// entry reaches the struct's level.
fn gather_at_rows(levels: &Levels, asked: u8) {
    for k in 0..MOST_STRUCT_LEVELS {
        if asked >> k & 1 == 0 {
            continue;
        }
        let from = k as u8 + 1;
        let mut bits = Bits::with_capacity(levels.reps.len());
        for (&r, &d) in levels.reps.iter().zip(&levels.defs) {
            if r == 0 {
                bits.push(d >= from);
            }
        }
        flat::hand_present(k, bits);
    }
}

/// The list levels of `shape` around `leaf` (the leaf slots' array), from
/// the offsets and validity `built` holds, innermost first.
fn wrap(shape: &Shape, built: Assembled, leaf: ArrayRef) -> Decoded<ArrayRef> {
    if built.lists[0].offsets.len() != built.rows {
        return Err(Failure::Corrupt(format!(
            "the levels hold {} of the row group's {} rows",
            built.lists[0].offsets.len(),
            built.rows
        )));
    }
    wrap_levels(&shape.lists, built.lists, built.leaf_slots, leaf)
}

/// List levels `levels` (outermost first) built as `lists` around `leaf`,
/// the array of their `leaf_slots` slots.
fn wrap_levels(
    levels: &[ListLevel],
    lists: Vec<ListOut>,
    leaf_slots: usize,
    leaf: ArrayRef,
) -> Decoded<ArrayRef> {
    let mut child = leaf;
    let mut slots = leaf_slots;
    for (level, mut list) in levels.iter().zip(lists).rev() {
        list.offsets.push(slots as i32);
        slots = list.offsets.len() - 1;
        let nulls = list.validity.and_then(Bits::into_nulls);
        let item = Arc::clone(&level.item);
        // The offsets only ever grow, so `OffsetBuffer::new` cannot panic;
        // `try_new` checks the rest (lengths, the item's type and nulls).
        let corrupt = |e: arrow_schema::ArrowError| Failure::Corrupt(e.to_string());
        child = if let Some(sorted) = level.map {
            let offsets = OffsetBuffer::new(ScalarBuffer::from(list.offsets));
            let entries = child
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or(Failure::Unsupported)?
                .clone();
            Arc::new(MapArray::try_new(item, offsets, entries, nulls, sorted).map_err(corrupt)?)
        } else if let Some(size) = level.fixed {
            fixed_size_lists(item, size, &list.offsets, child, nulls)?
        } else if level.large {
            let wide: Vec<i64> = list.offsets.iter().map(|&o| i64::from(o)).collect();
            let offsets = OffsetBuffer::new(ScalarBuffer::from(wide));
            Arc::new(LargeListArray::try_new(item, offsets, child, nulls).map_err(corrupt)?)
        } else {
            let offsets = OffsetBuffer::new(ScalarBuffer::from(list.offsets));
            Arc::new(ListArray::try_new(item, offsets, child, nulls).map_err(corrupt)?)
        };
    }
    Ok(child)
}

/// A `FixedSizeList` level of lists of `size` items, `item`s `child`,
/// from the `offsets` the levels built: every list there must hold `size`
/// items (else the column goes back to the crate, which names the row).
/// Parquet writes no items for a null list; Arrow wants `size` slots under
/// it too, so when one has none the items are spread out with `size` null
/// slots under each such list (one copy of the items; none without such
/// lists, the embeddings' usual case).
fn fixed_size_lists(
    item: FieldRef,
    size: i32,
    offsets: &[i32],
    child: ArrayRef,
    nulls: Option<NullBuffer>,
) -> Decoded<ArrayRef> {
    let n = usize::try_from(size).map_err(|_| Failure::Unsupported)?;
    let valid = |i: usize| nulls.as_ref().is_none_or(|nulls| nulls.is_valid(i));
    let mut itemless_nulls = false;
    for (i, list) in offsets.windows(2).enumerate() {
        let len = usize::try_from(list[1] - list[0]).map_err(|_| Failure::Unsupported)?;
        if len == n {
            continue;
        }
        if len == 0 && !valid(i) {
            itemless_nulls = true;
            continue;
        }
        return Err(Failure::Corrupt(format!(
            "list {i} holds {len} items where the fixed size is {n}"
        )));
    }
    let child = match itemless_nulls {
        false => child,
        true => {
            // Slots an `i32` offset can reach, or the crate's to refuse: a
            // file's large size under many null lists must not ask for
            // more memory than there is.
            let lists = offsets.len() - 1;
            let slots = lists
                .checked_mul(n)
                .filter(|&slots| i32::try_from(slots).is_ok())
                .ok_or(Failure::Unsupported)?;
            let mut at = Vec::with_capacity(slots);
            for (i, list) in offsets.windows(2).enumerate() {
                match list[1] > list[0] {
                    true => at.extend((list[0]..list[1]).map(|k| Some(k as u32))),
                    false if !valid(i) => at.extend(std::iter::repeat_n(None, n)),
                    false => {}
                }
            }
            arrow_select::take::take(&child, &UInt32Array::from(at), None)
                .map_err(|e| Failure::Corrupt(e.to_string()))?
        }
    };
    FixedSizeListArray::try_new(item, size, child, nulls)
        .map(|a| Arc::new(a) as ArrayRef)
        .map_err(|e| Failure::Corrupt(e.to_string()))
}

/// Reads every page of the chunk: levels appended as bytes, valid values
/// (plain or dictionary-encoded) appended to `leaf`.
fn read_pages(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
    leaf: &mut impl Leaf,
) -> Decoded<Levels> {
    let mut levels = Levels {
        reps: Vec::with_capacity(expected),
        defs: Vec::with_capacity(expected),
    };
    read_pages_into(pages, shape, expected, leaf, &mut levels, |_| Ok(()))?;
    Ok(levels)
}

/// [`read_pages`] into `out`, handing it to `after_page` after each data
/// page (which may build from its levels and clear them).
fn read_pages_into(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
    leaf: &mut impl Leaf,
    out: &mut Levels,
    mut after_page: impl FnMut(&mut Levels) -> Decoded<()>,
) -> Decoded<()> {
    let max_rep = shape.lists.len() as u8;
    let (rep_width, def_width) = (bit_width(max_rep), bit_width(shape.max_def));
    // Level entries read so far (`out` may have been cleared since).
    let mut done = 0usize;
    let mut scratch = Vec::new();
    while let Some(page) = next_page_with(pages, true, true)? {
        let page = match page {
            NextPage::Dictionary(buf, count) => {
                leaf.dictionary(buf, count)?;
                continue;
            }
            NextPage::Data(page) => page,
            // No selection is set on a list's pages.
            NextPage::Skipped(_) => return Err(Failure::Unsupported),
        };
        // A list column always has both kinds of levels.
        let (Some(rep), Some(def)) = (page.rep_levels.clone(), page.levels.clone()) else {
            return Err(Failure::Unsupported);
        };
        let start = out.defs.len();
        let buf = &page.buf;
        read_levels(
            &buf[rep],
            rep_width,
            page.rows,
            max_rep,
            &mut out.reps,
            &mut scratch,
        )?;
        read_levels(
            &buf[def],
            def_width,
            page.rows,
            shape.max_def,
            &mut out.defs,
            &mut scratch,
        )?;
        let valid = out.defs[start..]
            .iter()
            .filter(|&&d| d == shape.max_def)
            .count();
        leaf.append(page.encoding, &buf[page.values..], valid, &mut scratch)?;
        done += out.defs.len() - start;
        leaf.project(done, expected);
        after_page(out)?;
    }
    Ok(())
}

/// Bits needed for levels up to `max`.
fn bit_width(max: u8) -> u8 {
    (u8::BITS - max.leading_zeros()) as u8
}

/// Appends `count` levels of `width` bits (hybrid runs) from `bytes` to
/// `out`, each checked to be at most `max`.
fn read_levels(
    bytes: &[u8],
    width: u8,
    count: usize,
    max: u8,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u32>,
) -> Decoded<()> {
    // `count` is the page header's claim: past the cap the buffer grows as levels come.
    out.reserve(count.min(MOST_RESERVED));
    let too_high = |level: u32| Failure::Corrupt(format!("a level of {level} (at most {max})"));
    each_run(bytes, width, count, "levels", |run, n| match run {
        Run::Repeated { value, .. } => {
            if value > u32::from(max) {
                return Err(too_high(value));
            }
            out.extend(std::iter::repeat_n(value as u8, n));
            Ok(())
        }
        Run::Packed { bytes, .. } if unpack_narrow_to_bytes(bytes, width, n, out) => {
            // Only two bits can pass a most level (of 2, at 3).
            if u32::from(max) >= (1 << width) - 1 {
                return Ok(());
            }
            let at = out.len() - n;
            match out[at..].iter().copied().max() {
                Some(highest) if highest > max => Err(too_high(u32::from(highest))),
                _ => Ok(()),
            }
        }
        Run::Packed { bytes, .. } => unpack_chunks(bytes, width, n, scratch, |chunk| {
            let highest = chunk.iter().copied().max().unwrap_or(0);
            if highest > u32::from(max) {
                return Err(too_high(highest));
            }
            out.extend(chunk.iter().map(|&l| l as u8));
            Ok(())
        }),
    })
}

/// One list level as built: where each list starts among the level below's
/// slots (the last end is added once that count is known), and which lists
/// are there.
struct ListOut {
    offsets: Vec<i32>,
    validity: Option<Bits>,
}

struct Assembled {
    lists: Vec<ListOut>,
    leaf_validity: Option<Bits>,
    leaf_slots: usize,
    /// The row group's rows (the outermost level must have as many lists).
    rows: usize,
    /// For a shape with [`Shape::slot_structs`] of two list levels: a bit
    /// per outer item slot, set where the items' struct is there.
    slot_structs: Option<Bits>,
}

impl Assembled {
    /// The leaf slots that hold a value.
    fn valid_leaf_slots(&self) -> usize {
        self.leaf_validity
            .as_ref()
            .map_or(self.leaf_slots, |v| v.count_ones(0))
    }
}

/// Builds every list level's offsets and validity, and the leaf slots'
/// validity, from the column's repetition and definition levels in one
/// pass: of every row, or, with `kept`, of the rows a selection keeps.
///
/// An entry with repetition level `r` continues the lists of levels below
/// `r` and starts a new slot at level `r` (a new row when `r` is 0); from
/// there, each level whose list is there and not empty (its definition
/// level reached) starts a slot at the level below it, down to the leaf.
fn assemble(
    reps: &[u8],
    defs: &[u8],
    shape: &Shape,
    rows: usize,
    kept: Option<&KeptEntries>,
) -> Decoded<Assembled> {
    let every = 0..reps.len();
    let (rows, entries) = match kept {
        Some(kept) => (kept.rows, kept.entries.as_slice()),
        None => (rows, std::slice::from_ref(&every)),
    };
    let levels: usize = entries.iter().map(|e| e.len()).sum();
    // The outermost level has a list a row; one below holds at most a list
    // a level entry.
    let most = |level: usize| if level == 0 { rows + 1 } else { levels + 1 };
    // Sized to upper bounds (an inner level may hold half of them or fewer):
    // left unfaulted, so the pages never written are never backed.
    let (mut lists, mut leaf_validity) = reserve_unfaulted(|| {
        let lists: Vec<ListOut> = shape
            .lists
            .iter()
            .enumerate()
            .map(|(i, l)| ListOut {
                offsets: Vec::with_capacity(most(i).min(MOST_RESERVED)),
                validity: l
                    .nullable
                    .then(|| Bits::with_capacity(most(i).min(MOST_RESERVED))),
            })
            .collect();
        let leaf_validity = shape
            .leaf_nullable
            .then(|| Bits::with_capacity(levels.min(MOST_RESERVED)));
        (lists, leaf_validity)
    });
    if reps.first().is_some_and(|&r| r != 0) {
        return Err(first_not_a_row());
    }
    // The blocks compare levels as bytes below 128 (deeper columns walk).
    let blocks = shape.max_def <= MOST_LEVEL;
    let mut slot_structs = shape.slot_structs.map(|_| Bits::with_capacity(levels));
    let leaf_slots = match (lists.as_mut_slice(), shape.lists.as_slice()) {
        ([list], [level]) if blocks => assemble_one_level(
            reps,
            defs,
            entries,
            level.present,
            shape.max_def,
            list,
            &mut leaf_validity,
            0,
        )?,
        ([outer, inner], [outer_level, inner_level]) if blocks => assemble_two_levels(
            reps,
            defs,
            entries,
            [outer_level.present, inner_level.present],
            shape.max_def,
            [outer, inner],
            &mut leaf_validity,
            shape.slot_structs.zip(slot_structs.as_mut()),
        )?,
        (lists, _) => {
            slot_structs = None; // left to the check after (`list_field`)
            assemble_levels(reps, defs, entries, shape, lists, &mut leaf_validity)?
        }
    };
    Ok(Assembled {
        lists,
        leaf_validity,
        leaf_slots,
        rows,
        slot_structs,
    })
}

/// [`assemble`]'s walk down the levels of `shape` (lists `lists`) for each
/// level entry of `entries`. Returns the leaf slots.
fn assemble_levels(
    reps: &[u8],
    defs: &[u8],
    entries: &[Range<usize>],
    shape: &Shape,
    lists: &mut [ListOut],
    leaf_validity: &mut Option<Bits>,
) -> Decoded<usize> {
    let depth = shape.lists.len();
    let max_def = shape.max_def;
    let mut leaf_slots = 0usize;
    for range in entries {
        for (&r, &d) in reps[range.clone()].iter().zip(&defs[range.clone()]) {
            let r = usize::from(r);
            // Most entries are one more value of the innermost list.
            if r == depth && d == max_def {
                if let Some(v) = leaf_validity {
                    v.push(true);
                }
                leaf_slots += 1;
                continue;
            }
            // Continuing a list needs that list to be there with items.
            if r > 0 && d < shape.lists[r - 1].present + 1 {
                return Err(continues_empty(r, d));
            }
            let mut level = r;
            while level < depth {
                let below = match lists.get(level + 1) {
                    Some(next) => next.offsets.len(),
                    None => leaf_slots,
                };
                let list = &mut lists[level];
                list.offsets
                    .push(i32::try_from(below).map_err(|_| Failure::Unsupported)?);
                let present = shape.lists[level].present;
                if let Some(v) = &mut list.validity {
                    v.push(d >= present);
                }
                if d <= present {
                    break; // null or empty: nothing below it
                }
                level += 1;
            }
            if level == depth {
                if let Some(v) = leaf_validity {
                    v.push(d == max_def);
                }
                leaf_slots += 1;
            }
        }
    }
    match i32::try_from(leaf_slots) {
        Ok(_) => Ok(leaf_slots),
        Err(_) => Err(Failure::Unsupported),
    }
}

/// [`assemble`] for one list level (`list<T>`, a list of structs, a map:
/// most list columns), without the walk down the levels, 64 entries at a
/// time ([`level_masks`]): each entry starts a row (repetition level 0) or
/// adds an item to its list. Returns the leaf slots: `slots_before` (the
/// items of the pages built before, for [`read_one_level_by_page`]) and
/// these entries'. (A list of booleans, 1 M rows, steady: 25.9 → 19.7 ms a
/// read entry by entry; the walk compiled for a depth known in advance
/// gained nothing on one level.)
#[allow(clippy::too_many_arguments)]
fn assemble_one_level(
    reps: &[u8],
    defs: &[u8],
    entries: &[Range<usize>],
    present: u8,
    max_def: u8,
    list: &mut ListOut,
    leaf_validity: &mut Option<Bits>,
    slots_before: usize,
) -> Decoded<usize> {
    // No more lists than entries: their offsets fit i32 when they do.
    if i32::try_from(reps.len()).is_err() {
        return Err(Failure::Unsupported);
    }
    let mut slots = slots_before;
    // Compiled for AVX2 and POPCNT as well: a bit count per list started.
    crate::simd::wide(
        reps.len(),
        #[inline(always)]
        || -> Decoded<()> {
            for range in entries {
                let (reps, defs) = (&reps[range.clone()], &defs[range.clone()]);
                for (reps, defs) in reps.chunks(64).zip(defs.chunks(64)) {
                    let n = reps.len();
                    let (r, d) = (LevelBlock::new(reps), LevelBlock::new(defs));
                    let rows = !r.above(0) & flat::low_bits(n);
                    // Entries that are an item: of a list that is there, not empty.
                    let items = d.above(present);
                    // An entry that continues a list must add an item to it.
                    let bad = !rows & !items & flat::low_bits(n);
                    if bad != 0 {
                        let at = bad.trailing_zeros() as usize;
                        return Err(continues_empty(reps[at], defs[at]));
                    }
                    let there = match list.validity {
                        Some(_) => d.at_least(present),
                        None => 0,
                    };
                    for at in set_bits(rows) {
                        list.offsets.push((slots + ones_below(items, at)) as i32);
                        if let Some(v) = &mut list.validity {
                            v.push(there >> at & 1 == 1);
                        }
                    }
                    let held = items.count_ones() as usize;
                    if let Some(v) = leaf_validity.as_mut() {
                        v.append_word(kept_bits(d.equal(max_def), items, n), held);
                    }
                    slots += held;
                }
            }
            Ok(())
        },
    )?;
    match i32::try_from(slots) {
        Ok(_) => Ok(slots),
        Err(_) => Err(Failure::Unsupported),
    }
}

/// [`assemble`] for two list levels (`list<list<T>>`, a list field of a
/// list's structs), without the walk, 64 entries at a time: an entry
/// starts a row (repetition level 0: an outer list, then an inner one if
/// the outer has items), an inner list (1), or adds an item (2). With
/// `slot_structs` (a level and bits), also a bit for each inner list (an
/// outer item slot): set where its definition level reaches that one (a
/// list field's say of the items' null structs). Returns the leaf slots.
#[allow(clippy::too_many_arguments)]
fn assemble_two_levels(
    reps: &[u8],
    defs: &[u8],
    entries: &[Range<usize>],
    [outer_present, inner_present]: [u8; 2],
    max_def: u8,
    [outer, inner]: [&mut ListOut; 2],
    leaf_validity: &mut Option<Bits>,
    mut slot_structs: Option<(u8, &mut Bits)>,
) -> Decoded<usize> {
    if i32::try_from(reps.len()).is_err() {
        return Err(Failure::Unsupported);
    }
    let mut slots = 0usize;
    crate::simd::wide(
        reps.len(),
        #[inline(always)]
        || -> Decoded<()> {
            for range in entries {
                let (reps, defs) = (&reps[range.clone()], &defs[range.clone()]);
                for (reps, defs) in reps.chunks(64).zip(defs.chunks(64)) {
                    let n = reps.len();
                    let (r, d) = (LevelBlock::new(reps), LevelBlock::new(defs));
                    let live = flat::low_bits(n);
                    let (continues, adds) = (r.above(0), r.above(1));
                    let rows = !continues & live;
                    let outer_items = d.above(outer_present);
                    // Entries that start an inner list: a row's whose outer list has
                    // items, or one more of them (repetition level 1).
                    let starts = !adds & outer_items & live;
                    let items = d.above(inner_present);
                    // Continuing a list needs that list to be there with items.
                    let bad = (continues & !adds & !outer_items) | (adds & !items);
                    if bad != 0 {
                        let at = bad.trailing_zeros() as usize;
                        return Err(continues_empty(reps[at], defs[at]));
                    }
                    let outer_there = match outer.validity {
                        Some(_) => d.at_least(outer_present),
                        None => 0,
                    };
                    let inner_before = inner.offsets.len();
                    for at in set_bits(rows) {
                        outer
                            .offsets
                            .push((inner_before + ones_below(starts, at)) as i32);
                        if let Some(v) = &mut outer.validity {
                            v.push(outer_there >> at & 1 == 1);
                        }
                    }
                    let inner_there = match inner.validity {
                        Some(_) => d.at_least(inner_present),
                        None => 0,
                    };
                    let structs_there = match &slot_structs {
                        Some((from, _)) => d.at_least(*from),
                        None => 0,
                    };
                    for at in set_bits(starts) {
                        inner.offsets.push((slots + ones_below(items, at)) as i32);
                        if let Some(v) = &mut inner.validity {
                            v.push(inner_there >> at & 1 == 1);
                        }
                        if let Some((_, bits)) = &mut slot_structs {
                            bits.push(structs_there >> at & 1 == 1);
                        }
                    }
                    let held = items.count_ones() as usize;
                    if let Some(v) = leaf_validity.as_mut() {
                        v.append_word(kept_bits(d.equal(max_def), items, n), held);
                    }
                    slots += held;
                }
            }
            Ok(())
        },
    )?;
    match i32::try_from(slots) {
        Ok(_) => Ok(slots),
        Err(_) => Err(Failure::Unsupported),
    }
}

/// A list continued (repetition level `r`) where definition level `d` says
/// it is null or empty.
fn continues_empty(r: impl std::fmt::Display, d: u8) -> Failure {
    Failure::Corrupt(format!(
        "repetition level {r} continues a list that definition level {d} says is empty"
    ))
}

/// The level entries of the rows a selection keeps, and which of the
/// chunk's values they hold (see [`kept_entries`]).
struct KeptEntries {
    /// The kept rows' entries, as runs of entries.
    entries: Vec<Range<usize>>,
    /// The rows kept.
    rows: usize,
    /// The kept rows' values, as runs of the chunk's values.
    values_kept: Vec<Range<usize>>,
    /// The chunk's values (valid leaf slots), in every row.
    values: usize,
}

/// Where the rows `selection` sets (a bit per row of the chunk's `rows`)
/// are among the level entries, for [`assemble`] to build their lists
/// alone: a filtered read's other rows are stepped over, their values
/// counted and no list of theirs built (building every row's lists was
/// most of a filtered read of list columns).
fn kept_entries(
    reps: &[u8],
    defs: &[u8],
    max_def: u8,
    rows: usize,
    selection: &BooleanBuffer,
) -> Decoded<KeptEntries> {
    if selection.len() != rows {
        return Err(Failure::Unsupported);
    }
    if reps.first().is_some_and(|&r| r != 0) {
        return Err(first_not_a_row());
    }
    let mut kept = KeptEntries {
        entries: Vec::new(),
        rows: selection.count_set_bits(),
        values_kept: Vec::new(),
        values: 0,
    };
    // The entry where row `row` starts.
    let (mut at, mut row) = (0usize, 0usize);
    for (start, end) in selection.set_slices() {
        let from = row_start(reps, at, start - row);
        kept.values += count_of(&defs[at..from], max_def);
        let to = row_start(reps, from, end - start);
        let held = count_of(&defs[from..to], max_def);
        kept.entries.push(from..to);
        kept.values_kept.push(kept.values..kept.values + held);
        kept.values += held;
        (at, row) = (to, end);
    }
    kept.values += count_of(&defs[at..], max_def);
    // Rows past the row group's: the levels and the footer disagree.
    if row_start(reps, at, rows - row) != reps.len() {
        return Err(Failure::Corrupt(format!(
            "the levels hold more than the row group's {rows} rows"
        )));
    }
    Ok(kept)
}

fn first_not_a_row() -> Failure {
    Failure::Corrupt("the first repetition level of a column chunk is not 0".into())
}

/// The entry at which the row `n` rows after the one starting at entry `at`
/// starts (each row starts at a repetition level of 0); the end of the
/// levels where they hold fewer rows.
fn row_start(reps: &[u8], at: usize, n: usize) -> usize {
    if n == 0 || at >= reps.len() {
        return at.min(reps.len());
    }
    // Row starts after the one at `at` still to pass.
    let mut left = n;
    let mut i = at + 1;
    // Whole blocks first: counting zeros in a block vectorises.
    const BLOCK: usize = 256;
    while i + BLOCK <= reps.len() {
        let zeros = count_of(&reps[i..i + BLOCK], 0);
        if zeros >= left {
            break;
        }
        left -= zeros;
        i += BLOCK;
    }
    for (j, &r) in reps[i..].iter().enumerate() {
        if r == 0 {
            left -= 1;
            if left == 0 {
                return i + j;
            }
        }
    }
    reps.len()
}

/// How many of `levels` are `level`.
fn count_of(levels: &[u8], level: u8) -> usize {
    levels.iter().filter(|&&l| l == level).count()
}

/// The shape of `batch`'s first column, a list the decoders here take (for
/// tests, here and in `byte_arrays`).
#[cfg(test)]
pub(crate) fn shape_of_first_column(batch: &arrow_array::RecordBatch) -> Shape {
    use parquet::arrow::ArrowSchemaConverter;
    let schema = batch.schema();
    let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let field = schema.field(0);
    let root = &descr.root_schema().get_fields()[0];
    shape(
        root,
        &descr.column(0),
        field.data_type(),
        field.is_nullable(),
    )
    .expect("the list is taken")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    fn int_lists(depth: usize, nullable: bool) -> Shape {
        let mut lists = Vec::new();
        let mut def = 0u8;
        for _ in 0..depth {
            def += u8::from(nullable);
            lists.push(ListLevel {
                item: Arc::new(Field::new("element", DataType::Int32, nullable)),
                present: def,
                nullable,
                large: false,
                fixed: None,
                map: None,
            });
            def += 1;
        }
        Shape {
            lists,
            leaf: DataType::Int32,
            leaf_nullable: nullable,
            max_def: def + u8::from(nullable),
            gather: 0,
            slot_structs: None,
        }
    }

    #[test]
    fn nested_lists_with_nulls_and_empties_at_each_level() {
        // Rows of list<list<int32?>?>?:
        //   [[1, 2], [], null, [null]], null, [], [[3]]
        // Definition levels: 0 row null, 1 row empty, 2 outer item null,
        // 3 inner list empty, 4 inner item null, 5 value.
        let shape = int_lists(2, true);
        let reps = [0, 2, 1, 1, 1, 0, 0, 0];
        let defs = [5, 5, 3, 2, 4, 0, 1, 5];
        let built = assemble(&reps, &defs, &shape, 4, None).unwrap();
        assert_eq!(built.lists[0].offsets, vec![0, 4, 4, 4]);
        assert_eq!(built.lists[1].offsets, vec![0, 2, 2, 2, 3]);
        assert_eq!(built.leaf_slots, 4);
        let bits = |b: &Option<Bits>| {
            let b = b.as_ref().unwrap();
            (0..b.len()).map(|i| b.bit(i)).collect::<Vec<bool>>()
        };
        assert_eq!(bits(&built.lists[0].validity), [true, false, true, true]);
        assert_eq!(
            bits(&built.lists[1].validity),
            [true, true, false, true, true]
        );
        assert_eq!(bits(&built.leaf_validity), [true, true, false, true]);
    }

    #[test]
    fn required_lists_have_no_validity() {
        // list<int32> with nothing nullable: [[7, 8], [], [9]].
        let shape = int_lists(1, false);
        let built = assemble(&[0, 1, 0, 0], &[1, 1, 0, 1], &shape, 3, None).unwrap();
        assert_eq!(built.lists[0].offsets, vec![0, 2, 2]);
        assert!(built.lists[0].validity.is_none() && built.leaf_validity.is_none());
        assert_eq!(built.leaf_slots, 3);
    }

    #[test]
    fn levels_that_contradict_each_other_are_refused() {
        let shape = int_lists(2, true);
        // A row that starts with a continuation.
        assert!(assemble(&[1, 0], &[5, 5], &shape, 2, None).is_err());
        // Continuing an inner list the definition level says is empty.
        assert!(assemble(&[0, 2], &[3, 3], &shape, 1, None).is_err());
    }

    /// Levels of `rows` random rows of `shape` (nulls and empties at every
    /// level where it allows them).
    fn random_levels(shape: &Shape, rows: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        // One list at `level`, its first entry repeating at `r`.
        fn list(
            shape: &Shape,
            level: usize,
            r: u8,
            next: &mut dyn FnMut(u64) -> u64,
            out: &mut (Vec<u8>, Vec<u8>),
        ) {
            let depth = shape.lists.len();
            let present = shape.lists[level].present;
            let roll = next(10);
            if shape.lists[level].nullable && roll == 0 {
                out.0.push(r);
                out.1.push(present - 1);
                return;
            }
            let items = if roll == 1 { 0 } else { next(5) + 1 };
            if items == 0 {
                out.0.push(r);
                out.1.push(present);
                return;
            }
            for i in 0..items {
                let r = if i == 0 { r } else { level as u8 + 1 };
                if level + 1 < depth {
                    list(shape, level + 1, r, next, out);
                } else {
                    let null = shape.leaf_nullable && next(6) == 0;
                    out.0.push(r);
                    out.1.push(shape.max_def - u8::from(null));
                }
            }
        }
        let mut out = (Vec::new(), Vec::new());
        for _ in 0..rows {
            list(shape, 0, 0, &mut next, &mut out);
        }
        out
    }

    #[test]
    fn one_or_two_list_levels_build_what_the_walk_down_the_levels_builds() {
        for (depth, nullable) in [(1, false), (1, true), (2, false), (2, true)] {
            let shape = int_lists(depth, nullable);
            for seed in 0..20 {
                let (reps, defs) = random_levels(&shape, 500, seed);
                let one = assemble(&reps, &defs, &shape, 500, None).unwrap();
                let mut lists: Vec<ListOut> = (0..depth)
                    .map(|_| ListOut {
                        offsets: Vec::new(),
                        validity: nullable.then(|| Bits::with_capacity(0)),
                    })
                    .collect();
                let mut leaf_validity = shape.leaf_nullable.then(|| Bits::with_capacity(0));
                let every = 0..reps.len();
                let slots = assemble_levels(
                    &reps,
                    &defs,
                    std::slice::from_ref(&every),
                    &shape,
                    &mut lists,
                    &mut leaf_validity,
                )
                .unwrap();
                let walked = Assembled {
                    lists,
                    leaf_validity,
                    leaf_slots: slots,
                    rows: 500,
                    slot_structs: None,
                };
                let case = format!("depth {depth}, nullable {nullable}, seed {seed}");
                assert_eq!(rows_of(&one), rows_of(&walked), "{case}");
                // A list continued where its definition level says it is
                // empty: refused both ways.
                for level in 0..depth {
                    let empty = shape.lists[level].present;
                    let at = (1..reps.len())
                        .find(|&i| usize::from(reps[i]) <= level && defs[i] == empty);
                    if let Some(at) = at {
                        let mut bad = reps.clone();
                        bad[at] = level as u8 + 1;
                        let refused = assemble(&bad, &defs, &shape, 500, None).is_err();
                        assert!(refused, "{case}, an empty list at level {level} continued");
                    }
                }
            }
        }
    }

    #[test]
    fn one_level_built_page_by_page_is_the_list_built_whole() {
        // Pages cut anywhere, rows running on into the next page, as
        // `read_one_level_by_page` builds them.
        for nullable in [false, true] {
            let shape = int_lists(1, nullable);
            for seed in 0..20 {
                let (reps, defs) = random_levels(&shape, 500, seed);
                let whole = assemble(&reps, &defs, &shape, 500, None).unwrap();
                let mut list = ListOut {
                    offsets: Vec::new(),
                    validity: nullable.then(|| Bits::with_capacity(0)),
                };
                let mut leaf_validity = shape.leaf_nullable.then(|| Bits::with_capacity(0));
                let (mut slots, mut at) = (0, 0);
                for page in (0..).map(|k| 1 + (seed as usize * 31 + k * 17) % 97) {
                    let end = (at + page).min(reps.len());
                    let all = 0..end - at;
                    slots = assemble_one_level(
                        &reps[at..end],
                        &defs[at..end],
                        std::slice::from_ref(&all),
                        shape.lists[0].present,
                        shape.max_def,
                        &mut list,
                        &mut leaf_validity,
                        slots,
                    )
                    .unwrap();
                    at = end;
                    if at == reps.len() {
                        break;
                    }
                }
                let paged = Assembled {
                    lists: vec![list],
                    leaf_validity,
                    leaf_slots: slots,
                    rows: 500,
                    slot_structs: None,
                };
                assert_eq!(
                    rows_of(&whole),
                    rows_of(&paged),
                    "nullable {nullable}, seed {seed}"
                );
            }
        }
    }

    /// Each row of `built` written out (`null`, `[...]`, `v` a valid leaf
    /// slot, `n` a null one), for comparing two builds.
    fn rows_of(built: &Assembled) -> Vec<String> {
        let bit = |v: &Option<Bits>, i: usize| v.as_ref().is_none_or(|b| b.bit(i));
        let mut ends: Vec<Vec<i32>> = Vec::new();
        for (level, list) in built.lists.iter().enumerate() {
            let mut offsets = list.offsets.clone();
            let below = match built.lists.get(level + 1) {
                Some(next) => next.offsets.len(),
                None => built.leaf_slots,
            };
            offsets.push(below as i32);
            ends.push(offsets);
        }
        fn show(
            built: &Assembled,
            ends: &[Vec<i32>],
            level: usize,
            i: usize,
            bit: &dyn Fn(&Option<Bits>, usize) -> bool,
        ) -> String {
            if level == built.lists.len() {
                return if bit(&built.leaf_validity, i) {
                    "v".into()
                } else {
                    "n".into()
                };
            }
            if !bit(&built.lists[level].validity, i) {
                return "null".into();
            }
            let (a, b) = (ends[level][i] as usize, ends[level][i + 1] as usize);
            let items: Vec<String> = (a..b)
                .map(|j| show(built, ends, level + 1, j, bit))
                .collect();
            format!("[{}]", items.join(","))
        }
        (0..built.lists[0].offsets.len())
            .map(|row| show(built, &ends, 0, row, &bit))
            .collect()
    }

    #[test]
    fn selected_rows_build_the_lists_the_whole_build_has_for_them() {
        for (depth, nullable) in [(1, false), (1, true), (2, true), (3, true), (2, false)] {
            let shape = int_lists(depth, nullable);
            for seed in 0..40u64 {
                let rows = 1 + (seed as usize * 37) % 700;
                let (reps, defs) = random_levels(&shape, rows, seed);
                let whole = assemble(&reps, &defs, &shape, rows, None).unwrap();
                let all_rows = rows_of(&whole);
                // The dense values' positions of each row, in the whole.
                let mut value_rows = Vec::new();
                let mut row = 0usize;
                for (i, (&r, &d)) in reps.iter().zip(&defs).enumerate() {
                    if r == 0 && i > 0 {
                        row += 1;
                    }
                    if d == shape.max_def {
                        value_rows.push(row);
                    }
                }
                for pattern in 0..6u64 {
                    let selection: BooleanBuffer = (0..rows as u64)
                        .map(|i| match pattern {
                            0 => true,
                            1 => false,
                            2 => i % 2 == 0,
                            3 => i % 97 == 5,
                            4 => (i / 300) % 2 == 1,
                            _ => (i * 2_654_435_761 + seed) % 7 < 2,
                        })
                        .collect();
                    let case =
                        format!("depth {depth} nullable {nullable} seed {seed} pattern {pattern}");
                    let kept = kept_entries(&reps, &defs, shape.max_def, rows, &selection).unwrap();
                    let built = assemble(&reps, &defs, &shape, rows, Some(&kept)).unwrap();
                    let want: Vec<String> = selection
                        .set_indices()
                        .map(|r| all_rows[r].clone())
                        .collect();
                    assert_eq!(rows_of(&built), want, "{case}");
                    assert_eq!(built.rows, selection.count_set_bits(), "{case}");
                    assert_eq!(kept.values, value_rows.len(), "{case}");
                    let kept_values: Vec<usize> = (0..value_rows.len())
                        .filter(|&v| selection.value(value_rows[v]))
                        .collect();
                    let from_runs: Vec<usize> =
                        kept.values_kept.iter().flat_map(|r| r.clone()).collect();
                    assert_eq!(from_runs, kept_values, "{case}");
                }
            }
        }
    }

    #[test]
    fn bit_packed_levels_are_read_as_written_and_checked_against_the_most() {
        let mut scratch = Vec::new();
        // One bit-packed group of eight 2-bit levels: 0 1 2 2 1 0 2 1.
        let mut out = Vec::new();
        read_levels(&[0x03, 164, 97], 2, 8, 2, &mut out, &mut scratch).unwrap();
        assert_eq!(out, [0, 1, 2, 2, 1, 0, 2, 1]);
        // Six of them: the run's last two are not read.
        out.clear();
        read_levels(&[0x03, 164, 97], 2, 6, 2, &mut out, &mut scratch).unwrap();
        assert_eq!(out, [0, 1, 2, 2, 1, 0]);
        // A 3 where the most level is 2: refused; where it is 3: read.
        assert!(read_levels(&[0x03, 167, 97], 2, 8, 2, &mut out, &mut scratch).is_err());
        out.clear();
        read_levels(&[0x03, 167, 97], 2, 8, 3, &mut out, &mut scratch).unwrap();
        assert_eq!(out, [3, 1, 2, 2, 1, 0, 2, 1]);
        // One bit: 1 0 1 1 0 0 0 1.
        out.clear();
        read_levels(&[0x03, 0b1000_1101], 1, 8, 1, &mut out, &mut scratch).unwrap();
        assert_eq!(out, [1, 0, 1, 1, 0, 0, 0, 1]);
        // Three bits (unpacked the wide way): a 6 past a most level of 5.
        let packed = [0x03, 0b0000_0110, 0, 0];
        assert!(read_levels(&packed, 3, 8, 5, &mut out, &mut scratch).is_err());
    }

    #[test]
    fn slot_bits_are_those_of_the_slot_entries_one_by_one() {
        let mut next = super::super::level_masks::test_numbers(3);
        for round in 0..300 {
            let len = (next() % 300) as usize;
            let most = 1 + (next() % 5) as u8;
            let defs: Vec<u8> = (0..len)
                .map(|_| (next() % (u64::from(most) + 1)) as u8)
                .collect();
            let slot_from = (next() % (u64::from(most) + 1)) as u8;
            let from = (next() % (u64::from(most) + 1)) as u8;
            let want: Vec<bool> = defs
                .iter()
                .filter(|&&d| d >= slot_from)
                .map(|&d| d >= from)
                .collect();
            let got = slot_bits(&defs, slot_from, from, want.len()).unwrap();
            let got: Vec<bool> = (0..got.len()).map(|i| got.bit(i)).collect();
            assert_eq!(got, want, "round {round}");
            assert!(slot_bits(&defs, slot_from, from, want.len() + 1).is_err());
        }
    }

    #[test]
    fn runs_of_set_bits_are_counted_across_words() {
        for pattern in 0..5u64 {
            let bits: BooleanBuffer = (0..1000u64)
                .map(|i| match pattern {
                    0 => false,
                    1 => true,
                    2 => i % 3 == 0,
                    3 => (60..70).contains(&i) || (127..130).contains(&i) || i >= 990,
                    _ => (i * 2_654_435_761) % 5 < 2,
                })
                .collect();
            for offset in [0, 1, 63, 64, 200] {
                let part = bits.slice(offset, bits.len() - offset);
                assert_eq!(
                    runs_of_set_bits(&part),
                    part.set_slices().count(),
                    "{pattern} {offset}"
                );
            }
        }
    }

    #[test]
    fn selected_rows_of_levels_holding_more_rows_are_refused() {
        let selection: BooleanBuffer = [true, false].into_iter().collect();
        // Three rows where the row group says two.
        let kept = |reps: &[u8], defs: &[u8]| kept_entries(reps, defs, 1, 2, &selection);
        assert!(kept(&[0, 0, 0], &[1, 1, 1]).is_err());
        // A chunk that starts inside a row.
        assert!(kept(&[1, 0], &[1, 1]).is_err());
        assert!(kept(&[0, 1, 0], &[1, 1, 1]).is_ok());
    }

    #[test]
    fn a_page_claiming_billions_of_levels_reserves_no_more_than_the_cap() {
        // The fuzzer's input 1131:97109: a page header claiming 2^31 values
        // reserved 2 GiB for its levels before reading one.
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        let eight_zeros = [8 << 1, 0]; // one repeated run of 8 zeros, width 1
        let _ = read_levels(&eight_zeros, 1, 1 << 31, 1, &mut out, &mut scratch);
        assert!(out.capacity() <= MOST_RESERVED, "{}", out.capacity());
    }

    #[test]
    fn levels_above_the_maximum_are_refused() {
        // Width 2, one repeated run of the value 3 over 4 levels.
        let bytes = [4 << 1, 3];
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        assert!(read_levels(&bytes, 2, 4, 2, &mut out, &mut scratch).is_err());
        assert!(read_levels(&bytes, 2, 4, 3, &mut out, &mut scratch).is_ok());
        assert_eq!(out, [3, 3, 3, 3]);
    }

    /// `array` written as column "l" (beside an int64), then its first row
    /// group decoded as a list of structs here and by the `parquet` crate.
    fn struct_items_both_ways(
        array: ArrayRef,
        version: parquet::file::properties::WriterVersion,
        dictionary: bool,
    ) -> (Option<ArrayRef>, ArrayRef) {
        use parquet::file::properties::WriterProperties;
        let rows = array.len();
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("l", array.data_type().clone(), true),
        ]));
        let id = Arc::new(arrow_array::Int64Array::from_iter_values(0..rows as i64));
        let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![id, array]).unwrap();
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_encoding(Encoding::PLAIN)
            .set_dictionary_enabled(dictionary)
            .set_data_page_size_limit(2048)
            .set_write_batch_size(256)
            .build();
        let (file, meta, descr) = crate::parquet::written::written_and_parsed(&batch, props);
        let leaves: Vec<usize> = (1..descr.num_columns()).collect();
        let columns: Vec<_> = leaves.iter().map(|&l| descr.column(l)).collect();
        let root = &descr.root_schema().get_fields()[1];
        let ours = struct_items(root, &columns, schema.field(1).data_type(), true).map(|items| {
            let group = meta.row_group(0);
            let chunks = leaves
                .iter()
                .map(|&leaf| {
                    let (start, len) = group.column(leaf).byte_range();
                    let bytes = file.slice(start as usize..(start + len) as usize);
                    (bytes, group.column(leaf).clone())
                })
                .collect();
            decode_struct_items(chunks, &items, rows, 2).unwrap()
        });
        let theirs = crate::parquet::written::read_by_crate(file, rows);
        (ours, Arc::clone(theirs.column(1)))
    }

    /// `values` in lists of 0-4 items; every 7th list null when `nulls`.
    fn in_lists(values: arrow_array::StructArray, nulls: bool) -> ListArray {
        let items = values.len() as i32;
        let field = Arc::new(Field::new("element", values.data_type().clone(), true));
        let mut offsets = vec![0i32];
        while *offsets.last().unwrap() < items {
            let n = (offsets.len() % 5) as i32;
            offsets.push((offsets.last().unwrap() + n).min(items));
        }
        let lists = offsets.len() - 1;
        let valid = arrow_buffer::NullBuffer::from_iter((0..lists).map(|i| !nulls || i % 7 != 3));
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        ListArray::new(field, offsets, Arc::new(values), Some(valid))
    }

    /// `list` decoded here (taken) as the crate reads it.
    fn assert_taken_as_the_crate_reads(
        list: ListArray,
        version: parquet::file::properties::WriterVersion,
        dictionary: bool,
        case: &str,
    ) {
        let (ours, theirs) = struct_items_both_ways(Arc::new(list), version, dictionary);
        let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
        assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
    }

    #[test]
    fn lists_of_structs_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::{Int64Array, StringArray, StructArray};
        use arrow_buffer::NullBuffer;
        use parquet::file::properties::WriterVersion;
        let items = 4_000;
        let struct_of = |nulls: bool| {
            let null = |i: usize, k: usize| nulls && (i + k).is_multiple_of(5);
            let key = StringArray::from_iter(
                (0..items).map(|i| (!null(i, 1)).then(|| format!("k{}", i % 13))),
            );
            let value =
                Int64Array::from_iter((0..items).map(|i| (!null(i, 2)).then_some(i as i64 * 7)));
            let fields = Fields::from(vec![
                Field::new("key", DataType::Utf8, true),
                Field::new("value", DataType::Int64, true),
            ]);
            let valid = NullBuffer::from_iter((0..items).map(|i| !nulls || i % 9 != 4));
            StructArray::new(
                fields,
                vec![Arc::new(key) as ArrayRef, Arc::new(value)],
                Some(valid),
            )
        };
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for nulls in [false, true] {
                    let list = in_lists(struct_of(nulls), nulls);
                    let case = format!("{version:?}, dictionary {dictionary}, nulls {nulls}");
                    assert_taken_as_the_crate_reads(list, version, dictionary, &case);
                }
            }
        }
    }

    #[test]
    fn lists_of_structs_holding_lists_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
        use arrow_array::{Int64Array, StructArray};
        use arrow_buffer::NullBuffer;
        use parquet::file::properties::WriterVersion;
        let items: usize = 3_000;
        // Items of struct<id, points: list<int32>, words: list<list<string>>>
        // (the lists first when `lists_first`), nulls at every level.
        let struct_of = |nulls: bool, lists_first: bool| {
            let id = Int64Array::from_iter(
                (0..items).map(|i| (!(nulls && i % 6 == 1)).then_some(i as i64)),
            );
            let mut points = ListBuilder::new(Int32Builder::new());
            let mut words = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
            for i in 0..items {
                for k in 0..i % 4 {
                    points
                        .values()
                        .append_option((!(nulls && k == 2)).then_some((i + k) as i32));
                    for j in 0..(i + k) % 3 {
                        words
                            .values()
                            .values()
                            .append_value(format!("w{}", (i + j) % 17));
                    }
                    words.values().append(!(nulls && k == 1 && i % 3 == 0));
                }
                points.append(!(nulls && i % 8 == 5));
                words.append(!(nulls && i % 10 == 2));
            }
            let (points, words) = (points.finish(), words.finish());
            let mut fields = vec![
                (
                    Field::new("points", points.data_type().clone(), true),
                    Arc::new(points) as ArrayRef,
                ),
                (
                    Field::new("words", words.data_type().clone(), true),
                    Arc::new(words) as ArrayRef,
                ),
            ];
            let at = if lists_first { fields.len() } else { 0 };
            fields.insert(at, (Field::new("id", DataType::Int64, true), Arc::new(id)));
            let (fields, children): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
            let valid = NullBuffer::from_iter((0..items).map(|i| !nulls || i % 9 != 4));
            StructArray::new(Fields::from(fields), children, Some(valid))
        };
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for (nulls, lists_first) in [(false, false), (true, false), (true, true)] {
                    let list = in_lists(struct_of(nulls, lists_first), nulls);
                    let case = format!(
                        "{version:?}, dictionary {dictionary}, nulls {nulls}, lists first {lists_first}"
                    );
                    assert_taken_as_the_crate_reads(list, version, dictionary, &case);
                }
            }
        }
    }

    #[test]
    fn maps_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::builder::{
            Int32Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder,
        };
        use parquet::file::properties::WriterVersion;
        let rows = 2_000usize;
        // map<string, int64>: null maps, empty maps, null values.
        let mut strings = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
        for i in 0..rows {
            for k in 0..i % 4 {
                strings.keys().append_value(format!("k{}", (i + k) % 23));
                strings
                    .values()
                    .append_option((k != 1 || i % 3 != 0).then_some((i * k) as i64));
            }
            strings.append(i % 9 != 2).unwrap();
        }
        // map<int32, list<int32>>: the values lists of their own.
        let mut listed = MapBuilder::new(
            None,
            Int32Builder::new(),
            ListBuilder::new(Int32Builder::new()),
        );
        for i in 0..rows {
            for k in 0..i % 3 {
                listed.keys().append_value((i + k) as i32);
                for j in 0..(i + k) % 4 {
                    listed
                        .values()
                        .values()
                        .append_option((j != 2).then_some(j as i32));
                }
                listed.values().append(k != 1 || i % 5 != 0);
            }
            listed.append(i % 11 != 6).unwrap();
        }
        // list<map<string, int32>>: a map within a list.
        let mut in_lists = ListBuilder::new(MapBuilder::new(
            None,
            StringBuilder::new(),
            Int32Builder::new(),
        ));
        for i in 0..rows {
            for k in 0..i % 3 {
                for j in 0..(i + k) % 3 {
                    in_lists.values().keys().append_value(format!("m{j}"));
                    in_lists.values().values().append_value((i + j) as i32);
                }
                in_lists.values().append(k != 2).unwrap();
            }
            in_lists.append(i % 7 != 1);
        }
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(strings.finish()),
            Arc::new(listed.finish()),
            Arc::new(in_lists.finish()),
        ];
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for array in &arrays {
                    let case = format!(
                        "{version:?}, dictionary {dictionary}, {}",
                        array.data_type()
                    );
                    let (ours, theirs) =
                        struct_items_both_ways(Arc::clone(array), version, dictionary);
                    let ours = ours.unwrap_or_else(|| panic!("not taken: {case}"));
                    assert_eq!(ours.to_data(), theirs.to_data(), "{case}");
                    assert_eq!(ours.data_type(), array.data_type(), "{case}");
                }
            }
        }
    }

    #[test]
    fn lists_of_structs_holding_structs_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::{Float64Array, Int64Array, StringArray, StructArray};
        use arrow_buffer::NullBuffer;
        use parquet::file::properties::WriterVersion;
        let items = 4_000;
        // Items {id: int64 required, p: {x: float64, y: {s: string, n:
        // int64 required}}}: nulls at each level when `nulls`, the
        // required fields inside nullable structs.
        let item = |nulls: bool| {
            let null = |i: usize, k: usize| nulls && (i + k).is_multiple_of(7);
            let y = StructArray::new(
                Fields::from(vec![
                    Field::new("s", DataType::Utf8, true),
                    Field::new("n", DataType::Int64, false),
                ]),
                vec![
                    Arc::new(StringArray::from_iter(
                        (0..items).map(|i| (!null(i, 1)).then(|| format!("s{}", i % 19))),
                    )) as ArrayRef,
                    Arc::new(Int64Array::from_iter_values(
                        (0..items).map(|i| i as i64 * 3),
                    )),
                ],
                nulls.then(|| NullBuffer::from_iter((0..items).map(|i| i % 5 != 2))),
            );
            let p = StructArray::new(
                Fields::from(vec![
                    Field::new("x", DataType::Float64, true),
                    Field::new("y", y.data_type().clone(), true),
                ]),
                vec![
                    Arc::new(Float64Array::from_iter(
                        (0..items).map(|i| (!null(i, 3)).then_some(i as f64 / 4.0)),
                    )) as ArrayRef,
                    Arc::new(y),
                ],
                nulls.then(|| NullBuffer::from_iter((0..items).map(|i| i % 9 != 4))),
            );
            StructArray::new(
                Fields::from(vec![
                    Field::new("id", DataType::Int64, false),
                    Field::new("p", p.data_type().clone(), true),
                ]),
                vec![
                    Arc::new(Int64Array::from_iter_values(0..items as i64)) as ArrayRef,
                    Arc::new(p),
                ],
                nulls.then(|| NullBuffer::from_iter((0..items).map(|i| i % 11 != 6))),
            )
        };
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                for nulls in [false, true] {
                    let case = format!("{version:?}, dictionary {dictionary}, nulls {nulls}");
                    let list = in_lists(item(nulls), nulls);
                    assert_taken_as_the_crate_reads(list, version, dictionary, &case);
                }
            }
        }
    }

    #[test]
    fn a_list_of_structs_whose_struct_field_starts_with_a_list_is_left_to_the_parquet_crate() {
        // A struct within the items takes its validity from its first leaf,
        // which must be a flat field's.
        use arrow_array::{Int32Array, StructArray};
        let points = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..50).map(|i| Some(vec![Some(i); i as usize % 3])),
        );
        let inner = StructArray::new(
            Fields::from(vec![Field::new("points", points.data_type().clone(), true)]),
            vec![Arc::new(points) as ArrayRef],
            None,
        );
        let values = StructArray::new(
            Fields::from(vec![
                Field::new("n", DataType::Int32, true),
                Field::new("inner", inner.data_type().clone(), true),
            ]),
            vec![
                Arc::new(Int32Array::from_iter_values(0..50)) as ArrayRef,
                Arc::new(inner),
            ],
            None,
        );
        let (ours, _) = struct_items_both_ways(
            Arc::new(in_lists(values, false)),
            parquet::file::properties::WriterVersion::PARQUET_1_0,
            false,
        );
        assert!(ours.is_none());
    }

    #[test]
    fn a_list_of_structs_of_lists_alone_is_left_to_the_parquet_crate() {
        // No flat field to give the items' lists: the crate's.
        use arrow_array::StructArray;
        let points = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..50).map(|i| Some(vec![Some(i); i as usize % 3])),
        );
        let values = StructArray::new(
            Fields::from(vec![Field::new("points", points.data_type().clone(), true)]),
            vec![Arc::new(points) as ArrayRef],
            None,
        );
        let field = Arc::new(Field::new("element", values.data_type().clone(), true));
        let offsets = OffsetBuffer::from_lengths((0..25).map(|_| 2));
        let list = ListArray::new(field, offsets, Arc::new(values), None);
        let (ours, _) = struct_items_both_ways(
            Arc::new(list),
            parquet::file::properties::WriterVersion::PARQUET_1_0,
            false,
        );
        assert!(ours.is_none());
    }

    #[test]
    fn lists_of_booleans_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::builder::{BooleanBuilder, ListBuilder};
        use parquet::file::properties::{WriterProperties, WriterVersion};
        let rows = 5_000;
        // Lists of lists of booleans, nulls and empties at every level.
        let mut lists = ListBuilder::new(ListBuilder::new(BooleanBuilder::new()));
        for i in 0..rows {
            for k in 0..i % 4 {
                for j in 0..(i + k) % 5 {
                    let value = (i * 7 + j * 3) % 5 < 2;
                    lists
                        .values()
                        .values()
                        .append_option((j % 4 != 3).then_some(value));
                }
                lists.values().append((i + k) % 6 != 1);
            }
            lists.append(i % 9 != 2);
        }
        let list = lists.finish();
        let batch =
            arrow_array::RecordBatch::try_from_iter([("l", Arc::new(list) as ArrayRef)]).unwrap();
        // Plain (bit-packed) values in v1 pages, RLE ones in v2 pages.
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_data_page_size_limit(1024)
                .set_write_batch_size(128)
                .build();
            assert_decoded_as_the_crate_reads(&batch, props, &format!("{version:?}"));
        }
    }

    /// `batch`'s first column written with `props` and decoded here, whole
    /// and with a sparse selection (its rows' lists built alone): the
    /// arrays the crate reads.
    fn assert_decoded_as_the_crate_reads(
        batch: &arrow_array::RecordBatch,
        props: parquet::file::properties::WriterProperties,
        case: &str,
    ) {
        let rows = batch.num_rows();
        let shape = shape_of_first_column(batch);
        let file = crate::parquet::written::written(batch, props);
        let (meta, chunk) = crate::parquet::written::first_chunk(&file);
        let column = meta.row_group(0).column(0);
        let theirs = crate::parquet::written::read_by_crate(file.clone(), rows);
        let ours = decode_column(chunk.clone(), column, &shape, rows, None).unwrap();
        assert_eq!(ours.data_type(), theirs.column(0).data_type(), "{case}");
        assert_eq!(ours.to_data(), theirs.column(0).to_data(), "{case}");
        let keep = BooleanBuffer::from_iter((0..rows).map(|i| i % 40 < 2));
        let ours = decode_column(chunk, column, &shape, rows, Some(&keep)).unwrap();
        let expected = flat::selected_rows(Arc::clone(theirs.column(0)), Some(&keep)).unwrap();
        assert_eq!(ours.to_data(), expected.to_data(), "{case}, selected");
    }

    #[test]
    fn fixed_size_lists_decode_as_the_parquet_crate_reads_them() {
        use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
        let rows = 3_000;
        // Null lists (no items in the file, 4 slots in Arrow) and null items.
        for null_lists in [false, true] {
            let mut lists = FixedSizeListBuilder::new(Float32Builder::new(), 4);
            for i in 0..rows {
                for k in 0..4 {
                    let item = (i * 4 + k) as f32 / 7.0;
                    lists
                        .values()
                        .append_option(((i + k) % 11 != 3).then_some(item));
                }
                lists.append(!null_lists || i % 13 != 5);
            }
            let batch = arrow_array::RecordBatch::try_from_iter([(
                "l",
                Arc::new(lists.finish()) as ArrayRef,
            )])
            .unwrap();
            let props = parquet::file::properties::WriterProperties::builder()
                .set_data_page_size_limit(1024)
                .set_write_batch_size(128)
                .build();
            let case = format!("null lists {null_lists}");
            assert_decoded_as_the_crate_reads(&batch, props, &case);
        }
    }

    #[test]
    fn fixed_size_lists_of_another_length_are_refused() {
        let offsets = [0, 2, 4, 7];
        let item = Arc::new(Field::new("item", DataType::Int32, true));
        let child: ArrayRef = Arc::new(arrow_array::Int32Array::from_iter_values(0..7));
        let refused = fixed_size_lists(Arc::clone(&item), 2, &offsets, child, None);
        assert!(matches!(refused, Err(Failure::Corrupt(_))));
        // Null lists of a size no offset reaches: left to the crate, not
        // allocated.
        let nulls = Some(NullBuffer::from(vec![false; 3]));
        let empty: ArrayRef = Arc::new(arrow_array::Int32Array::from_iter_values(0..0));
        let huge = fixed_size_lists(item, 1 << 30, &[0, 0, 0, 0], empty, nulls);
        assert!(matches!(huge, Err(Failure::Unsupported)));
    }

    /// `list` written as column "l" with the default properties: its schema,
    /// the file and its parsed footer.
    fn written_list(
        list: ListArray,
    ) -> (
        arrow_schema::SchemaRef,
        Bytes,
        parquet::file::metadata::ParquetMetaData,
    ) {
        use parquet::file::metadata::ParquetMetaDataReader;
        let batch =
            arrow_array::RecordBatch::try_from_iter([("l", Arc::new(list) as ArrayRef)]).unwrap();
        let props = parquet::file::properties::WriterProperties::default();
        let file = crate::parquet::written::written(&batch, props);
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        (batch.schema(), file, meta)
    }

    #[test]
    fn a_list_field_that_disagrees_with_the_first_is_refused() {
        use arrow_array::{Int32Array, StructArray};
        use arrow_buffer::NullBuffer;
        use parquet::arrow::ArrowSchemaConverter;
        // Files of list<struct<a: int32, b: list<int32>>>, three items of
        // [1], [2, 3], [4]: in lists `offsets`, the struct null at `null`.
        let written = |offsets: Vec<i32>, null: usize| {
            let b = ListArray::from_iter_primitive::<Int32Type, _, _>([
                Some(vec![Some(1)]),
                Some(vec![Some(2), Some(3)]),
                Some(vec![Some(4)]),
            ]);
            let fields = Fields::from(vec![
                Field::new("a", DataType::Int32, true),
                Field::new("b", b.data_type().clone(), true),
            ]);
            let values = StructArray::new(
                fields,
                vec![
                    Arc::new(Int32Array::from(vec![7, 8, 9])) as ArrayRef,
                    Arc::new(b),
                ],
                Some(NullBuffer::from_iter((0..3).map(|i| i != null))),
            );
            let item = Arc::new(Field::new("element", values.data_type().clone(), true));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            written_list(ListArray::new(item, offsets, Arc::new(values), None))
        };
        let (schema, one, one_meta) = written(vec![0, 2, 3], 0);
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let columns = vec![descr.column(0), descr.column(1)];
        let root = &descr.root_schema().get_fields()[0];
        let field = schema.field(0);
        let items = struct_items(root, &columns, field.data_type(), field.is_nullable())
            .expect("a list of structs of an int32 and a list of int32 is taken");
        let chunk = |file: &Bytes, meta: &parquet::file::metadata::ParquetMetaData, leaf| {
            let column = meta.row_group(0).column(leaf);
            let (start, len) = column.byte_range();
            (
                file.slice(start as usize..(start + len) as usize),
                column.clone(),
            )
        };
        let both = vec![chunk(&one, &one_meta, 0), chunk(&one, &one_meta, 1)];
        assert_eq!(decode_struct_items(both, &items, 2, 1).unwrap().len(), 2);
        // The list field from a file with other lists, or the null struct
        // elsewhere: refused.
        for (offsets, null) in [(vec![0, 1, 3], 0), (vec![0, 2, 3], 1)] {
            let (_, other, other_meta) = written(offsets.clone(), null);
            let mixed = vec![chunk(&one, &one_meta, 0), chunk(&other, &other_meta, 1)];
            match decode_struct_items(mixed, &items, 2, 1) {
                Err(Failure::Corrupt(detail)) => assert!(detail.contains("disagree"), "{detail}"),
                other => panic!("{offsets:?} {null}: {:?}", other.map(|a| a.len())),
            }
        }
    }

    #[test]
    fn fields_that_disagree_on_their_lists_are_refused() {
        use arrow_array::{Int32Array, StructArray};
        use parquet::arrow::ArrowSchemaConverter;
        // Two files of list<struct<a: int32, b: int32>> with the same items
        // and rows, in lists of other lengths: [[1, 2], [3]] and [[1], [2, 3]].
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Int32, true),
        ]);
        let written = |offsets: Vec<i32>| {
            let values = StructArray::new(
                fields.clone(),
                vec![
                    Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
                    Arc::new(Int32Array::from(vec![4, 5, 6])),
                ],
                None,
            );
            let item = Arc::new(Field::new("element", values.data_type().clone(), true));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            written_list(ListArray::new(item, offsets, Arc::new(values), None))
        };
        let (schema, one, one_meta) = written(vec![0, 2, 3]);
        let (_, other, other_meta) = written(vec![0, 1, 3]);
        let descr = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let columns = vec![descr.column(0), descr.column(1)];
        let root = &descr.root_schema().get_fields()[0];
        let items = struct_items(
            root,
            &columns,
            schema.field(0).data_type(),
            schema.field(0).is_nullable(),
        )
        .unwrap_or_else(|| panic!("{schema:?} {root:?}"));
        let chunk = |file: &Bytes, meta: &'_ parquet::file::metadata::ParquetMetaData, leaf| {
            let (start, len) = meta.row_group(0).column(leaf).byte_range();
            file.slice(start as usize..(start + len) as usize)
        };
        // Both fields from one file: read.
        let agreeing = vec![
            (
                chunk(&one, &one_meta, 0),
                one_meta.row_group(0).column(0).clone(),
            ),
            (
                chunk(&one, &one_meta, 1),
                one_meta.row_group(0).column(1).clone(),
            ),
        ];
        assert_eq!(
            decode_struct_items(agreeing, &items, 2, 1).unwrap().len(),
            2
        );
        // The second field from the other file: refused, not mixed up.
        let disagreeing = vec![
            (
                chunk(&one, &one_meta, 0),
                one_meta.row_group(0).column(0).clone(),
            ),
            (
                chunk(&other, &other_meta, 1),
                other_meta.row_group(0).column(1).clone(),
            ),
        ];
        match decode_struct_items(disagreeing, &items, 2, 1) {
            Err(Failure::Corrupt(detail)) => assert!(detail.contains("disagree"), "{detail}"),
            other => panic!("{:?}", other.map(|a| a.len())),
        }
    }
}
