//! Flat byte-array columns (strings and binary: top level, not repeated, at
//! most one definition level) decoded straight into one offsets buffer and
//! one values buffer.
//!
//! Why: for a dictionary-encoded string column the `parquet` crate copies
//! the dictionary into an offsets buffer, checking each entry's UTF-8 on its
//! own, then copies every value out of it into a batch that grows by
//! doubling; on a file of unique short strings that made fastingest 2.4×
//! slower than polars (profiled: copies 23 %, `extend_from_dictionary`
//! 10 %, `try_push` 6 %, `from_utf8` 5 % of the read's CPU). Here a
//! dictionary is checked once, as a whole; a value taken from it needs no
//! check of its own; a short value is one fixed-size copy; and the values
//! buffer is sized from the pages' headers and the dictionary, not doubled.

use std::mem::MaybeUninit;
use std::sync::Arc;

use arrow_array::types::ArrowDictionaryKeyType;
use arrow_array::{
    ArrayRef, DictionaryArray, GenericBinaryArray, GenericStringArray, OffsetSizeTrait,
    PrimitiveArray,
};
use arrow_buffer::ArrowNativeType;
use arrow_buffer::{BooleanBuffer, Buffer, OffsetBuffer, ScalarBuffer};
use parquet::basic::Encoding;

use super::delta;
use super::flat::{
    dictionary_indices, dictionary_of, keep_selected as keep_selected_values,
    kept_dictionary_indices, low_bits, next_page, page_levels, page_values, room_for,
    spread_in_place, Bits, Decoded, Definition, Failure, Indices, NextPage,
};
use super::pages::{ChunkPages, PagesAhead};
use crate::blocks::{pad_entries, BLOCK};
use crate::utf8::is_utf8;
use crate::{memory, nontemporal};

/// The most bytes a column chunk's values may take: Arrow's `Utf8` and
/// `Binary` address their values with `i32` offsets. A chunk that needs
/// more goes to the `parquet` crate, which says so.
const MAX_BYTES: usize = i32::MAX as usize;

/// A dictionary page of this many bytes or more, decompressed, whose
/// entries take [`IN_PLACE_MEAN`] bytes or more on average, becomes the
/// dictionary in its own buffer ([`Dictionary::from_plain_in_place`]): a
/// copy of pyarrow's dictionary of 1,024 blobs of 60 KB held 60 MB more
/// beside it while the chunk was decoded. Any other is copied, and its
/// buffer serves the chunk's next pages. Read in place, the 1 MB pages of
/// short strings of the suite's `mixed` file cost a `memmove` per entry
/// (a copy of many entries at once is faster) and a new buffer, zeroed,
/// for the next page: 11 % more CPU in a steady read.
const IN_PLACE_FROM: usize = 1 << 20;

/// See [`IN_PLACE_FROM`].
const IN_PLACE_MEAN: usize = 1 << 10;

/// The most the pages' headers and a dictionary's entries suggest
/// reserving for a chunk's values before any page is decoded.
const FIRST_GUESS_MAX: usize = 64 << 20;

/// A flat string (`utf8`) or binary column of `rows` rows, plain or
/// dictionary-encoded, with offsets of type `O`: `i32` for `Utf8` and
/// `Binary`, `i64` for `LargeUtf8` and `LargeBinary` (what a file's Arrow
/// schema asks for when polars or pandas wrote it).
///
/// Either way one chunk holds at most [`MAX_BYTES`] of values (or goes to
/// the `parquet` crate), so every end fits an `i32`; the offsets are
/// written at their width as the values are (the crate's own large-string
/// path was 3-6× slower than polars; decoded as `i32` and widened after,
/// a column of short values spent a tenth of its read widening).
///
/// With a `selection` (a bit per row), only the rows it sets: a
/// dictionary-encoded page without nulls copies only theirs, any other page
/// is decoded and then cut to them ([`keep_selected`]); pages without one
/// are passed over when `pages` was told the selection
/// ([`ChunkPages::skip_unselected`], as `flat::decode_column` does).
pub(super) fn decode<O: OffsetSizeTrait>(
    mut pages: ChunkPages,
    definition: Definition,
    rows: usize,
    utf8: bool,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    if selection.is_some_and(|s| s.len() != rows) {
        return Err(Failure::Unsupported);
    }
    let held = selection.map_or(rows, BooleanBuffer::count_set_bits);
    let mut offsets: Vec<O> = room_for(held.saturating_add(1))?;
    offsets.push(O::usize_as(0));
    let mut bytes: Vec<u8> = Vec::new();
    let mut validity = definition.nullable().then(|| Bits::with_capacity(held));
    let mut dictionary: Option<Dictionary> = None;
    // The ends of a page's valid values, and a run's dictionary indices.
    let mut ends: Vec<O> = Vec::new();
    let mut indices: Vec<u32> = Vec::new();
    let mut done = 0usize;
    // While `Some`, every row so far is the dictionary's entry of its
    // number, and none is written yet (see [`InOrder`]).
    let mut in_order: Option<InOrder> = selection.is_none().then_some(InOrder::default());
    let ahead = pages.ahead();
    while let Some(page) = next_page(&mut pages, definition)? {
        let page = match page {
            NextPage::Dictionary(buf, count) => {
                let large = buf.len() >= IN_PLACE_FROM
                    && count >= BLOCK / 4
                    && buf.len() / count >= IN_PLACE_MEAN;
                let read = match large {
                    false => Dictionary::from_plain(buf, count, utf8)?,
                    true => match pages.take_page() {
                        Ok(page) => Dictionary::from_plain_in_place(page, count, utf8)?,
                        Err(page) => Dictionary::from_plain(page, count, utf8)?,
                    },
                };
                // No more values look entries up than there are entries:
                // they may be the dictionary in order, whose bytes are then
                // the values' (not reserved for twice).
                let may_be_in_order = in_order.is_some() && ahead.other_values <= count as u64;
                if done == 0 && !may_be_in_order {
                    let guess = first_guess(ahead, Some(&read));
                    reserve_about(&mut bytes, kept_share(guess, ahead, held, rows));
                }
                dictionary = Some(read);
                continue;
            }
            NextPage::Data(page) => page,
            // None of its rows kept: nothing to add.
            NextPage::Skipped(n) => {
                done += n;
                continue;
            }
        };
        if done == 0 && dictionary.is_none() {
            let guess = first_guess(ahead, None);
            reserve_about(&mut bytes, kept_share(guess, ahead, held, rows));
        }
        if done + page.rows > rows {
            return Err(Failure::Corrupt(format!(
                "the pages hold more than the row group's {rows} rows"
            )));
        }
        let valid = match (&mut validity, &page.levels) {
            (Some(validity), Some(_)) => page_levels(&page, validity)?,
            _ => page.rows,
        };
        let values = &page.buf[page.values..];
        let looked_up = matches!(
            page.encoding,
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
        );
        if let Some(held_back) = in_order.as_mut() {
            let continues = looked_up
                && valid == page.rows
                && held_back.continues(values, valid, dictionary_of(&dictionary)?, &mut indices)?;
            if continues {
                done += page.rows;
                continue;
            }
            // Copied now, in room for the chunk's values.
            let held_back = in_order.take().unwrap_or_default();
            let room = match done {
                0 => first_guess(ahead, dictionary.as_ref()),
                // Those held back, and what the pages from this one on
                // take (see [`first_guess`]).
                rows_held => {
                    let rest = PagesAhead {
                        other_values: ahead.other_values.saturating_sub(rows_held as u64),
                        ..ahead
                    };
                    held_back
                        .bytes(dictionary.as_ref())
                        .saturating_add(first_guess(rest, dictionary.as_ref()))
                }
            };
            held_back.copy(dictionary.as_ref(), room, &mut bytes, &mut offsets);
        }
        // Rows held before this page (kept ones, with a selection).
        let at = offsets.len() - 1;
        let keep = selection.map(|s| s.slice(done, page.rows));
        // A page without nulls has a value per row: their ends are the
        // rows' offsets, written in place (copying them over from `ends`
        // was 2 % of a steady read of the suite's `rl32` file).
        let nulls = validity.is_some() && valid != page.rows;
        // Only the kept rows' values copied (a dictionary page without
        // nulls); any other page is cut to them once decoded.
        let only_kept = keep.is_some()
            && !nulls
            && matches!(
                page.encoding,
                Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
            );
        let page_ends = match nulls {
            true => {
                ends.clear();
                &mut ends
            }
            false => &mut offsets,
        };
        let first = page_ends.len();
        match page.encoding {
            Encoding::PLAIN => {
                let start = bytes.len();
                plain(values, valid, &mut bytes, page_ends)?;
                if utf8 && !is_utf8(&bytes, start, &page_ends[first..]) {
                    return Err(Failure::Corrupt("a value is not valid UTF-8".into()));
                }
            }
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let dictionary = dictionary_of(&dictionary)?;
                gather(
                    values,
                    valid,
                    dictionary,
                    &mut indices,
                    &mut bytes,
                    page_ends,
                    keep.as_ref().filter(|_| only_kept),
                )?;
            }
            Encoding::DELTA_LENGTH_BYTE_ARRAY | Encoding::DELTA_BYTE_ARRAY => {
                delta_values(page.encoding, values, valid, &mut bytes, page_ends, utf8)?;
            }
            _ => return Err(Failure::Unsupported),
        }
        if let (Some(validity), true) = (&validity, nulls) {
            spread(validity, at, page.rows, &ends, &mut offsets);
        }
        match (&keep, only_kept) {
            (Some(keep), false) => {
                keep_selected(&mut offsets, &mut bytes, validity.as_mut(), at, keep)
            }
            (Some(keep), true) => {
                if let Some(validity) = validity.as_mut() {
                    validity.keep_selected(at, keep);
                }
            }
            (None, _) => {}
        }
        done += page.rows;
        if selection.is_none() {
            reserve_projected(&mut bytes, done, rows);
        }
    }
    if done != rows {
        return Err(Failure::Corrupt(format!(
            "the pages hold {done} of the row group's {rows} rows"
        )));
    }
    if let Some(held_back) = in_order {
        held_back.take(dictionary, &mut bytes, &mut offsets);
    }
    finish(offsets, bytes, validity, utf8)
}

/// A chunk's first rows held back while each is the dictionary's entry of
/// its number (row 0 entry 0, row 1 entry 1, ...), with no nulls: then
/// their values are the dictionary's first entries end to end, written in
/// one copy when a page breaks the order, or, when the chunk ends with
/// them all its entries, the dictionary's own buffer taken as the values'.
///
/// That is how a dictionary-encoded column of distinct values comes: a
/// writer's dictionary holds each value once, in the order the rows came.
/// pyarrow puts the first 1,024 values of a column of large values
/// (images, audio, documents) in its dictionary page before it finds the
/// page too large and falls back to PLAIN, and a row group of at most as
/// many rows (Hugging Face's image datasets write 100) is that page and
/// one page of indices 0, 1, 2, ... Gathered, each value was copied a
/// second time into memory allocated for it.
#[derive(Default)]
struct InOrder {
    /// The rows held back: the dictionary's first `rows` entries.
    rows: usize,
}

