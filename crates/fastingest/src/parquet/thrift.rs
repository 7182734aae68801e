//! Just enough of Thrift's compact protocol (what Parquet footers and page
//! headers are written in) to check the sizes and counts they claim before
//! the `parquet` crate allocates by them.

// Thrift compact protocol type ids.
pub(crate) const STOP: u8 = 0;
pub(crate) const TRUE: u8 = 1;
pub(crate) const FALSE: u8 = 2;
pub(crate) const BYTE: u8 = 3;
pub(crate) const I16: u8 = 4;
pub(crate) const I32: u8 = 5;
pub(crate) const I64: u8 = 6;
pub(crate) const DOUBLE: u8 = 7;
pub(crate) const BINARY: u8 = 8;
pub(crate) const LIST: u8 = 9;
pub(crate) const SET: u8 = 10;
pub(crate) const MAP: u8 = 11;
pub(crate) const STRUCT: u8 = 12;

/// Nesting deeper than a page header has is refused (no recursion without
/// bound on hostile input).
const MAX_DEPTH: usize = 16;

#[cold]
fn truncated() -> String {
    "truncated".into()
}

/// A reader of the Thrift compact protocol, just enough to read a page
/// header's sizes and skip everything else.
pub(crate) struct Compact<'a> {
    bytes: &'a [u8],
    /// Bytes read so far.
    pub pos: usize,
}

