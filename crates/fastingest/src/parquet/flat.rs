//! Flat primitive columns (top level, not repeated, at most one definition
//! level: booleans, integers, floats, dates, timestamps, decimals) decoded
//! straight into their Arrow buffers (strings and binary: see
//! [`super::byte_arrays`]).
//!
//! Why: the `parquet` crate's record reader decodes a nullable column's
//! values densely and then moves them apart to make room for the nulls,
//! builds the validity from one `i16` per row, and reads booleans one byte
//! per value; on small integers and booleans with nulls that was 2/3 of a
//! read's CPU (profiled: `pad_nulls`, `read_def_levels`, `BooleanBuffer`
//! from `&[bool]`). Here the definition levels are read run by run into the
//! validity bitmap (a bit-packed run of levels *is* the bitmap), and each
//! run of valid rows is one copy into the output.
//!
//! Only what the crate would decode to the same Arrow type with no hint is
//! taken (the column's natural type); anything else, or an encoding not
//! handled here, is [`Failure::Unsupported`] and goes to the crate.

use std::mem::MaybeUninit;
use std::sync::Arc;

use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit as ArrowTimeUnit};
use bytes::Bytes;
use parquet::basic::{ConvertedType, Encoding, LogicalType, TimeUnit, Type as PhysicalType};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::schema::types::ColumnDescriptor;

use super::byte_arrays;
use super::byte_stream_split;
use super::hybrid::{unpack_chunks, Run, Runs};
use super::pages::{ChunkPages, Page, PageWindow};
use crate::nontemporal::{self, Append, Reads};

/// Why a column was not decoded here (either way the `parquet` crate then
/// decodes it, and names what is wrong with a damaged one).
#[derive(Debug)]
pub(crate) enum Failure {
    /// Not a shape this decoder takes.
    Unsupported,
    /// Not what this decoder expects of the column's bytes (in words).
    Corrupt(String),
}

pub(crate) type Decoded<T> = std::result::Result<T, Failure>;

/// An empty vector with room for `n` values, sized from the footer's and
/// the page headers' counts (see `decode::rows_backed`), or `Unsupported`
/// where the allocator refuses the room (a damaged file's counts that agree,
/// in a process with capped memory): the crate then decodes the column a
/// batch at a time, and says what is wrong with it, instead of the process
/// aborting.
///
/// The room is written whole, so it is faulted in ahead on a decode thread
/// (see [`crate::memory`]), past the size the allocator does that for.
pub(crate) fn room_for<T>(n: usize) -> Decoded<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| Failure::Unsupported)?;
    let size = out.capacity().saturating_mul(std::mem::size_of::<T>());
    if size > crate::memory::PREFAULT_UP_TO && crate::memory::should_prefault_written(size) {
        // SAFETY: the range is the vector's own capacity, one live block.
        unsafe { crate::memory::prefault(out.as_mut_ptr().cast(), size) };
    }
    Ok(out)
}

/// The Arrow type the `parquet` crate gives `column` when nothing asks for
/// another, for the columns this module decodes; `None` for the rest.
pub(crate) fn natural_type(column: &ColumnDescriptor) -> Option<DataType> {
    if column.max_rep_level() != 0 || column.max_def_level() > 1 || column.path().parts().len() != 1
    {
        return None;
    }
    // Spark's and Hive's legacy timestamps: what the crate makes of them
    // unhinted (a flat column only: lists of them are the crate's).
    if column.physical_type() == PhysicalType::INT96 {
        return Some(DataType::Timestamp(ArrowTimeUnit::Nanosecond, None));
    }
    value_type(column)
}

/// The Arrow type the `parquet` crate gives the values of leaf `column`
/// (whatever lists it is in), for the types this module decodes.
pub(super) fn value_type(column: &ColumnDescriptor) -> Option<DataType> {
    let logical = column.logical_type_ref();
    let converted = column.converted_type();
    let int = match logical {
        Some(LogicalType::Integer(int)) => Some((int.bit_width, int.is_signed)),
        Some(_) => None,
        None => match converted {
            ConvertedType::INT_8 => Some((8, true)),
            ConvertedType::INT_16 => Some((16, true)),
            ConvertedType::INT_32 => Some((32, true)),
            ConvertedType::INT_64 => Some((64, true)),
            ConvertedType::UINT_8 => Some((8, false)),
            ConvertedType::UINT_16 => Some((16, false)),
            ConvertedType::UINT_32 => Some((32, false)),
            ConvertedType::UINT_64 => Some((64, false)),
            _ => None,
        },
    };
    let plain = logical.is_none() && converted == ConvertedType::NONE;
    // What the crate makes of a decimal of up to 38 digits stored as
    // INT32, INT64 or a fixed-length array of up to 16 bytes.
    let (precision, scale) = match logical {
        Some(LogicalType::Decimal(d)) => (d.precision, d.scale),
        None if converted == ConvertedType::DECIMAL => {
            (column.type_precision(), column.type_scale())
        }
        _ => (-1, -1),
    };
    let decimal = match (u8::try_from(precision), i8::try_from(scale)) {
        (Ok(p @ 1..=38), Ok(s)) if s >= 0 => Some(DataType::Decimal128(p, s)),
        _ => None,
    };
    let is_date = matches!(logical, Some(LogicalType::Date))
        || (logical.is_none() && converted == ConvertedType::DATE);
    match column.physical_type() {
        PhysicalType::INT32 | PhysicalType::INT64 if decimal.is_some() => decimal,
        PhysicalType::BOOLEAN if plain => Some(DataType::Boolean),
        PhysicalType::FLOAT if plain => Some(DataType::Float32),
        PhysicalType::DOUBLE if plain => Some(DataType::Float64),
        PhysicalType::INT32 if plain => Some(DataType::Int32),
        PhysicalType::INT32 if is_date => Some(DataType::Date32),
        PhysicalType::INT32 => match int? {
            (8, true) => Some(DataType::Int8),
            (16, true) => Some(DataType::Int16),
            (32, true) => Some(DataType::Int32),
            (8, false) => Some(DataType::UInt8),
            (16, false) => Some(DataType::UInt16),
            (32, false) => Some(DataType::UInt32),
            _ => None,
        },
        PhysicalType::INT64 if plain => Some(DataType::Int64),
        PhysicalType::INT64 => match (logical, converted) {
            (Some(LogicalType::Timestamp(t)), _) => Some(DataType::Timestamp(
                match t.unit {
                    TimeUnit::MILLIS => ArrowTimeUnit::Millisecond,
                    TimeUnit::MICROS => ArrowTimeUnit::Microsecond,
                    TimeUnit::NANOS => ArrowTimeUnit::Nanosecond,
                },
                t.is_adjusted_to_u_t_c.then(|| "UTC".into()),
            )),
            (None, ConvertedType::TIMESTAMP_MILLIS) => Some(DataType::Timestamp(
                ArrowTimeUnit::Millisecond,
                Some("UTC".into()),
            )),
            (None, ConvertedType::TIMESTAMP_MICROS) => Some(DataType::Timestamp(
                ArrowTimeUnit::Microsecond,
                Some("UTC".into()),
            )),
            _ => match int? {
                (64, true) => Some(DataType::Int64),
                (64, false) => Some(DataType::UInt64),
                _ => None,
            },
        },
        PhysicalType::FIXED_LEN_BYTE_ARRAY if (1..=16).contains(&column.type_length()) => decimal,
        PhysicalType::BYTE_ARRAY => match (logical, converted) {
            (Some(LogicalType::String), _) | (None, ConvertedType::UTF8) => Some(DataType::Utf8),
            (None, ConvertedType::NONE) => Some(DataType::Binary),
            _ => None,
        },
        _ => None,
    }
}

/// Whether this module decodes `column` into `target` (the type the
/// `parquet` crate gives it, after any hint from the file's Arrow schema):
/// the column's [`natural_type`], or a timestamp of the same unit in another
/// time zone (the same values, labelled otherwise).
pub(crate) fn decodes(column: &ColumnDescriptor, target: &DataType) -> bool {
    decodes_as(natural_type(column), column, target)
}

/// Whether [`decode_field`] decodes struct field `column` into `target`.
pub(crate) fn decodes_field(column: &ColumnDescriptor, target: &DataType) -> bool {
    column.max_rep_level() == 0 && decodes_as(value_type(column), column, target)
}

/// [`decodes`] for a leaf whose own type is `natural` (a top-level column's
/// [`natural_type`], or a struct field's [`value_type`]).
fn decodes_as(natural: Option<DataType>, column: &ColumnDescriptor, target: &DataType) -> bool {
    match (natural, target) {
        // An INT96 timestamp converts to any unit the file's Arrow schema
        // asks for, as the crate converts it.
        (Some(DataType::Timestamp(unit, _)), DataType::Timestamp(want, _)) => {
            unit == *want || column.physical_type() == PhysicalType::INT96
        }
        // The same values with `i64` offsets (a file's Arrow schema asks
        // for them: polars and pandas write `large_string`).
        (Some(DataType::Utf8), DataType::LargeUtf8)
        | (Some(DataType::Binary), DataType::LargeBinary) => true,
        // `read_dictionary`: a string or binary column's own dictionary.
        (Some(natural @ (DataType::Utf8 | DataType::Binary)), DataType::Dictionary(key, value)) => {
            matches!(**key, DataType::Int8 | DataType::Int16 | DataType::Int32)
                && **value == natural
        }
        (natural, _) => natural.as_ref() == Some(target),
    }
}

/// Decodes one column chunk of `rows` rows from `bytes` (the whole chunk,
/// which starts at file offset `meta.byte_range().0`) into `target`, which
/// must be a type this module [`decodes`] the column into.
///
/// With a `selection` (one bit per row of the chunk), only the rows it
/// sets are returned: each page is cut to them as it is decoded (the whole
/// column is never built), and a page that holds none of them is passed
/// over undecompressed.
///
/// `gaps` (see [`ChunkPages::with_gaps`]): where `bytes` lacks data pages
/// the page index ruled out, and their rows, which the selection must not
/// keep; empty for a whole chunk.
pub(crate) fn decode_column(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    target: &DataType,
    rows: usize,
    selection: Option<&BooleanBuffer>,
    gaps: Vec<(usize, usize)>,
) -> Decoded<ArrayRef> {
    if !decodes(column, target) {
        return Err(Failure::Unsupported);
    }
    if selection.is_some_and(|s| s.len() != rows) || (selection.is_none() && !gaps.is_empty()) {
        return Err(Failure::Unsupported);
    }
    let mut pages = ChunkPages::new(bytes, meta.compression())
        .ok_or(Failure::Unsupported)?
        .with_gaps(gaps);
    // A data page without a selected row is passed over undecompressed,
    // whichever decoder reads the pages; each cuts the pages it reads to
    // the selected rows.
    if let Some(keep) = selection {
        pages.skip_unselected(keep);
    }
    let definition = Definition::flat(column.max_def_level() == 1);
    decode_pages(pages, column, target, rows, selection, definition)
}