impl InOrder {
    /// Whether a page's `count` indices (`values`, no nulls among them)
    /// continue the order, counted in if they do.
    fn continues(
        &mut self,
        values: &[u8],
        count: usize,
        dictionary: &Dictionary,
        indices: &mut Vec<u32>,
    ) -> Decoded<bool> {
        if self.rows.saturating_add(count) > dictionary.len() {
            return Ok(false);
        }
        let mut next = self.rows as u64;
        let mut in_order = true;
        dictionary_indices(values, count, dictionary.len(), indices, |run| {
            if in_order {
                in_order = match run {
                    Indices::Repeated(index, n) => n == 1 && u64::from(index) == next,
                    Indices::Chunk(chunk) => {
                        chunk.iter().zip(next..).all(|(&i, e)| u64::from(i) == e)
                    }
                };
                next += match run {
                    Indices::Repeated(_, n) => n as u64,
                    Indices::Chunk(chunk) => chunk.len() as u64,
                };
            }
            Ok(())
        })?;
        if in_order {
            self.rows += count;
        }
        Ok(in_order)
    }

    /// The bytes of the values held back.
    fn bytes(&self, dictionary: Option<&Dictionary>) -> usize {
        dictionary.map_or(0, |d| d.offsets[self.rows] as usize)
    }

    /// Copies the rows held back to the empty `bytes` and `offsets` (its
    /// first 0), in a buffer with `room` for the chunk's values in all.
    fn copy<O: OffsetSizeTrait>(
        self,
        dictionary: Option<&Dictionary>,
        room: usize,
        bytes: &mut Vec<u8>,
        offsets: &mut Vec<O>,
    ) {
        debug_assert!(bytes.is_empty() && offsets.len() == 1);
        let end = self.bytes(dictionary);
        reserve_about(bytes, room.max(end));
        if let Some(entries) = dictionary.filter(|_| self.rows > 0) {
            let ends = &entries.offsets[1..=self.rows];
            offsets.extend(ends.iter().map(|&end| O::usize_as(end as usize)));
            bytes.extend_from_slice(&entries.bytes[..end]);
        }
    }

    /// The rows of the whole chunk held back, as `bytes` and `offsets`
    /// (empty, its first 0): the dictionary's own buffer when they are all
    /// its entries, else a copy.
    fn take<O: OffsetSizeTrait>(
        self,
        dictionary: Option<Dictionary>,
        bytes: &mut Vec<u8>,
        offsets: &mut Vec<O>,
    ) {
        match dictionary {
            Some(entries) if self.rows > 0 && self.rows == entries.len() => {
                debug_assert!(bytes.is_empty() && offsets.len() == 1);
                let end = self.bytes(Some(&entries));
                let ends = &entries.offsets[1..];
                offsets.extend(ends.iter().map(|&end| O::usize_as(end as usize)));
                let mut whole = entries.bytes;
                whole.truncate(end);
                *bytes = whole;
                #[cfg(test)]
                tests::TAKEN.with(|n| n.set(n.get() + 1));
            }
            entries => {
                let end = self.bytes(entries.as_ref());
                self.copy(entries.as_ref(), end, bytes, offsets)
            }
        }
    }
}

/// Keeps, of the rows held from row `at` on (their ends in `offsets` after
/// `offsets[at]`, their values in `bytes`, their validity bits), those
/// `keep` sets (a bit for each), moved down in order.
fn keep_selected<O: OffsetSizeTrait>(
    offsets: &mut Vec<O>,
    bytes: &mut Vec<u8>,
    validity: Option<&mut Bits>,
    at: usize,
    keep: &BooleanBuffer,
) {
    assert_eq!(
        offsets.len() - 1 - at,
        keep.len(),
        "a selection bit per row"
    );
    let mut start = offsets[at].as_usize();
    let mut to = start;
    let mut held = at;
    for (i, kept) in keep.iter().enumerate() {
        // Read before anything is written over it: `held <= at + i`.
        let end = offsets[at + i + 1].as_usize();
        if kept {
            bytes.copy_within(start..end, to);
            to += end - start;
            held += 1;
            offsets[held] = O::usize_as(to);
        }
        start = end;
    }
    offsets.truncate(held + 1);
    bytes.truncate(to);
    if let Some(validity) = validity {
        validity.keep_selected(at, keep);
    }
}

/// The string (`utf8`) or binary array of `offsets` into `bytes`.
fn finish<O: OffsetSizeTrait>(
    offsets: Vec<O>,
    bytes: Vec<u8>,
    validity: Option<Bits>,
    utf8: bool,
) -> Decoded<ArrayRef> {
    let nulls = validity.and_then(Bits::into_nulls);
    debug_assert!(
        offsets.first() == Some(&O::usize_as(0)) && offsets.windows(2).all(|w| w[0] <= w[1])
    );
    let values = Buffer::from_vec(bytes);
    // SAFETY: the offsets start at 0 and only grow (each is the values'
    // length after a value, or the one before it for a null), and every
    // length was kept within `MAX_BYTES`, so none is negative. The checked
    // `OffsetBuffer::new` walked all of them again: 7 % of the CPU of a
    // steady read of a dictionary-encoded string column.
    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
    Ok(if utf8 {
        // SAFETY: the offsets rise from 0 to the values' length, and every
        // value is valid UTF-8: a plain page's values were checked as they
        // were appended, a dictionary's entries when it was read (a value
        // copied from one is one of its entries).
        Arc::new(unsafe { GenericStringArray::<O>::new_unchecked(offsets, values, nulls) })
    } else {
        Arc::new(
            GenericBinaryArray::<O>::try_new(offsets, values, nulls)
                .map_err(|e| Failure::Corrupt(e.to_string()))?,
        )
    })
}

/// A flat string (`utf8`) or binary column of `rows` rows as a dictionary
/// with keys `K` (`read_dictionary`'s `int32`, or the `int8`/`int16` of a
/// file's embedded schema): the chunk's dictionary page is the dictionary,
/// and each row its index into it, so no value is copied.
/// A chunk with a plain page (its writer's dictionary outgrew the page
/// limit) is left to the `parquet` crate, which dictionary-encodes those
/// values as it reads them.
pub(super) fn decode_dictionary<K: ArrowDictionaryKeyType>(
    mut pages: ChunkPages,
    definition: Definition,
    rows: usize,
    utf8: bool,
    selection: Option<&BooleanBuffer>,
) -> Decoded<ArrayRef> {
    // With a selection, each page's keys are cut to its selected rows once
    // decoded.
    let mut keys: Vec<K::Native> = room_for(rows)?;
    let mut validity = definition.nullable().then(|| Bits::with_capacity(rows));
    // Rows of the chunk decoded so far (`keys` holds the selected ones).
    let mut done = 0usize;
    let mut dictionary: Option<Dictionary> = None;
    // A page's valid rows' keys, when it has nulls; a run's indices.
    let mut dense: Vec<K::Native> = Vec::new();
    let mut indices: Vec<u32> = Vec::new();
    while let Some(page) = next_page(&mut pages, definition)? {
        let page = match page {
            NextPage::Dictionary(buf, count) => {
                if dictionary.is_some() {
                    // One per chunk: keys before it would mean other values.
                    return Err(Failure::Corrupt(
                        "a second dictionary page in the column chunk".into(),
                    ));
                }
                let read = Dictionary::from_plain(buf, count, utf8)?;
                // Keys of the embedded schema's type (pandas writes `int8`
                // for fewer than 128 categories) that cannot index every
                // entry: the `parquet` crate says what it says of them.
                if K::Native::from_usize(read.len().saturating_sub(1)).is_none() {
                    return Err(Failure::Unsupported);
                }
                dictionary = Some(read);
                continue;
            }
            NextPage::Data(page) => page,
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
        if !matches!(
            page.encoding,
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
        ) {
            return Err(Failure::Unsupported);
        }
        let at = keys.len();
        page_values(
            &page,
            &mut validity,
            &mut keys,
            &mut dense,
            |values, valid, target, _reads| {
                let entries = match valid {
                    0 => 0,
                    _ => dictionary_of(&dictionary)?.len(),
                };
                // Indices are checked below `entries`, whose last fits a key
                // (when the dictionary was read): each converts as it is.
                let key = |index: u32| K::Native::usize_as(index as usize);
                dictionary_indices(values, valid, entries, &mut indices, |run| {
                    match run {
                        Indices::Repeated(index, n) => {
                            target.extend(std::iter::repeat_n(key(index), n))
                        }
                        Indices::Chunk(chunk) => target.extend(chunk.iter().map(|&i| key(i))),
                    }
                    Ok(())
                })
            },
        )?;
        if let Some(keep) = selection.map(|s| s.slice(done, page.rows)) {
            keep_selected_values(&mut keys, validity.as_mut(), at, &keep);
        }
        done += page.rows;
    }
    if done != rows {
        return Err(Failure::Corrupt(format!(
            "the pages hold {done} of the row group's {rows} rows"
        )));
    }
    let entries = dictionary.as_ref().map_or(0, Dictionary::len);
    let (bytes, offsets) = match dictionary {
        Some(d) => (d.bytes, d.offsets),
        // Every row null, no dictionary page: an empty dictionary.
        None => (Vec::new(), vec![0]),
    };
    let values = finish(offsets, bytes, None, utf8)?;
    let nulls = validity.and_then(Bits::into_nulls);
    // A null row's key may be any number; only valid keys are checked.
    let keys = PrimitiveArray::<K>::new(ScalarBuffer::from(keys), nulls);
    if values.len() != entries {
        return Err(Failure::Corrupt(format!(
            "a dictionary of {} entries read as {entries}",
            values.len()
        )));
    }
    // SAFETY: every valid key was checked below `entries` as it was
    // decoded (`dictionary_indices`), the length of `values`: what
    // `try_new` checks again, a fifth of a filter on such a column.
    let array = unsafe { DictionaryArray::<K>::new_unchecked(keys, values) };
    Ok(Arc::new(array))
}

/// A list column's string or binary values (see [`super::lists`]): the
/// valid ones end to end, each one's end, as pages are read.
pub(super) struct Values<O> {
    utf8: bool,
    bytes: Vec<u8>,
    /// `0`, then each value's end: the array's offsets as they are when no
    /// item is null, which then become the array's without a copy (a
    /// second buffer of that size, at the read's peak).
    ends: Vec<O>,
    dictionary: Option<Dictionary>,
    indices: Vec<u32>,
}

impl<O: OffsetSizeTrait> Values<O> {
    /// Values of a chunk of about `expected` levels, for an array with
    /// offsets of type `O`.
    pub(super) fn new(utf8: bool, expected: usize) -> Self {
        let mut ends = Vec::with_capacity(expected.saturating_add(1));
        ends.push(O::usize_as(0));
        Values {
            utf8,
            bytes: Vec::new(),
            ends,
            dictionary: None,
            indices: Vec::new(),
        }
    }

    /// Keeps the values at the positions of `runs` (in order, apart) only:
    /// those of a list column's selected rows.
    pub(super) fn keep_runs(&mut self, runs: &[std::ops::Range<usize>]) {
        // Value `i` is `bytes[ends[i]..ends[i + 1]]`.
        let held: usize = runs.iter().map(|r| r.len()).sum();
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(held + 1);
        ends.push(O::usize_as(0));
        for run in runs {
            let (from, to) = (
                self.ends[run.start].as_usize(),
                self.ends[run.end].as_usize(),
            );
            let base = bytes.len();
            bytes.extend_from_slice(&self.bytes[from..to]);
            ends.extend(
                self.ends[run.start + 1..=run.end]
                    .iter()
                    .map(|e| O::usize_as(base + e.as_usize() - from)),
            );
        }
        self.bytes = bytes;
        self.ends = ends;
    }

    /// The array of `slots` items whose `validity` (none: all valid) says
    /// which hold the values, in order.
    pub(super) fn into_array(self, validity: Option<Bits>, slots: usize) -> Decoded<ArrayRef> {
        // `lists` checked the values against the valid slots: a value for
        // every slot means no slot is null, whatever `validity` holds (a
        // nullable leaf has it, all set, when none is).
        let offsets = match &validity {
            _ if self.ends.len() == slots + 1 => self.ends,
            Some(validity) => {
                let mut ends = self.ends;
                // In place, as the values of a list of numbers are.
                if !spread_in_place(&mut ends, validity, slots) {
                    let mut offsets = Vec::with_capacity(slots + 1);
                    offsets.push(O::usize_as(0));
                    spread(validity, 0, slots, &ends[1..], &mut offsets);
                    ends = offsets;
                }
                ends
            }
            None => {
                return Err(Failure::Corrupt(format!(
                    "{} values for {slots} items",
                    self.ends.len() - 1
                )))
            }
        };
        finish(offsets, self.bytes, validity, self.utf8)
    }
}

impl<O: OffsetSizeTrait> super::lists::Leaf for Values<O> {
    fn len(&self) -> usize {
        self.ends.len() - 1
    }

    fn dictionary(&mut self, page: &[u8], count: usize) -> Decoded<()> {
        self.dictionary = Some(Dictionary::from_plain(page, count, self.utf8)?);
        Ok(())
    }

    fn append(
        &mut self,
        encoding: Encoding,
        values: &[u8],
        valid: usize,
        _: &mut Vec<u32>,
    ) -> Decoded<()> {
        match encoding {
            Encoding::PLAIN => {
                let start = self.bytes.len();
                let first = self.ends.len();
                plain(values, valid, &mut self.bytes, &mut self.ends)?;
                if self.utf8 && !is_utf8(&self.bytes, start, &self.ends[first..]) {
                    return Err(Failure::Corrupt("a value is not valid UTF-8".into()));
                }
                Ok(())
            }
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let dictionary = dictionary_of(&self.dictionary)?;
                gather(
                    values,
                    valid,
                    dictionary,
                    &mut self.indices,
                    &mut self.bytes,
                    &mut self.ends,
                    None,
                )
            }
            Encoding::DELTA_LENGTH_BYTE_ARRAY | Encoding::DELTA_BYTE_ARRAY => delta_values(
                encoding,
                values,
                valid,
                &mut self.bytes,
                &mut self.ends,
                self.utf8,
            ),
            _ => Err(Failure::Unsupported),
        }
    }

    fn project(&mut self, done: usize, expected: usize) {
        reserve_projected(&mut self.bytes, done, expected);
    }
}

