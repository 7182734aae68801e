//! Top-level integer columns of an ORC stripe (`tinyint` to `bigint`),
//! decoded here rather than by `orc-rust`.
//!
//! Why: `orc-rust` reads every run header and every bit-packed value through
//! `std::io::Read` on its decompressor, a call and a small copy per value. A
//! profile of the suite's 256 MB `int` file (four integer columns, random
//! values) had 37 % of the read in its `read_ints`, 18 % in the
//! decompressor's `read` and 22 % in the copies those calls make, and the
//! read at 0.28-0.39× pyarrow's ORC reader. Here a stream is read 64 KiB at
//! a time into a window, and its runs are decoded from that slice (a
//! `tinyint` column's stream, one byte a value, is read whole).
//!
//! What is decoded here: a column of type `tinyint` (byte run length
//! encoding), or `smallint`, `int`, `bigint`, `date` in `DIRECT_V2` encoding (run
//! length encoding v2: short repeats, direct, patched base and delta runs),
//! with its present stream. Everything else (other types, nested columns,
//! the version 1 encoding of old writers) stays with `orc-rust`.
//!
//! The other decoders of [`super::columns`] build on what is here: the
//! present stream as validity ([`validity`]), run length encoding (v1 or v2) run by
//! run ([`rle_runs`]), a stream read through a [`Window`], and a column of
//! fixed-width values with its nulls ([`primitive_column`]).

use std::io::Read;
use std::sync::Arc;