impl<'a> Compact<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Compact { bytes, pos: 0 }
    }

    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8, String> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(truncated()),
        }
    }

    /// Most varints in a footer (field values, lengths, counts) are one
    /// byte: read without the loop.
    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        match self.bytes.get(self.pos) {
            Some(&b) if b & 0x80 == 0 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.long_varint(),
        }
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    pub(crate) fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// Reads a binary field's length and moves past its bytes; returns
    /// where they lie in the bytes read.
    pub(crate) fn binary(&mut self) -> Result<std::ops::Range<usize>, String> {
        let n = self.varint()?;
        let start = self.pos;
        self.skip_bytes(n)?;
        Ok(start..self.pos)
    }

    pub(crate) fn skip_bytes(&mut self, n: u64) -> Result<(), String> {
        let end = (self.pos as u64)
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len() as u64)
            .ok_or("a length runs past the chunk")?;
        self.pos = end as usize;
        Ok(())
    }

    /// Reads a field header: `(id, type)`, or `None` at the struct's end.
    pub(crate) fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, String> {
        let b = self.byte()?;
        let kind = b & 0x0f;
        if kind == STOP {
            return Ok(None);
        }
        let delta = (b >> 4) as i16;
        let id = if delta == 0 {
            self.zigzag()? as i16
        } else {
            last.wrapping_add(delta)
        };
        *last = id;
        Ok(Some((id, kind)))
    }

    /// A list's (or set's) size and element type. Every element takes at
    /// least a byte: a size past the bytes left is a lie (and must not be
    /// looped over or reserved for).
    pub(crate) fn list_header(&mut self) -> Result<(u64, u8), String> {
        let b = self.byte()?;
        let size = match b >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if size > (self.bytes.len() - self.pos) as u64 {
            return Err(format!("a list claims {size} elements"));
        }
        Ok((size, b & 0x0f))
    }

    pub(crate) fn skip(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        match kind {
            TRUE | FALSE => Ok(()),
            BYTE => self.skip_bytes(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.skip_bytes(8),
            BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            LIST | SET => {
                let (size, elem) = self.list_header()?;
                for _ in 0..size {
                    self.skip_element(elem, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                if size > (self.bytes.len() - self.pos) as u64 {
                    return Err(format!("a map claims {size} entries"));
                }
                let types = self.byte()?;
                for _ in 0..size {
                    self.skip_element(types >> 4, depth + 1)?;
                    self.skip_element(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => {
                let mut last = 0i16;
                while let Some((_, kind)) = self.field(&mut last)? {
                    self.skip_value(kind, depth + 1)?;
                }
                Ok(())
            }
            other => Err(format!("unknown field type {other}")),
        }
    }

    /// [`Compact::skip`], with the kinds most fields are (integers, strings,
    /// booleans) skipped here: a footer has thousands of them, and a call
    /// through `skip`'s jump table for each was most of the check's time.
    #[inline(always)]
    fn skip_value(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        match kind {
            TRUE | FALSE => Ok(()),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            _ => self.skip(kind, depth),
        }
    }

    /// Booleans inside lists and maps take a byte each.
    #[inline(always)]
    pub(crate) fn skip_element(&mut self, kind: u8, depth: usize) -> Result<(), String> {
        match kind {
            TRUE | FALSE => self.skip_bytes(1),
            _ => self.skip_value(kind, depth),
        }
    }
}

/// Checks a Parquet footer (Thrift `FileMetaData`) before it is decoded:
/// every list must fit in the bytes left (an element takes at least one),
/// and no schema element may claim more children than the schema has
/// elements (the decoder reserves room for them first).
pub(crate) fn check_file_metadata(footer: &[u8]) -> Result<(), String> {
    let mut r = Compact::new(footer);
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        if (id, kind) == (2, LIST) {
            check_schema(&mut r)?;
        } else {
            r.skip(kind, 1)?;
        }
    }
    Ok(())
}

/// The schema: a list of `SchemaElement`s, field 5 of each its child count.
fn check_schema(r: &mut Compact) -> Result<(), String> {
    let (size, elem) = r.list_header()?;
    if elem != STRUCT {
        return Err(format!(
            "the schema is a list of type {elem}, not of structs"
        ));
    }
    for _ in 0..size {
        let mut last = 0i16;
        while let Some((id, kind)) = r.field(&mut last)? {
            // Any integer type: the decoder reads a zigzag varint for each
            // (the fuzzer's input 1131:620439 typed the count I64).
            if id == 5 && matches!(kind, I16 | I32 | I64) {
                let children = r.zigzag()?;
                if children < 0 || children as u64 > size {
                    return Err(format!(
                        "a schema element claims {children} children in a schema of {size} elements"
                    ));
                }
            } else {
                r.skip(kind, 2)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_element_claiming_too_many_children_is_refused() {
        // FileMetaData { 2: schema = [ { 5: num_children = 2^30 } ] }
        let footer = [0x29, 0x1c, 0x55, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00, 0x00];
        let err = check_file_metadata(&footer).unwrap_err();
        assert!(err.contains("children"), "{err}");
        // The same count typed I64 (0x56) or I16 (0x54) is checked too.
        for kind in [0x56, 0x54] {
            let mut typed = footer;
            typed[2] = kind;
            let err = check_file_metadata(&typed).unwrap_err();
            assert!(err.contains("children"), "{err}");
        }
        // The same with 0 children, and one element, is fine.
        let ok = [0x29, 0x1c, 0x55, 0x00, 0x00, 0x00];
        assert_eq!(check_file_metadata(&ok), Ok(()));
    }

    /// A footer the `parquet` crate wrote, with every kind a footer holds
    /// (strings, lists of strings and integers, booleans, nested structs,
    /// statistics, key-value metadata) and several row groups.
    fn written_footer() -> Vec<u8> {
        use arrow_array::types::Int32Type;
        use arrow_array::{
            ArrayRef, BooleanArray, Int64Array, ListArray, RecordBatch, StringArray,
        };
        use std::sync::Arc;
        let n = 3_000;
        let ints: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 5 != 0).then_some(i * 7919)),
        ));
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("s{}", i % 97)),
        ));
        let flags: ArrayRef = Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 3 == 0))));
        let lists: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..n).map(|i| Some(vec![Some(i as i32); (i % 4) as usize])),
        ));
        let batch =
            RecordBatch::try_from_iter([("i", ints), ("s", strings), ("b", flags), ("l", lists)])
                .unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(1_000))
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                "k".to_string(),
                "v".to_string(),
            )]))
            .build();
        let file = crate::parquet::written::written(&batch, props);
        let n = file.len();
        let len = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as usize;
        file[n - 8 - len..n - 8].to_vec()
    }

    #[test]
    fn a_written_footer_passes_and_every_cut_of_it_fails() {
        let footer = written_footer();
        assert_eq!(check_file_metadata(&footer), Ok(()));
        // The struct's closing STOP is its last byte: any shorter prefix
        // runs out inside it.
        for cut in 0..footer.len() {
            assert!(check_file_metadata(&footer[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_list_longer_than_its_bytes_is_refused() {
        // FileMetaData { 4: row_groups = a list claiming 2^31 structs }
        let footer = [0x49, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
        assert!(check_file_metadata(&footer)
            .unwrap_err()
            .contains("elements"));
    }
}
