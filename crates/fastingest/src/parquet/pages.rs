//! A column chunk's pages: their headers read and checked, their values
//! decompressed.
//!
//! Two users:
//! - [`check_pages`] walks a chunk's page headers before any decoder sees
//!   them. The `parquet` crate allocates a page's `uncompressed_page_size`
//!   before it decompresses it, and that size comes from the file: a
//!   damaged or hostile header claiming 2 GiB makes a 15 KB file allocate
//!   2 GiB. Sizes the page cannot hold are refused: a compressed size past
//!   the chunk's end, or an uncompressed size beyond what the codec can
//!   expand the compressed bytes to.
//! - [`ChunkPages`] hands fastingest's own decoders one page after another,
//!   decompressed into a single buffer that every page of the chunk reuses.
//!   The `parquet` crate's page reader allocates a fresh buffer per page
//!   and, for snappy, zeroes it before decompressing into it (2 % of a
//!   snappy read's CPU in `memset`); the fresh buffers also raised the
//!   peak memory of a read (suite `decimal` file: 285 MB, 261 MB reused).

use arrow_buffer::BooleanBuffer;
use parquet::basic::{Compression, Encoding};
use std::io::Read;
use std::ops::Range;

use super::thrift::{Compact, BINARY, FALSE, I32, STRUCT, TRUE};

/// Why a chunk's pages were refused: what is wrong, and at which byte of
/// the chunk.
#[derive(Debug, PartialEq)]
pub(crate) struct BadPage {
    pub offset: usize,
    /// Where the page ends, when its bytes are what is wrong (its header
    /// was read); else the rest of the chunk is named.
    pub end: Option<usize>,
    pub detail: String,
}

/// Pages smaller than this may claim any size up to it (headers, levels and
/// tiny pages compress oddly).
const SMALL_PAGE: i64 = 1 << 20;

/// How far a codec can expand its input at best (its format's limit, with
/// room): a page may not claim more than this many times its compressed
/// bytes.
fn max_expansion(codec: Compression) -> i64 {
    match codec {
        Compression::UNCOMPRESSED => 1,
        // A snappy copy element expands at most 64 bytes from 2.
        Compression::SNAPPY => 64,
        // Deflate's longest match (258 bytes) from about 2 bits.
        Compression::GZIP(_) => 1100,
        // LZ4's match length runs on in 255-byte steps, one byte each.
        Compression::LZ4 | Compression::LZ4_RAW => 300,
        // An LZO run, like LZ4's.
        Compression::LZO => 300,
        // A zstd RLE block writes 128 KiB from 4 bytes; a Brotli meta-block
        // can do as well.
        Compression::ZSTD(_) | Compression::BROTLI(_) => 1 << 16,
    }
}

/// Walks the pages of `chunk` (one column chunk's bytes, compressed with
/// `codec`) and refuses a header whose sizes the bytes cannot back, and,
/// with `verify_checksums`, a page whose bytes do not hash to the CRC32 its
/// header carries (the format's: of the page's bytes after the header, as
/// stored; a page without one passes).
pub(crate) fn check_pages(
    chunk: &[u8],
    codec: Compression,
    verify_checksums: bool,
) -> Result<(), BadPage> {
    let mut at = 0usize;
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec)?;
        let end = body + header.compressed as usize;
        if verify_checksums {
            check_crc(chunk, at..end, body, header.crc)?;
        }
        at = end;
    }
    Ok(())
}

/// Refuses the page `page` of `chunk` (its body from `body` on) when its
/// header carries a CRC32 its body's bytes do not hash to.
fn check_crc(
    chunk: &[u8],
    page: Range<usize>,
    body: usize,
    crc: Option<u32>,
) -> Result<(), BadPage> {
    let Some(expected) = crc else {
        return Ok(());
    };
    let found = crc32fast::hash(&chunk[body..page.end]);
    if found == expected {
        return Ok(());
    }
    Err(BadPage {
        offset: page.start,
        end: Some(page.end),
        detail: format!(
            "page checksum mismatch: the header says CRC32 {expected:#010x}, the page's {} \
             bytes hash to {found:#010x}",
            page.end - body
        ),
    })
}

/// The header of the page at `at` of `chunk`, and where its body starts,
/// if its sizes are ones the bytes can back.
fn checked_header(
    chunk: &[u8],
    at: usize,
    codec: Compression,
) -> Result<(PageHeader, usize), BadPage> {
    let mut reader = Compact::new(&chunk[at..]);
    let header = page_header(&mut reader).map_err(|detail| BadPage {
        offset: at,
        end: None,
        detail: format!("unreadable page header: {detail}"),
    })?;
    let body = at + reader.pos;
    let bad = |detail: String| BadPage {
        offset: at,
        end: None,
        detail,
    };
    let compressed = header.compressed;
    if compressed < 0 || header.uncompressed < 0 {
        return Err(bad(format!(
            "page sizes are negative (compressed {compressed}, uncompressed {})",
            header.uncompressed
        )));
    }
    let left = (chunk.len() - body) as i64;
    if compressed > left {
        return Err(bad(format!(
            "the page claims {compressed} bytes but the column chunk has {left} left"
        )));
    }
    // Data page v2 may keep its values uncompressed: then nothing is
    // decompressed (and nothing allocated from the claim).
    let decompressed = codec != Compression::UNCOMPRESSED && header.is_compressed;
    let limit = if decompressed {
        (compressed.saturating_mul(max_expansion(codec))).max(SMALL_PAGE)
    } else {
        i64::MAX
    };
    if header.uncompressed > limit {
        return Err(bad(format!(
            "the page claims {} bytes uncompressed from {compressed} bytes of {codec}, more than \
             the codec can produce",
            header.uncompressed
        )));
    }
    // A dictionary page is decoded whole, and the `parquet` crate reserves
    // room for as many values as it claims: each takes at least a bit of
    // its PLAIN values (a byte array's 4-byte length; a boolean's bit).
    let most_values = header.uncompressed.saturating_mul(8).saturating_add(8);
    if header.kind == DICTIONARY_PAGE && header.num_values > most_values {
        return Err(bad(format!(
            "the dictionary page claims {} values in {} bytes",
            header.num_values, header.uncompressed
        )));
    }
    Ok((header, body))
}

/// Page types (the format's `PageType`).
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const DATA_PAGE_V2: i32 = 3;
/// The format's numbers for the PLAIN encoding and the two that index a
/// dictionary.
const PLAIN: i32 = 0;
const PLAIN_DICTIONARY: i32 = 2;
const RLE_DICTIONARY: i32 = 8;

/// Whether `keep` sets none of the `rows` bits from `first` on (which it
/// must hold: a page past its end is read, and its decoder says what is
/// wrong with it).
fn none_kept(keep: &BooleanBuffer, first: usize, rows: usize) -> bool {
    first.saturating_add(rows) <= keep.len() && keep.slice(first, rows).count_set_bits() == 0
}

/// What the readers need of a page header. Fields the header lacks keep
/// the values of [`PageHeader::MISSING`].
struct PageHeader {
    kind: i32,
    uncompressed: i64,
    compressed: i64,
    /// False only for a data page v2 that says its values are not compressed.
    is_compressed: bool,
    /// Which kind of page the header's own part describes (the page type
    /// of its data, dictionary or v2 header; -1: none).
    described_as: i32,
    num_values: i64,
    encoding: i32,
    /// A v1 data page's level encodings.
    def_encoding: i32,
    rep_encoding: i32,
    /// A v2 data page's level sections, which are never compressed.
    def_bytes: i64,
    rep_bytes: i64,
    /// Where a data page's statistics put its least and greatest value
    /// (`min_value` and `max_value`, in the column's own order), in the
    /// header's bytes.
    min_value: Option<Range<usize>>,
    max_value: Option<Range<usize>>,
    /// The CRC32 of the page's bytes after the header, where the writer
    /// put one.
    crc: Option<u32>,
}

impl PageHeader {
    const MISSING: PageHeader = PageHeader {
        kind: -1,
        uncompressed: -1,
        compressed: -1,
        is_compressed: true,
        described_as: -1,
        num_values: -1,
        encoding: -1,
        def_encoding: -1,
        rep_encoding: -1,
        def_bytes: 0,
        rep_bytes: 0,
        min_value: None,
        max_value: None,
        crc: None,
    };
}

fn page_header(r: &mut Compact) -> Result<PageHeader, String> {
    let mut header = PageHeader::MISSING;
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (1, I32) => header.kind = r.zigzag()? as i32,
            (2, I32) => header.uncompressed = r.zigzag()?,
            (3, I32) => header.compressed = r.zigzag()?,
            // The format's `i32`: the CRC's 32 bits as a signed number.
            (4, I32) => header.crc = Some(r.zigzag()? as i32 as u32),
            (5, STRUCT) => data_page_header(r, &mut header)?,
            (7, STRUCT) => dictionary_page_header(r, &mut header)?,
            (8, STRUCT) => data_page_v2_header(r, &mut header)?,
            (_, kind) => r.skip(kind, 1)?,
        }
    }
    if header.uncompressed < 0 && header.compressed < 0 {
        return Err("no page sizes".into());
    }
    Ok(header)
}

/// `DataPageHeader`: values, their encoding, the levels' encodings.
fn data_page_header(r: &mut Compact, header: &mut PageHeader) -> Result<(), String> {
    header.described_as = DATA_PAGE;
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (1, I32) => header.num_values = r.zigzag()?,
            (2, I32) => header.encoding = r.zigzag()? as i32,
            (3, I32) => header.def_encoding = r.zigzag()? as i32,
            (4, I32) => header.rep_encoding = r.zigzag()? as i32,
            (5, STRUCT) => statistics(r, header)?,
            (_, kind) => r.skip(kind, 2)?,
        }
    }
    Ok(())
}

/// `DictionaryPageHeader`: entries and their encoding.
fn dictionary_page_header(r: &mut Compact, header: &mut PageHeader) -> Result<(), String> {
    header.described_as = DICTIONARY_PAGE;
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (1, I32) => header.num_values = r.zigzag()?,
            (2, I32) => header.encoding = r.zigzag()? as i32,
            (_, kind) => r.skip(kind, 2)?,
        }
    }
    Ok(())
}

