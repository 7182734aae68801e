//! Structs, lists, maps and unions of the columns fastingest decodes (and
//! of each other), decoded here rather than by `orc-rust`.
//!
//! Why: `orc-rust` 0.9 reads a `timestamp` inside them wrong where the
//! ORC C++ writer (pyarrow's) stores a time before 1970 with a fraction of
//! a second: 2^61 ns off, or refused as an overflow (its nanoseconds read
//! unsigned); and in a writer zone with daylight saving, summer times
//! after 2099 an hour off. Their leaves here go through the same decoders
//! as top-level columns.
//!
//! How ORC lays them out: each has a present stream over its rows (none
//! when it has no nulls). A struct's children hold a value for each of its
//! valid rows. A list's (a map's) length stream, unsigned run length
//! encoding v2, gives each valid row's number of entries, and its child
//! (its key and value columns) holds the entries of all of them end to end.
//! A union's data stream, byte run length encoded, gives each valid row's
//! tag (the variant it holds), and each variant column holds a value for
//! each row tagged with it.
//!
//! A union reads as an Arrow sparse union, as `orc-rust` and pyarrow read
//! it: each variant's array spans all rows, null where the row holds
//! another; Arrow unions have no validity of their own, so a null union row
//! is tagged 0 and its first variant is null there.

use std::sync::Arc;

use arrow_array::{
    new_null_array, ArrayRef, ListArray, MapArray, StructArray, UInt32Array, UnionArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, FieldRef, UnionFields, UnionMode};
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::{decode_column, may_decode as column_may_decode, ColumnAt, Encodings};
use super::integers::{byte_rle, readable, rle_runs, validity, whole, Rle, MOST_RESERVED_VALUES};
use super::streams::StripeStreams;

/// Whether a struct, list, map or union column of ORC type `orc`, read as
/// Arrow type `arrow`, may be decoded here: every column under it may be.
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    match (orc, arrow) {
        (OrcType::Struct { children, .. }, ArrowType::Struct(fields)) => {
            // (A struct of no fields has no child to give its length.)
            !children.is_empty()
                && children.len() == fields.len()
                && children
                    .iter()
                    .zip(fields)
                    .all(|(child, field)| column_may_decode(child.data_type(), field.data_type()))
        }
        (OrcType::List { child, .. }, ArrowType::List(field)) => {
            column_may_decode(child, field.data_type())
        }
        (OrcType::Map { key, value, .. }, ArrowType::Map(entries, _)) => {
            match entries.data_type() {
                ArrowType::Struct(pair) if pair.len() == 2 => {
                    column_may_decode(key, pair[0].data_type())
                        && column_may_decode(value, pair[1].data_type())
                }
                _ => false,
            }
        }
        (OrcType::Union { variants, .. }, ArrowType::Union(fields, UnionMode::Sparse)) => {
            // Tags are type ids as they stand (`orc-rust` numbers its
            // variants so; a union of more than 127 variants it refuses).
            !variants.is_empty()
                && variants.len() == fields.len()
                && fields
                    .iter()
                    .enumerate()
                    .all(|(i, (id, _))| id as usize == i)
                && variants
                    .iter()
                    .zip(fields.iter())
                    .all(|(variant, (_, field))| column_may_decode(variant, field.data_type()))
        }
        _ => false,
    }
}