/// The rows of `window` (a run of the chunk's data pages: see
/// [`super::pages::page_windows`]) of a flat column chunk (`bytes`, whole),
/// decoded as [`decode_column`] decodes all of them: a large chunk's runs
/// are decoded on several threads at once.
pub(crate) fn decode_window(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    target: &DataType,
    window: &PageWindow,
) -> Decoded<ArrayRef> {
    decode_window_rows(bytes, meta, column, target, window, None)
}

/// The rows `selection` (a bit per row of `window`) keeps of `window`, as
/// [`decode_column`] keeps a selection's rows: a page holding none of them
/// is passed over undecompressed, the others cut to them as they decode
/// (a filtered stream's slab: see `parquet::slabs`).
pub(crate) fn decode_window_selected(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    target: &DataType,
    window: &PageWindow,
    selection: &BooleanBuffer,
) -> Decoded<ArrayRef> {
    if selection.len() != window.rows {
        return Err(Failure::Unsupported);
    }
    decode_window_rows(bytes, meta, column, target, window, Some(selection))
}

/// [`decode_window`] and [`decode_window_selected`].
fn decode_window_rows(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    target: &DataType,
    window: &PageWindow,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    if !decodes(column, target) {
        return Err(Failure::Unsupported);
    }
    let mut pages = ChunkPages::new(bytes, meta.compression())
        .ok_or(Failure::Unsupported)?
        .within(window);
    if let Some(keep) = selection {
        pages.skip_unselected(keep);
    }
    let definition = Definition::flat(column.max_def_level() == 1);
    decode_pages(pages, column, target, window.rows, selection, definition)
}

/// Decodes one field of a struct (see [`super::structs`]): a column chunk
/// of `rows` rows, whole, as [`decode_column`] does a top-level column,
/// its nulls where its levels are below `definition.max`.
pub(crate) fn decode_field(
    bytes: Bytes,
    meta: &ColumnChunkMetaData,
    column: &ColumnDescriptor,
    target: &DataType,
    rows: usize,
    definition: Definition,
) -> Decoded<ArrayRef> {
    if !decodes_field(column, target) {
        return Err(Failure::Unsupported);
    }
    let pages = ChunkPages::new(bytes, meta.compression()).ok_or(Failure::Unsupported)?;
    decode_pages(pages, column, target, rows, None, definition)
}

/// [`decode_column`]'s work once its pages are set up.
fn decode_pages(
    pages: ChunkPages,
    column: &ColumnDescriptor,
    target: &DataType,
    rows: usize,
    selection: Option<&BooleanBuffer>,
    definition: Definition,
) -> Decoded<ArrayRef> {
    // A primitive column of Arrow type `$t` from `$n`-byte physical values.
    macro_rules! values {
        ($t:ty, $n:literal, $convert:expr) => {
            primitive::<$t, $n>(pages, definition, rows, target, selection, $convert)?
        };
    }
    let le64 = i64::from_le_bytes;
    Ok(match target {
        DataType::Boolean => decode_booleans(pages, definition, rows, selection)?,
        DataType::Decimal128(..) => match column.physical_type() {
            PhysicalType::INT32 => values!(Decimal128Type, 4, |b| i32_of(b).into()),
            PhysicalType::INT64 => values!(Decimal128Type, 8, |b| le64(b).into()),
            PhysicalType::FIXED_LEN_BYTE_ARRAY => {
                // Big-endian two's complement of 1 to 16 bytes.
                macro_rules! by_length {
                    ($($n:literal)*) => {
                        match column.type_length() {
                            $($n => values!(Decimal128Type, $n, i128_of_be),)*
                            _ => return Err(Failure::Unsupported),
                        }
                    };
                }
                by_length!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
            }
            _ => return Err(Failure::Unsupported),
        },
        DataType::Utf8 => byte_arrays::decode::<i32>(pages, definition, rows, true, selection)?,
        DataType::Binary => byte_arrays::decode::<i32>(pages, definition, rows, false, selection)?,
        DataType::LargeUtf8 => {
            byte_arrays::decode::<i64>(pages, definition, rows, true, selection)?
        }
        DataType::LargeBinary => {
            byte_arrays::decode::<i64>(pages, definition, rows, false, selection)?
        }
        DataType::Dictionary(key, value) => {
            let utf8 = value.as_ref() == &DataType::Utf8;
            macro_rules! keyed {
                ($k:ty) => {
                    byte_arrays::decode_dictionary::<$k>(pages, definition, rows, utf8, selection)?
                };
            }
            match key.as_ref() {
                DataType::Int8 => keyed!(Int8Type),
                DataType::Int16 => keyed!(Int16Type),
                DataType::Int32 => keyed!(Int32Type),
                _ => return Err(Failure::Unsupported),
            }
        }
        DataType::Timestamp(unit, _) if column.physical_type() == PhysicalType::INT96 => match unit
        {
            ArrowTimeUnit::Second => {
                values!(TimestampSecondType, 12, int96_as::<86_400, 1_000_000_000>)
            }
            ArrowTimeUnit::Millisecond => {
                values!(
                    TimestampMillisecondType,
                    12,
                    int96_as::<86_400_000, 1_000_000>
                )
            }
            ArrowTimeUnit::Microsecond => {
                values!(
                    TimestampMicrosecondType,
                    12,
                    int96_as::<86_400_000_000, 1_000>
                )
            }
            ArrowTimeUnit::Nanosecond => {
                values!(
                    TimestampNanosecondType,
                    12,
                    int96_as::<86_400_000_000_000, 1>
                )
            }
        },
        numeric => numeric_values!(numeric, values, return Err(Failure::Unsupported)),
    })
}

/// An INT96 timestamp (the nanoseconds of its day, then its Julian day,
/// little-endian) in a unit of which a day holds `PER_DAY` and that is
/// `NANOS` nanoseconds long: the `parquet` crate's conversion, wrapping
/// where it wraps (days far from 1970 overflow nanoseconds).
fn int96_as<const PER_DAY: i64, const NANOS: i64>(b: [u8; 12]) -> i64 {
    /// The Julian day of 1970-01-01.
    const EPOCH_DAY: i64 = 2_440_588;
    let [n0, n1, n2, n3, n4, n5, n6, n7, d0, d1, d2, d3] = b;
    let nanos = i64::from_le_bytes([n0, n1, n2, n3, n4, n5, n6, n7]);
    let day = i64::from(i32::from_le_bytes([d0, d1, d2, d3]));
    (day - EPOCH_DAY)
        .wrapping_mul(PER_DAY)
        .wrapping_add(nanos / NANOS)
}

/// Matches `$target` against the numeric Arrow types (integers, floats,
/// dates, timestamps) and decodes with `$values!(ArrowType, bytes per
/// physical value, conversion)`; `$other` for any other type. Shared by the
/// flat and the list decoders, so that both take the same types the same
/// way.
macro_rules! numeric_values {
    ($target:expr, $values:ident, $other:expr) => {{
        let le64 = i64::from_le_bytes;
        match $target {
            DataType::Int8 => $values!(Int8Type, 4, |b| i32_of(b) as i8),
            DataType::Int16 => $values!(Int16Type, 4, |b| i32_of(b) as i16),
            DataType::Int32 => $values!(Int32Type, 4, i32_of),
            DataType::UInt8 => $values!(UInt8Type, 4, |b| i32_of(b) as u8),
            DataType::UInt16 => $values!(UInt16Type, 4, |b| i32_of(b) as u16),
            DataType::UInt32 => $values!(UInt32Type, 4, |b| i32_of(b) as u32),
            DataType::Date32 => $values!(Date32Type, 4, i32_of),
            DataType::Int64 => $values!(Int64Type, 8, le64),
            DataType::UInt64 => $values!(UInt64Type, 8, |b| le64(b) as u64),
            DataType::Float32 => $values!(Float32Type, 4, f32::from_le_bytes),
            DataType::Float64 => $values!(Float64Type, 8, f64::from_le_bytes),
            // The values as stored; the target's time zone labels them.
            DataType::Timestamp(ArrowTimeUnit::Millisecond, _) => {
                $values!(TimestampMillisecondType, 8, le64)
            }
            DataType::Timestamp(ArrowTimeUnit::Microsecond, _) => {
                $values!(TimestampMicrosecondType, 8, le64)
            }
            DataType::Timestamp(ArrowTimeUnit::Nanosecond, _) => {
                $values!(TimestampNanosecondType, 8, le64)
            }
            _ => $other,
        }
    }};
}
pub(super) use numeric_values;

pub(super) fn i32_of(b: [u8; 4]) -> i32 {
    i32::from_le_bytes(b)
}

/// A big-endian two's complement integer of `N` (at most 16) bytes: placed
/// in the high bytes, then shifted down, which extends the sign without a
/// branch on it.
fn i128_of_be<const N: usize>(b: [u8; N]) -> i128 {
    let mut full = [0u8; 16];
    full[..N].copy_from_slice(&b);
    i128::from_be_bytes(full) >> (128 - 8 * N)
}

/// One data page split into its parts.
pub(super) struct DataPage<'a> {
    pub(super) buf: &'a [u8],
    /// Rows in the page (levels, for a flat column).
    pub(super) rows: usize,
    pub(super) encoding: Encoding,
    /// Where the repetition levels lie in `buf` (`None`: not repeated).
    pub(super) rep_levels: Option<std::ops::Range<usize>>,
    /// Where the definition levels lie in `buf` (`None`: a required column).
    pub(super) levels: Option<std::ops::Range<usize>>,
    /// What those levels say (see [`Definition`]).
    pub(super) definition: Definition,
    /// Where the values start in `buf`.
    pub(super) values: usize,
}

/// The next page of `pages`: a data page split into levels and values, or
/// a dictionary page's values and count. `None` at the end of the chunk.
pub(super) enum NextPage<'a> {
    Data(DataPage<'a>),
    Dictionary(&'a [u8], usize),
    /// A data page of this many rows, none of them selected, not read
    /// (only after [`ChunkPages::skip_unselected`]).
    Skipped(usize),
}

/// A flat leaf's definition levels: none (`max` 0, a required column, in
/// required structs only), or levels up to `max`, the leaf's value present
/// where its level is `max`. A top-level nullable column has `max` 1; a
/// field of structs one more for each nullable struct around it (see
/// [`super::structs`]). `present` (a bit for each level from 1) asks for the
/// validity of those structs to be gathered as the levels are read: bit
/// `k` for the struct that is there where the level is `k + 1` or more
/// ([`gather_present`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) max: u8,
    pub(crate) present: u8,
}