/// Appends the `count` values of a page in one of the DELTA encodings of
/// byte arrays ([`delta`]) to `bytes`, each one's end to `ends`, with their
/// UTF-8 checked for strings.
fn delta_values<O: OffsetSizeTrait>(
    encoding: Encoding,
    page: &[u8],
    count: usize,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
    utf8: bool,
) -> Decoded<()> {
    let (start, first) = (bytes.len(), ends.len());
    let room = |bytes: &mut Vec<u8>, n: usize| reserve_about(bytes, n);
    match encoding {
        Encoding::DELTA_LENGTH_BYTE_ARRAY => {
            delta::length_byte_arrays(page, count, bytes, ends, MAX_BYTES, room)?
        }
        Encoding::DELTA_BYTE_ARRAY => {
            delta::byte_arrays(page, count, bytes, ends, MAX_BYTES, room)?
        }
        _ => return Err(Failure::Unsupported),
    }
    if utf8 && !is_utf8(bytes, start, &ends[first..]) {
        return Err(Failure::Corrupt("a value is not valid UTF-8".into()));
    }
    Ok(())
}

/// What a chunk's values will take, guessed before its first data page
/// from its data pages' headers (`ahead`) and its `dictionary`: a PLAIN
/// page's values are its bytes less a 4-byte length per value (exact but
/// for its levels and nulls), a dictionary-encoded page's are its values at
/// the dictionary's mean length (capped: only some entries may be used).
///
/// Sizing from the first pages alone fell short when later values were
/// longer: the suite's `string` file, whose chunks fall back from the
/// dictionary to PLAIN pages, had half its buffers outgrown when 7 of their
/// 8 MB were written, and copying them was 6 % of a steady read.
///
/// The guess is at most [`FIRST_GUESS_MAX`], or the bytes the PLAIN pages
/// take in the chunk where those are more: headers are claims, but the
/// read holds those bytes already, so a lie reserves at most as much
/// again. Large values (images, audio, documents: pyarrow
/// writes pages of 1,024 of them, 100 MB for values of 100 KB) otherwise
/// filled 64 MiB, doubled it, and were copied to a third buffer sized from
/// the first page: a 300 MB column of blobs left 190 MiB of those behind
/// and copied 160 MB.
fn first_guess(ahead: PagesAhead, dictionary: Option<&Dictionary>) -> usize {
    let guess_max = FIRST_GUESS_MAX as u64;
    let plain = ahead
        .plain_bytes
        .saturating_sub(4 * ahead.plain_values)
        .min(ahead.plain_held.max(guess_max));
    let looked_up = match dictionary {
        Some(d) if d.len() > 0 => ahead
            .other_values
            .saturating_mul((d.entry_bytes() / d.len()) as u64),
        _ => 0,
    };
    let looked_up = looked_up.min(guess_max.saturating_sub(plain.min(guess_max)));
    plain.saturating_add(looked_up).min(MAX_BYTES as u64) as usize
}

/// Of `guess`, the bytes of a chunk's `rows` rows (see [`first_guess`]),
/// what the `held` rows a selection keeps take, plus a page's worth: a
/// page is decoded whole before it is cut to its kept rows. Sized for
/// every row, a filtered read's buffers (faulted in ahead, see
/// [`grow_to`]) held 53 MiB of the 83 MiB its decode kept resident, for
/// 7 MiB of kept strings.
fn kept_share(guess: usize, ahead: PagesAhead, held: usize, rows: usize) -> usize {
    if held >= rows {
        return guess;
    }
    let page = (ahead.most_values as u128).min(rows as u128);
    let share = guess as u128 * (held as u128 + page) / rows as u128;
    share.min(guess as u128) as usize
}

/// Grows `bytes` at once to what all `rows` rows will take at the bytes per
/// row of the `done` so far (plus a [`BLOCK`]), so that a chunk's values are
/// not copied again and again as they outgrow their buffer page by page.
///
/// `rows` is the footer's claim: past [`FIRST_GUESS_MAX`], the projection
/// is held to [`MOST_PROJECTED`] times the bytes written, so that a footer
/// claiming millions of rows for a page of one long value does not reserve
/// (and fault in) gigabytes.
fn reserve_projected(bytes: &mut Vec<u8>, done: usize, rows: usize) {
    if done == 0 || done >= rows {
        return;
    }
    let projected = (bytes.len() as u128 * rows as u128 / done as u128) as usize;
    let most = bytes
        .len()
        .saturating_mul(MOST_PROJECTED)
        .max(FIRST_GUESS_MAX);
    reserve_about(bytes, projected.min(most));
}

/// How many times the bytes written a projection may reach (see
/// [`reserve_projected`]).
const MOST_PROJECTED: usize = 16;

/// Grows `bytes` to about `projected` bytes of values, with an eighth to
/// spare (a projection a little short would otherwise double the buffer,
/// copying it all, for its last few values).
///
/// A buffer that holds values is grown only when the projection clearly
/// needs it, as growing may copy them: while most of it is unwritten, when
/// the projection passes the capacity by more than that eighth (later
/// pages may settle it, and a buffer that does run out is mostly written
/// by then, so that growing it copies little that was not written, see
/// [`grow_to`]); once it is mostly written, when the projection itself no
/// longer fits. Projections creep up page by page: the suite's `card1000`
/// file grew each chunk's buffer three times by a few KB, and its `string`
/// file copied 7 MB to grow a buffer of 8 MB by 10 KB that it never used.
fn reserve_about(bytes: &mut Vec<u8>, projected: usize) {
    let want = (projected + projected / 8).min(MAX_BYTES) + BLOCK;
    let capacity = bytes.capacity();
    if want <= capacity {
        return;
    }
    let needed = if capacity - bytes.len() > capacity / 8 {
        want > capacity + capacity / 8
    } else {
        projected.min(MAX_BYTES) + BLOCK > capacity
    };
    if bytes.is_empty() || needed {
        grow_to(bytes, want, projected);
    }
}

/// Grows `bytes` to `capacity` bytes, copying as little as it can, with
/// the pages up to the `expected` bytes of values faulted in ahead (see
/// [`crate::memory`]) and those of the room to spare past them left to be
/// faulted in if ever written: faulted in too, the room kept a tenth more
/// memory resident than a read of many-valued strings returned.
///
/// `realloc` may grow a block in place (mimalloc, within the block's
/// rounded size; glibc, by remapping pages), but when it moves one it
/// copies the whole old block, capacity and all, as it cannot know what was
/// written. Reading the never-written part maps the kernel's zero page
/// there, and the next buffer handed that memory then pays a write-protect
/// fault and a TLB shootdown across the decode threads on each page
/// (profiled on a fresh read of the suite's `string` file from the page
/// cache: 28 % of the read's CPU). So a mostly written buffer is
/// reallocated, and any other is moved by copying only what was written.
fn grow_to(bytes: &mut Vec<u8>, capacity: usize, expected: usize) {
    #[cfg(test)]
    if !bytes.is_empty() {
        tests::REGROWN.with(|n| n.set(n.get() + 1));
    }
    let on_decode_thread = memory::on_decode_thread();
    memory::reserve_unfaulted(|| {
        let unwritten = bytes.capacity() - bytes.len();
        if unwritten <= bytes.capacity() / 8 {
            bytes.reserve_exact(capacity.saturating_sub(bytes.len()));
            return;
        }
        let mut grown = Vec::with_capacity(capacity.max(bytes.len()));
        grown.extend_from_slice(bytes);
        *bytes = grown;
    });
    let (from, to) = (bytes.len(), expected.min(bytes.capacity()));
    if on_decode_thread && to > from && memory::worth_prefaulting(to - from) {
        // SAFETY: `[from, to)` lies within the buffer's capacity.
        unsafe { memory::prefault(bytes.as_mut_ptr().add(from), to - from) };
    }
}

/// A dictionary page's entries laid end to end: entry `i` is
/// `bytes[ends[i - 1]..ends[i]]` (from 0 for the first).
struct Dictionary {
    bytes: Vec<u8>,
    /// `0`, then each entry's end.
    offsets: Vec<i32>,
    /// The longest entry's length.
    longest: usize,
}

impl Dictionary {
    /// The `count` plain-encoded entries of `page`; for a string column each
    /// must be valid UTF-8.
    fn from_plain(page: &[u8], count: usize, utf8: bool) -> Decoded<Self> {
        let mut bytes = Vec::new();
        let mut offsets = vec![0];
        plain(page, count, &mut bytes, &mut offsets)?;
        if utf8 && !is_utf8(&bytes, 0, &offsets) {
            return Err(Failure::Corrupt(
                "a dictionary entry is not valid UTF-8".into(),
            ));
        }
        // Every entry can be copied as a whole block (see [`Output::push`]).
        let longest = pad_entries(&mut bytes, &offsets);
        Ok(Dictionary {
            bytes,
            offsets,
            longest,
        })
    }