/// `DataPageHeaderV2`: values, their encoding, the levels' lengths and
/// `is_compressed` (default true).
fn data_page_v2_header(r: &mut Compact, header: &mut PageHeader) -> Result<(), String> {
    header.described_as = DATA_PAGE_V2;
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (1, I32) => header.num_values = r.zigzag()?,
            (4, I32) => header.encoding = r.zigzag()? as i32,
            (5, I32) => header.def_bytes = r.zigzag()?,
            (6, I32) => header.rep_bytes = r.zigzag()?,
            (7, TRUE) => header.is_compressed = true,
            (7, FALSE) => header.is_compressed = false,
            (8, STRUCT) => statistics(r, header)?,
            (_, kind) => r.skip(kind, 2)?,
        }
    }
    Ok(())
}

/// A data page's `Statistics`: only `max_value` and `min_value`, which are
/// in the column's own sort order (the deprecated `max` and `min` are
/// signed bytes for strings in older writers, and are left alone).
fn statistics(r: &mut Compact, header: &mut PageHeader) -> Result<(), String> {
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (5, BINARY) => header.max_value = Some(r.binary()?),
            (6, BINARY) => header.min_value = Some(r.binary()?),
            (_, kind) => r.skip(kind, 3)?,
        }
    }
    Ok(())
}

/// The format's encoding numbers.
fn encoding_of(number: i32) -> Result<Encoding, String> {
    #[allow(deprecated)] // BIT_PACKED: still a value a file may name
    Ok(match number {
        0 => Encoding::PLAIN,
        2 => Encoding::PLAIN_DICTIONARY,
        3 => Encoding::RLE,
        4 => Encoding::BIT_PACKED,
        5 => Encoding::DELTA_BINARY_PACKED,
        6 => Encoding::DELTA_LENGTH_BYTE_ARRAY,
        7 => Encoding::DELTA_BYTE_ARRAY,
        8 => Encoding::RLE_DICTIONARY,
        9 => Encoding::BYTE_STREAM_SPLIT,
        other => return Err(format!("unknown encoding {other}")),
    })
}

/// One page of a column chunk, its bytes decompressed.
pub(crate) enum Page<'a> {
    Dictionary {
        buf: &'a [u8],
        num_values: usize,
        encoding: Encoding,
    },
    /// A v1 data page: levels (each with a 4-byte length) then values.
    Data {
        buf: &'a [u8],
        num_values: usize,
        encoding: Encoding,
        def_encoding: Encoding,
        rep_encoding: Encoding,
    },
    /// A v2 data page: repetition levels, definition levels (their lengths
    /// given), then values.
    DataV2 {
        buf: &'a [u8],
        num_values: usize,
        encoding: Encoding,
        def_bytes: usize,
        rep_bytes: usize,
    },
    /// A data page of `num_values` rows none of which the chunk's
    /// selection keeps, passed over without being decompressed (see
    /// [`ChunkPages::skip_unselected`]).
    Skipped { num_values: usize },
}

/// How a chunk's compressed pages are decompressed: each codec writes into
/// the one buffer the chunk's pages share.
enum Decompressor {
    /// Into the buffer as it is (zeroed only when it grows).
    Snappy(snap::raw::Decoder),
    /// Into the emptied buffer's spare capacity, unzeroed.
    Zstd(Box<zstd::bulk::Decompressor<'static>>),
    /// Into the buffer as it is.
    Lz4Raw,
    /// Into the buffer as it is, by Google's C decoder.
    Brotli,
    /// Into the buffer as it is, by libdeflate.
    Gzip(Box<libdeflater::Decompressor>),
}

/// The pages of one column chunk, in order. Index pages (and page types
/// this does not know) are skipped.
pub(crate) struct ChunkPages {
    chunk: bytes::Bytes,
    codec: Compression,
    /// `None`: the chunk is not compressed.
    decompressor: Option<Decompressor>,
    /// The start of the next page's header in `chunk`.
    at: usize,
    /// The last page's decompressed bytes.
    scratch: Vec<u8>,
    /// The last page's bytes are `scratch[..n]` (it was decompressed).
    in_scratch: Option<usize>,
    /// The last page's body in the chunk.
    last_body: Range<usize>,
    /// The rows of a flat column to keep (a bit per row of the chunk) and
    /// the row the next data page starts at: a data page that holds none
    /// of them is skipped (see [`ChunkPages::skip_unselected`]).
    selection: Option<(BooleanBuffer, usize)>,
    /// Data pages that were not fetched: at each (byte of `chunk`, rows),
    /// that many rows lie before the page there (see
    /// [`ChunkPages::with_gaps`]), and the next of them to come.
    gaps: Vec<(usize, usize)>,
    next_gap: usize,
    /// The chunk's bytes before this were given back to the kernel (see
    /// [`ChunkPages::give_back_read`]).
    given_back: usize,
    /// The end of the chunk's dictionary page, read by a window (see
    /// [`ChunkPages::within`]) and not yet given back.
    dictionary_read: usize,
    /// Where the pages read end: the chunk's end, or a window's (see
    /// [`ChunkPages::within`]).
    end: usize,
    /// Where the data pages read start, once a dictionary page is read.
    data_from: usize,
}

/// How many bytes of pages read a chunk gives back at once.
const GIVE_BACK_EVERY: usize = 4 << 20;

impl ChunkPages {
    /// The pages of `chunk` (a whole column chunk, from its first page
    /// header), compressed with `codec`; `None` for a codec this leaves to
    /// the `parquet` crate (Hadoop's LZ4 framing, LZO).
    pub(crate) fn new(chunk: bytes::Bytes, codec: Compression) -> Option<Self> {
        let decompressor = match codec {
            Compression::UNCOMPRESSED => None,
            Compression::SNAPPY => Some(Decompressor::Snappy(snap::raw::Decoder::new())),
            Compression::ZSTD(_) => Some(Decompressor::Zstd(zstd_context()?)),
            Compression::LZ4_RAW => Some(Decompressor::Lz4Raw),
            Compression::GZIP(_) => Some(Decompressor::Gzip(Box::default())),
            Compression::BROTLI(_) => Some(Decompressor::Brotli),
            Compression::LZ4 | Compression::LZO => return None,
        };
        let chunk_len = chunk.len();
        Some(ChunkPages {
            chunk,
            codec,
            decompressor,
            at: 0,
            scratch: Vec::new(),
            in_scratch: None,
            last_body: 0..0,
            selection: None,
            gaps: Vec::new(),
            next_gap: 0,
            given_back: 0,
            dictionary_read: 0,
            end: chunk_len,
            data_from: 0,
        })
    }

    /// `self` cut to the data pages of `window` (see [`page_windows`]),
    /// after the chunk's dictionary page if it starts with one and a page
    /// of the window looks entries up: a large chunk's runs of pages are
    /// decoded on several threads at once. (A run of PLAIN pages after a
    /// writer fell back from its dictionary does not read it: pyarrow's
    /// dictionary page of 1,024 images of 100 KB was read, and held, by
    /// every run.)
    pub(crate) fn within(mut self, window: &PageWindow) -> Self {
        let starts_with_dictionary = checked_header(&self.chunk, 0, self.codec)
            .is_ok_and(|(header, _)| header.kind == DICTIONARY_PAGE);
        self.end = window.bytes.end.min(self.chunk.len());
        self.data_from = window.bytes.start.min(self.end);
        if !starts_with_dictionary || !self.looks_up_from(self.data_from) {
            self.at = self.data_from;
        }
        // The pages before the window are other threads' to give back.
        self.given_back = self.data_from;
        self
    }

    /// Whether a data page from byte `at` of the chunk to the end read is
    /// dictionary-encoded (or a header there does not read: the decoder
    /// then says why, with the dictionary read as it would be).
    fn looks_up_from(&self, mut at: usize) -> bool {
        while at < self.end {
            let Ok((header, body)) = checked_header(&self.chunk, at, self.codec) else {
                return true;
            };
            let data = matches!(header.kind, DATA_PAGE | DATA_PAGE_V2);
            if data && matches!(header.encoding, PLAIN_DICTIONARY | RLE_DICTIONARY) {
                return true;
            }
            at = body + header.compressed as usize;
        }
        false
    }

    /// Gives the pages before byte `at` of the chunk back to the kernel
    /// every [`GIVE_BACK_EVERY`] bytes, when the chunk is a view of a local
    /// file's mapping ([`crate::io::release_view`]; any other memory is
    /// left alone): a page is read once, and a large chunk's pages stayed
    /// resident beside its output until the whole chunk was decoded (a
    /// file of one 60 MB row group peaked with 53 MiB of its pages mapped).
    /// Nothing handed out refers to them: a page lends its bytes only
    /// until the next is read.
    fn give_back_read(&mut self, at: usize) {
        // A window's dictionary page, once decoded, alone: the pages
        // between it and the window's are other windows'. (Another window
        // that reads the dictionary too faults its pages in again; a run
        // of PLAIN pages after a writer's fallback does not read it.) Left
        // mapped, pyarrow's dictionary of 1,024 blobs stayed resident,
        // 60 MB of a 120 MB file, until the read ended.
        if self.dictionary_read > 0 {
            crate::io::release_view(&self.chunk[..self.dictionary_read]);
            self.dictionary_read = 0;
        }
        if at >= self.given_back + GIVE_BACK_EVERY {
            crate::io::release_view(&self.chunk[self.given_back..at]);
            self.given_back = at;
        }
    }

    /// `self`, whose chunk holds only some of its column chunk's data pages
    /// (those the page index chose, end to end after the dictionary page),
    /// with `gaps`: at each (byte of the chunk, rows), in order, the pages
    /// of that many rows that were left out lay before the page there (or
    /// at the end). They come as [`Page::Skipped`], and only with a
    /// selection (see [`ChunkPages::skip_unselected`]) that keeps none of
    /// their rows: otherwise reading them is an error.
    pub(crate) fn with_gaps(mut self, gaps: Vec<(usize, usize)>) -> Self {
        self.gaps = gaps;
        self
    }