/// Struct levels [`gather_present`] can gather: as many as `present` has bits.
pub(crate) const MOST_STRUCT_LEVELS: usize = 8;

impl Definition {
    /// A top-level column's: nullable or not.
    pub(crate) fn flat(nullable: bool) -> Self {
        Definition {
            max: u8::from(nullable),
            present: 0,
        }
    }

    /// Whether the leaf has definition levels (so may hold nulls).
    pub(crate) fn nullable(self) -> bool {
        self.max > 0
    }
}

/// [`next_page_with`] for a column that is not repeated.
pub(super) fn next_page(
    pages: &mut ChunkPages,
    definition: Definition,
) -> Decoded<Option<NextPage<'_>>> {
    let page = next_page_with(pages, false, definition.nullable())?;
    Ok(page.map(|page| match page {
        NextPage::Data(data) => NextPage::Data(DataPage { definition, ..data }),
        other => other,
    }))
}

/// The next page of a column that has repetition levels (`repeated`) and
/// definition levels (`defined`) or not.
pub(super) fn next_page_with(
    pages: &mut ChunkPages,
    repeated: bool,
    defined: bool,
) -> Decoded<Option<NextPage<'_>>> {
    let Some(page) = pages.next_page().map_err(Failure::Corrupt)? else {
        return Ok(None);
    };
    Ok(Some(match page {
        Page::Dictionary {
            buf,
            num_values,
            encoding,
        } => {
            if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                return Err(Failure::Unsupported);
            }
            NextPage::Dictionary(buf, num_values)
        }
        Page::Data {
            buf,
            num_values,
            encoding,
            def_encoding,
            rep_encoding,
        } => {
            // Each kind of levels the column has: a 4-byte length, then
            // the runs; repetition levels first.
            let mut at = 0;
            let mut section = |present: bool, encoding: Encoding| match present {
                false => Ok(None),
                true if encoding != Encoding::RLE => Err(Failure::Unsupported),
                true => {
                    let range = prefixed(buf, at)?;
                    at = range.end;
                    Ok(Some(range))
                }
            };
            let rep_levels = section(repeated, rep_encoding)?;
            let levels = section(defined, def_encoding)?;
            NextPage::Data(DataPage {
                rows: num_values,
                encoding,
                rep_levels,
                levels,
                definition: Definition::flat(defined),
                values: at,
                buf,
            })
        }
        Page::DataV2 {
            buf,
            num_values,
            encoding,
            def_bytes: def,
            rep_bytes: rep,
        } => {
            if (!repeated && rep != 0) || (!defined && def != 0) {
                return Err(Failure::Corrupt(
                    "a page has repetition or definition levels its column cannot have".into(),
                ));
            }
            if rep + def > buf.len() {
                return Err(Failure::Corrupt(format!(
                    "levels of {} bytes in a page of {}",
                    rep + def,
                    buf.len()
                )));
            }
            NextPage::Data(DataPage {
                buf,
                rows: num_values,
                encoding,
                rep_levels: repeated.then_some(0..rep),
                levels: defined.then_some(rep..rep + def),
                definition: Definition::flat(defined),
                values: rep + def,
            })
        }
        Page::Skipped { num_values } => NextPage::Skipped(num_values),
    }))
}

/// The range of a level section at `at` of a v1 page: a 4-byte
/// little-endian length, then that many bytes.
fn prefixed(buf: &[u8], at: usize) -> Decoded<std::ops::Range<usize>> {
    let cut = || Failure::Corrupt("a data page ends in its levels".into());
    let len = buf.get(at..at + 4).ok_or_else(cut)?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let start = at + 4;
    match start.checked_add(len) {
        Some(end) if end <= buf.len() => Ok(start..end),
        _ => Err(cut()),
    }
}

/// Appends the validity of data `page`'s rows (its definition levels, which
/// it must have) to `validity`; returns how many are valid. The structs'
/// validity the page's [`Definition`] asks for is gathered beside it.
pub(super) fn page_levels(page: &DataPage, validity: &mut Bits) -> Decoded<usize> {
    let Some(levels) = &page.levels else {
        return Err(Failure::Unsupported);
    };
    let levels = &page.buf[levels.clone()];
    let definition = page.definition;
    if definition == Definition::flat(true) {
        return read_levels(levels, page.rows, validity);
    }
    let max = u32::from(definition.max);
    let width = (u32::BITS - max.leading_zeros()) as u8;
    let start = validity.len;
    // The struct levels asked for (each `k + 1` for bit `k`), without an
    // allocation per page.
    let asked = || {
        (0..MOST_STRUCT_LEVELS as u32)
            .filter(move |k| definition.present >> k & 1 == 1)
            .map(|k| k + 1)
    };
    PRESENT.with_borrow_mut(|present| {
        let check = |level: u32| match level > max {
            true => Err(Failure::Corrupt(format!(
                "a definition level of {level} where the most is {max}"
            ))),
            false => Ok(()),
        };
        let mut scratch = Vec::new();
        each_run(levels, width, page.rows, "definition levels", |run, n| {
            match run {
                Run::Repeated { value, .. } => {
                    check(value)?;
                    validity.append_n(n, value == max);
                    for from in asked() {
                        present[from as usize - 1].append_n(n, value >= from);
                    }
                }
                Run::Packed { bytes, .. } => {
                    unpack_chunks(bytes, width, n, &mut scratch, |chunk| {
                        for group in chunk.chunks(64) {
                            let mut valid = 0u64;
                            for (i, &level) in group.iter().enumerate() {
                                check(level)?;
                                valid |= u64::from(level == max) << i;
                            }
                            validity.append_word(valid, group.len());
                            for from in asked() {
                                let mut there = 0u64;
                                for (i, &level) in group.iter().enumerate() {
                                    there |= u64::from(level >= from) << i;
                                }
                                present[from as usize - 1].append_word(there, group.len());
                            }
                        }
                        Ok(())
                    })?;
                }
            }
            Ok(())
        })
    })?;
    Ok(validity.count_ones(start))
}

/// The structs' validity [`gather_present`] hands back: one bitmap for
/// each struct level (index `k` for level `k + 1`), empty where not asked.
pub(crate) type Present = [Bits; MOST_STRUCT_LEVELS];

thread_local! {
    /// Structs' validity gathered from a field's levels, on the thread
    /// decoding that field (see [`gather_present`]).
    static PRESENT: std::cell::RefCell<Present> =
        std::cell::RefCell::new(std::array::from_fn(|_| Bits::default()));
}

/// Runs `decode` (a field of nullable structs, decoded with a
/// [`Definition`] that asks for their validity) and returns what it
/// returns with the validity its levels gave: for each struct level asked
/// for, a bit per row, set where that struct is there (whether or not the
/// field is null).
pub(crate) fn gather_present<T>(decode: impl FnOnce() -> T) -> (T, Present) {
    PRESENT.with_borrow_mut(|present| present.iter_mut().for_each(|p| *p = Bits::default()));
    let decoded = decode();
    let present =
        PRESENT.with_borrow_mut(|present| std::array::from_fn(|k| std::mem::take(&mut present[k])));
    (decoded, present)
}

/// The rows of `array` that `selection` sets (all of them without one):
/// a column decoded whole under a row selection, cut after.
pub(crate) fn selected_rows(
    array: ArrayRef,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    match selection {
        None => Ok(array),
        Some(keep) if keep.len() != array.len() => Err(Failure::Unsupported),
        Some(keep) => arrow_select::filter::filter(
            &array,
            &arrow_array::BooleanArray::new(keep.clone(), None),
        )
        .map_err(|e| Failure::Corrupt(e.to_string())),
    }
}

/// Sets the validity of the struct at level `k + 1` for [`gather_present`]
/// to hand back: from a field whose levels are not a bit per row (a list,
/// see [`super::lists::Shape::gather`]).
pub(super) fn hand_present(k: usize, bits: Bits) {
    PRESENT.with_borrow_mut(|present| present[k] = bits);
}

/// Appends a page's definition levels (width 1) to `validity`; returns how
/// many rows are valid. (A bit-packed run of levels is the bitmap itself.)
pub(super) fn read_levels(levels: &[u8], rows: usize, validity: &mut Bits) -> Decoded<usize> {
    let start = validity.len;
    each_run(levels, 1, rows, "definition levels", |run, n| {
        match run {
            Run::Repeated { value, .. } => validity.append_n(n, value == 1),
            Run::Packed { bytes, .. } => validity.append_packed(bytes, n),
        }
        Ok(())
    })?;
    Ok(validity.count_ones(start))
}