    /// [`Dictionary::from_plain`] in `page`'s own buffer: each entry moved
    /// down over the lengths before it, then the slack added (in the
    /// capacity the lengths freed: the caller passes at least
    /// `BLOCK / 4` entries).
    fn from_plain_in_place(mut page: Vec<u8>, count: usize, utf8: bool) -> Decoded<Self> {
        check_count(&page, count)?;
        if page.len() > MAX_BYTES {
            return Err(Failure::Unsupported);
        }
        let mut offsets = Vec::with_capacity(count + 1);
        offsets.push(0i32);
        let (mut at, mut end) = (0usize, 0usize);
        for i in 0..count {
            let len = value_length(&page, at, count - 1 - i)?;
            at += 4;
            page.copy_within(at..at + len, end);
            (at, end) = (at + len, end + len);
            // Within the page, which is at most `MAX_BYTES` (an `i32`).
            offsets.push(end as i32);
        }
        page.truncate(end);
        if utf8 && !is_utf8(&page, 0, &offsets) {
            return Err(Failure::Corrupt(
                "a dictionary entry is not valid UTF-8".into(),
            ));
        }
        let longest = pad_entries(&mut page, &offsets);
        #[cfg(test)]
        tests::IN_PLACE.with(|n| n.set(n.get() + 1));
        Ok(Dictionary {
            bytes: page,
            offsets,
            longest,
        })
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The entries' bytes, without the slack after them (counted in, a
    /// dictionary of 4 short entries looked 2.3 times as long, and so was
    /// every values buffer sized from it).
    fn entry_bytes(&self) -> usize {
        self.offsets.last().map_or(0, |&end| end as usize)
    }

    /// Where entry `i` (which the caller has checked is below
    /// [`Self::len`]) starts in `bytes`, and its length.
    #[inline]
    fn span(&self, i: u32) -> (usize, usize) {
        let i = i as usize;
        // One check that covers both reads below (the slice's own checks
        // are then dropped by the optimiser).
        assert!(
            i + 1 < self.offsets.len(),
            "dictionary index {i} past the end"
        );
        let (start, end) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        (start, end - start)
    }

    #[cfg(test)]
    fn entry(&self, i: u32) -> &[u8] {
        let (start, len) = self.span(i);
        &self.bytes[start..start + len]
    }
}

/// Refuses a `count` of PLAIN byte arrays `page` cannot hold: each takes
/// at least its length's 4 bytes. Checked before anything is sized by it.
fn check_count(page: &[u8], count: usize) -> Decoded<()> {
    match count > page.len() / 4 {
        true => Err(Failure::Corrupt(format!(
            "{count} byte arrays in {} bytes",
            page.len()
        ))),
        false => Ok(()),
    }
}

/// The length of the PLAIN byte array whose 4-byte length is at byte `at`
/// of `page`, with `after` more values after it: each of those takes at
/// least its length's 4 bytes, so a value that leaves less is cut off, or
/// the count is too high.
#[inline(always)]
fn value_length(page: &[u8], at: usize, after: usize) -> Decoded<usize> {
    let Some(&[l0, l1, l2, l3]) = page.get(at..at + 4) else {
        return Err(Failure::Corrupt("a byte array's length is cut off".into()));
    };
    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    if len > page.len().saturating_sub(at + 4 + 4 * after) {
        return Err(too_long(page.len(), at + 4, len, after));
    }
    Ok(len)
}

/// [`value_length`]'s error, out of the loops' way.
#[cold]
fn too_long(page: usize, at: usize, len: usize, after: usize) -> Failure {
    Failure::Corrupt(format!(
        "a byte array of {len} bytes with {} left in the page for it and {after} more",
        page - at
    ))
}

/// Appends `count` plain-encoded byte arrays of `page` (each a 4-byte
/// little-endian length, then its bytes) to `bytes`, and each one's end in
/// `bytes` to `ends`.
fn plain<O: OffsetSizeTrait>(
    page: &[u8],
    count: usize,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
) -> Decoded<()> {
    check_count(page, count)?;
    // The values are at most the page's bytes, so no end below overflows.
    if bytes.len() + page.len() > MAX_BYTES {
        return Err(Failure::Unsupported);
    }
    ends.reserve(count);
    let filled = ends.len();
    let slots = &mut ends.spare_capacity_mut()[..count];
    let mut out = Output::new(bytes, page.len() - 4 * count);
    // The buffer's address and the values' end stay in registers (through
    // `Output::push` and `Vec::push` both were stored back for every value:
    // those stores were 40 % of this loop's samples on a dictionary of
    // 70,000 comments).
    let dst = out.bytes.as_mut_ptr();
    let mut end = out.end;
    let mut at = 0;
    for (i, slot) in slots.iter_mut().enumerate() {
        // Within the page less the lengths after it: this also keeps every
        // value within the room asked for above.
        let len = value_length(page, at, count - 1 - i)?;
        at += 4;
        // SAFETY (both copies): `value_length` keeps all the values
        // together within the page's bytes less the lengths' (`at` never
        // passes the page's end), the room `Output::new` asked for, so this
        // value ends within it and a block from its start within the
        // `BLOCK` past it; the source is the page, a live slice elsewhere.
        unsafe {
            match page.get(at..at + BLOCK) {
                // A constant length: inlined as vector moves.
                Some(block) if len <= BLOCK => {
                    std::ptr::copy_nonoverlapping(block.as_ptr(), dst.add(end), BLOCK)
                }
                _ => copy_long(&page[at..at + len], dst.add(end)),
            }
        }
        end += len;
        slot.write(O::usize_as(end));
        at += len;
    }
    debug_assert!(end <= out.limit);
    out.end = end;
    out.finish();
    // SAFETY: every one of the `count` spare slots was written.
    unsafe { ends.set_len(filled + count) };
    Ok(())
}

/// Values written end to end into the spare capacity of a values buffer
/// that was grown by at least as much as they take plus a [`BLOCK`] of
/// slack; the buffer's length is moved past them by [`Output::finish`].
/// The room is not zeroed first: every byte up to the new length is written
/// by a value (a memset of the room was 3 % of a string column's decode).
struct Output<'a> {
    bytes: &'a mut Vec<u8>,
    end: usize,
    /// The end of the room asked for; the capacity is at least a [`BLOCK`]
    /// past it.
    limit: usize,
    /// Whether the buffer is large enough for batches of values to be
    /// staged and streamed out (see [`Output::batch`]).
    streaming: bool,
}

/// The most bytes of values [`Output::batch`] stages (in the L1 cache).
const STAGE: usize = 32 << 10;

thread_local! {
    /// Each thread's stage for [`Output::batch`] (with a [`BLOCK`] of
    /// slack). Not on the stack: a function whose frame holds 32 KB touches
    /// its stack a page at a time on every call (the probe the compiler
    /// adds to frames over a page), whether it stages or not, and every
    /// run of dictionary indices was such a call (a fifth of
    /// `Output::repeat`'s samples on the suite's `rl32` file).
    static STAGED_VALUES: Box<[std::cell::UnsafeCell<MaybeUninit<u8>>]> =
        (0..STAGE + BLOCK).map(|_| std::cell::UnsafeCell::new(MaybeUninit::uninit())).collect();
}

/// Batches of fewer bytes go straight to the buffer.
const MIN_BATCH: usize = 4 << 10;

impl<'a> Output<'a> {
    /// Room in `bytes` for values of at most `most` bytes in all.
    fn new(bytes: &'a mut Vec<u8>, most: usize) -> Self {
        let end = bytes.len();
        let need = end + most + BLOCK;
        if need > bytes.capacity() {
            // At least doubled, as `reserve` would, but see [`grow_to`].
            grow_to(bytes, need.max(2 * bytes.capacity()), need);
        }
        let streaming = bytes.capacity() >= nontemporal::MIN_OUTPUT_BYTES;
        Output {
            bytes,
            end,
            limit: end + most,
            streaming,
        }
    }

    /// Appends a batch of values of at most `most` bytes (within the room
    /// asked for): `write` gets the address that byte 0 of the values would
    /// have and the values' end, writes from there as [`Output::push`] does
    /// (blocks may run a [`BLOCK`] past the end), and returns the new end.
    /// A batch of 4 KB or more of a large buffer is written to a buffer on
    /// the stack first and streamed out whole lines at a time (see
    /// [`crate::nontemporal`]): chunks of gathered dictionary strings are
    /// bound by writing memory (`mixed-card1000`, steady: 15.0 to 12.9 ms
    /// with the numeric columns streamed too). Shorter batches, such as the
    /// `rl32` file's runs of about 800 bytes, are bound by the work per
    /// run, and staged they were slower.
    #[inline(always)]
    fn batch(&mut self, most: usize, write: impl FnOnce(*mut u8, usize) -> usize) {
        let start = self.end;
        if !self.streaming || !(MIN_BATCH..=STAGE).contains(&most) {
            self.end = write(self.bytes.as_mut_ptr(), start);
            return;
        }
        let stage = STAGED_VALUES.with(|stage| stage.as_ptr().cast::<u8>().cast_mut());
        // Byte `start` of the values lands on the stage's first byte.
        let base = stage.wrapping_sub(start);
        let end = write(base, start);
        debug_assert!(end - start <= most && end <= self.limit);
        // SAFETY: `write` wrote bytes `start..end` of the values to the
        // stage's first `end - start` bytes; they end within the room
        // `new` reserved in `bytes`, past its length.
        unsafe { nontemporal::copy_out(stage, self.bytes.as_mut_ptr().add(start), end - start) };
        self.end = end;
    }

    /// Appends `src[at..at + len]` (which the caller has checked is there);
    /// returns the values' end after it. A short value is copied as a whole
    /// block when `src` has one there (a couple of vector moves rather than
    /// a call to `memcpy`, which was a third of a string column's decode);
    /// the bytes past its end are the next value's to overwrite, or past
    /// the length [`Output::finish`] sets.
    #[inline]
    fn push(&mut self, src: &[u8], at: usize, len: usize) -> usize {
        self.push_in::<BLOCK>(src, at, len)
    }

    /// [`Output::push`] with blocks of `B` bytes (at most a [`BLOCK`]), for
    /// values known to be short: copying 64 bytes for each 10-byte value
    /// was a sixth of a read of the demo's dictionary-encoded labels.
    #[inline]
    fn push_in<const B: usize>(&mut self, src: &[u8], at: usize, len: usize) -> usize {
        const { assert!(B <= BLOCK) };
        let end = self.end;
        // The callers size the room from the same values; this keeps a
        // mistake there from writing past the buffer.
        assert!(len <= self.limit - end, "a value past the room asked for");
        // SAFETY (both copies): at most a BLOCK (`B <= BLOCK`) is copied from `end`, or
        // `len` bytes with `end + len <= limit`, so the copy ends within
        // `limit + BLOCK`, the capacity `new` reserved; the source is a live
        // slice of another buffer.
        let dst = unsafe { self.bytes.as_mut_ptr().add(end) };
        match src.get(at..at + B) {
            // A constant length: inlined as vector moves.
            Some(block) if len <= B => unsafe {
                std::ptr::copy_nonoverlapping(block.as_ptr(), dst, B)
            },
            _ => unsafe { copy_long(&src[at..at + len], dst) },
        }
        self.end = end + len;
        self.end
    }