    /// The gap that comes before the page at `self.at`, if any, moved past.
    fn gap_here(&mut self) -> Option<Result<usize, String>> {
        let &(at, rows) = self.gaps.get(self.next_gap)?;
        if at > self.at {
            return None;
        }
        self.next_gap += 1;
        let Some((keep, row)) = &mut self.selection else {
            return Some(Err("pages of the chunk were not fetched".into()));
        };
        let first = *row;
        *row = row.saturating_add(rows);
        Some(match none_kept(keep, first, rows) {
            true => Ok(rows),
            false => Err(format!(
                "rows {first}..{} are kept but their pages were not fetched",
                first + rows
            )),
        })
    }

    /// From here on, a data page none of whose rows `selection` keeps (a
    /// bit per row of the chunk, from its first row) comes back as
    /// [`Page::Skipped`], without being decompressed. Only for a column
    /// that is not repeated, where a data page's count of values is its
    /// count of rows, and before its first data page.
    ///
    /// Why: a filter on a sorted column (a time range) keeps rows from a
    /// few pages of a row group; the other columns' other pages were all
    /// decompressed and decoded for nothing.
    pub(crate) fn skip_unselected(&mut self, selection: &BooleanBuffer) {
        self.selection = Some((selection.clone(), 0));
    }

    /// Whether the data page of `rows` rows that comes next keeps none of
    /// the selection's rows (moving past it). A page past the selection's
    /// end is read, and the decoder says what is wrong with it.
    fn unselected(&mut self, rows: usize) -> bool {
        let Some((keep, row)) = &mut self.selection else {
            return false;
        };
        let first = *row;
        *row = row.saturating_add(rows);
        none_kept(keep, first, rows)
    }

    /// Whether a data page from `at` on that is not skipped is
    /// dictionary-encoded (with no selection, or a header that does not
    /// read: yes). A writer falls back to PLAIN pages once its dictionary
    /// is full, and the rows a filter keeps of a sorted column often lie in
    /// those: their dictionary (a megabyte, as pyarrow writes it) was
    /// decompressed and decoded for nothing. (The pages before a window's
    /// first, see [`ChunkPages::within`], are not read.)
    fn dictionary_needed(&self, at: usize) -> bool {
        let Some((keep, mut row)) = self.selection.clone() else {
            return true;
        };
        let mut at = at.max(self.data_from);
        // The rows of the pages left out count as they are passed.
        let mut gaps = self.gaps[self.next_gap..].iter().peekable();
        while at < self.end {
            while let Some((_, rows)) = gaps.next_if(|(gap_at, _)| *gap_at <= at) {
                row = row.saturating_add(*rows);
            }
            let Ok((header, body)) = checked_header(&self.chunk, at, self.codec) else {
                return true;
            };
            at = body + header.compressed as usize;
            if !matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) {
                continue;
            }
            let Ok(rows) = usize::try_from(header.num_values) else {
                return true;
            };
            let first = row;
            row = row.saturating_add(rows);
            let dictionary_encoded = matches!(header.encoding, PLAIN_DICTIONARY | RLE_DICTIONARY);
            if dictionary_encoded && !none_kept(&keep, first, rows) {
                return true;
            }
        }
        false
    }

    /// The last page's bytes again (a dictionary page's, or a data page
    /// v1's: v2 levels are not told apart): `Ok` with its decompressed
    /// buffer, taken (the next page is decompressed into a new one), or
    /// `Err` with its bytes in the chunk when it was not compressed. For a
    /// decoder that keeps a large page, such as a dictionary of large
    /// values, without copying it.
    pub(crate) fn take_page(&mut self) -> Result<Vec<u8>, &[u8]> {
        let Some(size) = self.in_scratch.take() else {
            return Err(&self.chunk[self.last_body.clone()]);
        };
        let mut page = std::mem::take(&mut self.scratch);
        page.truncate(size);
        Ok(page)
    }

    /// The next page, or `None` after the last. The page borrows this
    /// reader's buffer until the next call.
    pub(crate) fn next_page(&mut self) -> Result<Option<Page<'_>>, String> {
        loop {
            if let Some(gap) = self.gap_here() {
                let num_values = gap?;
                return Ok(Some(Page::Skipped { num_values }));
            }
            if self.at >= self.end {
                return Ok(None);
            }
            let at = self.at;
            self.give_back_read(at);
            let (header, body) = checked_header(&self.chunk, at, self.codec).map_err(|bad| {
                format!("page at byte {} of the chunk: {}", bad.offset, bad.detail)
            })?;
            let end = body + header.compressed as usize;
            self.at = match header.kind {
                DICTIONARY_PAGE => end.max(self.data_from),
                _ => end,
            };
            if !matches!(header.kind, DATA_PAGE | DICTIONARY_PAGE | DATA_PAGE_V2) {
                continue;
            }
            let fail = |detail: &str| format!("page at byte {at} of the chunk: {detail}");
            if header.described_as != header.kind {
                return Err(fail("a page without the header of its type"));
            }
            let num_values = usize::try_from(header.num_values)
                .map_err(|_| fail("a negative or missing count of values"))?;
            if header.kind != DICTIONARY_PAGE && self.unselected(num_values) {
                return Ok(Some(Page::Skipped { num_values }));
            }
            if header.kind == DICTIONARY_PAGE && !self.dictionary_needed(end) {
                continue;
            }
            if header.kind == DICTIONARY_PAGE && end <= self.given_back {
                self.dictionary_read = end;
            }
            let encoding = encoding_of(header.encoding).map_err(|e| fail(&e))?;
            // V2 levels lie uncompressed before the (maybe compressed) values.
            let levels = if header.kind == DATA_PAGE_V2 {
                let (def, rep) = (header.def_bytes, header.rep_bytes);
                if def < 0 || rep < 0 || def + rep > header.compressed.min(header.uncompressed) {
                    return Err(fail("level lengths past the page"));
                }
                (def + rep) as usize
            } else {
                0
            };
            let compressed = &self.chunk[body..end];
            self.in_scratch = None;
            self.last_body = body..end;
            let buf: &[u8] = match (&mut self.decompressor, header.is_compressed) {
                (Some(decompressor), true) => {
                    let size = header.uncompressed as usize;
                    decompress(decompressor, compressed, levels, size, &mut self.scratch)
                        .map_err(|e| fail(&e))?;
                    self.in_scratch = Some(size);
                    &self.scratch[..size]
                }
                // An uncompressed chunk, or a v2 page that kept its values
                // uncompressed: the chunk's own bytes.
                _ => compressed,
            };
            return Ok(Some(match header.kind {
                DICTIONARY_PAGE => Page::Dictionary {
                    buf,
                    num_values,
                    encoding,
                },
                DATA_PAGE => Page::Data {
                    buf,
                    num_values,
                    encoding,
                    def_encoding: encoding_of(header.def_encoding).map_err(|e| fail(&e))?,
                    rep_encoding: encoding_of(header.rep_encoding).map_err(|e| fail(&e))?,
                },
                _ => Page::DataV2 {
                    buf,
                    num_values,
                    encoding,
                    def_bytes: header.def_bytes as usize,
                    rep_bytes: header.rep_bytes as usize,
                },
            }));
        }
    }
}

impl Drop for ChunkPages {
    fn drop(&mut self) {
        if let Some(Decompressor::Zstd(context)) = self.decompressor.take() {
            // `try_with`: a chunk dropped while its thread is exiting just
            // frees its context.
            let _ = ZSTD_CONTEXT.try_with(|kept| {
                if let Ok(mut kept) = kept.try_borrow_mut() {
                    kept.get_or_insert(context);
                }
            });
        }
    }
}

thread_local! {
    /// A zstd decompression context kept by this thread for its next
    /// chunk: making one per chunk (its tables and window are allocated
    /// and set up anew) was 1-2.5 % of the CPU of reading a polars-written
    /// file, whose columns are zstd-compressed. Each frame starts afresh
    /// in a reused context.
    static ZSTD_CONTEXT: std::cell::RefCell<Option<Box<zstd::bulk::Decompressor<'static>>>> =
        const { std::cell::RefCell::new(None) };
}

/// This thread's kept zstd context, or a new one.
fn zstd_context() -> Option<Box<zstd::bulk::Decompressor<'static>>> {
    let kept = ZSTD_CONTEXT
        .try_with(|kept| kept.try_borrow_mut().ok().and_then(|mut k| k.take()))
        .ok()
        .flatten();
    match kept {
        Some(context) => Some(context),
        None => zstd::bulk::Decompressor::new().ok().map(Box::new),
    }
}

/// What a chunk's data pages still to come hold, summed from their headers
/// without decompressing them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PagesAhead {
    /// Values (nulls included) of the PLAIN data pages.
    pub(crate) plain_values: u64,
    /// Those pages' bytes once decompressed (levels and values).
    pub(crate) plain_bytes: u64,
    /// Those pages' bytes as they are in the chunk (compressed): what the
    /// read holds of them, whatever their headers claim.
    pub(crate) plain_held: u64,
    /// Values of the data pages in any other encoding.
    pub(crate) other_values: u64,
    /// Values of the data page that holds the most.
    pub(crate) most_values: u64,
}

impl ChunkPages {
    /// The data pages from the next one on, by their headers. A header
    /// that does not read stops the sum; `next_page` reports it when it
    /// gets there.
    pub(crate) fn ahead(&self) -> PagesAhead {
        let mut ahead = PagesAhead::default();
        let mut at = self.at;
        while at < self.end {
            let Ok((header, body)) = checked_header(&self.chunk, at, self.codec) else {
                break;
            };
            let page_at = at;
            at = body + header.compressed as usize;
            // Data pages before a window's are not read (see `within`).
            if !matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) || page_at < self.data_from {
                continue;
            }
            let values = header.num_values.max(0) as u64;
            ahead.most_values = ahead.most_values.max(values);
            if header.encoding == PLAIN {
                ahead.plain_values += values;
                ahead.plain_bytes += header.uncompressed as u64;
                ahead.plain_held += header.compressed as u64;
            } else {
                ahead.other_values += values;
            }
        }
        ahead
    }
}