/// Walks the hybrid runs of `bytes` (values of `width` bits) that hold the
/// `count` values of a page's `what`, handing `each` every run with how
/// many of its values are the page's (a run's last group can run past
/// them).
pub(super) fn each_run(
    bytes: &[u8],
    width: u8,
    count: usize,
    what: &str,
    mut each: impl FnMut(Run<'_>, usize) -> Decoded<()>,
) -> Decoded<()> {
    let mut runs = Runs::new(bytes, width).map_err(Failure::Corrupt)?;
    let mut left = count;
    while left > 0 {
        let Some(run) = runs.next_run().map_err(Failure::Corrupt)? else {
            return Err(Failure::Corrupt(format!(
                "{what} end {left} values before the page does"
            )));
        };
        let n = match run {
            Run::Repeated { count, .. } | Run::Packed { count, .. } => count.min(left),
        };
        each(run, n)?;
        left -= n;
    }
    Ok(())
}

/// A bitmap appended to 64 bits at a time (validity, booleans). Bits past
/// `len` in the last word are always zero (so two bitmaps of the same bits
/// compare equal).
#[derive(Default, PartialEq)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    pub(super) fn with_capacity(bits: usize) -> Self {
        Bits {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }

    /// Bits appended so far.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends one bit.
    #[inline]
    pub(super) fn push(&mut self, bit: bool) {
        let shift = self.len & 63;
        if shift == 0 {
            self.words.push(u64::from(bit));
        } else if let Some(last) = self.words.last_mut() {
            *last |= u64::from(bit) << shift;
        }
        self.len += 1;
    }

    /// Bit `i`, or false past the end.
    #[inline]
    pub(super) fn bit(&self, i: usize) -> bool {
        self.words
            .get(i >> 6)
            .is_some_and(|w| (w >> (i & 63)) & 1 == 1)
    }

    /// Appends `n` copies of `value`.
    pub(super) fn append_n(&mut self, n: usize, value: bool) {
        let end = self.len + n;
        self.words.resize(end.div_ceil(64), 0);
        if value {
            let mut i = self.len;
            while i < end {
                let take = (64 - (i & 63)).min(end - i);
                self.words[i >> 6] |= low_bits(take) << (i & 63);
                i += take;
            }
        }
        self.len = end;
    }

    /// Appends the first `n` bits of `src` (LSB first), which must hold them.
    fn append_packed(&mut self, src: &[u8], n: usize) {
        self.words
            .reserve((self.len + n).div_ceil(64) - self.words.len());
        let mut chunks = src.chunks_exact(8);
        let mut left = n;
        for chunk in chunks.by_ref() {
            if left == 0 {
                return;
            }
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let take = left.min(64);
            self.append_word(u64::from_le_bytes(word), take);
            left -= take;
        }
        if left > 0 {
            let rest = chunks.remainder();
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.append_word(u64::from_le_bytes(word), left.min(64));
        }
    }

    /// The `n` (≤ 64) bits from bit `i` on, the first lowest (none past
    /// the end).
    #[inline]
    pub(super) fn bits_at(&self, i: usize, n: usize) -> u64 {
        if n == 0 {
            return 0;
        }
        let (at, shift) = (i >> 6, i & 63);
        let low = self.words.get(at).map_or(0, |w| w >> shift);
        let high = match shift != 0 && shift + n > 64 {
            true => self.words.get(at + 1).map_or(0, |w| w << (64 - shift)),
            false => 0,
        };
        (low | high) & low_bits(n)
    }

    /// Appends the `n` (≤ 64) low bits of `word`.
    #[inline]
    pub(super) fn append_word(&mut self, word: u64, n: usize) {
        if n == 0 {
            return;
        }
        let word = word & low_bits(n);
        let shift = self.len & 63;
        if shift == 0 {
            self.words.push(word);
        } else {
            if let Some(last) = self.words.last_mut() {
                *last |= word << shift;
            }
            if shift + n > 64 {
                self.words.push(word >> (64 - shift));
            }
        }
        self.len += n;
    }

    /// Set bits from `start` to the end.
    pub(super) fn count_ones(&self, start: usize) -> usize {
        if start >= self.len {
            return 0;
        }
        let first = start >> 6;
        let head = (self.words[first] >> (start & 63)).count_ones() as usize;
        head + self.words[first + 1..]
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
    }

    /// The `rows` bits from bit `at`, a word of the bitmap at a time: each
    /// as (bits, how many), at most 64 and fewer at either end.
    pub(super) fn words_in(
        &self,
        at: usize,
        rows: usize,
    ) -> impl Iterator<Item = (u64, usize)> + '_ {
        let end = at + rows;
        let mut i = at;
        std::iter::from_fn(move || {
            (i < end).then(|| {
                let n = (64 - (i & 63)).min(end - i);
                let word = (self.words[i >> 6] >> (i & 63)) & low_bits(n);
                i += n;
                (word, n)
            })
        })
    }

    /// Keeps, of the bits from `at` on, those `keep` sets (one bit for each
    /// of them), moved down in order.
    pub(super) fn keep_selected(&mut self, at: usize, keep: &BooleanBuffer) {
        assert_eq!(self.len - at, keep.len(), "a selection bit per bit");
        // The page's bits, from a word boundary, so that each word lines up
        // with a word of the selection.
        let mut page = Bits::with_capacity(keep.len());
        for (word, n) in self.words_in(at, keep.len()) {
            page.append_word(word, n);
        }
        self.truncate(at);
        for ((word, _), bits) in selection_words(keep).zip(&page.words) {
            self.append_word(packed_bits(*bits, word), word.count_ones() as usize);
        }
    }

    /// Drops the bits from `len` on.
    fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        self.words.truncate(len.div_ceil(64));
        if let Some(last) = self.words.last_mut().filter(|_| len & 63 != 0) {
            *last &= low_bits(len & 63);
        }
        self.len = len;
    }

    pub(super) fn finish(self) -> BooleanBuffer {
        BooleanBuffer::new(Buffer::from_vec(self.words), 0, self.len)
    }

    pub(super) fn into_nulls(self) -> Option<NullBuffer> {
        let len = self.len;
        NullBuffer::from_unsliced_buffer(Buffer::from_vec(self.words), len)
    }
}

/// A word with its `n` lowest bits set (n ≤ 64).
pub(super) fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Appends `rows` values to `out`: at each valid row of `validity` (from
/// bit `at`) the next of `dense`. A word of the bitmap at a time: all valid
/// is one copy; otherwise every slot takes the next dense value and only a
/// valid row moves on to the one after, so a null's slot holds a copy of
/// the next valid value (Arrow leaves values under nulls unspecified). No
/// branch per value: with nulls spread out almost every word has one, and a
/// store per set bit (the previous way) was a chain of dependent steps.
pub(super) fn scatter<T: Copy + Default>(
    validity: &Bits,
    at: usize,
    rows: usize,
    dense: &[T],
    out: &mut Vec<T>,
) {
    // `out` is a column's output: streamed when large.
    let mut out = nontemporal::Appender::new(out, rows, Reads::Later);
    let mut k = 0usize;
    for (word, n) in validity.words_in(at, rows) {
        if word == low_bits(n) && k + n <= dense.len() {
            let run = &dense[k..k + n];
            // SAFETY: the closure writes each of the `n` slots (a word is
            // at most 64 rows).
            unsafe {
                out.extend_with(n, |room| {
                    for (slot, &value) in room.iter_mut().zip(run) {
                        slot.write(value);
                    }
                })
            };
            k += n;
        } else {
            // SAFETY: as above.
            unsafe {
                out.extend_with(n, |room| {
                    for (j, slot) in room.iter_mut().enumerate() {
                        // Past the last valid value only nulls are left.
                        let value = dense.get(k).copied().unwrap_or_default();
                        k += ((word >> j) & 1) as usize;
                        slot.write(value);
                    }
                })
            };
        }
    }
}

/// [`scatter`] in place: moves the values of `values` (one per valid slot
/// of `validity`'s first `slots` bits, in order) to their slots, growing
/// the vector to `slots`, with no second buffer of the column's size.
/// From the back, a word of the bitmap at a time: a value moves to a slot
/// at or after its own index, so each is read before it is written over.
/// What is under a null is unspecified. False, and `values` untouched, when
/// the bitmap is not `slots` long or its valid slots are not as many as the
/// values.
pub(super) fn scatter_in_place<T: Copy + Default>(
    values: &mut Vec<T>,
    validity: &Bits,
    slots: usize,
) -> bool {
    if validity.len() != slots || validity.count_ones(0) != values.len() {
        return false;
    }
    let mut k = values.len();
    values.resize(slots, T::default());
    for (start, n, word) in words_from_back(validity, slots) {
        if word == low_bits(n) {
            values.copy_within(k - n..k, start);
            k -= n;
        } else {
            for j in (0..n).rev() {
                // Not valid: `k` stays, and the slot takes whatever is at
                // `k` (at or before it: not yet moved).
                k -= ((word >> j) & 1) as usize;
                values[start + j] = values[k];
            }
        }
    }
    true
}

/// The first `len` bits of `validity` as words, the last first: (the
/// word's first bit, how many, the bits), aligned to 64.
fn words_from_back(validity: &Bits, len: usize) -> impl Iterator<Item = (usize, usize, u64)> + '_ {
    let mut end = len;
    std::iter::from_fn(move || {
        if end == 0 {
            return None;
        }
        let start = (end - 1) & !63;
        let n = end - start;
        end = start;
        Some((start, n, validity.bits_at(start, n)))
    })
}

/// The offsets of `slots` slots from `ends` (`0`, then the end of each
/// valid slot's value, in order), made in place: a null slot ends where the
/// slot before it did. As [`scatter_in_place`], from the back; false, and
/// `ends` untouched, when the counts disagree.
pub(super) fn spread_in_place<O: Copy>(ends: &mut Vec<O>, validity: &Bits, slots: usize) -> bool {
    if ends.is_empty() || validity.len() != slots || validity.count_ones(0) != ends.len() - 1 {
        return false;
    }
    // Slot `i` ends at `ends[k]`, `k` the valid slots up to and with it.
    let mut k = ends.len() - 1;
    ends.resize(slots + 1, ends[0]);
    for (start, n, word) in words_from_back(validity, slots) {
        if word == low_bits(n) {
            ends.copy_within(k + 1 - n..k + 1, start + 1);
            k -= n;
        } else if word == 0 {
            let last = ends[k];
            ends[start + 1..start + n + 1].fill(last);
        } else {
            for j in (0..n).rev() {
                ends[start + j + 1] = ends[k];
                k -= ((word >> j) & 1) as usize;
            }
        }
    }
    true
}

/// A flat numeric column of Arrow type `target`: values converted from
/// `N`-byte little-endian physical values by `convert`, dictionary-encoded
/// or plain.
fn primitive<T: ArrowPrimitiveType, const N: usize>(
    mut pages: ChunkPages,
    definition: Definition,
    rows: usize,
    target: &DataType,
    selection: Option<&BooleanBuffer>,
    convert: impl Fn([u8; N]) -> T::Native,
) -> Decoded<ArrayRef> {
    // `T` with the target's parameters (a decimal's precision and scale, a
    // timestamp's time zone).
    if !PrimitiveArray::<T>::is_compatible(target) {
        return Err(Failure::Unsupported);
    }
    // With a selection, each page's values are cut to its selected rows as
    // soon as they are decoded: the output holds those, plus one page (so
    // that it never grows, which would copy what it holds).
    let room = match selection {
        None => rows,
        Some(keep) => {
            let page = usize::try_from(pages.ahead().most_values).unwrap_or(usize::MAX);
            rows.min(keep.count_set_bits().saturating_add(page))
        }
    };
    let mut out: Vec<T::Native> = room_for(room)?;
    let mut validity = definition.nullable().then(|| Bits::with_capacity(room));
    // Rows of the chunk decoded so far (`out` holds the selected ones).
    let mut done = 0usize;
    let mut dictionary: Option<Vec<T::Native>> = None;
    let mut dense: Vec<T::Native> = Vec::new();
    let mut indices: Vec<u32> = Vec::new();
    while let Some(page) = next_page(&mut pages, definition)? {
        let page = match page {
            NextPage::Dictionary(buf, count) => {
                // Sized by `plain` once the bytes are known to hold them
                // (the count is the page header's word).
                let mut values = Vec::new();
                plain(buf, count, &convert, &mut values, Reads::Soon)?;
                dictionary = Some(values);
                continue;
            }
            NextPage::Data(page) => page,
            // None of its rows kept: nothing to add.
            NextPage::Skipped(n) => {
                done += n;
                continue;
            }
        };
        if done + page.rows > rows {
            return Err(Failure::Corrupt(format!(
                "the pages hold more than the row group's {rows} rows"
            )));
        }
        let at = out.len();
        let keep = selection.map(|s| s.slice(done, page.rows));
        // Whether only the kept values were decoded (a page without nulls:
        // each row's value is at its place in the page).
        let mut only_kept = false;
        page_values(
            &page,
            &mut validity,
            &mut out,
            &mut dense,
            |values, valid, target, reads| match (page.encoding, &keep) {
                // `Later`: a value per row, straight onto `out`.
                (Encoding::PLAIN, Some(keep)) if reads == Reads::Later => {
                    only_kept = true;
                    plain_kept(values, valid, &convert, target, keep)
                }
                (Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY, Some(keep))
                    if reads == Reads::Later =>
                {
                    only_kept = true;
                    let dictionary = dictionary_of(&dictionary)?;
                    gather_kept(values, valid, dictionary, &mut indices, target, keep)
                }
                // Values about to be cut are written to be read soon
                // (streamed past the cache, they would be read back from
                // memory).
                (encoding, keep) => {
                    let reads = if keep.is_some() { Reads::Soon } else { reads };
                    match encoding {
                        Encoding::PLAIN => plain(values, valid, &convert, target, reads),
                        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                            let dictionary = dictionary_of(&dictionary)?;
                            gather(values, valid, dictionary, &mut indices, target, reads)
                        }
                        Encoding::BYTE_STREAM_SPLIT => {
                            byte_stream_split::decode(values, valid, &convert, target, reads)
                        }
                        _ => Err(Failure::Unsupported),
                    }
                }
            },
        )?;
        match (&keep, only_kept) {
            (Some(keep), false) => keep_selected(&mut out, validity.as_mut(), at, keep),
            (Some(keep), true) => {
                if let Some(validity) = validity.as_mut() {
                    validity.keep_selected(at, keep);
                }
            }
            (None, _) => {}
        }
        done += page.rows;
    }
    if done != rows {
        return Err(Failure::Corrupt(format!(
            "the pages hold {done} of the row group's {rows} rows"
        )));
    }
    let nulls = validity.and_then(Bits::into_nulls);
    let array = PrimitiveArray::<T>::new(ScalarBuffer::from(out), nulls);
    Ok(Arc::new(array.with_data_type(target.clone())))
}