use arrow_array::types::{Date32Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType as ArrowType;
use orc_rust::proto::column_encoding::Kind as EncodingKind;
use orc_rust::proto::stream::Kind;
use orc_rust::schema::DataType as OrcType;

use super::columns::ColumnAt;
use super::rle_v1::{self, rle_v1_run};
use super::streams::{StreamReader, StripeStreams};

/// Column `index` of `stripe`, read as Arrow type `arrow`, decoded whole
/// (`None`: its type or encoding is not one decoded here, so `orc-rust`
/// decodes it).
pub(super) fn decode(
    streams: &StripeStreams,
    column: &ColumnAt,
    arrow: &ArrowType,
) -> Result<Option<ArrayRef>, String> {
    let rows = column.rows;
    let rle = Rle::of(column.encoding);
    let Some(width) = integer_width(column.orc, arrow) else {
        return Ok(None);
    };
    let validity = validity(streams, column)?;
    let data = streams.get(column.id, Kind::Data);
    let array = match width {
        Width::Byte => {
            let data = whole(data, "data", rows.saturating_add(64))?;
            let data = data.unwrap_or_default();
            integer_array::<Int8Type>(validity, rows, |n, out| {
                byte_rle(&data, n, |run| out.extend(run.iter().map(|&b| b as i8)))
            })
        }
        Width::Short => integer_array::<Int16Type>(validity, rows, |n, out| {
            rle_into(rle, readable(data), n, out)
        }),
        Width::Int => integer_array::<Int32Type>(validity, rows, |n, out| {
            rle_into(rle, readable(data), n, out)
        }),
        Width::Long => integer_array::<Int64Type>(validity, rows, |n, out| {
            rle_into(rle, readable(data), n, out)
        }),
        Width::Date => integer_array::<Date32Type>(validity, rows, |n, out| {
            rle_into(rle, readable(data), n, out)
        }),
    };
    array.map(Some)
}

/// [`primitive_column`] as an [`ArrayRef`].
fn integer_array<T: ArrowPrimitiveType>(
    validity: Option<BooleanBuffer>,
    rows: usize,
    decode: impl FnOnce(usize, &mut Vec<T::Native>) -> Result<(), String>,
) -> Result<ArrayRef, String> {
    primitive_column::<T>(validity, rows, decode).map(|array| Arc::new(array) as ArrayRef)
}

/// The integer columns decoded here (a date is days since 1970 as an
/// `int`'s stream).
enum Width {
    Byte,
    Short,
    Int,
    Long,
    Date,
}

/// A stream to read (none: an empty one, as a column of nulls has).
pub(super) fn readable(stream: Option<StreamReader>) -> Box<dyn Read> {
    match stream {
        Some(stream) => Box::new(stream),
        None => Box::new(std::io::empty()),
    }
}

/// Whether a column of ORC type `orc`, read as Arrow type `arrow`, may be
/// decoded here (when its stripe's encoding is one read here too).
pub(super) fn may_decode(orc: &OrcType, arrow: &ArrowType) -> bool {
    integer_width(orc, arrow).is_some()
}

/// Which of the integer columns decoded here a column of ORC type `orc`,
/// read as Arrow type `arrow`, is.
fn integer_width(orc: &OrcType, arrow: &ArrowType) -> Option<Width> {
    match (orc, arrow) {
        (OrcType::Byte { .. }, ArrowType::Int8) => Some(Width::Byte),
        (OrcType::Short { .. }, ArrowType::Int16) => Some(Width::Short),
        (OrcType::Int { .. }, ArrowType::Int32) => Some(Width::Int),
        (OrcType::Long { .. }, ArrowType::Int64) => Some(Width::Long),
        (OrcType::Date { .. }, ArrowType::Date32) => Some(Width::Date),
        _ => None,
    }
}

/// The validity of column `index` of `stripe`: its present stream read
/// as a bitmap (`None`: it has none, so every row is valid). A damaged
/// stripe footer can claim any number of rows: they are checked against
/// the present stream before anything is sized from them.
pub(super) fn validity(
    streams: &StripeStreams,
    column: &ColumnAt,
) -> Result<Option<BooleanBuffer>, String> {
    let rows = column.rows;
    let present = streams.get(column.id, Kind::Present);
    let present = whole(present, "present", rows.div_ceil(8).saturating_add(64))?;
    present
        .map(|present| present_bits(&present, rows))
        .transpose()
}

/// A column of `rows` values with `validity` (`None`: no nulls), and
/// `decode` reading as many values as are valid. Without a present stream
/// the values' buffer grows as values come past what is reserved.
pub(super) fn primitive_column<T: ArrowPrimitiveType>(
    validity: Option<BooleanBuffer>,
    rows: usize,
    decode: impl FnOnce(usize, &mut Vec<T::Native>) -> Result<(), String>,
) -> Result<PrimitiveArray<T>, String> {
    let valid = validity.as_ref().map_or(rows, |v| v.count_set_bits());
    let mut values = Vec::with_capacity(valid.min(MOST_RESERVED_VALUES));
    decode(valid, &mut values)?;
    if values.len() != valid {
        return Err(format!(
            "its data stream holds {} values where {valid} were expected",
            values.len()
        ));
    }
    let (values, nulls) = match validity {
        Some(bits) if valid < rows => {
            let mut slots = vec![T::Native::default(); rows];
            for (slot, value) in bits.set_indices().zip(values) {
                slots[slot] = value;
            }
            (slots, Some(NullBuffer::new(bits)))
        }
        _ => (values, None),
    };
    Ok(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

/// The most bytes a byte of byte run length encoding stands for: a run of
/// 130 takes 2.
const BYTE_RUN_MOST_PER_BYTE: usize = 65;

/// The largest buffer a stream's expected size reserves up front (one
/// larger grows as its bytes come).
const MOST_RESERVED: usize = 256 << 20;

/// The most values reserved for up front (more grow the buffer).
pub(super) const MOST_RESERVED_VALUES: usize = 1 << 24;

/// The whole of a stream, decompressed (`None`: the stripe has none, as
/// for a column without nulls), into a buffer sized for `expected` bytes
/// (grown from there when they are more: growing by doubling copied each
/// stream about twice more).
pub(super) fn whole(
    stream: Option<StreamReader>,
    kind: &str,
    expected: usize,
) -> Result<Option<Vec<u8>>, String> {
    let Some(mut reader) = stream else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(expected.min(MOST_RESERVED));
    reader
        .append_rest(&mut bytes)
        .map_err(|e| format!("its {kind} stream cannot be decompressed: {e}"))?;
    Ok(Some(bytes))
}

/// The present stream as a validity bitmap of `rows` bits.
fn present_bits(present: &[u8], rows: usize) -> Result<BooleanBuffer, String> {
    let holds_at_most = present.len().saturating_mul(8 * BYTE_RUN_MOST_PER_BYTE);
    if rows > holds_at_most {
        return Err(format!(
            "the stripe claims {rows} rows, more than its present stream can hold \
             ({holds_at_most})"
        ));
    }
    bits(present, rows).map_err(|e| format!("its present stream: {e}"))
}

/// The first `count` bits of a boolean stream (as a present stream, or a
/// boolean column's data): boolean run length encoding, a byte run length
/// encoding of bytes whose bits come most significant first (Arrow's come
/// least significant first).
pub(super) fn bits(stream: &[u8], count: usize) -> Result<BooleanBuffer, String> {
    let holds_at_most = stream.len().saturating_mul(8 * BYTE_RUN_MOST_PER_BYTE);
    if count > holds_at_most {
        return Err(format!(
            "{count} values, more than the stream can hold ({holds_at_most})"
        ));
    }
    let mut bytes = Vec::with_capacity(count.div_ceil(8));
    byte_rle(stream, count.div_ceil(8), |run| {
        bytes.extend(run.iter().map(|b| b.reverse_bits()))
    })?;
    Ok(BooleanBuffer::new(Buffer::from_vec(bytes), 0, count))
}

/// Byte run length encoding: a header byte below 128 is a run of its
/// value plus 3 copies of the next byte; one above is a list of 256 less
/// its value literal bytes. `emit` takes the bytes, `count` in all.
pub(super) fn byte_rle(
    data: &[u8],
    count: usize,
    mut emit: impl FnMut(&[u8]),
) -> Result<(), String> {
    let mut at = 0;
    let mut done = 0;
    let mut run = [0u8; 130];
    while done < count {
        let header = *data.get(at).ok_or_else(|| cut_short(done, count))?;
        at += 1;
        let n = if header < 128 {
            let n = header as usize + 3;
            let value = *data.get(at).ok_or_else(|| cut_short(done, count))?;
            at += 1;
            run[..n].fill(value);
            emit(&run[..n.min(count - done)]);
            n
        } else {
            let n = 256 - header as usize;
            let literals = data.get(at..at + n).ok_or_else(|| cut_short(done, count))?;
            at += n;
            emit(&literals[..n.min(count - done)]);
            n
        };
        done += n;
    }
    Ok(())
}

pub(super) fn cut_short(done: usize, count: usize) -> String {
    format!("the stream ends after {done} of {count} values")
}

/// An integer type of a column: `i64`s narrowed to it.
pub(super) trait Narrow: Copy {
    /// `v`'s low bits.
    fn wrap(v: i64) -> Self;
    fn widen(self) -> i64;
}

macro_rules! narrow {
    ($($t:ty),*) => {$(
        impl Narrow for $t {
            fn wrap(v: i64) -> Self {
                v as $t
            }
            fn widen(self) -> i64 {
                self as i64
            }
        }
    )*};
}
// `i128`: decimals stored as integers (`decimals::small_as_integers`).
narrow!(i16, i32, i64, i128);

/// The run length encoding of a column's integer streams: version 1 (a
/// stripe's `DIRECT` and `DICTIONARY` encodings, as Hive 0.11 wrote them)
/// or version 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Rle {
    V1,
    V2,
}

impl Rle {
    /// That of a column in `encoding`.
    pub(super) fn of(encoding: EncodingKind) -> Rle {
        match encoding {
            EncodingKind::DirectV2 | EncodingKind::DictionaryV2 => Rle::V2,
            EncodingKind::Direct | EncodingKind::Dictionary => Rle::V1,
        }
    }

    /// That of a column in `encoding` when it is a direct one (`None`: a
    /// dictionary, which timestamps, decimals, lists and maps never have).
    pub(super) fn direct(encoding: EncodingKind) -> Option<Rle> {
        match encoding {
            EncodingKind::DirectV2 => Some(Rle::V2),
            EncodingKind::Direct => Some(Rle::V1),
            EncodingKind::Dictionary | EncodingKind::DictionaryV2 => None,
        }
    }
}

/// Decodes `count` values of run length encoding `rle` from `stream` (the
/// column's `kind` stream, for errors; `signed`: zigzag encoded; else
/// unsigned, read as `i64` bits), handing each run to `each` with the byte
/// of the stream it starts at; the last run is cut to `count`.
pub(super) fn rle_runs(
    rle: Rle,
    stream: impl Read,
    kind: &str,
    count: usize,
    signed: bool,
    each: impl FnMut(&[i64], usize) -> Result<(), String>,
) -> Result<(), String> {
    match rle {
        Rle::V2 => {
            let mut scratch = Vec::with_capacity(512);
            let decode_run =
                |data: &[u8], run: &mut Vec<i64>| rle_v2_run(data, signed, run, &mut scratch);
            runs(stream, kind, count, LONGEST_RUN, decode_run, each)
        }
        Rle::V1 => {
            let decode_run = |data: &[u8], run: &mut Vec<i64>| rle_v1_run(data, signed, run);
            runs(stream, kind, count, rle_v1::LONGEST_RUN, decode_run, each)
        }
    }
}

/// Decodes `count` signed values of run length encoding `rle` from
/// `stream` (a data stream) into `out`, each checked to fit `N`.
pub(super) fn rle_into<N: Narrow>(
    rle: Rle,
    stream: impl Read,
    count: usize,
    out: &mut Vec<N>,
) -> Result<(), String> {
    rle_runs(rle, stream, "data", count, true, |run, start| {
        // Narrowed without a branch a value, then checked once a run.
        let mut fits = true;
        out.extend(run.iter().map(|&v| {
            let n = N::wrap(v);
            fits &= n.widen() == v;
            n
        }));
        if fits {
            return Ok(());
        }
        let v = run.iter().find(|&&v| N::wrap(v).widen() != v).copied();
        Err(format!(
            "value {} does not fit the column's type (run at byte {start} of the data stream)",
            v.unwrap_or_default()
        ))
    })
}

/// Decodes `count` values of a run length encoding from `stream` (the
/// column's `kind` stream, for errors): `decode_run` decodes the run at the
/// start of the bytes it is given (at least `longest` of them, unless the
/// stream ends first) and returns its length in bytes; each run goes to
/// `each` with the byte of the stream it starts at, the last cut to
/// `count`. The stream is read a window at a time: decompressed whole, a
/// stripe's streams took as much fresh memory as its decoded columns, and
/// a read in a new process paid for its pages.
#[inline(always)]
fn runs(
    stream: impl Read,
    kind: &str,
    count: usize,
    longest: usize,
    mut decode_run: impl FnMut(&[u8], &mut Vec<i64>) -> Result<usize, String>,
    mut each: impl FnMut(&[i64], usize) -> Result<(), String>,
) -> Result<(), String> {
    let mut window = Window::new(stream);
    let mut run = Vec::with_capacity(512);
    let mut done = 0;
    while done < count {
        let start = window.position();
        let data = window
            .ahead(longest)
            .map_err(|e| format!("its {kind} stream cannot be decompressed: {e}"))?;
        if data.is_empty() {
            return Err(cut_short(done, count));
        }
        run.clear();
        let used = decode_run(data, &mut run)
            .map_err(|e| format!("{e} (run at byte {start} of the {kind} stream)"))?;
        window.advance(used);
        let run = &run[..run.len().min(count - done)];
        done += run.len();
        each(run, start)?;
    }
    Ok(())
}

/// The most bytes a run of run length encoding v2 takes: a patched run of
/// 512 values of 64 bits, its header, base and 31 patches of 64 bits.
const LONGEST_RUN: usize = 4 + 8 + 512 * 8 + 31 * 8;

/// A stream read through a buffer of [`WINDOW`] bytes.
pub(super) struct Window<R> {
    stream: R,
    buffer: Vec<u8>,
    /// The unread bytes of `buffer`.
    at: usize,
    end: usize,
    /// Bytes of the stream before `buffer`.
    before: usize,
    ended: bool,
}

const WINDOW: usize = 64 << 10;

impl<R: Read> Window<R> {
    pub(super) fn new(stream: R) -> Self {
        Window {
            stream,
            buffer: vec![0; WINDOW],
            at: 0,
            end: 0,
            before: 0,
            ended: false,
        }
    }

    /// Where the unread bytes start in the stream.
    pub(super) fn position(&self) -> usize {
        self.before + self.at
    }

    /// The unread bytes: at least `least` of them (at most [`WINDOW`])
    /// unless the stream ends first.
    pub(super) fn ahead(&mut self, least: usize) -> std::io::Result<&[u8]> {
        if self.end - self.at < least && !self.ended {
            self.buffer.copy_within(self.at..self.end, 0);
            self.before += self.at;
            self.end -= self.at;
            self.at = 0;
            while self.end < WINDOW && !self.ended {
                match self.stream.read(&mut self.buffer[self.end..])? {
                    0 => self.ended = true,
                    n => self.end += n,
                }
            }
        }
        Ok(&self.buffer[self.at..self.end])
    }

    pub(super) fn advance(&mut self, bytes: usize) {
        self.at = (self.at + bytes).min(self.end);
    }
}

/// Decodes the run at the start of `data` into `out` (values of a `signed`
/// column are zigzag encoded) and returns its length in bytes. `scratch`
/// holds bit-packed values on the way.
fn rle_v2_run(
    data: &[u8],
    signed: bool,
    out: &mut Vec<i64>,
    scratch: &mut Vec<u64>,
) -> Result<usize, String> {
    let first = *data.first().ok_or(ENDS_IN_RUN)?;
    match first >> 6 {
        0 => short_repeat(data, signed, out),
        1 => direct(data, signed, out),
        2 => patched_base(data, out, scratch),
        _ => delta(data, signed, out, scratch),
    }
}

/// 3 to 10 copies of one value of 1 to 8 bytes.
fn short_repeat(data: &[u8], signed: bool, out: &mut Vec<i64>) -> Result<usize, String> {
    let width = ((data[0] >> 3) & 0x07) as usize + 1;
    let n = (data[0] & 0x07) as usize + 3;
    let value = big_endian(data.get(1..1 + width).ok_or(ENDS_IN_RUN)?);
    let value = if signed {
        unzigzag(value)
    } else {
        value as i64
    };
    out.extend(std::iter::repeat_n(value, n));
    Ok(1 + width)
}

/// Up to 512 values bit-packed at one width.
fn direct(data: &[u8], signed: bool, out: &mut Vec<i64>) -> Result<usize, String> {
    let (width, n) = width_and_length(data)?;
    let used = if signed {
        unpack(&data[2..], width, n, out, unzigzag)?
    } else {
        unpack(&data[2..], width, n, out, |v| v as i64)?
    };
    Ok(2 + used)
}

/// Values as offsets from a base, bit-packed at a width that fits most of
/// them; the few that need more carry their high bits in a patch list.
fn patched_base(data: &[u8], out: &mut Vec<i64>, scratch: &mut Vec<u64>) -> Result<usize, String> {
    let (width, n) = width_and_length(data)?;
    let header = data.get(2..4).ok_or(ENDS_IN_RUN)?;
    let base_bytes = (header[0] >> 5) as usize + 1;
    let patch_width = WIDTHS[(header[0] & 0x1f) as usize];
    let gap_width = (header[1] >> 5) as usize + 1;
    let patches = (header[1] & 0x1f) as usize;
    if patch_width + gap_width > 64 {
        return Err(format!(
            "a patched run's patches are {patch_width} + {gap_width} bits wide"
        ));
    }
    let mut at = 4;
    let base = big_endian(data.get(at..at + base_bytes).ok_or(ENDS_IN_RUN)?);
    at += base_bytes;
    // The base's top bit is its sign (sign and magnitude).
    let sign = 1u64 << (base_bytes * 8 - 1);
    let base = if base & sign != 0 {
        -((base & !sign) as i64)
    } else {
        base as i64
    };
    let start = out.len();
    at += unpack(&data[at..], width, n, out, |v| v as i64)?;
    let entry_width = closest_fixed_width(patch_width + gap_width);
    scratch.clear();
    at += unpack(&data[at..], entry_width, patches, scratch, |v| v)?;
    let patch_mask = if patch_width == 64 {
        u64::MAX
    } else {
        (1u64 << patch_width) - 1
    };
    let mut slot = 0usize;
    for &entry in scratch.iter() {
        // A gap of 255 with an empty patch only moves on by 255.
        slot += (entry >> patch_width) as usize;
        let patch = entry & patch_mask;
        if patch == 0 && entry >> patch_width == 255 {
            continue;
        }
        let value = out
            .get_mut(start + slot)
            .ok_or("a patch lies past the end of its run")?;
        *value = (*value as u64 | patch.checked_shl(width as u32).unwrap_or(0)) as i64;
    }
    for value in &mut out[start..] {
        *value = base.wrapping_add(*value);
    }
    Ok(at)
}

/// A first value and differences from it: all one difference, or the first
/// difference with the sign of all and the rest bit-packed as magnitudes.
fn delta(
    data: &[u8],
    signed: bool,
    out: &mut Vec<i64>,
    scratch: &mut Vec<u64>,
) -> Result<usize, String> {
    let code = ((data[0] >> 1) & 0x1f) as usize;
    let width = if code == 0 { 0 } else { WIDTHS[code] };
    let n = (((data[0] & 1) as usize) << 8 | *data.get(1).ok_or(ENDS_IN_RUN)? as usize) + 1;
    let mut at = 2;
    let (first, used) = varint(&data[at..])?;
    at += used;
    let first = if signed {
        unzigzag(first)
    } else {
        first as i64
    };
    let (step, used) = varint(&data[at..])?;
    at += used;
    let step = unzigzag(step);
    out.push(first);
    if width == 0 {
        let mut value = first;
        for _ in 1..n {
            value = value.wrapping_add(step);
            out.push(value);
        }
        return Ok(at);
    }
    let mut value = first.wrapping_add(step);
    if n > 1 {
        out.push(value);
    }
    scratch.clear();
    at += unpack(&data[at..], width, n.saturating_sub(2), scratch, |v| v)?;
    for &d in scratch.iter() {
        value = if step < 0 {
            value.wrapping_sub(d as i64)
        } else {
            value.wrapping_add(d as i64)
        };
        out.push(value);
    }
    Ok(at)
}

const ENDS_IN_RUN: &str = "the stream ends inside a run";

/// Bit widths by their 5-bit code.
const WIDTHS: [usize; 32] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 28,
    30, 32, 40, 48, 56, 64,
];

/// The narrowest width of [`WIDTHS`] that holds `bits` bits.
fn closest_fixed_width(bits: usize) -> usize {
    WIDTHS
        .iter()
        .copied()
        .find(|&w| w >= bits.max(1))
        .unwrap_or(64)
}

/// A direct or patched run's bit width and length (9 bits, plus one).
fn width_and_length(data: &[u8]) -> Result<(usize, usize), String> {
    let second = *data.get(1).ok_or(ENDS_IN_RUN)?;
    let width = WIDTHS[((data[0] >> 1) & 0x1f) as usize];
    let n = (((data[0] & 1) as usize) << 8 | second as usize) + 1;
    Ok((width, n))
}

/// Unpacks `n` values of `width` bits, packed most significant bit first,
/// and appends them to `out` through `map`; returns the bytes they take.
fn unpack<T>(
    data: &[u8],
    width: usize,
    n: usize,
    out: &mut Vec<T>,
    map: impl Fn(u64) -> T,
) -> Result<usize, String> {
    let bytes = (width * n).div_ceil(8);
    let data = data.get(..bytes).ok_or(ENDS_IN_RUN)?;
    match width {
        8 => out.extend(data.iter().map(|&b| map(b as u64))),
        16 => out.extend(
            data.chunks_exact(2)
                .map(|c| map(u16::from_be_bytes([c[0], c[1]]) as u64)),
        ),
        32 => out.extend(
            data.chunks_exact(4)
                .map(|c| map(u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64)),
        ),
        64 => out.extend(data.chunks_exact(8).map(|c| {
            map(u64::from_be_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]))
        })),
        _ if width.is_multiple_of(8) => {
            out.extend(data.chunks_exact(width / 8).map(|c| map(big_endian(c))))
        }
        _ => {}
    }
    if width.is_multiple_of(8) {
        return Ok(bytes);
    }
    let mask = (1u64 << width) - 1;
    for i in 0..n {
        let bit = i * width;
        let byte = bit / 8;
        let shift = (bit % 8) as u32;
        // Eight bytes from `byte` hold the value when they are there (a
        // width below 57 bits after a shift of at most 7).
        let word = match data.get(byte..byte + 8) {
            Some(eight) if width <= 56 => u64::from_be_bytes(eight.try_into().unwrap_or_default()),
            _ => {
                let mut eight = [0u8; 16];
                let tail = &data[byte..data.len().min(byte + 16)];
                eight[..tail.len()].copy_from_slice(tail);
                let wide = u128::from_be_bytes(eight);
                out.push(map(((wide << shift) >> (128 - width)) as u64 & mask));
                continue;
            }
        };
        out.push(map(((word << shift) >> (64 - width)) & mask));
    }
    Ok(bytes)
}