/// A data page's count of values (its rows, in a column that is not
/// repeated) and the least and greatest of them its header gives, if it
/// gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PageBounds<'a> {
    pub(crate) values: usize,
    pub(crate) min: Option<&'a [u8]>,
    pub(crate) max: Option<&'a [u8]>,
}

/// The data pages of `chunk` (a whole column chunk) with the bounds their
/// headers give, read without decompressing anything; `None` when a
/// header does not read (the decoder reports it).
pub(crate) fn data_page_bounds(chunk: &[u8], codec: Compression) -> Option<Vec<PageBounds<'_>>> {
    let mut pages = Vec::new();
    let mut at = 0;
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec).ok()?;
        let bytes =
            |range: &Option<Range<usize>>| range.clone().map(|r| &chunk[at + r.start..at + r.end]);
        if matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) {
            pages.push(PageBounds {
                values: usize::try_from(header.num_values).ok()?,
                min: bytes(&header.min_value),
                max: bytes(&header.max_value),
            });
        }
        at = body + header.compressed as usize;
    }
    Some(pages)
}

/// A run of consecutive data pages of a column chunk that is not repeated,
/// decoded apart from the others (see [`page_windows`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PageWindow {
    /// From the first page's header to the last page's end, in the chunk.
    pub(crate) bytes: Range<usize>,
    /// The values (rows, nulls included) of its pages.
    pub(crate) rows: usize,
}

/// The data pages of `chunk` (a whole column chunk of `rows` rows of a
/// column that is not repeated, where a page's count of values is its count
/// of rows) cut at page boundaries into at most `n` windows of about equal
/// compressed bytes, read from the headers alone. `None` when a header does
/// not read, or a dictionary page comes anywhere but first (the decoder
/// reports either), or there are fewer than two data pages, or the pages do
/// not count `rows` rows (each window's decoder reserves room for its
/// headers' count: a damaged header's must not be believed).
pub(crate) fn page_windows(
    chunk: &[u8],
    codec: Compression,
    n: usize,
    rows: usize,
) -> Option<Vec<PageWindow>> {
    let mut pages: Vec<(Range<usize>, usize)> = Vec::new();
    // The dictionary page's bytes count as the first window's: that window
    // reads it (pyarrow's dictionary of 1,024 blobs of 60 KB, then one
    // page of indices and one PLAIN page of as many bytes, made one window
    // when only data pages counted).
    let mut dictionary = 0;
    let mut at = 0;
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec).ok()?;
        let end = body + header.compressed as usize;
        match header.kind {
            DICTIONARY_PAGE if at != 0 => return None,
            DICTIONARY_PAGE => dictionary = end,
            DATA_PAGE | DATA_PAGE_V2 => {
                pages.push((at..end, usize::try_from(header.num_values).ok()?));
            }
            _ => {}
        }
        at = end;
    }
    if pages.len() < 2 || n < 2 {
        return None;
    }
    let counted = pages
        .iter()
        .try_fold(0usize, |sum, (_, values)| sum.checked_add(*values));
    if counted != Some(rows) {
        return None;
    }
    let total: usize = dictionary + pages.iter().map(|(r, _)| r.len()).sum::<usize>();
    let mut windows: Vec<PageWindow> = Vec::with_capacity(n);
    let mut bytes_so_far = dictionary;
    for (range, rows) in pages {
        // A page starts a new window once the ones before hold their share.
        let share = total.saturating_mul(windows.len()) / n;
        let all_started = windows.len() == n;
        match windows.last_mut() {
            Some(last) if bytes_so_far < share || all_started => {
                last.bytes.end = range.end;
                last.rows = last.rows.checked_add(rows)?;
            }
            _ => windows.push(PageWindow {
                bytes: range.clone(),
                rows,
            }),
        }
        bytes_so_far += range.len();
    }
    Some(windows)
}

/// The run of consecutive data pages of `chunk` (a whole column chunk of
/// `total` rows of a column that is not repeated) that holds rows `rows`,
/// and the row its first page starts at: a stream's slab of a large row
/// group decodes only those (see `parquet::slabs`). Every header is read
/// and checked; with `verify_checksums`, the dictionary page's checksum and
/// those of the run's pages are too. `Ok(None)` where the pages cannot be
/// cut so (a dictionary page anywhere but first, a count that is not a
/// row count, pages that do not count `total` rows, or none holding
/// `rows`): the `parquet` crate then decodes the slab's rows of the column.
pub(crate) fn slab_window(
    chunk: &[u8],
    codec: Compression,
    rows: Range<usize>,
    total: usize,
    verify_checksums: bool,
) -> Result<Option<(PageWindow, usize)>, BadPage> {
    let mut at = 0;
    let mut row = 0usize;
    let mut first: Option<(usize, usize)> = None;
    let mut window = PageWindow {
        bytes: 0..0,
        rows: 0,
    };
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec)?;
        let end = body + header.compressed as usize;
        let read = match header.kind {
            DICTIONARY_PAGE if at != 0 => return Ok(None),
            DICTIONARY_PAGE => true,
            DATA_PAGE | DATA_PAGE_V2 => {
                let Ok(values) = usize::try_from(header.num_values) else {
                    return Ok(None);
                };
                let Some(next) = row.checked_add(values) else {
                    return Ok(None);
                };
                let holds = next > rows.start && row < rows.end;
                if holds {
                    first.get_or_insert((at, row));
                    window.bytes.end = end;
                    window.rows += values;
                }
                row = next;
                holds
            }
            _ => false,
        };
        if read && verify_checksums {
            check_crc(chunk, at..end, body, header.crc)?;
        }
        at = end;
    }
    match first {
        Some((start, first_row)) if row == total && rows.end <= total => {
            window.bytes.start = start;
            Ok(Some((window, first_row)))
        }
        _ => Ok(None),
    }
}

/// The values the data pages of `chunk` (a whole column chunk) count in
/// their headers (a row each, nulls included, for a column that is not
/// repeated; at least one per row for one that is); `None` where a header
/// does not read or the sum overflows.
pub(crate) fn values_counted(chunk: &[u8], codec: Compression) -> Option<u64> {
    let mut at = 0;
    let mut values = 0u64;
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec).ok()?;
        if matches!(header.kind, DATA_PAGE | DATA_PAGE_V2) {
            values = values.checked_add(u64::try_from(header.num_values).ok()?)?;
        }
        at = body + header.compressed as usize;
    }
    Some(values)
}

/// The entries of the dictionary of `chunk` (a whole column chunk) when
/// every data page is dictionary-encoded, after a dictionary page: read by
/// its headers alone (`None` where one does not read). A filter column
/// that is can be decoded as keys and compared a distinct value at a time.
pub(crate) fn dictionary_throughout(chunk: &[u8], codec: Compression) -> Option<usize> {
    let mut at = 0;
    let mut entries = None;
    while at < chunk.len() {
        let (header, body) = checked_header(chunk, at, codec).ok()?;
        match header.kind {
            DICTIONARY_PAGE => entries = Some(usize::try_from(header.num_values).ok()?),
            DATA_PAGE | DATA_PAGE_V2 => {
                let keyed = matches!(header.encoding, PLAIN_DICTIONARY | RLE_DICTIONARY);
                if entries.is_none() || !keyed {
                    return None;
                }
            }
            _ => {}
        }
        at = body + header.compressed as usize;
    }
    entries
}

/// Decompresses a page body (`levels` bytes of uncompressed levels first,
/// then the compressed values) to `size` bytes at the start of `scratch`.
fn decompress(
    decompressor: &mut Decompressor,
    body: &[u8],
    levels: usize,
    size: usize,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let (levels_bytes, values) = body.split_at(levels);
    let wanted = size - levels;
    let got = match decompressor {
        // Into the spare capacity after the levels (a cursor's position).
        Decompressor::Zstd(zstd) => {
            scratch.clear();
            scratch.extend_from_slice(levels_bytes);
            scratch.reserve(wanted);
            match wanted {
                0 => 0,
                _ => {
                    let mut after_levels = std::io::Cursor::new(&mut *scratch);
                    after_levels.set_position(levels as u64);
                    zstd.decompress_to_buffer(values, &mut after_levels)
                        .map_err(|e| format!("zstd: {e}"))?
                }
            }
        }
        // The others write into a slice of the header's size.
        _ if wanted == 0 => {
            room_after(levels_bytes, size, scratch);
            0
        }
        Decompressor::Snappy(snappy) => snappy
            .decompress(values, room_after(levels_bytes, size, scratch))
            // Its words start with "snappy: ".
            .map_err(|e| e.to_string())?,
        Decompressor::Lz4Raw => {
            lz4_flex::block::decompress_into(values, room_after(levels_bytes, size, scratch))
                .map_err(|e| format!("lz4: {e}"))?
        }
        // The C API says no more than that the stream is corrupt or needs
        // more room than the header gives.
        Decompressor::Brotli => {
            brotlic::decompress(values, room_after(levels_bytes, size, scratch)).map_err(|_| {
                format!("brotli: a corrupt stream, or one longer than the header's {wanted} bytes")
            })?
        }
        Decompressor::Gzip(inflate) => {
            let into = room_after(levels_bytes, size, scratch);
            match inflate.gzip_decompress(values, into) {
                Ok(got) if got == wanted => got,
                // libdeflate reads one gzip member: a page some writer put
                // in several, or a damaged one, is read again by the
                // streaming decoder, whose verdict stands.
                _ => gzip_members(values, into)?,
            }
        }
    };
    if got != wanted {
        return Err(format!(
            "the values decompress to {got} bytes, the header says {wanted}"
        ));
    }
    Ok(())
}

/// Makes `scratch` at least `size` long (zeroed only when it grows; old
/// bytes are overwritten), puts the levels first and gives the room after
/// them.
fn room_after<'a>(levels: &[u8], size: usize, scratch: &'a mut Vec<u8>) -> &'a mut [u8] {
    if scratch.len() < size {
        scratch.resize(size, 0);
    }
    scratch[..levels.len()].copy_from_slice(levels);
    &mut scratch[levels.len()..size]
}

