//! A footer with fields of a type the Parquet format does not give them,
//! made decodable: those fields are dropped.
//!
//! Why: Thrift's generated readers (pyarrow's among them) skip a field
//! whose wire type is not the one its id has, so files where a writer put
//! its own data under an id the format later gave to something else still
//! read there. The `parquet` crate refuses the whole footer instead. Dremio
//! 3.2, for one, wrote a list of structs as field 15 of `ColumnMetaData`
//! (`bloom_filter_length`, an `i32`): parquet-testing's
//! `dict-page-offset-zero.parquet`.
//!
//! Only the structs such ids are found in are looked into: `FileMetaData`,
//! its `RowGroup`s, their `ColumnChunk`s and each one's `ColumnMetaData`.
//! Everything else is copied as it is. Used only once a footer failed to
//! decode as written.

use super::thrift::{Compact, BINARY, FALSE, I16, I32, I64, LIST, STRUCT, TRUE};

/// The structs looked into, each with the type of every field id the
/// format gives it (booleans as [`TRUE`]).
#[derive(Clone, Copy)]
enum Known {
    FileMetaData,
    RowGroup,
    ColumnChunk,
    ColumnMetaData,
}

impl Known {
    /// The wire type of field `id`, and the struct it is when it is one of
    /// those looked into (or a list of them); `None`: an id the format does
    /// not give this struct (kept: every reader skips those).
    fn field(self, id: i16) -> Option<(u8, Option<Known>)> {
        use Known::*;
        let kind = match (self, id) {
            (FileMetaData, 1) => I32,
            (FileMetaData, 2 | 5 | 7) => LIST,
            (FileMetaData, 3) => I64,
            (FileMetaData, 4) => return Some((LIST, Some(RowGroup))),
            (FileMetaData, 6 | 9) => BINARY,
            (FileMetaData, 8) => STRUCT,
            (RowGroup, 1) => return Some((LIST, Some(ColumnChunk))),
            (RowGroup, 2 | 3 | 5 | 6) => I64,
            (RowGroup, 4) => LIST,
            (RowGroup, 7) => I16,
            (ColumnChunk, 1 | 9) => BINARY,
            (ColumnChunk, 2 | 4 | 6) => I64,
            (ColumnChunk, 3) => return Some((STRUCT, Some(ColumnMetaData))),
            (ColumnChunk, 5 | 7) => I32,
            (ColumnChunk, 8) => STRUCT,
            (ColumnMetaData, 1 | 4 | 15) => I32,
            (ColumnMetaData, 2 | 3 | 8 | 13) => LIST,
            (ColumnMetaData, 5 | 6 | 7 | 9 | 10 | 11 | 14) => I64,
            (ColumnMetaData, 12 | 16 | 17) => STRUCT,
            _ => return None,
        };
        Some((kind, None))
    }
}

/// `footer` without the fields of the structs above whose wire type is not
/// the format's, and how many were dropped; `None` when the footer is not
/// well-formed Thrift (its decoder then says what is wrong) or has no such
/// field.
pub(super) fn drop_mistyped_fields(footer: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut r = Compact::new(footer);
    let mut out = Vec::with_capacity(footer.len());
    let mut dropped = 0;
    copy_struct(&mut r, footer, Known::FileMetaData, &mut out, &mut dropped).ok()?;
    (dropped > 0).then_some((out, dropped))
}