/// A big-endian unsigned integer of up to 8 bytes.
fn big_endian(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| acc << 8 | b as u64)
}

pub(super) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// An unsigned base-128 varint and its length in bytes.
pub(super) fn varint(data: &[u8]) -> Result<(u64, usize), String> {
    let mut value = 0u64;
    for (i, &b) in data.iter().enumerate().take(10) {
        value |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err("a varint is cut short or longer than 10 bytes".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: &[u8], signed: bool) -> (Vec<i64>, usize) {
        let mut out = Vec::new();
        let used = rle_v2_run(bytes, signed, &mut out, &mut Vec::new()).unwrap();
        (out, used)
    }

    // The examples of the ORC specification's run length encoding v2
    // section (unsigned).
    #[test]
    fn the_specification_examples_decode_to_their_values() {
        assert_eq!(run(&[0x0a, 0x27, 0x10], false), (vec![10000; 5], 3));
        let direct = [0x5e, 0x03, 0x5c, 0xa1, 0xab, 0x1e, 0xde, 0xad, 0xbe, 0xef];
        assert_eq!(run(&direct, false), (vec![23713, 43806, 57005, 48879], 10));
        let patched = [
            0x8e, 0x13, 0x2b, 0x21, 0x07, 0xd0, 0x1e, 0x00, 0x14, 0x70, 0x28, 0x32, 0x3c, 0x46,
            0x50, 0x5a, 0x64, 0x6e, 0x78, 0x82, 0x8c, 0x96, 0xa0, 0xaa, 0xb4, 0xbe, 0xfc, 0xe8,
        ];
        let mut want = vec![2030, 2000, 2020, 1000000];
        want.extend((2040..=2190).step_by(10));
        assert_eq!(run(&patched, false), (want, patched.len()));
        let delta = [0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46];
        let primes = vec![2, 3, 5, 7, 11, 13, 17, 19, 23, 29];
        assert_eq!(run(&delta, false), (primes, 8));
    }

    #[test]
    fn signed_runs_are_zigzag_decoded() {
        // Short repeat of zigzag 3 (-2), 4 times; fixed delta from -1 by +1.
        assert_eq!(run(&[0x01, 0x03], true), (vec![-2; 4], 2));
        let (values, _) = run(&[0xc0, 0x04, 0x01, 0x02], true);
        assert_eq!(values, vec![-1, 0, 1, 2, 3]);
    }

    #[test]
    fn every_width_unpacks_what_was_packed() {
        for &width in &WIDTHS {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let values: Vec<u64> = (0..37u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask)
                .collect();
            let mut packed = vec![0u8; (width * values.len()).div_ceil(8)];
            for (i, &v) in values.iter().enumerate() {
                for b in 0..width {
                    if v >> (width - 1 - b) & 1 == 1 {
                        let bit = i * width + b;
                        packed[bit / 8] |= 0x80 >> (bit % 8);
                    }
                }
            }
            let mut out = Vec::new();
            let used = unpack(&packed, width, values.len(), &mut out, |v| v);
            assert_eq!(used, Ok(packed.len()));
            assert_eq!(out, values, "width {width}");
        }
    }

    #[test]
    fn byte_runs_and_literals_decode_and_cut_streams_are_refused() {
        let mut got = Vec::new();
        byte_rle(&[0x61, 0x00, 0xfe, 0x44, 0x45], 102, |r| {
            got.extend_from_slice(r)
        })
        .unwrap();
        let mut want = vec![0u8; 100];
        want.extend([0x44, 0x45]);
        assert_eq!(got, want);
        let err = byte_rle(&[0xfe, 0x44], 2, |_| {}).unwrap_err();
        assert!(err.contains("ends after 0 of 2"), "{err}");
        let err =
            rle_into::<i32>(Rle::V2, &[0x5e, 0x03, 0x5c][..], 4, &mut Vec::new()).unwrap_err();
        assert!(err.contains("ends inside a run"), "{err}");
    }

    #[test]
    fn more_rows_than_the_streams_hold_are_refused_without_reserving_them() {
        let data = [0x0a, 0x27, 0x10];
        let decode = |n, out: &mut Vec<i64>| rle_into(Rle::V2, &data[..], n, out);
        let err = primitive_column::<Int64Type>(None, usize::MAX / 2, decode).unwrap_err();
        assert!(err.contains("ends after 5 of"), "{err}");
        // A present stream of one byte run: 130 bytes, 1040 rows at most.
        let present = [0x7f, 0xff];
        let err = present_bits(&present, 1041).unwrap_err();
        assert!(
            err.contains("1041 rows, more than its present stream"),
            "{err}"
        );
        let validity = present_bits(&present, 1040).unwrap();
        let err = primitive_column::<Int64Type>(Some(validity), 1040, decode).unwrap_err();
        assert!(err.contains("ends after 5 of 1040"), "{err}");
    }

    #[test]
    fn a_stream_longer_than_its_window_decodes_whole() {
        // Direct runs of 512 values of 16 bits (1026 bytes each): 200 of
        // them cross the 64 KiB window three times.
        let mut data = Vec::new();
        let mut want = Vec::new();
        for r in 0..200i64 {
            data.extend([0x5f, 0xff]);
            for i in 0..512i64 {
                let v = (r * 512 + i) % 30_000 - 15_000;
                want.push(v);
                let zigzag = ((v << 1) ^ (v >> 63)) as u16;
                data.extend(zigzag.to_be_bytes());
            }
        }
        let mut got = Vec::new();
        rle_into::<i64>(Rle::V2, &data[..], want.len(), &mut got).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn values_too_wide_for_the_column_are_refused() {
        // Short repeat of 40000 (zigzag 80000, three bytes) into i16.
        let data = [0x10, 0x01, 0x38, 0x80];
        let err = rle_into::<i16>(Rle::V2, &data[..], 3, &mut Vec::new()).unwrap_err();
        assert!(err.contains("40000 does not fit"), "{err}");
    }
}