/// `column` (a struct, list, map or union one [`may_decode`] accepted) decoded
/// whole, with its children's encodings from `encodings` (`None`: an
/// encoding under it is not one read here).
pub(super) fn decode(
    streams: &StripeStreams,
    encodings: &Encodings,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let validity = validity(streams, column)?;
    let valid = validity
        .as_ref()
        .map_or(column.rows, |v| v.count_set_bits());
    let nulls = validity.map(NullBuffer::new);
    match (column.orc, arrow) {
        (OrcType::Struct { children, .. }, ArrowType::Struct(fields)) => {
            let mut arrays = Vec::with_capacity(children.len());
            for (child, field) in children.iter().zip(fields) {
                let at = child_at(column, encodings, child.data_type(), valid)?;
                let Some(array) = decode_child(streams, encodings, &at, field.data_type())? else {
                    return Ok(None);
                };
                let array = spread(array, nulls.as_ref())?;
                arrays.push(array);
            }
            let array =
                StructArray::try_new(fields.clone(), arrays, nulls).map_err(|e| e.to_string())?;
            Ok(Some(Arc::new(array)))
        }
        (OrcType::List { child, .. }, ArrowType::List(field)) => {
            let Some(offsets) = offsets(streams, column, valid, nulls.as_ref())? else {
                return Ok(None);
            };
            let entries = *offsets.last().unwrap_or(&0) as usize;
            let Some(values) = entries_of(streams, encodings, column, child, field, entries)?
            else {
                return Ok(None);
            };
            let array = ListArray::try_new(Arc::clone(field), offsets, values, nulls)
                .map_err(|e| e.to_string())?;
            Ok(Some(Arc::new(array)))
        }
        (OrcType::Map { key, value, .. }, ArrowType::Map(field, sorted)) => {
            let ArrowType::Struct(pair) = field.data_type() else {
                return Ok(None);
            };
            let Some(offsets) = offsets(streams, column, valid, nulls.as_ref())? else {
                return Ok(None);
            };
            let entries = *offsets.last().unwrap_or(&0) as usize;
            let Some(keys) = entries_of(streams, encodings, column, key, &pair[0], entries)? else {
                return Ok(None);
            };
            let Some(values) = entries_of(streams, encodings, column, value, &pair[1], entries)?
            else {
                return Ok(None);
            };
            let entries = StructArray::try_new(pair.clone(), vec![keys, values], None)
                .map_err(|e| e.to_string())?;
            let array = MapArray::try_new(Arc::clone(field), offsets, entries, nulls, *sorted)
                .map_err(|e| e.to_string())?;
            Ok(Some(Arc::new(array)))
        }
        (OrcType::Union { variants, .. }, ArrowType::Union(fields, UnionMode::Sparse)) => union(
            streams,
            encodings,
            column,
            variants,
            fields,
            valid,
            nulls.as_ref(),
        ),
        _ => Ok(None),
    }
}

/// A union of `variants` read as a sparse union of `fields`, from its
/// `valid` rows' tags (`nulls`: its null rows, if any).
fn union(
    streams: &StripeStreams,
    encodings: &Encodings,
    column: &ColumnAt,
    variants: &[OrcType],
    fields: &UnionFields,
    valid: usize,
    nulls: Option<&NullBuffer>,
) -> Result<Option<ArrayRef>, String> {
    let tags = union_tags(streams, column, variants.len(), valid)?;
    // Each row's tag (`NO_TAG` where the union is null), and the index of
    // its value in its variant's column (the rows before it with its tag).
    const NO_TAG: u8 = u8::MAX;
    let (row_tags, places, counts) = {
        let mut row_tags = vec![NO_TAG; column.rows];
        let mut places = vec![0u32; column.rows];
        let mut counts = vec![0u32; variants.len()];
        let mut place = |row: usize, tag: u8| {
            row_tags[row] = tag;
            places[row] = counts[tag as usize];
            counts[tag as usize] += 1;
        };
        match nulls {
            Some(nulls) => nulls
                .valid_indices()
                .zip(&tags)
                .for_each(|(r, &t)| place(r, t)),
            None => tags.iter().enumerate().for_each(|(r, &t)| place(r, t)),
        }
        (row_tags, places, counts)
    };
    let mut children = Vec::with_capacity(variants.len());
    for (k, (variant, (_, field))) in variants.iter().zip(fields.iter()).enumerate() {
        let at = child_at(column, encodings, variant, counts[k] as usize)?;
        let Some(values) = decode_child(streams, encodings, &at, field.data_type())? else {
            return Ok(None);
        };
        let child = if counts[k] == 0 {
            new_null_array(field.data_type(), column.rows)
        } else {
            // Row r holds this variant's value where it is tagged k (other
            // rows: null, at an index that stays in bounds).
            let tag = k as u8;
            let tagged = BooleanBuffer::collect_bool(row_tags.len(), |r| row_tags[r] == tag);
            let indices: Vec<u32> = row_tags
                .iter()
                .zip(&places)
                .map(|(&t, &place)| if t == tag { place } else { 0 })
                .collect();
            let indices = UInt32Array::new(indices.into(), Some(NullBuffer::new(tagged)));
            arrow_select::take::take(&values, &indices, None).map_err(|e| e.to_string())?
        };
        children.push(child);
    }
    // A null row is tagged 0 (its first variant is null there).
    let type_ids: Vec<i8> = row_tags
        .iter()
        .map(|&tag| if tag == NO_TAG { 0 } else { tag as i8 })
        .collect();
    let type_ids = ScalarBuffer::from(type_ids);
    let array =
        UnionArray::try_new(fields.clone(), type_ids, None, children).map_err(|e| e.to_string())?;
    Ok(Some(Arc::new(array)))
}