    /// Appends the dictionary entries `chunk` indexes, each copied as one
    /// block of `B` bytes, writing each one's end to the slot of `ends`
    /// beside it: [`Output::push_in`] without its checks (they were a fifth
    /// of a dictionary-encoded string column's decode), and with the
    /// buffers' addresses and the end kept in registers (through `self`
    /// the compiler reloaded them for every value, as a write to the
    /// values might have changed them).
    ///
    /// # Safety
    /// Every index of `chunk` must be below `dictionary.len()`, every entry
    /// at most `B` bytes long, and the room asked for in [`Output::new`]
    /// must hold the chunk's values.
    #[inline(always)]
    unsafe fn push_entries<const B: usize, O: OffsetSizeTrait>(
        &mut self,
        dictionary: &Dictionary,
        chunk: &[u32],
        ends: &mut [MaybeUninit<O>],
    ) {
        const { assert!(B <= BLOCK) };
        let src = dictionary.bytes.as_ptr();
        let offsets = dictionary.offsets.as_ptr();
        let most = (self.limit - self.end).min(B.saturating_mul(chunk.len()));
        self.batch(most, |dst, mut end| {
            for (slot, &i) in ends.iter_mut().zip(chunk) {
                let i = i as usize;
                debug_assert!(i + 1 < dictionary.offsets.len());
                // SAFETY: the caller's promises: `i + 1` indexes `offsets`;
                // an entry's block ends within the `BLOCK` of slack the
                // dictionary has past its last entry; the values end within
                // the room, so the block ends within the `BLOCK` past it
                // (of the buffer, or of the stage) that `dst` has.
                unsafe {
                    let (start, stop) = (*offsets.add(i) as usize, *offsets.add(i + 1) as usize);
                    std::ptr::copy_nonoverlapping(src.add(start), dst.wrapping_add(end), B);
                    end += stop - start;
                }
                slot.write(O::usize_as(end));
            }
            end
        });
        debug_assert!(self.end <= self.limit);
    }

    /// Appends `src[at..at + len]` (which the caller has checked is there)
    /// once for each slot of `ends`, writing each copy's end into its slot.
    /// Each copy is one block of the smallest size that holds this value
    /// (not the dictionary's longest): in a run of one short value, bytes
    /// stored past each copy were most of the time taken.
    fn repeat<O: OffsetSizeTrait>(
        &mut self,
        src: &[u8],
        at: usize,
        len: usize,
        ends: &mut [MaybeUninit<O>],
    ) {
        match len {
            0..=16 => self.repeat_in::<16, O>(src, at, len, ends),
            17..=32 => self.repeat_in::<32, O>(src, at, len, ends),
            33..=BLOCK => self.repeat_in::<BLOCK, O>(src, at, len, ends),
            _ => {
                for slot in ends {
                    slot.write(O::usize_as(self.push(src, at, len)));
                }
            }
        }
    }

    /// [`Output::repeat`] of a value of at most `B` bytes.
    #[inline(always)]
    fn repeat_in<const B: usize, O: OffsetSizeTrait>(
        &mut self,
        src: &[u8],
        at: usize,
        len: usize,
        ends: &mut [MaybeUninit<O>],
    ) {
        const { assert!(B <= BLOCK) };
        let end = self.end;
        let fits = len <= B
            && len
                .checked_mul(ends.len())
                .is_some_and(|all| all <= self.limit - end);
        let block = src
            .get(at..at.saturating_add(B))
            .and_then(|b| <[u8; B]>::try_from(b).ok());
        let (true, Some(block)) = (fits, block) else {
            // No block's worth of bytes after it (or a caller's room that
            // does not hold the run): copied value by value, checked.
            for slot in ends {
                slot.write(O::usize_as(self.push(src, at, len)));
            }
            return;
        };
        // SAFETY (each `repeat_block` below): the copies end at most `len *
        // ends.len()` past the old end, within `limit`; each block ends
        // within the `BLOCK` (`B <= BLOCK`) past it that `dst` has (the
        // buffer's capacity that `new` reserved, or the stage's); and ends
        // within `limit` fit an `i32` (`MAX_BYTES`).
        let most = len * ends.len();
        if self.streaming && most >= MIN_BATCH {
            self.batch(most, |dst, end| unsafe {
                repeat_block(block, len, dst, end, ends)
            });
            return;
        }
        // Straight to the buffer without the batch's closure: runs of a few
        // hundred bytes (`rl32`) are bound by the work per run.
        let (dst, end) = (self.bytes.as_mut_ptr(), self.end);
        self.end = if B >= 32 {
            // One AVX store per block of 32 bytes instead of two.
            crate::simd::wide_always(
                #[inline(always)]
                || unsafe { repeat_block(block, len, dst, end, ends) },
            )
        } else {
            unsafe { repeat_block(block, len, dst, end, ends) }
        };
    }

    fn finish(self) {
        // SAFETY: the values were written end to end from the old length,
        // so every byte below `end` is initialised, and `end <= limit` is
        // within the capacity.
        unsafe { self.bytes.set_len(self.end) }
    }
}

/// Writes `block` at `dst + end`, then `len` bytes further on, once for
/// each slot of `ends`, and each copy's end into its slot; returns the end
/// of the last.
///
/// # Safety
/// `dst` must be valid for writes up to `len * (ends.len() - 1) + B` bytes
/// past `end`, and every end must fit an `i32`.
#[inline(always)]
unsafe fn repeat_block<const B: usize, O: OffsetSizeTrait>(
    block: [u8; B],
    len: usize,
    dst: *mut u8,
    end: usize,
    ends: &mut [MaybeUninit<O>],
) -> usize {
    let mut at = end;
    for _ in 0..ends.len() {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::write_unaligned(dst.wrapping_add(at).cast::<[u8; B]>(), block) };
        at += len;
    }
    // The ends in a loop of their own, which is vectorised.
    for (k, slot) in (1..).zip(ends) {
        slot.write(O::usize_as(end + len * k));
    }
    at
}

/// Copies a value that is not copied as a block. Kept out of line: inlined,
/// its `memcpy` and the block's copy were merged into one call of a
/// variable length, and short values paid for the call.
///
/// # Safety
/// `dst` must be valid for writes of `from.len()` bytes.
#[inline(never)]
unsafe fn copy_long(from: &[u8], dst: *mut u8) {
    // SAFETY: the caller's promise; `from` is a live slice elsewhere.
    unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), dst, from.len()) }
}

/// Appends `count` dictionary-encoded values (bit width byte, then hybrid
/// runs of indices) of `dictionary` to `bytes`, and each one's end to
/// `ends`.
fn gather<O: OffsetSizeTrait>(
    values: &[u8],
    count: usize,
    dictionary: &Dictionary,
    indices: &mut Vec<u32>,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
    keep: Option<&BooleanBuffer>,
) -> Decoded<()> {
    // Every entry fits the block size picked here, so the copies are all
    // fixed-size (the dictionary has a block of slack past its end).
    match dictionary.longest {
        0..=16 => gather_in::<16, O>(values, count, dictionary, indices, bytes, ends, keep),
        17..=32 => gather_in::<32, O>(values, count, dictionary, indices, bytes, ends, keep),
        33..=48 => gather_in::<48, O>(values, count, dictionary, indices, bytes, ends, keep),
        _ => gather_in::<BLOCK, O>(values, count, dictionary, indices, bytes, ends, keep),
    }
}

/// [`gather`], copying values in blocks of `B` bytes.
fn gather_in<const B: usize, O: OffsetSizeTrait>(
    values: &[u8],
    count: usize,
    dictionary: &Dictionary,
    indices: &mut Vec<u32>,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
    keep: Option<&BooleanBuffer>,
) -> Decoded<()> {
    ends.reserve(keep.map_or(count, BooleanBuffer::count_set_bits));
    let entries = dictionary.len();
    match keep {
        None => dictionary_indices(
            values,
            count,
            entries,
            indices,
            #[inline(always)]
            |run| gather_run::<B, O>(run, dictionary, bytes, ends),
        ),
        // Only the kept rows' indices (see `kept_dictionary_indices`).
        Some(keep) => {
            let mut kept = Vec::new();
            kept_dictionary_indices(
                values,
                count,
                entries,
                indices,
                keep,
                &mut kept,
                #[inline(always)]
                |run| gather_run::<B, O>(run, dictionary, bytes, ends),
            )
        }
    }
}

/// Appends the entries of one run or chunk of dictionary indices (see
/// [`gather_in`]).
#[inline(always)]
fn gather_run<const B: usize, O: OffsetSizeTrait>(
    run: Indices<'_>,
    dictionary: &Dictionary,
    bytes: &mut Vec<u8>,
    ends: &mut Vec<O>,
) -> Decoded<()> {
    match run {
        Indices::Repeated(index, n) => {
            let (start, len) = dictionary.span(index);
            let mut out = make_room(bytes, len.saturating_mul(n))?;
            ends.reserve(n);
            let filled = ends.len();
            let room = &mut ends.spare_capacity_mut()[..n];
            out.repeat(&dictionary.bytes, start, len, room);
            // SAFETY: the first `n` spare slots were written.
            unsafe { ends.set_len(filled + n) };
            out.finish();
        }
        Indices::Chunk(chunk) => {
            // Room for the chunk: as many of the longest entry when that
            // fits what the buffer has spare (no pass over the chunk),
            // else the chunk's own total (no buffer grown for nothing).
            let spare = bytes.capacity() - bytes.len();
            let total = match dictionary.longest.checked_mul(chunk.len()) {
                Some(most) if most + BLOCK <= spare => most,
                _ => chunk.iter().map(|&i| dictionary.span(i).1).sum::<usize>(),
            };
            let mut out = make_room(bytes, total)?;
            // Each end written into the room `ends` has (`count` were
            // reserved, so this reserves nothing unless the chunks hold
            // more): `push` checked its capacity and stored its length
            // per value, and the loop kept reloading both from memory.
            ends.reserve(chunk.len());
            let filled = ends.len();
            let room = &mut ends.spare_capacity_mut()[..chunk.len()];
            if dictionary.longest <= B {
                // SAFETY: `dictionary_indices` checked every index of the
                // chunk against the dictionary's length, every entry
                // fits a block, and the room is `total`, which is at
                // least the chunk's values (their sum, or `longest` for
                // each). Compiled for AVX2 as well (see [`crate::simd`]).
                crate::simd::wide(
                    chunk.len(),
                    #[inline(always)]
                    || unsafe { out.push_entries::<B, O>(dictionary, chunk, room) },
                );
            } else {
                for (slot, &i) in room.iter_mut().zip(chunk) {
                    let (start, len) = dictionary.span(i);
                    slot.write(O::usize_as(out.push_in::<B>(&dictionary.bytes, start, len)));
                }
            }
            // SAFETY: the first `chunk.len()` spare slots were written.
            unsafe { ends.set_len(filled + chunk.len()) };
            out.finish();
        }
    }
    Ok(())
}

/// Room for `more` bytes of values, or a refusal of a chunk whose values
/// would pass [`MAX_BYTES`] (a run can repeat a long entry many times).
fn make_room(bytes: &mut Vec<u8>, more: usize) -> Decoded<Output<'_>> {
    if bytes.len().saturating_add(more) > MAX_BYTES {
        return Err(Failure::Unsupported);
    }
    Ok(Output::new(bytes, more))
}