/// Keeps, of the values `out` holds from `at` on (and their validity bits),
/// those `keep` sets (one bit for each of them), moved down in order.
///
/// A word of 64 kept rows moves as one copy; any other word moves its kept
/// rows one by one (a random tenth of the rows kept: a copy call per run of
/// kept rows was a fifth of a filtered read's CPU), found by their bits
/// when they are few, and by writing every row when they are many.
pub(super) fn keep_selected<T: Copy>(
    out: &mut Vec<T>,
    validity: Option<&mut Bits>,
    at: usize,
    keep: &BooleanBuffer,
) {
    assert_eq!(out.len() - at, keep.len(), "a selection bit per value");
    let mut to = at;
    let mut from = at;
    let values = out.as_mut_ptr();
    for (word, n) in selection_words(keep) {
        if word == low_bits(n) {
            out.copy_within(from..from + n, to);
            to += n;
        } else if word.count_ones() > 16 {
            // Many kept: every value is written, and the next write moves
            // on past it only when it is kept (no branch per value).
            for j in 0..n {
                // SAFETY: `to <= from + j < out.len()`, as below.
                unsafe { *values.add(to) = *values.add(from + j) };
                to += ((word >> j) & 1) as usize;
            }
        } else {
            let mut left = word;
            while left != 0 {
                let j = left.trailing_zeros() as usize;
                // SAFETY: `to <= from + j < out.len()`: each value kept is
                // read before any later one is written over it.
                unsafe { *values.add(to) = *values.add(from + j) };
                to += 1;
                left &= left - 1;
            }
        }
        from += n;
    }
    out.truncate(to);
    if let Some(validity) = validity {
        validity.keep_selected(at, keep);
    }
}

/// The words of a selection from its first bit: each as (bits, how many),
/// 64 but for the last.
fn selection_words(keep: &BooleanBuffer) -> impl Iterator<Item = (u64, usize)> + '_ {
    let chunks = keep.bit_chunks();
    let last =
        (chunks.remainder_len() > 0).then(|| (chunks.remainder_bits(), chunks.remainder_len()));
    chunks.iter().map(|w| (w, 64)).chain(last)
}

/// The bits of `bits` at the positions `keep` sets, packed low (what BMI2's
/// `pext` does).
fn packed_bits(bits: u64, keep: u64) -> u64 {
    match (bits, keep) {
        (_, u64::MAX) => return bits,
        // Every row valid (the common case) or none.
        (u64::MAX, _) => return low_bits(keep.count_ones() as usize),
        (0, _) => return 0,
        _ => {}
    }
    let mut packed = 0;
    let mut left = keep;
    let mut k = 0;
    while left != 0 {
        let j = left.trailing_zeros();
        packed |= ((bits >> j) & 1) << k;
        k += 1;
        left &= left - 1;
    }
    packed
}

/// Decodes the values of one data `page` of a flat column onto `out`:
/// `decode` gets the page's value bytes and how many of its rows are valid,
/// and appends that many values to the vector it is handed, read when the
/// [`Reads`] says. With every row valid that is `out` itself (read later);
/// otherwise `dense`, whose values are then copied out run by run around
/// the nulls ([`scatter`], read soon). `validity` takes
/// the page's definition levels.
pub(super) fn page_values<T: Copy + Default>(
    page: &DataPage,
    validity: &mut Option<Bits>,
    out: &mut Vec<T>,
    dense: &mut Vec<T>,
    decode: impl FnOnce(&[u8], usize, &mut Vec<T>, Reads) -> Decoded<()>,
) -> Decoded<()> {
    let at = out.len();
    let valid = match (validity.as_mut(), &page.levels) {
        (Some(validity), Some(_)) => page_levels(page, validity)?,
        _ => page.rows,
    };
    let values = &page.buf[page.values..];
    if valid == page.rows {
        return decode(values, valid, out, Reads::Later);
    }
    let Some(validity) = validity.as_ref() else {
        return Err(Failure::Unsupported);
    };
    dense.clear();
    decode(values, valid, dense, Reads::Soon)?;
    scatter(validity, at, page.rows, dense, out);
    Ok(())
}

/// The chunk's dictionary, which a dictionary-encoded page needs to have
/// come before it.
pub(super) fn dictionary_of<D>(dictionary: &Option<D>) -> Decoded<&D> {
    dictionary
        .as_ref()
        .ok_or_else(|| Failure::Corrupt("a dictionary-encoded page before any dictionary".into()))
}

/// Appends `count` plain-encoded values of `values` to `out`, which is
/// read when `reads` says.
pub(super) fn plain<T: Copy, const N: usize>(
    values: &[u8],
    count: usize,
    convert: impl Fn([u8; N]) -> T,
    out: &mut Vec<T>,
    reads: Reads,
) -> Decoded<()> {
    let Some(bytes) = values.get(..count * N) else {
        return Err(Failure::Corrupt(format!(
            "{count} values of {N} bytes in {} bytes",
            values.len()
        )));
    };
    let mut out = nontemporal::Appender::new(out, count, reads);
    // `chunks` of whole values: `bytes` holds `count`.
    for chunk in bytes.chunks(N * nontemporal::CHUNK) {
        append_values(&mut out, chunk, &convert);
    }
    Ok(())
}

/// Appends the values of `N` bytes that `chunk` holds (whole ones, at most
/// [`nontemporal::CHUNK`]) to `out`, each converted.
#[inline(always)]
pub(super) fn append_values<T: Copy, const N: usize>(
    out: &mut nontemporal::Appender<'_, T>,
    chunk: &[u8],
    convert: &impl Fn([u8; N]) -> T,
) {
    let n = chunk.len() / N;
    // SAFETY: the closure writes each of the `n` slots, one for each `N`
    // bytes of the chunk.
    unsafe {
        out.extend_with(
            n,
            #[inline(always)]
            |room| {
                for (slot, c) in room.iter_mut().zip(chunk.chunks_exact(N)) {
                    let mut word = [0u8; N];
                    word.copy_from_slice(c);
                    slot.write(convert(word));
                }
            },
        )
    };
}

/// Appends, of the `count` plain-encoded values of `values`, those `keep`
/// sets (a bit per value) to `out`: the others are not converted or
/// written at all.
fn plain_kept<T: Copy, const N: usize>(
    values: &[u8],
    count: usize,
    convert: impl Fn([u8; N]) -> T,
    out: &mut Vec<T>,
    keep: &BooleanBuffer,
) -> Decoded<()> {
    let Some(bytes) = values.get(..count * N) else {
        return Err(Failure::Corrupt(format!(
            "{count} values of {N} bytes in {} bytes",
            values.len()
        )));
    };
    if keep.len() != count {
        return Err(Failure::Corrupt(format!(
            "{count} values for a page of {} rows",
            keep.len()
        )));
    }
    let value = |i: usize| {
        let mut word = [0u8; N];
        word.copy_from_slice(&bytes[i * N..(i + 1) * N]);
        convert(word)
    };
    out.reserve(keep.count_set_bits());
    let mut base = 0;
    for (word, n) in selection_words(keep) {
        if word == low_bits(n) {
            out.extend((base..base + n).map(value));
        } else {
            let mut left = word;
            while left != 0 {
                out.push(value(base + left.trailing_zeros() as usize));
                left &= left - 1;
            }
        }
        base += n;
    }
    Ok(())
}

/// Appends, of the `count` dictionary-encoded values of `values`, those
/// `keep` sets (a bit per value) to `out`: every index is read, only the
/// kept ones are looked up and written.
fn gather_kept<T: Copy>(
    values: &[u8],
    count: usize,
    dictionary: &[T],
    indices: &mut Vec<u32>,
    out: &mut Vec<T>,
    keep: &BooleanBuffer,
) -> Decoded<()> {
    out.reserve(keep.count_set_bits());
    let mut kept = Vec::new();
    let entries = dictionary.len();
    kept_dictionary_indices(values, count, entries, indices, keep, &mut kept, |run| {
        match run {
            Indices::Repeated(index, n) => {
                out.extend(std::iter::repeat_n(dictionary[index as usize], n))
            }
            Indices::Chunk(chunk) => out.extend(chunk.iter().map(|&i| dictionary[i as usize])),
        }
        Ok(())
    })
}