/// A union's tags, one for each of its `valid` rows, each checked to name
/// one of its `variants`.
fn union_tags(
    streams: &StripeStreams,
    column: &ColumnAt,
    variants: usize,
    valid: usize,
) -> Result<Vec<u8>, String> {
    let data = whole(
        streams.get(column.id, Kind::Data),
        "tag",
        valid.saturating_add(64),
    )?;
    let mut tags = Vec::with_capacity(valid.min(MOST_RESERVED_VALUES));
    byte_rle(&data.unwrap_or_default(), valid, |run| {
        tags.extend_from_slice(run)
    })
    .map_err(|e| format!("its tag stream: {e}"))?;
    if let Some(row) = tags.iter().position(|&tag| tag as usize >= variants) {
        return Err(format!(
            "its valid row {row} is tagged {}, past its {variants} variants",
            tags[row]
        ));
    }
    Ok(tags)
}

/// The items column `orc` of a list (a map's key or value column), holding
/// `entries` values, read as `field`.
fn entries_of(
    streams: &StripeStreams,
    encodings: &Encodings,
    map: &ColumnAt,
    orc: &OrcType,
    field: &FieldRef,
    entries: usize,
) -> Result<Option<ArrayRef>, String> {
    let at = child_at(map, encodings, orc, entries)?;
    decode_child(streams, encodings, &at, field.data_type())
}

/// Child `orc` of `parent`, holding `rows` values.
fn child_at<'a>(
    parent: &ColumnAt,
    encodings: &Encodings,
    orc: &'a OrcType,
    rows: usize,
) -> Result<ColumnAt<'a>, String> {
    let id = orc.column_index() as u32;
    let &(encoding, dictionary_size) = encodings
        .get(&id)
        .ok_or_else(|| format!("the stripe footer has no encoding for column {id}"))?;
    Ok(ColumnAt {
        id,
        orc,
        encoding,
        dictionary_size,
        rows,
        zone: parent.zone,
        decimal_integers: parent.decimal_integers,
    })
}

/// A child column decoded, named in an error.
fn decode_child(
    streams: &StripeStreams,
    encodings: &Encodings,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    decode_column(streams, encodings, column, arrow)
        .map_err(|e| format!("its column {}: {e}", column.id))
}

/// A struct's child, one value for each valid row of the struct, spread
/// over all its rows (a null where the struct is).
fn spread(child: ArrayRef, nulls: Option<&NullBuffer>) -> Result<ArrayRef, String> {
    let Some(nulls) = nulls.filter(|n| n.null_count() > 0) else {
        return Ok(child);
    };
    // A valid row takes the child's value at the number of valid rows
    // before it; a null one, its first (a null index stays in bounds).
    let mut next = 0u32;
    let places: Vec<u32> = nulls
        .inner()
        .iter()
        .map(|valid| {
            let place = if valid { next } else { 0 };
            next += u32::from(valid);
            place
        })
        .collect();
    let indices = UInt32Array::new(places.into(), Some(nulls.clone()));
    arrow_select::take::take(&child, &indices, None).map_err(|e| e.to_string())
}

/// The offsets of a list's (a map's) `rows` entries from its length stream,
/// which holds one length for each of its `valid` rows (`None`: lengths in
/// an encoding not read here).
fn offsets(
    streams: &StripeStreams,
    column: &ColumnAt,
    valid: usize,
    nulls: Option<&NullBuffer>,
) -> Result<Option<OffsetBuffer<i32>>, String> {
    let Some(rle) = Rle::direct(column.encoding) else {
        return Ok(None);
    };
    // Reserved as the lengths come: a stream can claim more than it holds.
    let mut lengths = Vec::with_capacity(valid.min(MOST_RESERVED_VALUES));
    rle_runs(
        rle,
        readable(streams.get(column.id, Kind::Length)),
        "length",
        valid,
        false,
        |run, start| {
            for &length in run {
                let length = i32::try_from(length).ok().filter(|&l| l >= 0);
                lengths.push(length.ok_or_else(|| {
                    format!("a length past 2^31 (run at byte {start} of the length stream)")
                })?);
            }
            Ok(())
        },
    )?;
    let mut ends = Vec::with_capacity(column.rows.min(lengths.len() * 2) + 1);
    ends.push(0i32);
    let mut total = 0i32;
    let mut add = |length: i32| {
        total = total
            .checked_add(length)
            .ok_or("its entries number more than 2^31 in one stripe")?;
        Ok::<i32, &str>(total)
    };
    match nulls {
        None => {
            for &length in &lengths {
                ends.push(add(length)?);
            }
        }
        Some(nulls) => {
            let mut lengths = lengths.iter();
            for row_valid in nulls.iter() {
                let length = if row_valid {
                    *lengths.next().unwrap_or(&0)
                } else {
                    0
                };
                ends.push(add(length)?);
            }
        }
    }
    Ok(Some(OffsetBuffer::new(ends.into())))
}