/// Appends the offsets of `rows` rows from bit `at` of `validity`: a valid
/// row ends at the next of `ends`, a null one where the row before it did.
fn spread<O: OffsetSizeTrait>(
    validity: &Bits,
    at: usize,
    rows: usize,
    ends: &[O],
    offsets: &mut Vec<O>,
) {
    offsets.reserve(rows);
    let zero = O::usize_as(0);
    let mut last = offsets.last().copied().unwrap_or(zero);
    let mut k = 0usize;
    for (word, n) in validity.words_in(at, rows) {
        if word == low_bits(n) && k + n <= ends.len() {
            offsets.extend_from_slice(&ends[k..k + n]);
            k += n;
        } else {
            offsets.extend((0..n).map(|j| {
                if (word >> j) & 1 == 1 {
                    last = ends.get(k).copied().unwrap_or(last);
                    k += 1;
                }
                last
            }));
        }
        last = offsets.last().copied().unwrap_or(zero);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;
    use parquet::basic::Compression;

    thread_local! {
        /// Times [`grow_to`] grew a buffer that held values (and so may
        /// have copied them), on this thread.
        pub(super) static REGROWN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// Times a dictionary's buffer became the values' ([`InOrder`]).
        pub(super) static TAKEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// Dictionaries read in their page's own buffer.
        pub(super) static IN_PLACE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn plain_page(values: &[&[u8]]) -> Vec<u8> {
        let mut page = Vec::new();
        for v in values {
            page.extend_from_slice(&(v.len() as u32).to_le_bytes());
            page.extend_from_slice(v);
        }
        page
    }

    #[test]
    fn a_dictionary_whose_entries_join_into_valid_utf8_is_still_refused() {
        // "é" is C3 A9: split over two entries, each alone is invalid.
        let split = plain_page(&[b"a\xC3", b"\xA9b"]);
        assert!(matches!(
            Dictionary::from_plain(&split, 2, true),
            Err(Failure::Corrupt(_))
        ));
        // The same bytes as binary are fine, and so is a whole "é".
        assert!(Dictionary::from_plain(&split, 2, false).is_ok());
        let whole = plain_page(&[b"a\xC3\xA9", b"", b"b"]);
        let dictionary = Dictionary::from_plain(&whole, 3, true).unwrap();
        assert_eq!(dictionary.entry(0), "aé".as_bytes());
        assert_eq!(dictionary.entry(1), b"");
        assert_eq!(dictionary.entry(2), b"b");
    }

    /// A dictionary-encoded page of `indices` at bit width 8: one
    /// bit-packed run (groups of 8, padded with index 0).
    fn dictionary_page(indices: &[u8]) -> Vec<u8> {
        let groups = indices.len().div_ceil(8);
        let mut page = vec![8, ((groups << 1) | 1) as u8];
        page.extend_from_slice(indices);
        page.resize(2 + groups * 8, 0);
        page
    }

    /// A data page for [`chunk_of`]: indices into the dictionary (`Ok`),
    /// or PLAIN values (`Err`).
    type TestPage<'a> = Result<Vec<u8>, Vec<&'a [u8]>>;

    /// A column chunk of `pages` (uncompressed, no levels): the dictionary
    /// page of `entries` first when given, then data pages, each PLAIN
    /// values (`Err`) or indices into the dictionary (`Ok`).
    fn chunk_of(entries: Option<&[&[u8]]>, pages: &[TestPage<'_>]) -> bytes::Bytes {
        chunk_with(entries, pages, false)
    }

    /// [`chunk_of`], each page snappy-compressed when `snappy`.
    fn chunk_with(entries: Option<&[&[u8]]>, pages: &[TestPage<'_>], snappy: bool) -> bytes::Bytes {
        use parquet::column::page::{CompressedPage, Page, PageWriter};
        use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
        let mut all = Vec::new();
        if let Some(entries) = entries {
            all.push(Page::DictionaryPage {
                buf: plain_page(entries).into(),
                num_values: entries.len() as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            });
        }
        for page in pages {
            let (buf, num_values, encoding) = match page {
                Ok(indices) => (
                    dictionary_page(indices),
                    indices.len(),
                    Encoding::RLE_DICTIONARY,
                ),
                Err(values) => (plain_page(values), values.len(), Encoding::PLAIN),
            };
            all.push(Page::DataPage {
                buf: buf.into(),
                num_values: num_values as u32,
                encoding,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            });
        }
        let mut sink = TrackedWrite::new(Vec::new());
        let mut writer = SerializedPageWriter::new(&mut sink);
        for mut page in all {
            let size = page.buffer().len();
            if snappy {
                let packed = snap::raw::Encoder::new()
                    .compress_vec(page.buffer())
                    .unwrap();
                match &mut page {
                    Page::DictionaryPage { buf, .. } | Page::DataPage { buf, .. } => {
                        *buf = packed.into()
                    }
                    Page::DataPageV2 { .. } => unreachable!("only v1 pages are written"),
                }
            }
            writer.write_page(CompressedPage::new(page, size)).unwrap();
        }
        drop(writer);
        sink.into_inner().unwrap().into()
    }

    #[test]
    fn rows_that_are_the_dictionary_in_order_take_its_bytes() {
        let long = vec![b'x'; 3 * BLOCK + 5];
        let entries: [&[u8]; 5] = [b"alpha", b"", &long, b"delta", b"e"];
        let value = |i: u8| entries[i as usize];
        // Each case: the pages, whether the dictionary's buffer is taken.
        let cases: Vec<(Vec<TestPage<'_>>, bool)> = vec![
            // One page of 0..5, or two: taken.
            (vec![Ok(vec![0, 1, 2, 3, 4])], true),
            (vec![Ok(vec![0, 1, 2]), Ok(vec![3, 4])], true),
            // Not every entry used: copied.
            (vec![Ok(vec![0, 1, 2])], false),
            // In order, then PLAIN values: copied into room for both.
            (
                vec![Ok(vec![0, 1, 2, 3, 4]), Err(vec![b"more", b"values"])],
                false,
            ),
            // In order, then out of order (a repeat): copied, then gathered.
            (vec![Ok(vec![0, 1]), Ok(vec![1, 0, 4, 2, 3])], false),
            (vec![Ok(vec![0, 1, 1, 2])], false),
            // Not from entry 0: gathered.
            (vec![Ok(vec![1, 2, 3, 4])], false),
            // In order, then PLAIN values, then indices again: copied.
            (
                vec![
                    Ok(vec![0, 1, 2, 3, 4]),
                    Err(vec![b"", b"z"]),
                    Ok(vec![4, 0, 3]),
                ],
                false,
            ),
        ];
        for (pages, taken) in cases {
            let want: Vec<&[u8]> = pages
                .iter()
                .flat_map(|page| match page {
                    Ok(indices) => indices.iter().map(|&i| value(i)).collect::<Vec<_>>(),
                    Err(values) => values.clone(),
                })
                .collect();
            let chunk = chunk_of(Some(&entries), &pages);
            let decoded_pages = ChunkPages::new(chunk, Compression::UNCOMPRESSED).unwrap();
            REGROWN.with(|n| n.set(0));
            TAKEN.with(|n| n.set(0));
            let decoded = decode::<i64>(
                decoded_pages,
                Definition::flat(false),
                want.len(),
                false,
                None,
            )
            .unwrap_or_else(|_| panic!("{pages:?} decodes"));
            let binary = decoded
                .as_any()
                .downcast_ref::<arrow_array::LargeBinaryArray>()
                .unwrap();
            assert_eq!(
                binary.iter().flatten().collect::<Vec<_>>(),
                want,
                "{pages:?}"
            );
            assert_eq!(TAKEN.with(|n| n.get()) > 0, taken, "{pages:?}");
            assert_eq!(REGROWN.with(|n| n.get()), 0, "{pages:?}");
        }
        // An index past the entries, after rows in order, is refused.
        let pages: Vec<TestPage<'_>> = vec![Ok(vec![0, 1, 2, 3, 4]), Ok(vec![5])];
        let chunk = chunk_of(Some(&entries), &pages);
        let decoded_pages = ChunkPages::new(chunk, Compression::UNCOMPRESSED).unwrap();
        let refused = decode::<i32>(decoded_pages, Definition::flat(false), 6, false, None);
        assert!(
            matches!(&refused, Err(Failure::Corrupt(why)) if why.contains("index 5")),
            "{:?}",
            refused.map(|_| ())
        );
    }

    #[test]
    fn a_dictionary_of_large_values_is_the_first_windows_share_and_its_values() {
        // pyarrow's defaults for large values: a dictionary page of the
        // first ones, a page of indices 0, 1, 2, ..., then a PLAIN page as
        // large as the dictionary once the writer fell back.
        let first: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 10_000]).collect();
        let then: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'k' + i; 10_000]).collect();
        let entries: Vec<&[u8]> = first.iter().map(Vec::as_slice).collect();
        let plain: Vec<&[u8]> = then.iter().map(Vec::as_slice).collect();
        let pages = vec![Ok((0..8).collect()), Err(plain.clone())];
        let chunk = chunk_of(Some(&entries), &pages);
        let codec = Compression::UNCOMPRESSED;
        // Two windows: the dictionary and its indices, and the PLAIN page.
        let windows = crate::parquet::pages::page_windows(&chunk, codec, 2, 16).unwrap();
        assert_eq!(windows.iter().map(|w| w.rows).collect::<Vec<_>>(), [8, 8]);
        for (window, want, taken) in [(&windows[0], &entries, 1), (&windows[1], &plain, 0)] {
            let pages = ChunkPages::new(chunk.clone(), codec)
                .unwrap()
                .within(window);
            TAKEN.with(|n| n.set(0));
            let Ok(decoded) = decode::<i32>(pages, Definition::flat(false), 8, false, None) else {
                panic!("{window:?} decodes");
            };
            let binary = decoded
                .as_any()
                .downcast_ref::<arrow_array::BinaryArray>()
                .unwrap();
            assert_eq!(&binary.iter().flatten().collect::<Vec<_>>(), want);
            // The first window's values are the dictionary's buffer.
            assert_eq!(TAKEN.with(|n| n.get()), taken, "{window:?}");
        }
    }

    #[test]
    fn a_large_dictionary_page_becomes_the_dictionary_in_its_own_buffer() {
        // Entries of 0 to 500,000 bytes (over 8 MiB in all), a UTF-8 one,
        // and enough of them for the slack to fit the lengths' room.
        let text: Vec<Vec<u8>> = (0..40usize)
            .map(|i| match i {
                3 => "naïve café 日本".as_bytes().to_vec(),
                _ => vec![b'a' + (i % 26) as u8; (i * 27_777) % 500_001],
            })
            .collect();
        let entries: Vec<&[u8]> = text.iter().map(Vec::as_slice).collect();
        let page = plain_page(&entries);
        assert!(page.len() >= IN_PLACE_FROM);
        for utf8 in [false, true] {
            let copied = Dictionary::from_plain(&page, entries.len(), utf8).unwrap();
            let in_place =
                Dictionary::from_plain_in_place(page.clone(), entries.len(), utf8).unwrap();
            assert_eq!(in_place.offsets, copied.offsets);
            assert_eq!(in_place.longest, copied.longest);
            assert_eq!(in_place.bytes, copied.bytes);
        }
        // Wrong pages are refused as `from_plain` refuses them.
        let mut cut = page.clone();
        cut.truncate(page.len() - 1);
        let mut invalid = page.clone();
        invalid[4 + text[0].len() + 4] = 0xff;
        for (bad, count, utf8) in [
            (cut, 40, false),
            (page.clone(), 41, false),
            (invalid, 40, true),
        ] {
            let copied = Dictionary::from_plain(&bad, count, utf8).map(|_| ());
            let in_place = Dictionary::from_plain_in_place(bad, count, utf8).map(|_| ());
            assert!(matches!(copied, Err(Failure::Corrupt(_))), "{copied:?}");
            assert_eq!(format!("{copied:?}"), format!("{in_place:?}"));
        }
        // Decoded from a snappy chunk: the page's own buffer, the values
        // gathered from it; uncompressed, the chunk's bytes are copied.
        let indices: Vec<u8> = (0..100).map(|i| (i * 7 % 40) as u8).collect();
        let want: Vec<&[u8]> = indices.iter().map(|&i| entries[i as usize]).collect();
        for snappy in [true, false] {
            let chunk = chunk_with(Some(&entries), &[Ok(indices.clone())], snappy);
            let codec = if snappy {
                Compression::SNAPPY
            } else {
                Compression::UNCOMPRESSED
            };
            let pages = ChunkPages::new(chunk, codec).unwrap();
            IN_PLACE.with(|n| n.set(0));
            let Ok(decoded) = decode::<i32>(pages, Definition::flat(false), 100, false, None)
            else {
                panic!("decodes");
            };
            let binary = decoded
                .as_any()
                .downcast_ref::<arrow_array::BinaryArray>()
                .unwrap();
            assert_eq!(binary.iter().flatten().collect::<Vec<_>>(), want);
            assert_eq!(IN_PLACE.with(|n| n.get()), usize::from(snappy));
        }
    }

    #[test]
    fn gathered_values_are_the_entries_whatever_room_the_buffer_has() {
        // Longest entries of each block size, just past one, and longer
        // than the largest block (copied by length).
        let longests: Vec<Vec<u8>> = [16, 17, 32, 33, 48, 49, BLOCK, 3 * BLOCK + 5]
            .iter()
            .map(|&n| (0..n).map(|i| b'a' + (i % 26) as u8).collect())
            .collect();
        for longest in &longests {
            let entries: [&[u8]; 4] = [b"", b"short", longest, b"0123456789"];
            let dictionary = Dictionary::from_plain(&plain_page(&entries), 4, false).unwrap();
            let indices: Vec<u8> = (0..100u8)
                .map(|i| i.wrapping_mul(7).wrapping_add(i / 5) % 4)
                .collect();
            let expected: Vec<u8> = indices
                .iter()
                .flat_map(|&i| entries[i as usize].iter().copied())
                .collect();
            let page = dictionary_page(&indices);
            // No spare capacity (the room is summed from the chunk) and ample
            // (the room is the longest entry for each value).
            for spare in [0, 1 << 20] {
                let (mut bytes, mut ends) = (Vec::with_capacity(spare), Vec::<i32>::new());
                let mut scratch = Vec::new();
                gather(
                    &page,
                    indices.len(),
                    &dictionary,
                    &mut scratch,
                    &mut bytes,
                    &mut ends,
                    None,
                )
                .unwrap();
                let what = format!("longest {}, spare capacity {spare}", longest.len());
                assert_eq!(bytes, expected, "{what}");
                assert_eq!(ends.len(), indices.len(), "{what}");
                assert_eq!(*ends.last().unwrap() as usize, expected.len(), "{what}");
            }
        }
    }

    #[test]
    fn runs_of_one_entry_are_that_entry_repeated_whatever_its_length() {
        // Entries at and around each block size, and longer than a block.
        let lengths = [0usize, 1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 200];
        let owned: Vec<Vec<u8>> = lengths
            .iter()
            .map(|&n| (0..n).map(|i| b'A' + (i % 26) as u8).collect())
            .collect();
        let entries: Vec<&[u8]> = owned.iter().map(|e| e.as_slice()).collect();
        let dictionary =
            Dictionary::from_plain(&plain_page(&entries), entries.len(), false).unwrap();
        // Bit width 8; an RLE run per entry, of 1 to 40 copies, after one
        // another in one page (so each run starts mid-buffer).
        let mut page = vec![8u8];
        let mut expected = Vec::new();
        let mut count = 0;
        for (i, entry) in entries.iter().enumerate() {
            let n = 1 + (i * 7) % 40;
            page.extend([(n << 1) as u8, i as u8]);
            for _ in 0..n {
                expected.extend_from_slice(entry);
            }
            count += n;
        }
        let (mut bytes, mut ends, mut scratch) = (Vec::new(), Vec::<i32>::new(), Vec::new());
        gather(
            &page,
            count,
            &dictionary,
            &mut scratch,
            &mut bytes,
            &mut ends,
            None,
        )
        .unwrap();
        assert_eq!(bytes, expected);
        assert_eq!(ends.len(), count);
        // Every end is the one before it plus its entry's length.
        let mut at = 0;
        let mut k = 0;
        for (i, entry) in entries.iter().enumerate() {
            for _ in 0..1 + (i * 7) % 40 {
                at += entry.len();
                assert_eq!(ends[k] as usize, at, "entry {i}");
                k += 1;
            }
        }
    }

    #[test]
    fn plain_values_are_refused_when_cut_off_or_overcounted() {
        let page = plain_page(&[b"abc", b"de"]);
        let (mut bytes, mut ends) = (Vec::new(), Vec::new());
        plain(&page, 2, &mut bytes, &mut ends).unwrap();
        assert_eq!(
            (bytes.as_slice(), ends.as_slice()),
            (&b"abcde"[..], &[3, 5][..])
        );
        for (page, count) in [
            (&page[..page.len() - 1], 2),
            (&page[..], 3),
            (&page[..], 1 << 40),
        ] {
            let (mut bytes, mut ends) = (Vec::new(), Vec::<i32>::new());
            assert!(matches!(
                plain(page, count, &mut bytes, &mut ends),
                Err(Failure::Corrupt(_))
            ));
        }
    }

    #[test]
    fn plain_values_of_every_length_append_as_written() {
        // Lengths around a block and a stage, in a page of more than a
        // MiB of values, after a prefix that leaves the buffer's end
        // inside a cache line. (Plain values are copied one by one with
        // ordinary stores: staged for streaming, a steady read of the
        // suite's `string` file was 5 % slower.)
        let lengths = [
            0usize,
            1,
            63,
            64,
            65,
            1_000,
            STAGE - 1,
            STAGE,
            STAGE + 1,
            40_000,
            7,
        ];
        let values: Vec<Vec<u8>> = (0..120)
            .map(|i| {
                let len = lengths[i % lengths.len()];
                (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
            })
            .collect();
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let page = plain_page(&refs);
        for prefix in [0usize, 5] {
            let mut bytes = vec![9u8; prefix];
            let mut ends = Vec::<i32>::new();
            plain(&page, values.len(), &mut bytes, &mut ends).unwrap();
            assert_eq!(&bytes[..prefix], &vec![9u8; prefix][..]);
            assert_eq!(bytes[prefix..], values.concat()[..]);
            let mut end = prefix;
            for (v, &e) in values.iter().zip(&ends) {
                end += v.len();
                assert_eq!(e as usize, end);
            }
            // Cut off near the end: refused, not read past the page.
            let cut = &page[..page.len() - 3];
            let (mut bytes, mut ends) = (Vec::new(), Vec::<i32>::new());
            assert!(matches!(
                plain(cut, values.len(), &mut bytes, &mut ends),
                Err(Failure::Corrupt(_))
            ));
        }
    }

    #[test]
    fn spread_gives_nulls_no_bytes() {
        let pattern: Vec<bool> = (0..150).map(|i| i % 7 != 0 && i % 11 != 3).collect();
        let mut validity = Bits::with_capacity(0);
        validity.append_n(2, true);
        for &b in &pattern {
            validity.append_n(1, b);
        }
        let valid = pattern.iter().filter(|b| **b).count();
        // Valid value k is k + 1 bytes long.
        let ends: Vec<i32> = (1..=valid as i32)
            .scan(10, |end, k| {
                *end += k;
                Some(*end)
            })
            .collect();
        let mut offsets = vec![0, 4, 10];
        spread(&validity, 2, pattern.len(), &ends, &mut offsets);
        assert_eq!(offsets.len(), 3 + pattern.len());
        let mut k = 0;
        for (row, &is_valid) in pattern.iter().enumerate() {
            let len = offsets[row + 3] - offsets[row + 2];
            if is_valid {
                k += 1;
                assert_eq!(len, k, "row {row}");
            } else {
                assert_eq!(len, 0, "row {row}");
            }
        }
    }

    /// One row group of a string column written by the `parquet` crate:
    /// dictionary-encoded until its dictionary passes 4 KB, then PLAIN, in
    /// pages of about 1 KB; and the values written.
    fn falling_back(values: &[Option<String>]) -> (bytes::Bytes, Compression) {
        use parquet::file::properties::WriterProperties;
        let array: StringArray = values.iter().map(|v| v.as_deref()).collect();
        let batch =
            arrow_array::RecordBatch::try_from_iter([("s", Arc::new(array) as ArrayRef)]).unwrap();
        let codec = Compression::SNAPPY;
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_dictionary_page_size_limit(4096)
            .set_data_page_size_limit(1024)
            .set_write_batch_size(64)
            .build();
        let file = crate::parquet::written::written(&batch, props);
        (crate::parquet::written::first_chunk(&file).1, codec)
    }

    #[test]
    fn values_that_grow_longer_after_the_dictionary_fills_are_sized_from_the_start() {
        // Short values while the dictionary takes them, then ones four
        // times as long: sized from the first pages, the buffer ran out
        // near the end and was copied to grow it.
        for nulls in [false, true] {
            let values: Vec<Option<String>> = (0..6_000)
                .map(|i| match i {
                    _ if nulls && i % 5 == 0 => None,
                    0..1_000 => Some(format!("s{i:05}")),
                    _ => Some(format!("a much longer value, number {i:06}")),
                })
                .collect();
            let (chunk, codec) = falling_back(&values);
            let pages = ChunkPages::new(chunk, codec).unwrap();
            let ahead = pages.ahead();
            assert!(
                ahead.plain_values > 0 && ahead.other_values > 0,
                "{ahead:?}"
            );
            REGROWN.with(|n| n.set(0));
            let Ok(array) = decode::<i32>(pages, Definition::flat(nulls), values.len(), true, None)
            else {
                panic!("decoded");
            };
            let want: StringArray = values.iter().map(|v| v.as_deref()).collect();
            assert_eq!(array.as_any().downcast_ref::<StringArray>(), Some(&want));
            // Sized before the first value, nulls or not (a null counted
            // as a 4-byte length makes the guess short by less than the
            // eighth it leaves to spare), and never grown after.
            let regrown = REGROWN.with(|n| n.get());
            assert!(regrown == 0, "regrown {regrown} times (nulls {nulls})");
        }
    }

    #[test]
    fn a_selection_sizes_the_values_for_its_rows_not_the_chunks() {
        use arrow_array::Array;
        // 60,000 values of 30 bytes, plain after the first few hundred;
        // one row in 20 kept: 90 KB of the chunk's 1.8 MB.
        let values: Vec<Option<String>> = (0..60_000)
            .map(|i| Some(format!("a plain value of thirty, {i:05}")))
            .collect();
        let (chunk, codec) = falling_back(&values);
        let selection = BooleanBuffer::from_iter((0..values.len()).map(|i| i % 20 == 0));
        let mut pages = ChunkPages::new(chunk, codec).unwrap();
        pages.skip_unselected(&selection);
        let Ok(got) = decode::<i32>(
            pages,
            Definition::flat(false),
            values.len(),
            true,
            Some(&selection),
        ) else {
            panic!("decoded");
        };
        let got = got.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(got.len(), 3_000);
        assert_eq!(got.value(7), values[140].as_deref().unwrap());
        let kept = got.values().len();
        assert_eq!(kept, 3_000 * 30);
        // Reserved: the kept rows' share and a page's, with an eighth to
        // spare; sized for every row it was 20 times the kept bytes.
        let reserved = got.values().capacity();
        assert!(reserved < 2 * kept, "{reserved} bytes reserved for {kept}");
    }

    /// 6,000 values a writer dictionary-encodes (bit-packed indices, then
    /// RLE runs of one index) until the dictionary outgrows its page, then
    /// writes plain; every seventh null when `nulls`.
    fn dictionary_then_plain(nulls: bool) -> Vec<Option<String>> {
        (0..6_000)
            .map(|i| match i {
                _ if nulls && i % 7 == 0 => None,
                0..2_000 => Some(format!("v{}", i % 40)),
                2_000..3_000 => Some(format!("run {}", i / 250)),
                _ => Some(format!("a longer, plain value {i:06}")),
            })
            .collect()
    }

    #[test]
    fn a_list_leaf_without_nulls_hands_its_ends_over_as_the_offsets() {
        use super::super::lists::Leaf;
        use arrow_array::Array;
        let page = plain_page(&[b"ab", b"", b"cde"]);
        let leaf = || {
            let mut leaf = Values::<i32>::new(true, 3);
            leaf.append(Encoding::PLAIN, &page, 3, &mut Vec::new())
                .unwrap();
            leaf
        };
        let values = leaf();
        assert_eq!(values.len(), 3);
        let ends = values.ends.as_ptr();
        let array = values.into_array(None, 3).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings, &StringArray::from(vec!["ab", "", "cde"]));
        // The same buffer, not a copy of it.
        assert_eq!(strings.offsets().inner().inner().as_ptr(), ends.cast());
        // So too with a nullable leaf's validity, all set.
        let values = leaf();
        let ends = values.ends.as_ptr();
        let mut validity = Bits::with_capacity(3);
        validity.append_n(3, true);
        let array = values.into_array(Some(validity), 3).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings, &StringArray::from(vec!["ab", "", "cde"]));
        assert_eq!(strings.offsets().inner().inner().as_ptr(), ends.cast());
        // With a null item the offsets are spread from the ends.
        let mut validity = Bits::with_capacity(4);
        for valid in [true, false, true, true] {
            validity.push(valid);
        }
        let array = leaf().into_array(Some(validity), 4).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            strings,
            &StringArray::from(vec![Some("ab"), None, Some(""), Some("cde")])
        );
        // A count of values that is not the items' is refused.
        assert!(matches!(
            leaf().into_array(None, 4),
            Err(Failure::Corrupt(_))
        ));
    }

    #[test]
    fn a_footers_claim_of_rows_reserves_at_most_a_bounded_multiple_of_the_bytes_written() {
        // One row of 1,000 bytes, of a claimed billion: 64 MiB at most.
        let mut bytes = vec![7u8; 1_000];
        reserve_projected(&mut bytes, 1, 1_000_000_000);
        assert!(bytes.capacity() <= FIRST_GUESS_MAX + FIRST_GUESS_MAX / 8 + BLOCK);
        assert!(bytes.capacity() >= FIRST_GUESS_MAX);
        // 8 MiB written for 1 row of 100: 16 times that at most.
        let mut bytes = vec![7u8; 8 << 20];
        reserve_projected(&mut bytes, 1, 100);
        let most = MOST_PROJECTED * (8 << 20);
        assert!(bytes.capacity() <= most + most / 8 + BLOCK);
        assert!(bytes.capacity() >= most);
        // A projection within both bounds is taken as it is.
        let mut bytes = vec![7u8; 1 << 20];
        reserve_projected(&mut bytes, 10, 40);
        assert!(bytes.capacity() >= 4 << 20);
        assert!(bytes.capacity() <= (4 << 20) + (4 << 19) + BLOCK);
    }

    #[test]
    fn a_list_columns_values_are_sized_from_the_first_pages_not_doubled_page_by_page() {
        use arrow_array::builder::{ListBuilder, StringBuilder};
        use arrow_array::Array;
        use parquet::file::properties::WriterProperties;
        let rows = 20_000;
        let mut lists = ListBuilder::new(StringBuilder::new());
        for i in 0..rows {
            for j in 0..i % 5 {
                lists
                    .values()
                    .append_option((j != 3).then(|| format!("value {}", (i * 7 + j) % 3_000)));
            }
            lists.append(i % 11 != 4);
        }
        let list = lists.finish();
        let batch =
            arrow_array::RecordBatch::try_from_iter([("l", Arc::new(list) as ArrayRef)]).unwrap();
        let shape = crate::parquet::lists::shape_of_first_column(&batch);
        for dictionary in [true, false] {
            let props = WriterProperties::builder()
                .set_dictionary_enabled(dictionary)
                .set_data_page_size_limit(1024)
                .set_write_batch_size(64)
                .build();
            let file = crate::parquet::written::written(&batch, props);
            let (meta, chunk) = crate::parquet::written::first_chunk(&file);
            let column = meta.row_group(0).column(0);
            let theirs = crate::parquet::written::read_by_crate(file.clone(), rows);
            REGROWN.with(|n| n.set(0));
            let ours =
                crate::parquet::lists::decode_column(chunk, column, &shape, rows, None).unwrap();
            assert_eq!(ours.to_data(), theirs.column(0).to_data(), "{dictionary}");
            // Sized to the whole chunk once the first page is in (its own
            // values may grow the buffer a few times); doubled as the
            // values came, the buffer grew 7 times.
            let regrown = REGROWN.with(|n| n.get());
            assert!(
                regrown <= 3,
                "regrown {regrown} times (dictionary {dictionary})"
            );
        }
    }

    #[test]
    fn a_selection_keeps_the_rows_a_filter_of_the_whole_column_keeps() {
        use arrow_array::{Array, BooleanArray};
        for nulls in [false, true] {
            let values = dictionary_then_plain(nulls);
            let (chunk, codec) = falling_back(&values);
            // None, a scattered few, half, runs of whole words, all but
            // one row of a chunk of indices, all.
            let patterns: [fn(usize) -> bool; 6] = [
                |_| false,
                |i| i % 17 == 3,
                |i| i % 2 == 0,
                |i| (i / 64) % 3 == 1,
                |i| i != 100,
                |_| true,
            ];
            for keep in patterns {
                let selection = BooleanBuffer::from_iter((0..values.len()).map(keep));
                // As `flat::decode_column` hands them over: pages without a
                // selected row passed over.
                let mut pages = ChunkPages::new(chunk.clone(), codec).unwrap();
                pages.skip_unselected(&selection);
                let Ok(got) = decode::<i32>(
                    pages,
                    Definition::flat(nulls),
                    values.len(),
                    true,
                    Some(&selection),
                ) else {
                    panic!("decoded");
                };
                let pages = ChunkPages::new(chunk.clone(), codec).unwrap();
                let Ok(whole) =
                    decode::<i32>(pages, Definition::flat(nulls), values.len(), true, None)
                else {
                    panic!("decoded");
                };
                let want =
                    arrow_select::filter::filter(&whole, &BooleanArray::new(selection, None))
                        .unwrap();
                assert_eq!(got.to_data(), want.to_data(), "nulls {nulls}");
                assert_eq!(got.len(), want.len());
            }
        }
    }

    #[test]
    fn large_offsets_hold_the_same_values_as_narrow_ones() {
        use arrow_array::{Array, LargeBinaryArray, LargeStringArray};
        for nulls in [false, true] {
            let values = dictionary_then_plain(nulls);
            let (chunk, codec) = falling_back(&values);
            for utf8 in [true, false] {
                let pages = ChunkPages::new(chunk.clone(), codec).unwrap();
                let Ok(array) =
                    decode::<i64>(pages, Definition::flat(nulls), values.len(), utf8, None)
                else {
                    panic!("decoded");
                };
                assert_eq!(
                    array.null_count(),
                    values.iter().filter(|v| v.is_none()).count()
                );
                let got: Vec<Option<&[u8]>> = if utf8 {
                    let strings = array.as_any().downcast_ref::<LargeStringArray>().unwrap();
                    strings.iter().map(|v| v.map(str::as_bytes)).collect()
                } else {
                    let binary = array.as_any().downcast_ref::<LargeBinaryArray>().unwrap();
                    binary.iter().collect()
                };
                let want: Vec<Option<&[u8]>> = values
                    .iter()
                    .map(|v| v.as_deref().map(str::as_bytes))
                    .collect();
                assert_eq!(got, want, "utf8 {utf8}, nulls {nulls}");
            }
        }
    }

    #[test]
    fn a_few_short_entries_size_the_values_by_their_own_length() {
        // Four entries of 4 to 17 bytes (12.25 on average): each value
        // looked up takes 12 bytes, not the entries' slack spread over 4.
        let entries: [&[u8]; 4] = [
            b"NONE",
            b"COLLECT COD",
            b"TAKE BACK RETURN",
            b"DELIVER IN PERSON",
        ];
        let dictionary = Dictionary::from_plain(&plain_page(&entries), 4, true).unwrap();
        let ahead = PagesAhead {
            plain_values: 0,
            plain_bytes: 0,
            plain_held: 0,
            other_values: 100_000,
            most_values: 20_000,
        };
        assert_eq!(first_guess(ahead, Some(&dictionary)), 1_200_000);
    }

    #[test]
    fn growing_keeps_the_values_whichever_way_it_grows() {
        // Mostly written (reallocated) and mostly unwritten (moved by copy).
        for (written, capacity) in [(900usize, 1000usize), (100, 1000)] {
            let mut bytes = Vec::with_capacity(capacity);
            bytes.extend((0..written).map(|i| i as u8));
            grow_to(&mut bytes, 5000, 5000);
            assert!(bytes.capacity() >= 5000);
            assert_eq!(bytes.len(), written);
            assert!(bytes.iter().enumerate().all(|(i, &b)| b == i as u8));
        }
    }

    #[test]
    fn a_projection_creeping_past_a_mostly_unwritten_buffer_waits() {
        let mut bytes: Vec<u8> = Vec::with_capacity(10_000);
        bytes.extend_from_slice(&[7; 1000]);
        let capacity = bytes.capacity();
        // Just past the capacity (with its eighth to spare): no growth yet.
        reserve_about(&mut bytes, capacity * 8 / 9 + 100);
        assert_eq!(bytes.capacity(), capacity);
        // Far past it: grown at once.
        reserve_about(&mut bytes, 2 * capacity);
        assert!(bytes.capacity() >= 2 * capacity);
        // Mostly written: its eighth to spare is not grown for, but a
        // projection past the capacity itself grows it.
        let mut full: Vec<u8> = Vec::with_capacity(10_000);
        full.resize(full.capacity() - 1000, 1);
        let capacity = full.capacity();
        reserve_about(&mut full, capacity * 8 / 9 + 100);
        assert_eq!(full.capacity(), capacity);
        reserve_about(&mut full, capacity);
        assert!(full.capacity() > capacity);
        assert!(full.iter().all(|&b| b == 1));
    }
}