/// Appends `count` dictionary-encoded values (bit width byte, then hybrid
/// runs of indices) looked up in `dictionary` to `out`, which is read when
/// `reads` says.
pub(super) fn gather<T: Copy>(
    values: &[u8],
    count: usize,
    dictionary: &[T],
    indices: &mut Vec<u32>,
    out: &mut Vec<T>,
    reads: Reads,
) -> Decoded<()> {
    // A page mostly of runs (its indices take well under their bit-packed
    // size) is bound by the work per run, not by writing: it goes straight
    // to `out` (staged for streaming, a steady read of
    // `mixed-card1000-rl32` was 5 % slower, and through an appender that
    // does not stream, with its branch per run, `mixed-rl32` 3 %).
    if reads == Reads::Soon || mostly_runs(values, count) {
        out.reserve(count);
        gather_into(values, count, dictionary, indices, out)
    } else {
        let mut out = nontemporal::Appender::new(out, count, reads);
        gather_into(values, count, dictionary, indices, &mut out)
    }
}

/// [`gather`] into `out`.
#[inline(always)]
fn gather_into<T: Copy>(
    values: &[u8],
    count: usize,
    dictionary: &[T],
    indices: &mut Vec<u32>,
    out: &mut impl Append<T>,
) -> Decoded<()> {
    dictionary_indices(
        values,
        count,
        dictionary.len(),
        indices,
        #[inline(always)]
        |run| {
            match run {
                Indices::Repeated(index, n) => out.fill(dictionary[index as usize], n),
                // SAFETY: `gather_chunk` writes each of the chunk's slots
                // (at most `CHUNK`); `dictionary_indices` checked its
                // indices.
                Indices::Chunk(chunk) => unsafe {
                    out.extend_with(
                        chunk.len(),
                        #[inline(always)]
                        |room| gather_chunk(room, chunk, dictionary),
                    )
                },
            }
            Ok(())
        },
    )
}

/// Writes the dictionary's values at `chunk`'s indices into `room`.
///
/// # Safety
/// Every index of `chunk` must be below `dictionary.len()`, and `room` as
/// long as `chunk`.
#[inline(always)]
unsafe fn gather_chunk<T: Copy>(room: &mut [MaybeUninit<T>], chunk: &[u32], dictionary: &[T]) {
    debug_assert_eq!(room.len(), chunk.len());
    // Compiled for AVX2 as well (a quarter faster there).
    crate::simd::wide(
        chunk.len(),
        #[inline(always)]
        || {
            for (slot, &i) in room.iter_mut().zip(chunk) {
                // SAFETY: the caller's promise. Without a bounds check per
                // value, a steady read of the suite's `uint` file
                // (dictionary-encoded small ints) is 6 % faster.
                slot.write(unsafe { *dictionary.get_unchecked(i as usize) });
            }
        },
    )
}

/// Whether a dictionary-encoded page's `values` (bit width byte, then
/// hybrid runs) take less than half the bytes of its `count` indices
/// bit-packed: most of them then come in runs of one index.
fn mostly_runs(values: &[u8], count: usize) -> bool {
    let width = values.first().copied().unwrap_or(0) as usize;
    values.len().saturating_mul(2) < count.saturating_mul(width) / 8
}

/// Dictionary indices as [`dictionary_indices`] hands them over, each
/// already checked to be below the dictionary's length.
pub(super) enum Indices<'a> {
    /// `n` copies of one index.
    Repeated(u32, usize),
    /// Up to 1,024 indices (see [`unpack_chunks`]).
    Chunk(&'a [u32]),
}