/// Copies the struct at `r` (a `known` one) to `out`, its fields' headers
/// written afresh (a dropped field changes the next one's id delta).
fn copy_struct(
    r: &mut Compact,
    bytes: &[u8],
    known: Known,
    out: &mut Vec<u8>,
    dropped: &mut usize,
) -> Result<(), String> {
    let mut last_read = 0i16;
    let mut last_written = 0i16;
    while let Some((id, kind)) = r.field(&mut last_read)? {
        // Booleans are typed true or false in their header.
        let wire = if kind == FALSE { TRUE } else { kind };
        let start = r.pos;
        match known.field(id) {
            Some((expected, _)) if expected != wire => {
                r.skip(kind, 1)?;
                *dropped += 1;
                continue;
            }
            Some((STRUCT, Some(inner))) => {
                field_header(out, id, kind, &mut last_written);
                copy_struct(r, bytes, inner, out, dropped)?;
            }
            Some((LIST, Some(inner))) => {
                let (size, element) = r.list_header()?;
                field_header(out, id, kind, &mut last_written);
                if element != STRUCT {
                    // Not the format's list of structs: copied as it is,
                    // for the decoder to refuse.
                    for _ in 0..size {
                        r.skip_element(element, 2)?;
                    }
                    out.extend_from_slice(&bytes[start..r.pos]);
                    continue;
                }
                out.extend_from_slice(&bytes[start..r.pos]);
                for _ in 0..size {
                    copy_struct(r, bytes, inner, out, dropped)?;
                }
            }
            _ => {
                r.skip(kind, 1)?;
                field_header(out, id, kind, &mut last_written);
                out.extend_from_slice(&bytes[start..r.pos]);
            }
        }
    }
    out.push(0);
    Ok(())
}

/// Writes the header of field `id` of wire type `kind`, after field `last`.
fn field_header(out: &mut Vec<u8>, id: i16, kind: u8, last: &mut i16) {
    match id.checked_sub(*last) {
        Some(delta @ 1..=15) => out.push((delta as u8) << 4 | kind),
        _ => {
            out.push(kind);
            // The id, zigzag, as a varint.
            let mut v = ((id << 1) ^ (id >> 15)) as u16 as u64;
            loop {
                let low = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(low);
                    break;
                }
                out.push(low | 0x80);
            }
        }
    }
    *last = id;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_another_type_is_dropped_and_the_rest_kept() {
        // FileMetaData { 1: 1, 3: 39, 4: [ RowGroup { 1: [ ColumnChunk {
        // 2: 4, 3: ColumnMetaData { 1: 1, 15: [ {1: 0} ] (a list where the
        // format has an i32), 16 (long form after the drop): {} } } ] } ] }
        let footer = [
            0x15, 0x02, // 1: i32 1
            0x26, 0x4e, // 3: i64 39
            0x19, 0x1c, // 4: list of 1 struct
            0x19, 0x1c, // RowGroup 1: list of 1 struct
            0x26, 0x08, // ColumnChunk 2: i64 4
            0x1c, // 3: struct
            0x15, 0x02, // ColumnMetaData 1: i32 1
            0xe9, 0x1c, 0x15, 0x00, 0x00, // 15: list of 1 struct {1: 0}
            0x1c, 0x00, // 16: struct {}
            0x00, 0x00, 0x00, 0x00, // ends of ColumnMetaData... FileMetaData
        ];
        // The input ends ColumnMetaData, ColumnChunk, RowGroup, FileMetaData.
        let (cleaned, dropped) = drop_mistyped_fields(&footer).unwrap();
        assert_eq!(dropped, 1);
        let want = [
            0x15, 0x02, 0x26, 0x4e, 0x19, 0x1c, 0x19, 0x1c, 0x26, 0x08, 0x1c, 0x15, 0x02,
            // 16 after 1: a delta of 15, a short header.
            0xfc, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        assert_eq!(cleaned, want);
    }

    #[test]
    fn a_footer_with_every_field_as_the_format_types_it_is_left_alone() {
        // FileMetaData { 1: 1, 3: 0, 6: "x" }
        assert!(drop_mistyped_fields(&[0x15, 0x02, 0x26, 0x00, 0x38, 0x01, 0x78, 0x00]).is_none());
        // Not Thrift at all: left to the decoder.
        assert!(drop_mistyped_fields(&[0x15]).is_none());
    }

    #[test]
    fn long_form_headers_round_trip_any_id() {
        for id in [16i16, 100, 1000, i16::MAX, -1, -300] {
            let mut out = Vec::new();
            let mut last = 0;
            field_header(&mut out, id, I32, &mut last);
            out.push(0x02);
            out.push(0x00);
            let mut r = Compact::new(&out);
            let mut read_last = 0;
            assert_eq!(r.field(&mut read_last).unwrap(), Some((id, I32)), "{id}");
        }
    }
}
