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
//! Only the standard three-level LIST layout (an annotated group holding one
//! repeated group holding the element) with a numeric, string or binary
//! leaf is taken, into `List` or `LargeList` (and strings into `Utf8` or
//! `LargeUtf8`: polars writes the large types into a file's Arrow schema)
//! with the nullability the file says; anything else is
//! [`Failure::Unsupported`] and goes to the crate.

use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, LargeListArray, ListArray, OffsetSizeTrait, PrimitiveArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, TimeUnit as ArrowTimeUnit};
use bytes::Bytes;
use parquet::basic::{ConvertedType, Encoding, LogicalType, Repetition};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::schema::types::{ColumnDescriptor, Type};

use super::byte_arrays;
use super::flat::{
    self, dictionary_of, each_run, gather, i32_of, next_page_with, numeric_values, plain, scatter,
    Bits, Decoded, Failure, NextPage,
};
use super::hybrid::{unpack_chunks, Run};
use super::pages::ChunkPages;
use crate::memory::reserve_unfaulted;
use crate::nontemporal::Reads;

/// One list level of a column, outermost first.
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
}

/// How a list column is laid out in its levels.
pub(crate) struct Shape {
    lists: Vec<ListLevel>,
    /// The Arrow type of the values.
    leaf: DataType,
    leaf_nullable: bool,
    max_def: u8,
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

/// The layout of leaf `column` of top-level field `root` (the file's schema
/// node) when this module decodes it into `target` (the Arrow type the
/// crate gives the field, `nullable` or not); `None` otherwise.
pub(crate) fn shape(
    root: &Type,
    column: &ColumnDescriptor,
    target: &DataType,
    nullable: bool,
) -> Option<Shape> {
    let mut node = root;
    let mut ty = target;
    let mut optional = repetition(node)? == Repetition::OPTIONAL;
    if optional != nullable {
        return None;
    }
    let mut def: u8 = 0;
    let mut lists = Vec::new();
    while let DataType::List(item) | DataType::LargeList(item) = ty {
        let large = matches!(ty, DataType::LargeList(_));
        // An annotated group holding one repeated group holding the element.
        if !node.is_group() || !is_list(node) || repetition(node)? == Repetition::REPEATED {
            return None;
        }
        let [repeated] = node.get_fields() else {
            return None;
        };
        if !repeated.is_group() || repetition(repeated)? != Repetition::REPEATED {
            return None;
        }
        let [element] = repeated.get_fields() else {
            return None;
        };
        def += u8::from(optional);
        lists.push(ListLevel {
            item: Arc::clone(item),
            present: def,
            nullable: optional,
            large,
        });
        def = def.checked_add(1)?;
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
    if lists.is_empty() || node.is_group() {
        return None;
    }
    def = def.checked_add(u8::from(optional))?;
    let numeric = matches!(
        ty,
        DataType::Int8
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
    let same_values = match (flat::value_type(column)?, ty) {
        (DataType::Timestamp(unit, _), DataType::Timestamp(want, _)) => unit == *want,
        (DataType::Utf8, DataType::LargeUtf8) | (DataType::Binary, DataType::LargeBinary) => true,
        (natural, _) => natural == *ty,
    };
    let levels_match = i16::from(def) == column.max_def_level()
        && usize::try_from(column.max_rep_level()).ok() == Some(lists.len());
    (numeric && same_values && levels_match).then(|| Shape {
        lists,
        leaf: ty.clone(),
        leaf_nullable: optional,
        max_def: def,
    })
}

/// Decodes one column chunk of `rows` rows from `bytes` (the whole chunk,
/// which starts at file offset `meta.byte_range().0`) as laid out by
/// `shape`, into the list type `shape` was made for.
pub(crate) fn decode_column(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    shape: &Shape,
    rows: usize,
) -> Decoded<ArrayRef> {
    let pages = ChunkPages::new(bytes, meta.compression()).ok_or(Failure::Unsupported)?;
    // Every buffer is sized once from the chunk's count of levels (a claim
    // of the file's, so capped: past it they grow as they must); grown by
    // doubling they were twice the memory, all of it fresh pages.
    let levels = usize::try_from(meta.num_values())
        .unwrap_or(0)
        .min(MOST_RESERVED);
    macro_rules! values {
        ($t:ty, $n:literal, $convert:expr) => {
            lists_of::<$t, $n>(pages, shape, rows, levels, $convert)?
        };
    }
    Ok(match &shape.leaf {
        DataType::Utf8 => lists_of_bytes::<i32>(pages, shape, rows, levels, true)?,
        DataType::Binary => lists_of_bytes::<i32>(pages, shape, rows, levels, false)?,
        DataType::LargeUtf8 => lists_of_bytes::<i64>(pages, shape, rows, levels, true)?,
        DataType::LargeBinary => lists_of_bytes::<i64>(pages, shape, rows, levels, false)?,
        numeric => numeric_values!(numeric, values, return Err(Failure::Unsupported)),
    })
}

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
}

/// Numbers of `N`-byte physical values, `convert`ed.
struct Numbers<V, F, const N: usize> {
    values: Vec<V>,
    dictionary: Option<Vec<V>>,
    convert: F,
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
) -> Decoded<ArrayRef> {
    if !PrimitiveArray::<T>::is_compatible(&shape.leaf) {
        return Err(Failure::Unsupported);
    }
    let mut leaf = Numbers::<T::Native, _, N> {
        values: Vec::with_capacity(expected),
        dictionary: None,
        convert,
    };
    let mut built = read_lists(&mut pages, shape, rows, expected, &mut leaf)?;
    // The values of the leaf slots: the valid ones in order, nulls between.
    let (values, nulls) = match built.leaf_validity.take() {
        Some(validity) => {
            let mut out = Vec::with_capacity(built.leaf_slots);
            scatter(&validity, 0, built.leaf_slots, &leaf.values, &mut out);
            (out, validity.into_nulls())
        }
        None => (leaf.values, None),
    };
    let leaf = PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
        .with_data_type(shape.leaf.clone());
    wrap(shape, built, Arc::new(leaf))
}

/// A list column of strings (`utf8`) or binary, whose leaf has offsets of
/// type `O`.
fn lists_of_bytes<O: OffsetSizeTrait>(
    mut pages: ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    utf8: bool,
) -> Decoded<ArrayRef> {
    let mut leaf = byte_arrays::Values::<O>::new(utf8, expected);
    let mut built = read_lists(&mut pages, shape, rows, expected, &mut leaf)?;
    let validity = built.leaf_validity.take();
    let array = leaf.into_array(validity, built.leaf_slots)?;
    wrap(shape, built, array)
}

/// Reads the chunk's pages into `leaf` and builds its list levels, checking
/// that the leaf got a value for every valid slot.
fn read_lists(
    pages: &mut ChunkPages,
    shape: &Shape,
    rows: usize,
    expected: usize,
    leaf: &mut impl Leaf,
) -> Decoded<Assembled> {
    let levels = read_pages(pages, shape, expected, leaf)?;
    let built = assemble(&levels.reps, &levels.defs, shape, rows)?;
    let valid = built
        .leaf_validity
        .as_ref()
        .map_or(built.leaf_slots, |v| v.count_ones(0));
    if leaf.len() != valid {
        return Err(Failure::Corrupt(format!(
            "{} values for {valid} valid list items",
            leaf.len()
        )));
    }
    Ok(built)
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
    let mut child = leaf;
    let mut slots = built.leaf_slots;
    for (level, mut list) in shape.lists.iter().zip(built.lists).rev() {
        list.offsets.push(slots as i32);
        slots = list.offsets.len() - 1;
        let nulls = list.validity.and_then(Bits::into_nulls);
        let item = Arc::clone(&level.item);
        // The offsets only ever grow, so `OffsetBuffer::new` cannot panic;
        // `try_new` checks the rest (lengths, the item's type and nulls).
        child = if level.large {
            let wide: Vec<i64> = list.offsets.iter().map(|&o| i64::from(o)).collect();
            let offsets = OffsetBuffer::new(ScalarBuffer::from(wide));
            LargeListArray::try_new(item, offsets, child, nulls).map(|a| Arc::new(a) as ArrayRef)
        } else {
            let offsets = OffsetBuffer::new(ScalarBuffer::from(list.offsets));
            ListArray::try_new(item, offsets, child, nulls).map(|a| Arc::new(a) as ArrayRef)
        }
        .map_err(|e| Failure::Corrupt(e.to_string()))?;
    }
    Ok(child)
}

/// Reads every page of the chunk: levels appended as bytes, valid values
/// (plain or dictionary-encoded) appended to `leaf`.
fn read_pages(
    pages: &mut ChunkPages,
    shape: &Shape,
    expected: usize,
    leaf: &mut impl Leaf,
) -> Decoded<Levels> {
    let max_rep = shape.lists.len() as u8;
    let (rep_width, def_width) = (bit_width(max_rep), bit_width(shape.max_def));
    let mut out = Levels {
        reps: Vec::with_capacity(expected),
        defs: Vec::with_capacity(expected),
    };
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
    }
    Ok(out)
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
    out.reserve(count);
    let too_high = |level: u32| Failure::Corrupt(format!("a level of {level} (at most {max})"));
    each_run(bytes, width, count, "levels", |run, n| match run {
        Run::Repeated { value, .. } => {
            if value > u32::from(max) {
                return Err(too_high(value));
            }
            out.extend(std::iter::repeat_n(value as u8, n));
            Ok(())
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
}

/// Builds every list level's offsets and validity, and the leaf slots'
/// validity, from the column's repetition and definition levels in one
/// pass.
///
/// An entry with repetition level `r` continues the lists of levels below
/// `r` and starts a new slot at level `r` (a new row when `r` is 0); from
/// there, each level whose list is there and not empty (its definition
/// level reached) starts a slot at the level below it, down to the leaf.
fn assemble(reps: &[u8], defs: &[u8], shape: &Shape, rows: usize) -> Decoded<Assembled> {
    let depth = shape.lists.len();
    let max_def = shape.max_def;
    // The outermost level has a list a row; one below holds at most a list
    // a level entry.
    let most = |level: usize| if level == 0 { rows + 1 } else { defs.len() + 1 };
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
            .then(|| Bits::with_capacity(defs.len().min(MOST_RESERVED)));
        (lists, leaf_validity)
    });
    let mut leaf_slots = 0usize;
    if reps.first().is_some_and(|&r| r != 0) {
        return Err(Failure::Corrupt(
            "the first repetition level of a column chunk is not 0".into(),
        ));
    }
    for (&r, &d) in reps.iter().zip(defs) {
        let r = usize::from(r);
        // Most entries are one more value of the innermost list.
        if r == depth && d == max_def {
            if let Some(v) = &mut leaf_validity {
                v.push(true);
            }
            leaf_slots += 1;
            continue;
        }
        // Continuing a list needs that list to be there with items.
        if r > 0 && d < shape.lists[r - 1].present + 1 {
            return Err(Failure::Corrupt(format!(
                "repetition level {r} continues a list that definition level {d} says is empty"
            )));
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
            if let Some(v) = &mut leaf_validity {
                v.push(d == max_def);
            }
            leaf_slots += 1;
        }
    }
    if i32::try_from(leaf_slots).is_err() {
        return Err(Failure::Unsupported);
    }
    Ok(Assembled {
        lists,
        leaf_validity,
        leaf_slots,
        rows,
    })
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
            });
            def += 1;
        }
        Shape {
            lists,
            leaf: DataType::Int32,
            leaf_nullable: nullable,
            max_def: def + u8::from(nullable),
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
        let built = assemble(&reps, &defs, &shape, 4).unwrap();
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
        let built = assemble(&[0, 1, 0, 0], &[1, 1, 0, 1], &shape, 3).unwrap();
        assert_eq!(built.lists[0].offsets, vec![0, 2, 2]);
        assert!(built.lists[0].validity.is_none() && built.leaf_validity.is_none());
        assert_eq!(built.leaf_slots, 3);
    }

    #[test]
    fn levels_that_contradict_each_other_are_refused() {
        let shape = int_lists(2, true);
        // A row that starts with a continuation.
        assert!(assemble(&[1, 0], &[5, 5], &shape, 2).is_err());
        // Continuing an inner list the definition level says is empty.
        assert!(assemble(&[0, 2], &[3, 3], &shape, 1).is_err());
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
}