/// Walks the `count` indices of a dictionary-encoded page's `values` (bit
/// width byte, then hybrid runs) into a dictionary of `entries`, handing
/// them to `each` a run or a chunk at a time; `indices` is scratch space.
pub(super) fn dictionary_indices(
    values: &[u8],
    count: usize,
    entries: usize,
    indices: &mut Vec<u32>,
    mut each: impl FnMut(Indices<'_>) -> Decoded<()>,
) -> Decoded<()> {
    if count == 0 {
        return Ok(());
    }
    let Some((&width, data)) = values.split_first() else {
        return Err(Failure::Corrupt(
            "a dictionary-encoded page has no values".into(),
        ));
    };
    let check = |index: u32| match index as usize >= entries {
        true => Err(Failure::Corrupt(format!(
            "dictionary index {index} of a dictionary of {entries}"
        ))),
        false => Ok(()),
    };
    each_run(
        data,
        width,
        count,
        "dictionary indices",
        |run, n| match run {
            Run::Repeated { value, .. } => {
                check(value)?;
                each(Indices::Repeated(value, n))
            }
            Run::Packed { bytes, .. } => unpack_chunks(bytes, width, n, indices, |chunk| {
                if !all_below(chunk, width, entries) {
                    check(chunk.iter().copied().max().unwrap_or(0))?;
                }
                each(Indices::Chunk(chunk))
            }),
        },
    )
}

/// [`dictionary_indices`] of only the rows `keep` sets (a bit per index):
/// a run is handed over as its kept rows, a chunk as its kept indices (in
/// `kept`, scratch space), and one with none kept not at all.
pub(super) fn kept_dictionary_indices(
    values: &[u8],
    count: usize,
    entries: usize,
    indices: &mut Vec<u32>,
    keep: &BooleanBuffer,
    kept: &mut Vec<u32>,
    mut each: impl FnMut(Indices<'_>) -> Decoded<()>,
) -> Decoded<()> {
    if keep.len() != count {
        return Err(Failure::Corrupt(format!(
            "{count} dictionary indices for a page of {} rows",
            keep.len()
        )));
    }
    let mut at = 0usize;
    dictionary_indices(values, count, entries, indices, |run| {
        let n = match &run {
            Indices::Repeated(_, n) => *n,
            Indices::Chunk(chunk) => chunk.len(),
        };
        if at + n > count {
            return Err(Failure::Corrupt(format!(
                "more than the page's {count} dictionary indices"
            )));
        }
        let part = keep.slice(at, n);
        at += n;
        let left = part.count_set_bits();
        match run {
            _ if left == 0 => Ok(()),
            Indices::Repeated(index, _) => each(Indices::Repeated(index, left)),
            Indices::Chunk(chunk) if left == n => each(Indices::Chunk(chunk)),
            Indices::Chunk(chunk) => {
                kept.clear();
                kept.extend(part.set_indices().map(|j| chunk[j]));
                each(Indices::Chunk(kept))
            }
        }
    })
}

/// Whether every index of `chunk`, each of `width` bits, is below
/// `entries`. Done for every chunk of every dictionary-encoded page, so
/// kept cheap: the unsigned `max` it replaced took three SSE2 instructions
/// per four indices and a third of a small-integer column's decode.
fn all_below(chunk: &[u32], width: u8, entries: usize) -> bool {
    let width = u32::from(width);
    // An index of `width` bits is below 2^width: nothing to check when the
    // dictionary has that many entries (byte-wide indices into 256).
    if width < usize::BITS && entries >= 1usize << width {
        return true;
    }
    if width < 32 {
        // Here `entries < 2^width <= 2^31` and every index is below 2^31,
        // so comparing them as `i32` is exact (one SSE2 compare).
        let limit = entries as i32;
        // Compiled for AVX2 as well: eight compares at a time.
        let above = crate::simd::wide(
            chunk.len(),
            #[inline(always)]
            || {
                chunk
                    .iter()
                    .fold(0u32, |any, &i| any | u32::from(i as i32 >= limit))
            },
        );
        return above == 0;
    }
    chunk.iter().all(|&i| (i as usize) < entries)
}

/// Appends a page's `valid` booleans, `encoding`-encoded in `values`
/// (plain: bit-packed; RLE: a 4-byte length, then runs of 1-bit values), to
/// `dense`.
pub(super) fn append_booleans(
    encoding: Encoding,
    values: &[u8],
    valid: usize,
    dense: &mut Bits,
) -> Decoded<()> {
    match encoding {
        Encoding::PLAIN => {
            if values.len() * 8 < valid {
                return Err(Failure::Corrupt(format!(
                    "{valid} booleans in {} bytes",
                    values.len()
                )));
            }
            dense.append_packed(values, valid);
        }
        Encoding::RLE => {
            let len = values
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .filter(|len| 4 + len <= values.len())
                .ok_or_else(|| Failure::Corrupt("RLE booleans cut off".into()))?;
            read_levels(&values[4..4 + len], valid, dense)?;
        }
        // (No writer we know encodes booleans with a dictionary.)
        _ => return Err(Failure::Unsupported),
    }
    Ok(())
}

/// A flat boolean column: plain (bit-packed) or RLE-encoded values.
fn decode_booleans(
    mut pages: ChunkPages,
    definition: Definition,
    rows: usize,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    // With a selection, each page read is cut to its selected rows once
    // decoded (as `primitive` does).
    let mut out = Bits::with_capacity(rows);
    let mut validity = definition.nullable().then(|| Bits::with_capacity(rows));
    // Rows of the chunk decoded so far (`out` holds the selected ones).
    let mut done = 0usize;
    while let Some(page) = next_page(&mut pages, definition)? {
        let page = match page {
            NextPage::Data(page) => page,
            NextPage::Skipped(n) => {
                done += n;
                continue;
            }
            // Booleans are not dictionary-encoded by any writer we know.
            NextPage::Dictionary(..) => return Err(Failure::Unsupported),
        };
        if done + page.rows > rows {
            return Err(Failure::Corrupt(format!(
                "the pages hold more than the row group's {rows} rows"
            )));
        }
        let at = out.len;
        let valid = match (&mut validity, &page.levels) {
            (Some(validity), Some(_)) => page_levels(&page, validity)?,
            _ => page.rows,
        };
        let values = &page.buf[page.values..];
        let mut dense = Bits::with_capacity(valid);
        append_booleans(page.encoding, values, valid, &mut dense)?;
        match &validity {
            Some(validity) if valid != page.rows => {
                // A word of the validity at a time: the next valid values
                // go to its set bits (nulls read as false).
                let mut k = 0;
                for (mut set, n) in validity.words_in(at, page.rows) {
                    let mut word = 0u64;
                    while set != 0 {
                        let bit = set.trailing_zeros();
                        word |= u64::from(dense.bit(k)) << bit;
                        k += 1;
                        set &= set - 1;
                    }
                    out.append_word(word, n);
                }
            }
            _ => {
                for (i, w) in dense.words.iter().enumerate() {
                    out.append_word(*w, (valid - i * 64).min(64));
                }
            }
        }
        if let Some(keep) = selection.map(|s| s.slice(done, page.rows)) {
            out.keep_selected(at, &keep);
            if let Some(validity) = validity.as_mut() {
                validity.keep_selected(at, &keep);
            }
        }
        done += page.rows;
    }
    if done != rows {
        return Err(Failure::Corrupt(format!(
            "the pages hold {done} of the row group's {rows} rows"
        )));
    }
    let nulls = validity.and_then(Bits::into_nulls);
    Ok(Arc::new(BooleanArray::new(out.finish(), nulls)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pseudo-random bit per row (xorshift), set with about `per_64` in
    /// 64, or all set / none for 64 / 0.
    fn random_bits(n: usize, per_64: u64, seed: u64) -> Vec<bool> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 64 < per_64
            })
            .collect()
    }

    #[test]
    fn bits_at_any_offset_and_count_are_those_pushed() {
        let pushed = random_bits(300, 29, 5);
        let mut bits = Bits::with_capacity(0);
        for &b in &pushed {
            bits.push(b);
        }
        for start in [0, 1, 5, 63, 64, 65, 127, 200, 250, 299, 300] {
            for n in [0, 1, 7, 32, 63, 64] {
                let word = bits.bits_at(start, n);
                for k in 0..n {
                    let want = pushed.get(start + k).copied().unwrap_or(false);
                    assert_eq!(
                        (word >> k) & 1 == 1,
                        want,
                        "bit {k} from {start}, {n} of them"
                    );
                }
                assert_eq!(
                    word >> n.min(63) >> u32::from(n == 64),
                    0,
                    "no bits past {n}"
                );
            }
        }
    }

    #[test]
    fn selected_values_and_bits_are_the_ones_kept_in_order() {
        // Lengths about word boundaries, selections sparse to full, and the
        // page starting at an offset into the values and bits kept before.
        for n in [0, 1, 63, 64, 65, 127, 128, 1000, 4099] {
            for per_64 in [0, 1, 6, 32, 63, 64] {
                for before in [0, 5, 64, 70] {
                    let keep = random_bits(n, per_64, (n * 131 + before) as u64 + per_64);
                    let valid = random_bits(before + n, 48, n as u64 + 7);
                    let mut out: Vec<u32> = (0..(before + n) as u32).collect();
                    let mut bits = Bits::with_capacity(before + n);
                    for &v in &valid {
                        bits.push(v);
                    }
                    let selection = BooleanBuffer::from(keep.clone());
                    keep_selected(&mut out, Some(&mut bits), before, &selection);
                    let kept: Vec<usize> = (0..n).filter(|&i| keep[i]).collect();
                    let want: Vec<u32> = (0..before as u32)
                        .chain(kept.iter().map(|&i| (before + i) as u32))
                        .collect();
                    assert_eq!(out, want, "n {n}, {per_64}/64, after {before}");
                    let want_bits: Vec<bool> = valid[..before]
                        .iter()
                        .copied()
                        .chain(kept.iter().map(|&i| valid[before + i]))
                        .collect();
                    assert_eq!(bits.len(), want_bits.len());
                    let got: Vec<bool> = (0..want_bits.len()).map(|i| bits.bit(i)).collect();
                    assert_eq!(got, want_bits, "n {n}, {per_64}/64, after {before}");
                    // Nothing set past the end (the bitmap is handed over as is).
                    assert!(!bits.bit(want_bits.len()));
                }
            }
        }
    }

    #[test]
    fn packed_bits_is_pext() {
        for (bits, keep) in [
            (0b1011u64, 0b1110u64),
            (u64::MAX, 0x00f0_0f00_1234_5678),
            (0, u64::MAX),
            (0x8000_0000_0000_0001, 0x8000_0000_0000_0001),
            (0xdead_beef_f00d_cafe, 0x0f0f_f0f0_5555_aaaa),
        ] {
            let mut want = 0u64;
            let mut k = 0;
            for j in 0..64 {
                if keep >> j & 1 == 1 {
                    want |= (bits >> j & 1) << k;
                    k += 1;
                }
            }
            assert_eq!(packed_bits(bits, keep), want, "{bits:x} {keep:x}");
        }
    }

    #[test]
    fn int96_converts_as_the_crate_converts() {
        use parquet::data_type::Int96;
        fn int96(day: i32, nanos: i64) -> [u8; 12] {
            let mut b = [0u8; 12];
            b[..8].copy_from_slice(&nanos.to_le_bytes());
            b[8..].copy_from_slice(&day.to_le_bytes());
            b
        }
        // The epoch, a second and a half into the next day, an hour into
        // the day before, and days whose nanoseconds overflow (wrapping).
        for (day, nanos) in [
            (2_440_588, 0),
            (2_440_589, 1_500_000_000),
            (2_440_587, 3_600_000_000_000),
            (0, 86_399_999_999_999),
            (i32::MAX, 12_345),
        ] {
            let bytes = int96(day, nanos);
            let mut crate_value = Int96::new();
            crate_value.set_data(
                u32::from_le_bytes(bytes[0..4].try_into().unwrap()),
                u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
                u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
            );
            let case = format!("day {day}, nanos {nanos}");
            assert_eq!(
                int96_as::<86_400, 1_000_000_000>(bytes),
                crate_value.to_seconds(),
                "{case}"
            );
            assert_eq!(
                int96_as::<86_400_000, 1_000_000>(bytes),
                crate_value.to_millis(),
                "{case}"
            );
            assert_eq!(
                int96_as::<86_400_000_000, 1_000>(bytes),
                crate_value.to_micros(),
                "{case}"
            );
            assert_eq!(
                int96_as::<86_400_000_000_000, 1>(bytes),
                crate_value.to_nanos(),
                "{case}"
            );
        }
        assert_eq!(
            int96_as::<86_400, 1_000_000_000>(int96(2_440_589, 1_500_000_000)),
            86_401
        );
        assert_eq!(
            int96_as::<86_400, 1_000_000_000>(int96(2_440_587, 3_600_000_000_000)),
            -82_800
        );
    }

    /// One row group of `array` as a column written by the `parquet` crate
    /// (dictionary-encoded or plain), decoded by [`decode_column`].
    fn written_and_decoded(array: ArrayRef, dictionary: bool) -> ArrayRef {
        use parquet::file::properties::WriterProperties;
        let props = WriterProperties::builder()
            .set_dictionary_enabled(dictionary)
            .set_dictionary_page_size_limit(1 << 20);
        written_with_and_decoded(array, props)
    }

    /// [`written_and_decoded`], written with `props` (snappy, one row
    /// group); panics when [`decode_column`] does not take the column.
    fn written_with_and_decoded(
        array: ArrayRef,
        props: parquet::file::properties::WriterPropertiesBuilder,
    ) -> ArrayRef {
        use parquet::arrow::ArrowSchemaConverter;
        use parquet::basic::Compression;
        let rows = array.len();
        let target = array.data_type().clone();
        let batch = arrow_array::RecordBatch::try_from_iter([("v", array)]).unwrap();
        let props = props
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(rows))
            .build();
        let file = crate::parquet::written::written(&batch, props);
        let (meta, bytes) = crate::parquet::written::first_chunk(&file);
        let descr = ArrowSchemaConverter::new()
            .convert(&batch.schema())
            .unwrap();
        let chunk = meta.row_group(0).column(0);
        decode_column(
            bytes,
            chunk,
            &descr.column(0),
            &target,
            rows,
            None,
            Vec::new(),
        )
        .unwrap_or_else(|e| panic!("{target}: {e:?}"))
    }

    #[test]
    fn byte_stream_split_columns_are_decoded_here_as_written() {
        use arrow_array::{Date32Array, Float32Array, Float64Array, Int32Array, Int64Array};
        use arrow_array::{Int8Array, UInt16Array};
        use parquet::file::properties::WriterProperties;
        // Several pages (of 1 KiB), with and without nulls, of every width
        // and of types converted from the stored ones.
        let rows = 5_000usize;
        for nulls in [false, true] {
            let at = |i: usize| (!nulls || i % 7 != 2).then_some(i);
            let arrays: Vec<ArrayRef> = vec![
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| v as f64 * -0.37))
                        .collect::<Float64Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| v as f32 / 3.0))
                        .collect::<Float32Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| (v * 7919) as i64 - (1 << 40)))
                        .collect::<Int64Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| (v * 7919) as i32 - 20_000))
                        .collect::<Int32Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| v as i8))
                        .collect::<Int8Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| (v * 13) as u16))
                        .collect::<UInt16Array>(),
                ),
                Arc::new(
                    (0..rows)
                        .map(|i| at(i).map(|v| v as i32 - 2_500))
                        .collect::<Date32Array>(),
                ),
            ];
            for array in arrays {
                let props = WriterProperties::builder()
                    .set_dictionary_enabled(false)
                    .set_encoding(Encoding::BYTE_STREAM_SPLIT)
                    .set_data_page_size_limit(1024)
                    .set_write_batch_size(256);
                let decoded = written_with_and_decoded(Arc::clone(&array), props);
                assert!(
                    decoded.to_data() == array.to_data(),
                    "{} nulls {nulls}",
                    array.data_type()
                );
            }
        }
    }

    #[test]
    fn large_columns_streamed_out_decode_to_what_was_written() {
        use arrow_array::{Decimal128Array, Float64Array, Int64Array, Int8Array, StringArray};
        // Enough rows for every output to pass the size that is streamed,
        // in runs (repeated dictionary indices; long enough for a run of
        // strings to be staged) and scattered, with and without nulls,
        // dictionary-encoded and plain.
        let rows = 300_000usize;
        let value = |i: usize, runs: bool| {
            if runs {
                i / 200 % 1000
            } else {
                i * 7919 % 100_003
            }
        };
        let valid = |i: usize, nulls: bool| !nulls || i % 11 != 3;
        for runs in [false, true] {
            for nulls in [false, true] {
                let wanted = |i| valid(i, nulls).then(|| value(i, runs));
                let arrays: Vec<ArrayRef> = vec![
                    Arc::new(
                        (0..rows)
                            .map(|i| wanted(i).map(|v| v as i64 - 500))
                            .collect::<Int64Array>(),
                    ),
                    Arc::new(
                        (0..rows)
                            .map(|i| wanted(i).map(|v| v as f64 / 4.0))
                            .collect::<Float64Array>(),
                    ),
                    Arc::new(
                        (0..rows)
                            .map(|i| wanted(i).map(|v| v as i8))
                            .collect::<Int8Array>(),
                    ),
                    Arc::new(
                        (0..rows)
                            .map(|i| wanted(i).map(|v| v as i128 * 10_i128.pow(20) - 7))
                            .collect::<Decimal128Array>()
                            .with_precision_and_scale(38, 10)
                            .unwrap(),
                    ),
                    Arc::new(
                        (0..rows)
                            .map(|i| wanted(i).map(|v| format!("value {v} {}", "x".repeat(v % 30))))
                            .collect::<StringArray>(),
                    ),
                ];
                for array in arrays {
                    for dictionary in [false, true] {
                        let case = format!(
                            "{} runs {runs} nulls {nulls} dictionary {dictionary}",
                            array.data_type()
                        );
                        crate::nontemporal::STREAMED.with(|n| n.set(0));
                        let decoded = written_and_decoded(Arc::clone(&array), dictionary);
                        assert!(decoded.to_data() == array.to_data(), "{case}");
                        // Each case wrote some of its output with streaming
                        // stores, but for the bytes of `int8` (300 KB), the
                        // strings of plain pages (copied one by one), those
                        // of a dictionary's entries in order (distinct
                        // values without nulls: copied whole), and numbers
                        // gathered from pages of runs without nulls (with
                        // nulls, their scatter streams).
                        let streamed = crate::nontemporal::STREAMED.with(|n| n.get());
                        let gathered_runs = dictionary && runs && !nulls;
                        let streams = match array.data_type() {
                            DataType::Int8 => false,
                            DataType::Utf8 => dictionary && (runs || nulls),
                            // The crate's `ArrowWriter` writes these 16-byte
                            // values PLAIN, dictionary asked for or not.
                            DataType::Decimal128(..) => true,
                            _ => !gathered_runs,
                        };
                        assert_eq!(streamed > 0, streams, "{case}: {streamed} lines streamed");
                    }
                }
            }
        }
    }

    #[test]
    fn bits_append_at_every_offset_as_a_list_of_bools_would() {
        let source: Vec<u8> = (0..40u32)
            .map(|i| (i.wrapping_mul(151) >> 1) as u8)
            .collect();
        let source_bit = |i: usize| (source[i / 8] >> (i % 8)) & 1 == 1;
        for first in 0..130 {
            for packed in [0, 1, 63, 64, 65, 200] {
                let mut bits = Bits::with_capacity(0);
                let mut expected = Vec::new();
                bits.append_n(first, first % 3 == 0);
                expected.extend(std::iter::repeat_n(first % 3 == 0, first));
                bits.append_packed(&source, packed);
                expected.extend((0..packed).map(source_bit));
                bits.append_n(5, true);
                expected.extend([true; 5]);
                bits.append_word(0b1011, 4);
                expected.extend([true, true, false, true]);
                assert_eq!(bits.len, expected.len());
                let got: Vec<bool> = (0..bits.len).map(|i| bits.bit(i)).collect();
                assert_eq!(got, expected, "after {first} then {packed} packed");
                let ones = expected[first..].iter().filter(|b| **b).count();
                assert_eq!(bits.count_ones(first), ones);
                // Nothing set past the end (the invariant `append_word` relies on).
                let spare = bits.words.len() * 64 - bits.len;
                if spare > 0 {
                    let last = bits.words.last().copied().unwrap_or(0);
                    assert_eq!(last >> (64 - spare), 0, "{first} {packed} {spare}");
                }
            }
        }
    }

    #[test]
    fn index_check_agrees_with_a_plain_comparison() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for width in 0u8..=32 {
            let top = if width == 32 {
                u32::MAX
            } else {
                (1u32 << width) - 1
            };
            for entries in [
                0usize,
                1,
                2,
                3,
                255,
                256,
                1000,
                65_536,
                1 << 31,
                usize::MAX >> 1,
            ] {
                for _ in 0..20 {
                    let chunk: Vec<u32> = (0..rng.random_range(0..300))
                        .map(|_| rng.random_range(0..=top))
                        .collect();
                    let plain = chunk.iter().all(|&i| (i as usize) < entries);
                    assert_eq!(
                        all_below(&chunk, width, entries),
                        plain,
                        "width {width}, {entries} entries"
                    );
                }
                // The largest index of the width, alone and last.
                let edge = [0, top];
                assert_eq!(
                    all_below(&edge, width, entries),
                    (top as usize) < entries,
                    "width {width}, {entries} entries, index {top}"
                );
            }
        }
    }

    #[test]
    fn values_and_ends_spread_in_place_as_they_are_into_a_new_buffer() {
        use crate::parquet::level_masks::test_numbers;
        // Each slot's validity from its index and a random number.
        let patterns: [fn(usize, u64) -> bool; 6] = [
            |_, _| true,
            |_, _| false,
            |i, _| i % 7 != 0 && i % 11 != 3,
            |i, _| (i / 64) % 3 != 1,
            |_, r| r % 10 != 0,
            |_, r| r % 2 == 0,
        ];
        let mut next = test_numbers(7);
        for slots in [0, 1, 5, 63, 64, 65, 127, 128, 129, 1_000] {
            for pattern in &patterns {
                let bits: Vec<bool> = (0..slots).map(|i| pattern(i, next())).collect();
                let mut validity = Bits::with_capacity(slots);
                for &b in &bits {
                    validity.push(b);
                }
                let valid = bits.iter().filter(|b| **b).count();
                // Values: those of the valid slots land in them, in order.
                let dense: Vec<u32> = (1..=valid as u32).collect();
                let mut values = dense.clone();
                assert!(scatter_in_place(&mut values, &validity, slots));
                assert_eq!(values.len(), slots);
                let landed: Vec<u32> = bits
                    .iter()
                    .zip(&values)
                    .filter(|(b, _)| **b)
                    .map(|(_, v)| *v)
                    .collect();
                assert_eq!(landed, dense, "{slots} slots");
                // Ends: a null slot ends where the one before it did.
                let mut ends: Vec<i32> = vec![0];
                for v in 0..valid {
                    ends.push(ends[v] + (v % 5) as i32);
                }
                let mut want = vec![0];
                let mut k = 0;
                for &b in &bits {
                    k += usize::from(b);
                    want.push(ends[k]);
                }
                let mut spread = ends.clone();
                assert!(spread_in_place(&mut spread, &validity, slots));
                assert_eq!(spread, want, "{slots} slots");
            }
        }
        // Counts that disagree leave the buffers as they were.
        let mut validity = Bits::with_capacity(3);
        validity.append_n(3, true);
        let mut values = vec![1u8, 2];
        assert!(!scatter_in_place(&mut values, &validity, 3));
        assert_eq!(values, [1, 2]);
        let mut ends = vec![0, 1, 2];
        assert!(!spread_in_place(&mut ends, &validity, 3));
        assert!(!spread_in_place(&mut ends, &validity, 4));
        assert_eq!(ends, [0, 1, 2]);
    }

    #[test]
    fn scatter_puts_values_at_the_valid_rows() {
        let mut validity = Bits::with_capacity(0);
        validity.append_n(3, false);
        let pattern: Vec<bool> = (0..150).map(|i| i % 7 != 0 && i % 11 != 3).collect();
        for &b in &pattern {
            validity.append_n(1, b);
        }
        let dense: Vec<i32> = (1..=pattern.iter().filter(|b| **b).count() as i32).collect();
        let mut out = vec![-1];
        scatter(&validity, 3, pattern.len(), &dense, &mut out);
        assert_eq!(out.len(), 1 + pattern.len());
        assert_eq!(out[0], -1, "what was in `out` stays");
        // Valid rows get the dense values in order; what is under a null
        // is unspecified.
        let valid: Vec<i32> = pattern
            .iter()
            .zip(&out[1..])
            .filter(|(b, _)| **b)
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(valid, dense);
    }

    #[test]
    fn big_endian_decimals_of_every_width_keep_their_sign() {
        fn check<const N: usize>() {
            let min = i128::MIN >> (128 - 8 * N);
            let max = !min;
            for v in [0, 1, -1, 2, -2, 0x5A, -0x5A, min, max, min + 1, max - 1] {
                let bytes: [u8; N] = v.to_be_bytes()[16 - N..].try_into().unwrap();
                assert_eq!(i128_of_be(bytes), v, "{N} bytes, {v}");
            }
        }
        check::<1>();
        check::<2>();
        check::<3>();
        check::<4>();
        check::<5>();
        check::<7>();
        check::<8>();
        check::<9>();
        check::<12>();
        check::<15>();
        check::<16>();
    }

    #[test]
    fn booleans_and_dictionary_keys_keep_the_selected_rows_of_small_pages() {
        use arrow_array::{BooleanArray, DictionaryArray, StringArray};
        use parquet::arrow::ArrowSchemaConverter;
        use parquet::basic::Compression;
        use parquet::file::properties::{WriterProperties, WriterVersion};
        let rows = 20_000usize;
        let flags: ArrayRef = Arc::new(
            (0..rows)
                .map(|i| (i % 13 != 5).then_some(i % 3 == 0))
                .collect::<BooleanArray>(),
        );
        let labels: ArrayRef = Arc::new(
            (0..rows)
                .map(|i| (i % 11 != 4).then(|| format!("label {}", i / 500)))
                .collect::<StringArray>(),
        );
        let as_keys = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        // None, a narrow range (most pages passed over), two single rows,
        // scattered rows, every row.
        let patterns: [fn(usize) -> bool; 5] = [
            |_| false,
            |i| (10_300..10_420).contains(&i),
            |i| i == 3 || i == 19_999,
            |i| i % 17 == 3,
            |_| true,
        ];
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for (array, target) in [(&flags, DataType::Boolean), (&labels, as_keys.clone())] {
                let batch =
                    arrow_array::RecordBatch::try_from_iter([("v", Arc::clone(array))]).unwrap();
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .set_writer_version(version)
                    .set_data_page_size_limit(512)
                    .set_write_batch_size(64)
                    .build();
                let file = crate::parquet::written::written(&batch, props);
                let (meta, bytes) = crate::parquet::written::first_chunk(&file);
                let descr = ArrowSchemaConverter::new()
                    .convert(&batch.schema())
                    .unwrap();
                let chunk = meta.row_group(0).column(0);
                let column = descr.column(0);
                let decode = |selection: Option<&BooleanBuffer>| {
                    decode_column(
                        bytes.clone(),
                        chunk,
                        &column,
                        &target,
                        rows,
                        selection,
                        vec![],
                    )
                    .unwrap_or_else(|e| panic!("{target} {version:?}: {e:?}"))
                };
                let whole = decode(None);
                if let Some(keys) = whole.as_any().downcast_ref::<DictionaryArray<Int32Type>>() {
                    // Decoded as keys, not left to the crate.
                    assert_eq!(keys.values().len(), rows.div_ceil(500));
                }
                for keep in patterns {
                    let selection: BooleanBuffer = (0..rows).map(keep).collect();
                    let got = decode(Some(&selection));
                    let mask = BooleanArray::new(selection.clone(), None);
                    let want = arrow_select::filter::filter(&whole, &mask).unwrap();
                    let case = format!("{target} {version:?}, {} kept", selection.count_set_bits());
                    assert_eq!(got.len(), want.len(), "{case}");
                    // The keys may index a dictionary the selection's pages
                    // did not all need: compare the values.
                    let values = |a: &ArrayRef| match a.data_type() {
                        DataType::Dictionary(..) => {
                            arrow_cast::cast(a, &DataType::Utf8).unwrap().to_data()
                        }
                        _ => a.to_data(),
                    };
                    assert_eq!(values(&got), values(&want), "{case}");
                }
            }
        }
    }
}