/// Decompresses a gzip page of one or more members into `into`, which
/// the page's header sizes: a stream that runs past it is an error.
fn gzip_members(values: &[u8], into: &mut [u8]) -> Result<usize, String> {
    let mut stream = flate2::read::MultiGzDecoder::new(values);
    let mut got = 0;
    while got < into.len() {
        match stream.read(&mut into[got..]) {
            Ok(0) => return Ok(got),
            Ok(n) => got += n,
            Err(e) => return Err(format!("gzip: {e}")),
        }
    }
    match stream.read(&mut [0u8]) {
        Ok(0) => Ok(got),
        Ok(_) => Err(format!(
            "gzip: the values run past the header's {got} bytes"
        )),
        Err(e) => Err(format!("gzip: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::ZstdLevel;

    /// A compact-protocol page header with the given sizes, then `body`.
    fn page(uncompressed: i64, compressed: i64, body: &[u8]) -> Vec<u8> {
        page_with_crc(uncompressed, compressed, None, body)
    }

    /// [`page`], with the header's CRC field where `crc` is given.
    fn page_with_crc(uncompressed: i64, compressed: i64, crc: Option<u32>, body: &[u8]) -> Vec<u8> {
        fn zz(v: i64) -> Vec<u8> {
            let mut v = ((v << 1) ^ (v >> 63)) as u64;
            let mut out = vec![];
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        }
        let mut out = vec![0x15]; // field 1, i32: the page type
        out.extend(zz(0));
        out.push(0x15); // field 2: uncompressed
        out.extend(zz(uncompressed));
        out.push(0x15); // field 3: compressed
        out.extend(zz(compressed));
        match crc {
            Some(crc) => {
                out.push(0x15); // field 4: the CRC, as the format's i32
                out.extend(zz(i64::from(crc as i32)));
                out.push(0x1c); // field 5, struct: a data page header
            }
            None => out.push(0x2c), // field 5, struct: a data page header
        }
        // num_values 1, PLAIN, levels RLE and RLE, stop
        out.extend([0x15, 0x02, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00]);
        out.push(0x00);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn honest_pages_pass() {
        let mut chunk = page(100, 10, &[0; 10]);
        chunk.extend(page(5000, 100, &[0; 100]));
        let zstd = Compression::ZSTD(ZstdLevel::default());
        assert_eq!(check_pages(&chunk, zstd, false), Ok(()));
        assert_eq!(check_pages(&chunk, Compression::SNAPPY, false), Ok(()));
    }

    #[test]
    fn a_page_past_the_chunk_is_refused() {
        let chunk = page(100, 50, &[0; 10]);
        let bad = check_pages(&chunk, Compression::SNAPPY, false).unwrap_err();
        assert!(bad.detail.contains("has 10 left"), "{bad:?}");
    }

    #[test]
    fn a_size_the_codec_cannot_reach_is_refused() {
        let chunk = page(i32::MAX as i64, 100, &[0; 100]);
        let bad = check_pages(&chunk, Compression::SNAPPY, false).unwrap_err();
        assert!(bad.detail.contains("more than the codec"), "{bad:?}");
        // Small claims pass whatever the ratio; uncompressed chunks
        // allocate nothing from the claim.
        assert_eq!(
            check_pages(&page(1 << 19, 1, &[0]), Compression::SNAPPY, false),
            Ok(())
        );
        let plain = page(i32::MAX as i64, 1, &[0]);
        assert_eq!(
            check_pages(&plain, Compression::UNCOMPRESSED, false),
            Ok(())
        );
    }

    /// A dictionary page header claiming `values` values in `size` bytes
    /// (stored), then its body.
    fn dictionary_page(values: i32, size: usize) -> Vec<u8> {
        let zz = |v: i32| {
            let mut v = ((v << 1) ^ (v >> 31)) as u32;
            let mut out = vec![];
            while v >= 0x80 {
                out.push((v & 0x7f) as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
            out
        };
        let mut out = vec![0x15, 0x04]; // field 1: type 2, a dictionary page
        for (header, value) in [(0x15, size as i32), (0x15, size as i32)] {
            out.push(header); // fields 2 and 3: the sizes
            out.extend(zz(value));
        }
        out.push(0x4c); // field 7, struct: the dictionary page header
        out.push(0x15); // num_values
        out.extend(zz(values));
        out.extend([0x15, 0x00, 0x00, 0x00]); // PLAIN; stop; stop
        out.extend(vec![0u8; size]);
        out
    }

    #[test]
    fn a_dictionary_page_of_more_values_than_its_bits_is_refused() {
        // 2^30 values in 100 bytes: the crate reserved 4 GiB of offsets.
        let chunk = dictionary_page(1 << 30, 100);
        let bad = check_pages(&chunk, Compression::UNCOMPRESSED, false).unwrap_err();
        assert!(
            bad.detail.contains("claims 1073741824 values in 100 bytes"),
            "{bad:?}"
        );
        // As many values as bits (booleans) pass.
        let honest = dictionary_page(808, 100);
        assert_eq!(
            check_pages(&honest, Compression::UNCOMPRESSED, false),
            Ok(())
        );
    }

    #[test]
    fn a_page_whose_bytes_miss_its_crc_is_refused_when_checked() {
        let body = b"fedcba9876543210";
        let crc = crc32fast::hash(body);
        assert!(
            crc > i32::MAX as u32,
            "the test wants a CRC that is negative as an i32"
        );
        // A page without a CRC, then one with its right CRC: both pass.
        let mut chunk = page(16, 16, body);
        chunk.extend(page_with_crc(16, 16, Some(crc), body));
        let plain = Compression::UNCOMPRESSED;
        assert_eq!(check_pages(&chunk, plain, true), Ok(()));
        // One byte of the second page's body flipped: refused at that
        // page's header, only when checked.
        let second = page(16, 16, body).len();
        let mut damaged = chunk.clone();
        *damaged.last_mut().unwrap() ^= 0x20;
        assert_eq!(check_pages(&damaged, plain, false), Ok(()));
        let bad = check_pages(&damaged, plain, true).unwrap_err();
        assert_eq!(bad.offset, second, "{bad:?}");
        assert!(bad.detail.contains("checksum mismatch"), "{bad:?}");
        assert!(bad.detail.contains(&format!("{crc:#010x}")), "{bad:?}");
        // The CRC field itself damaged: refused as well.
        let wrong = page_with_crc(16, 16, Some(crc ^ 1), body);
        assert!(check_pages(&wrong, plain, true).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_loop() {
        assert!(check_pages(
            &[0x19, 0xfc, 0xff, 0xff, 0xff, 0x7f],
            Compression::SNAPPY,
            false
        )
        .is_err());
        assert!(check_pages(&[0x15], Compression::SNAPPY, false).is_err());
        let deep = [0x1c; 64];
        assert!(check_pages(&deep, Compression::SNAPPY, false).is_err());
        assert!(check_pages(&[0x00], Compression::SNAPPY, false).is_err());
    }

    /// A file of one nullable `int32` column written by the `parquet`
    /// crate with `codec`, page format `version`, dictionary or not, in
    /// pages of about 1 KB; and the values written.
    fn written(
        codec: Compression,
        version: parquet::file::properties::WriterVersion,
        dictionary: bool,
    ) -> (bytes::Bytes, arrow_array::Int32Array) {
        use parquet::file::properties::WriterProperties;
        let values: arrow_array::Int32Array = (0..20_000)
            .map(|i| (i % 7 != 0).then_some(i * 37 % 1000))
            .collect();
        let batch = arrow_array::RecordBatch::try_from_iter([(
            "v",
            std::sync::Arc::new(values.clone()) as _,
        )])
        .unwrap();
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            // (v2's default for integers, DELTA_BINARY_PACKED, is left to
            // the crate's decoder)
            .set_encoding(Encoding::PLAIN)
            .set_data_page_size_limit(1024)
            .set_write_batch_size(256)
            .build();
        (crate::parquet::written::written(&batch, props), values)
    }

    /// [`written`]'s file read back: its metadata, its one column chunk's
    /// bytes, and the values written.
    fn written_chunk(
        codec: Compression,
        version: parquet::file::properties::WriterVersion,
        dictionary: bool,
    ) -> (
        parquet::file::metadata::ParquetMetaData,
        bytes::Bytes,
        arrow_array::Int32Array,
    ) {
        let (file, values) = written(codec, version, dictionary);
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        let (start, len) = meta.row_group(0).column(0).byte_range();
        let bytes = file.slice(start as usize..(start + len) as usize);
        (meta, bytes, values)
    }

    #[test]
    fn pages_without_a_selected_row_are_passed_over_and_the_others_read() {
        use parquet::file::metadata::ParquetMetaDataReader;
        use parquet::file::properties::WriterVersion;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                let codec = Compression::SNAPPY;
                let (file, values) = written(codec, version, dictionary);
                let meta = ParquetMetaDataReader::new()
                    .parse_and_finish(&file)
                    .unwrap();
                let (start, len) = meta.row_group(0).column(0).byte_range();
                let bytes = file.slice(start as usize..(start + len) as usize);
                // Rows 5,000-5,009 and the last one.
                let rows = values.len();
                let keep: BooleanBuffer = (0..rows)
                    .map(|i| (5_000..5_010).contains(&i) || i == rows - 1)
                    .collect();
                let mut pages = ChunkPages::new(bytes, codec).unwrap();
                pages.skip_unselected(&keep);
                let (mut row, mut read, mut skipped, mut dictionaries) = (0, 0, 0, 0);
                while let Some(page) = pages.next_page().unwrap() {
                    let n = match page {
                        Page::Dictionary { .. } => {
                            dictionaries += 1;
                            continue;
                        }
                        Page::Skipped { num_values } => {
                            skipped += 1;
                            assert_eq!(keep.slice(row, num_values).count_set_bits(), 0);
                            num_values
                        }
                        Page::Data { num_values, .. } | Page::DataV2 { num_values, .. } => {
                            read += 1;
                            assert!(keep.slice(row, num_values).count_set_bits() > 0);
                            num_values
                        }
                    };
                    row += n;
                }
                let what = format!("{version:?}, dictionary {dictionary}");
                assert_eq!(row, rows, "{what}");
                assert_eq!(dictionaries, usize::from(dictionary), "{what}");
                // The pages of 1 KB: most are passed over, the two that
                // hold kept rows (three if the ten straddle a page) read.
                assert!((2..=3).contains(&read), "{what}: {read} read");
                assert!(skipped > 10, "{what}: {skipped} skipped");
                // No row kept: no page read, not even the dictionary.
                let mut pages = ChunkPages::new(pages.chunk.clone(), codec).unwrap();
                pages.skip_unselected(&BooleanBuffer::new_unset(rows));
                while let Some(page) = pages.next_page().unwrap() {
                    assert!(matches!(page, Page::Skipped { .. }), "{what}");
                }
            }
        }
    }

    #[test]
    fn a_chunk_of_some_pages_decodes_its_selected_rows_and_refuses_rows_left_out() {
        use arrow_array::Array;
        use parquet::file::properties::WriterVersion;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                let codec = Compression::SNAPPY;
                let (file, values) = written(codec, version, dictionary);
                let (meta, bytes) = crate::parquet::written::first_chunk(&file);
                let chunk = meta.row_group(0).column(0);
                // Each page: (from, to) bytes and its rows (0: dictionary).
                let mut pages = Vec::new();
                let mut at = 0;
                while at < bytes.len() {
                    let (header, body) = checked_header(&bytes, at, codec).unwrap();
                    let end = body + header.compressed as usize;
                    let rows = match header.kind {
                        DICTIONARY_PAGE => 0,
                        _ => header.num_values as usize,
                    };
                    pages.push((at, end, rows));
                    at = end;
                }
                let data: Vec<usize> = (0..pages.len()).filter(|&i| pages[i].2 > 0).collect();
                assert!(data.len() > 8, "{} data pages", data.len());
                // Leave out the 2nd to 4th data pages and the last one.
                let left_out = |i: usize| data[1..4].contains(&i) || i == *data.last().unwrap();
                let mut joined = Vec::new();
                let mut gaps: Vec<(usize, usize)> = Vec::new();
                let (mut row, mut kept_rows) = (0, Vec::new());
                for (i, &(from, to, rows)) in pages.iter().enumerate() {
                    if left_out(i) {
                        match gaps.last_mut() {
                            Some((gap_at, n)) if *gap_at == joined.len() => *n += rows,
                            _ => gaps.push((joined.len(), rows)),
                        }
                    } else {
                        joined.extend_from_slice(&bytes[from..to]);
                        kept_rows.extend(row..row + rows);
                    }
                    row += rows;
                }
                let rows = values.len();
                let column = meta.file_metadata().schema_descr().column(0);
                let decode = |keep: &BooleanBuffer| {
                    super::super::flat::decode_column(
                        bytes::Bytes::from(joined.clone()),
                        chunk,
                        &column,
                        &arrow_schema::DataType::Int32,
                        rows,
                        Some(keep),
                        gaps.clone(),
                    )
                };
                // Every third row of the pages fetched.
                let keep: BooleanBuffer = (0..rows)
                    .map(|i| i % 3 == 0 && kept_rows.binary_search(&i).is_ok())
                    .collect();
                let what = format!("{version:?}, dictionary {dictionary}");
                let got = decode(&keep).unwrap_or_else(|e| panic!("{what}: {e:?}"));
                let want = arrow_select::filter::filter(
                    &values,
                    &arrow_array::BooleanArray::new(keep.clone(), None),
                )
                .unwrap();
                assert_eq!(got.to_data(), want.to_data(), "{what}");
                // A row of a page left out, kept: an error, not a wrong answer.
                let first_left_out = pages[..data[1]].iter().map(|p| p.2).sum::<usize>();
                let wrong: BooleanBuffer = (0..rows).map(|i| i == first_left_out).collect();
                match decode(&wrong) {
                    Err(super::super::flat::Failure::Corrupt(why)) => {
                        assert!(why.contains("not fetched"), "{what}: {why}")
                    }
                    other => panic!("{what}: {:?}", other.map(|a| a.len())),
                }
            }
        }
    }

    #[test]
    fn a_dictionary_is_read_only_when_a_page_read_indexes_it() {
        use parquet::file::properties::{WriterProperties, WriterVersion};
        // Unique values: the dictionary fills (at 2 KB) and the writer
        // falls back to PLAIN pages.
        let values: arrow_array::Int64Array = (0..20_000i64).map(Some).collect();
        let batch = arrow_array::RecordBatch::try_from_iter([(
            "v",
            std::sync::Arc::new(values) as arrow_array::ArrayRef,
        )])
        .unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_dictionary_page_size_limit(2048)
            .set_data_page_size_limit(1024)
            .set_data_page_row_count_limit(64)
            .set_write_batch_size(64)
            .build();
        let file = crate::parquet::written::written(&batch, props);
        let (_, bytes) = crate::parquet::written::first_chunk(&file);
        // Which rows each page holds, and whether it indexes the dictionary.
        let mut layout = Vec::new();
        let mut pages = ChunkPages::new(bytes.clone(), Compression::SNAPPY).unwrap();
        while let Some(page) = pages.next_page().unwrap() {
            if let Page::Data {
                num_values,
                encoding,
                ..
            } = page
            {
                layout.push((num_values, encoding == Encoding::RLE_DICTIONARY));
            }
        }
        let first_plain: usize = layout.iter().take_while(|p| p.1).map(|p| p.0).sum();
        assert!(first_plain > 0 && first_plain < 19_000, "{layout:?}");
        for (kept_row, dictionary_read) in [(first_plain - 1, true), (19_999, false)] {
            let keep: BooleanBuffer = (0..20_000).map(|i| i == kept_row).collect();
            let mut pages = ChunkPages::new(bytes.clone(), Compression::SNAPPY).unwrap();
            pages.skip_unselected(&keep);
            let mut dictionaries = 0;
            while let Some(page) = pages.next_page().unwrap() {
                dictionaries += usize::from(matches!(page, Page::Dictionary { .. }));
            }
            assert_eq!(dictionaries, usize::from(dictionary_read), "row {kept_row}");
        }
        // So for a slab's run of pages (a filtered stream's) across the
        // fallback: the pages before the run are not counted against its
        // rows.
        let slab = first_plain - 1..first_plain + 1;
        let (window, first_row) = slab_window(&bytes, Compression::SNAPPY, slab, 20_000, false)
            .unwrap()
            .unwrap();
        assert!(first_row > 0, "{first_row}");
        for (kept_row, dictionary_read) in [(first_plain - 1, true), (first_plain, false)] {
            let keep: BooleanBuffer = (first_row..first_row + window.rows)
                .map(|i| i == kept_row)
                .collect();
            let mut pages = ChunkPages::new(bytes.clone(), Compression::SNAPPY)
                .unwrap()
                .within(&window);
            pages.skip_unselected(&keep);
            let mut dictionaries = 0;
            while let Some(page) = pages.next_page().unwrap() {
                dictionaries += usize::from(matches!(page, Page::Dictionary { .. }));
            }
            assert_eq!(
                dictionaries,
                usize::from(dictionary_read),
                "slab, row {kept_row}"
            );
        }
    }

    #[test]
    fn a_kept_zstd_context_that_failed_on_a_damaged_page_reads_the_next_chunk() {
        use parquet::file::metadata::ParquetMetaDataReader;
        use parquet::file::properties::WriterVersion;
        let codec = Compression::ZSTD(ZstdLevel::default());
        let (file, _) = written(codec, WriterVersion::PARQUET_1_0, false);
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        let (start, len) = meta.row_group(0).column(0).byte_range();
        let chunk = file.slice(start as usize..(start + len) as usize);
        let bodies = |chunk: bytes::Bytes| -> Result<Vec<Vec<u8>>, String> {
            let mut pages = ChunkPages::new(chunk, codec).unwrap();
            let mut out = Vec::new();
            while let Some(page) = pages.next_page()? {
                if let Page::Data { buf, .. } = page {
                    out.push(buf.to_vec());
                }
            }
            Ok(out)
        };
        let want = bodies(chunk.clone()).unwrap();
        assert!(want.len() > 2);
        // The first page's frame cut in its middle: its header is whole,
        // so the damage is the codec's to find, halfway through a frame.
        let (_, body) = checked_header(&chunk, 0, codec).unwrap();
        let mut damaged = chunk.to_vec();
        let from = body + 12;
        damaged[from..from + 16].fill(0xA5);
        assert!(bodies(bytes::Bytes::from(damaged)).is_err());
        // This thread kept that context; the next chunk reads as before.
        assert!(ZSTD_CONTEXT.with(|kept| kept.borrow().is_some()));
        assert_eq!(bodies(chunk).unwrap(), want);
    }

    #[test]
    fn the_pages_ahead_sum_what_reading_them_finds() {
        use parquet::file::metadata::ParquetMetaDataReader;
        use parquet::file::properties::WriterVersion;
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for dictionary in [false, true] {
                let case = format!("{version:?} dictionary {dictionary}");
                let codec = Compression::SNAPPY;
                let (file, _) = written(codec, version, dictionary);
                let meta = ParquetMetaDataReader::new()
                    .parse_and_finish(&file)
                    .unwrap();
                let (start, len) = meta.row_group(0).column(0).byte_range();
                let bytes = file.slice(start as usize..(start + len) as usize);
                let mut pages = ChunkPages::new(bytes, codec).unwrap();
                let before = pages.ahead();
                // Summed again page by page as they are read; and after
                // the first page, the sum of the pages after it.
                let (mut found, mut after_first) = (PagesAhead::default(), None);
                loop {
                    let page = pages.next_page().unwrap();
                    let read = match page {
                        None => break,
                        Some(Page::Data {
                            buf,
                            num_values,
                            encoding,
                            ..
                        })
                        | Some(Page::DataV2 {
                            buf,
                            num_values,
                            encoding,
                            ..
                        }) => Some((buf.len() as u64, num_values as u64, encoding)),
                        Some(Page::Dictionary { .. }) => None,
                        Some(Page::Skipped { .. }) => panic!("no selection was set"),
                    };
                    if let Some((size, values, encoding)) = read {
                        found.most_values = found.most_values.max(values);
                        if encoding == Encoding::PLAIN {
                            found.plain_values += values;
                            found.plain_bytes += size;
                        } else {
                            found.other_values += values;
                        }
                    }
                    after_first.get_or_insert_with(|| (found, pages.ahead()));
                }
                // What the PLAIN pages take in the chunk (compressed).
                assert_eq!(before.plain_held > 0, before.plain_values > 0, "{case}");
                assert!(before.plain_held < len, "{case}");
                found.plain_held = before.plain_held;
                assert_eq!(before, found, "{case}");
                let values = found.plain_values + found.other_values;
                assert_eq!(values, 20_000, "{case}");
                assert_eq!(found.other_values > 0, dictionary, "{case}");
                let (first, rest) = after_first.unwrap();
                assert_eq!(
                    (
                        first.plain_bytes + rest.plain_bytes,
                        first.other_values + rest.other_values
                    ),
                    (found.plain_bytes, found.other_values),
                    "{case}"
                );
            }
        }
        // A header that does not read ends the sum (next_page says why).
        let mut chunk = page(100, 10, &[0; 10]);
        chunk.extend([0xff; 4]);
        let pages = ChunkPages::new(bytes::Bytes::from(chunk), Compression::SNAPPY).unwrap();
        let ahead = pages.ahead();
        assert_eq!((ahead.plain_values, ahead.plain_bytes), (1, 100));
    }

    #[test]
    fn every_codec_and_page_version_reads_back_through_the_own_decoder() {
        use parquet::file::properties::WriterVersion;
        let codecs = [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::ZSTD(ZstdLevel::default()),
            Compression::GZIP(Default::default()),
            Compression::BROTLI(Default::default()),
            Compression::LZ4_RAW,
        ];
        for codec in codecs {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                for dictionary in [false, true] {
                    let case = format!("{codec} {version:?} dictionary {dictionary}");
                    let (meta, bytes, values) = written_chunk(codec, version, dictionary);
                    let chunk = meta.row_group(0).column(0);
                    // Many pages, each of the page format written.
                    let mut pages = ChunkPages::new(bytes.clone(), codec).unwrap();
                    let (mut data, mut dictionaries) = (0, 0);
                    while let Some(page) = pages.next_page().unwrap() {
                        match (page, version) {
                            (Page::Dictionary { .. }, _) => dictionaries += 1,
                            (Page::Data { .. }, WriterVersion::PARQUET_1_0)
                            | (Page::DataV2 { .. }, WriterVersion::PARQUET_2_0) => data += 1,
                            _ => panic!("{case}: a page of the other format"),
                        }
                    }
                    assert!(data > 5, "{case}: {data} data pages");
                    assert_eq!(dictionaries, usize::from(dictionary), "{case}");
                    // Decoded by fastingest's decoder (not left to the
                    // crate), to the values written.
                    let column = meta.file_metadata().schema_descr().column(0);
                    let array = super::super::flat::decode_column(
                        bytes,
                        chunk,
                        &column,
                        &arrow_schema::DataType::Int32,
                        values.len(),
                        None,
                        Vec::new(),
                    )
                    .unwrap_or_else(|e| panic!("{case}: {e:?}"));
                    let decoded = array
                        .as_any()
                        .downcast_ref::<arrow_array::Int32Array>()
                        .unwrap();
                    assert_eq!(decoded, &values, "{case}");
                }
            }
        }
    }

    #[test]
    fn windows_of_pages_decode_to_the_chunks_rows_end_to_end() {
        use parquet::file::properties::WriterVersion;
        for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                for dictionary in [false, true] {
                    let case = format!("{codec} {version:?} dictionary {dictionary}");
                    let (meta, bytes, values) = written_chunk(codec, version, dictionary);
                    let chunk = meta.row_group(0).column(0);
                    let column = meta.file_metadata().schema_descr().column(0);
                    let rows = values.len();
                    assert_eq!(values_counted(&bytes, codec), Some(rows as u64), "{case}");
                    for n in [2, 3, 7] {
                        let windows = page_windows(&bytes, codec, n, rows).unwrap();
                        assert_eq!(windows.len(), n, "{case}");
                        // End to end, after the dictionary, to the chunk's end.
                        assert!(windows
                            .windows(2)
                            .all(|w| w[0].bytes.end == w[1].bytes.start));
                        assert_eq!(windows.last().unwrap().bytes.end, bytes.len(), "{case}");
                        assert_eq!(windows[0].bytes.start == 0, !dictionary, "{case}");
                        // About equal shares of the bytes (pages of ~1 KB).
                        let share = (bytes.len() - windows[0].bytes.start) / n;
                        for w in &windows {
                            assert!(w.bytes.len().abs_diff(share) < 2_500, "{case}: {w:?}");
                        }
                        // Each decodes to its own rows; together, the chunk's.
                        let mut row = 0;
                        for window in &windows {
                            // Sized from its own pages alone.
                            let ahead = ChunkPages::new(bytes.clone(), codec)
                                .unwrap()
                                .within(window)
                                .ahead();
                            let held = ahead.plain_values + ahead.other_values;
                            assert_eq!(held, window.rows as u64, "{case}");
                            let array = super::super::flat::decode_window(
                                bytes.clone(),
                                chunk,
                                &column,
                                &arrow_schema::DataType::Int32,
                                window,
                            )
                            .unwrap_or_else(|e| panic!("{case}: {e:?}"));
                            let want = values.slice(row, window.rows);
                            assert_eq!(array.as_ref(), &want as &dyn arrow_array::Array, "{case}");
                            row += window.rows;
                        }
                        assert_eq!(row, values.len(), "{case}");
                    }
                    // One window, or a chunk of one data page: no windows.
                    assert_eq!(page_windows(&bytes, codec, 1, rows), None);
                    let one = page(4, 4, &[0; 4]);
                    assert_eq!(page_windows(&one, Compression::UNCOMPRESSED, 2, 1), None);
                    // Pages that count other rows than the footer's: no
                    // windows (each would reserve its headers' count).
                    for claimed in [rows - 1, rows + 1, rows * 1000] {
                        assert_eq!(page_windows(&bytes, codec, 2, claimed), None, "{case}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_slab_of_rows_decodes_from_the_pages_that_hold_it() {
        use parquet::file::properties::WriterVersion;
        for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY] {
            for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                for dictionary in [false, true] {
                    let case = format!("{codec} {version:?} dictionary {dictionary}");
                    let (meta, bytes, values) = written_chunk(codec, version, dictionary);
                    let chunk = meta.row_group(0).column(0);
                    let column = meta.file_metadata().schema_descr().column(0);
                    let rows = values.len();
                    // Slabs whose edges fall inside pages, one row, all rows.
                    let third = rows / 3;
                    for slab in [
                        0..third,
                        third..2 * third + 7,
                        2 * third + 7..rows,
                        5..6,
                        0..rows,
                    ] {
                        let (window, first_row) =
                            slab_window(&bytes, codec, slab.clone(), rows, true)
                                .unwrap()
                                .unwrap_or_else(|| panic!("{case}: {slab:?}"));
                        assert!(first_row <= slab.start, "{case}: {slab:?}");
                        assert!(first_row + window.rows >= slab.end, "{case}: {slab:?}");
                        // No page more than it needs: the first and last
                        // pages hold some of its rows.
                        let array = super::super::flat::decode_window(
                            bytes.clone(),
                            chunk,
                            &column,
                            &arrow_schema::DataType::Int32,
                            &window,
                        )
                        .unwrap_or_else(|e| panic!("{case}: {e:?}"));
                        assert_eq!(array.len(), window.rows, "{case}");
                        let got = array.slice(slab.start - first_row, slab.len());
                        let want = values.slice(slab.start, slab.len());
                        assert_eq!(got.as_ref(), &want as &dyn arrow_array::Array, "{case}");
                        if slab.len() < rows {
                            assert!(window.rows < rows, "{case}: {slab:?} read every page");
                        }
                        // A filtered stream's slab: only the rows kept, of
                        // every third row or of the slab's last row alone
                        // (its other pages passed over).
                        for every in [3, slab.len()] {
                            let mut keep = arrow_buffer::BooleanBufferBuilder::new(window.rows);
                            for row in first_row..first_row + window.rows {
                                let last = row + 1 == slab.end;
                                let kept = slab.contains(&row)
                                    && (every == slab.len() && last
                                        || every != slab.len() && row % every == 0);
                                keep.append(kept);
                            }
                            let keep = keep.finish();
                            let got = super::super::flat::decode_window_selected(
                                bytes.clone(),
                                chunk,
                                &column,
                                &arrow_schema::DataType::Int32,
                                &window,
                                &keep,
                            )
                            .unwrap_or_else(|e| panic!("{case}: {e:?}"));
                            let all = values.slice(first_row, window.rows);
                            let mask = arrow_array::BooleanArray::new(keep, None);
                            let want = arrow_select::filter::filter(&all, &mask).unwrap();
                            assert_eq!(got.as_ref(), want.as_ref(), "{case}: {slab:?} {every}");
                        }
                    }
                    // Pages that count other rows than the footer's: not cut.
                    for claimed in [rows - 1, rows + 1] {
                        let cut = slab_window(&bytes, codec, 0..10, claimed, false);
                        assert_eq!(cut, Ok(None), "{case}");
                    }
                    assert_eq!(
                        slab_window(&bytes, codec, rows..rows + 1, rows, false),
                        Ok(None)
                    );
                }
            }
        }
    }

    #[test]
    fn a_slab_checks_the_checksums_of_the_pages_it_reads() {
        // Five pages of a value each, with CRCs; the third one's is wrong.
        let body = [7u8; 16];
        let crc = crc32fast::hash(&body);
        let mut chunk = Vec::new();
        let mut starts = Vec::new();
        for i in 0..5 {
            starts.push(chunk.len());
            let claimed = if i == 2 { crc ^ 1 } else { crc };
            chunk.extend(page_with_crc(16, 16, Some(claimed), &body));
        }
        let codec = Compression::UNCOMPRESSED;
        // Rows 3..5 read pages 3 and 4 alone: their CRCs match.
        let (window, first_row) = slab_window(&chunk, codec, 3..5, 5, true).unwrap().unwrap();
        assert_eq!(
            (window.bytes, window.rows, first_row),
            (starts[3]..chunk.len(), 2, 3)
        );
        // Rows 1..3 read the third page: refused, naming its bytes.
        let bad = slab_window(&chunk, codec, 1..3, 5, true).unwrap_err();
        assert_eq!((bad.offset, bad.end), (starts[2], Some(starts[3])));
        assert!(bad.detail.contains("checksum mismatch"), "{bad:?}");
        // Unchecked, the same slab is cut.
        let (window, first_row) = slab_window(&chunk, codec, 1..3, 5, false).unwrap().unwrap();
        assert_eq!(
            (window.bytes, window.rows, first_row),
            (starts[1]..starts[3], 2, 1)
        );
        // A header past the chunk is refused whatever the rows asked.
        let mut cut_short = chunk.clone();
        cut_short.truncate(chunk.len() - 4);
        assert!(slab_window(&cut_short, codec, 0..1, 5, false).is_err());
        // A dictionary page after a data page: not cut.
        let mut late = page(16, 16, &body);
        late.extend(dictionary_page(2, 16));
        assert_eq!(slab_window(&late, codec, 0..1, 1, false), Ok(None));
    }

    /// Where the dictionary page of `chunk` ends.
    fn window_start_after_dictionary(chunk: &[u8], codec: Compression) -> usize {
        let (header, body) = checked_header(chunk, 0, codec).unwrap();
        assert_eq!(header.kind, DICTIONARY_PAGE);
        body + header.compressed as usize
    }

    #[test]
    fn a_window_of_plain_pages_after_a_fallback_does_not_read_the_dictionary() {
        use arrow_array::{Array, RecordBatch, StringArray};
        use parquet::file::properties::WriterProperties;
        use std::sync::Arc;
        // Distinct strings: the dictionary takes the first few hundred,
        // then the writer falls back to PLAIN pages.
        let values: StringArray = (0..6_000)
            .map(|i| Some(format!("value number {i:06}")))
            .collect();
        let batch = RecordBatch::try_from_iter([("s", Arc::new(values.clone()) as _)]).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_page_size_limit(4096)
            .set_data_page_size_limit(2048)
            .set_write_batch_size(64)
            .build();
        let file = crate::parquet::written::written(&batch, props);
        let (meta, bytes) = crate::parquet::written::first_chunk(&file);
        let chunk = meta.row_group(0).column(0);
        let column = meta.file_metadata().schema_descr().column(0);
        let codec = chunk.compression();
        let windows = page_windows(&bytes, codec, 4, values.len()).unwrap();
        let mut row = 0;
        let mut read_it = Vec::new();
        let dictionary_end = window_start_after_dictionary(&bytes, codec);
        for window in &windows {
            let mut pages = ChunkPages::new(bytes.clone(), codec)
                .unwrap()
                .within(window);
            let looks_up = pages.looks_up_from(window.bytes.start);
            crate::io::VIEWS_OFFERED.with(|views| views.borrow_mut().clear());
            let first = pages.next_page().unwrap().unwrap();
            let read_dictionary = matches!(first, Page::Dictionary { .. });
            while pages.next_page().unwrap().is_some() {}
            // A window that read the dictionary page gives it back once
            // past it (the pages between it and the window's are other
            // windows'); its own pages from its start on.
            let offered = crate::io::VIEWS_OFFERED.with(|views| views.take());
            let dictionary = (bytes.as_ptr() as usize, dictionary_end);
            assert_eq!(
                offered.contains(&dictionary),
                looks_up,
                "{window:?}: {offered:?}"
            );
            let start = bytes.as_ptr() as usize + window.bytes.start;
            assert!(
                offered.iter().all(|&v| v == dictionary || v.0 >= start),
                "{window:?}: {offered:?}"
            );
            assert_eq!(read_dictionary, looks_up, "{window:?}");
            read_it.push(looks_up);
            let array = super::super::flat::decode_window(
                bytes.clone(),
                chunk,
                &column,
                &arrow_schema::DataType::Utf8,
                window,
            )
            .unwrap_or_else(|e| panic!("{window:?}: {e:?}"));
            assert_eq!(
                array.as_ref(),
                &values.slice(row, window.rows) as &dyn Array
            );
            row += window.rows;
        }
        assert_eq!(row, values.len());
        // The first window's pages look entries up; the last's are PLAIN.
        assert_eq!(
            (read_it[0], read_it[windows.len() - 1]),
            (true, false),
            "{read_it:?}"
        );
    }

    #[test]
    fn hadoop_lz4_is_left_to_the_crate() {
        use parquet::file::properties::WriterVersion;
        let (file, _) = written(Compression::LZ4, WriterVersion::PARQUET_1_0, true);
        assert!(ChunkPages::new(file, Compression::LZ4).is_none());
    }

    #[test]
    fn a_page_that_decompresses_short_of_its_claim_is_an_error() {
        // A snappy body of 100 zeros under a header claiming 150 bytes.
        let body = snap::raw::Encoder::new().compress_vec(&[0u8; 100]).unwrap();
        let chunk = page(150, body.len() as i64, &body);
        let mut pages = ChunkPages::new(chunk.into(), Compression::SNAPPY).unwrap();
        let err = pages.next_page().err().unwrap();
        assert!(
            err.contains("decompress to 100 bytes") && err.contains("says 150"),
            "{err}"
        );
        // One claiming 50: snappy refuses to write past the buffer.
        let chunk = page(50, body.len() as i64, &body);
        let mut pages = ChunkPages::new(chunk.into(), Compression::SNAPPY).unwrap();
        let err = pages.next_page().err().unwrap();
        assert!(err.contains("snappy"), "{err}");
    }

    /// The decompressed bytes of a chunk of one page of `body`, compressed
    /// with `codec`, whose header claims `claim` bytes uncompressed.
    fn first_page_of(codec: Compression, claim: usize, body: &[u8]) -> Result<Vec<u8>, String> {
        let chunk = page(claim as i64, body.len() as i64, body);
        let mut pages = ChunkPages::new(chunk.into(), codec).unwrap();
        pages.next_page()?;
        Ok(pages.scratch.clone())
    }

    #[test]
    fn a_brotli_page_decodes_to_its_claim_or_is_an_error() {
        let values: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let mut body = vec![0u8; 6000];
        let n = brotlic::compress(
            &values,
            &mut body,
            Default::default(),
            Default::default(),
            brotlic::CompressionMode::Generic,
        )
        .unwrap();
        body.truncate(n);
        let codec = Compression::BROTLI(Default::default());
        let first_page = |claim, body: &[u8]| first_page_of(codec, claim, body);
        // As claimed: the bytes written.
        let scratch = first_page(5000, &body).unwrap();
        assert_eq!(&scratch[..5000], &values[..]);
        // A claim past the stream's end, and one short of it (the decoder
        // must not write past the room the header gives).
        let err = first_page(6000, &body).err().unwrap();
        assert!(
            err.contains("decompress to 5000 bytes") && err.contains("says 6000"),
            "{err}"
        );
        let err = first_page(4000, &body).err().unwrap();
        assert!(err.contains("brotli") && err.contains("4000"), "{err}");
        // A cut stream and a garbled one.
        let err = first_page(5000, &body[..n / 2]).err().unwrap();
        assert!(err.contains("brotli"), "{err}");
        let garbled: Vec<u8> = body.iter().map(|b| b ^ 0x5a).collect();
        assert!(first_page(5000, &garbled).is_err());
    }

    #[test]
    fn a_gzip_page_of_one_or_more_members_decodes_to_its_claim_or_is_an_error() {
        use std::io::Write;
        let values: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let member = |bytes: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(bytes).unwrap();
            gz.finish().unwrap()
        };
        let codec = Compression::GZIP(Default::default());
        let first_page = |claim, body: &[u8]| first_page_of(codec, claim, body);
        let one = member(&values);
        // Two members (as a writer that flushes mid-page makes them): the
        // second is read too, by the streaming decoder.
        let mut two = member(&values[..1234]);
        two.extend(member(&values[1234..]));
        for body in [&one, &two] {
            assert_eq!(&first_page(5000, body).unwrap()[..5000], &values[..]);
            let err = first_page(6000, body).err().unwrap();
            assert!(
                err.contains("decompress to 5000") && err.contains("says 6000"),
                "{err}"
            );
            let err = first_page(4000, body).err().unwrap();
            assert!(err.contains("gzip") && err.contains("4000"), "{err}");
            let err = first_page(5000, &body[..body.len() - 100]).err().unwrap();
            assert!(
                err.contains("gzip") || err.contains("decompress to"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_page_without_the_header_of_its_type_is_an_error() {
        // A dictionary page (type 2) whose header carries a data page header.
        let mut chunk = page(4, 4, &[1, 0, 0, 0]);
        chunk[1] = 0x04; // zigzag(2)
        let mut pages = ChunkPages::new(chunk.into(), Compression::UNCOMPRESSED).unwrap();
        let err = pages.next_page().err().unwrap();
        assert!(err.contains("without the header of its type"), "{err}");
        // The same page as a data page reads: its one value, uncompressed.
        let chunk = page(4, 4, &[1, 0, 0, 0]);
        let mut pages = ChunkPages::new(chunk.into(), Compression::UNCOMPRESSED).unwrap();
        match pages.next_page().unwrap() {
            Some(Page::Data {
                buf, num_values, ..
            }) => assert_eq!((buf, num_values), (&[1u8, 0, 0, 0][..], 1)),
            _ => panic!("not a data page"),
        }
        assert!(pages.next_page().unwrap().is_none());
    }
}
