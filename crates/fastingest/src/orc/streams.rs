//! The streams of the columns fastingest decodes itself, read straight from
//! the fetched bytes.
//!
//! Why: `orc-rust`'s `Decompressor` starts by copying its whole stream into
//! a buffer of its own. In a new process that copy is fresh memory: reading
//! the suite's 134 MB `float` file faulted in 25,700 pages (100 MB) for it,
//! as many as the decoded columns' output took, before a byte was decoded.
//! Here a stream stays the slice of the fetch (or of the mapped file) it
//! came as. A chunk stored as it is (an "original" chunk) is read in place;
//! a compressed one is unfolded into one scratch buffer, reused chunk after
//! chunk.
//!
//! Each chunk is held to the file's compression block size whatever its
//! codec, zlib included (the ORC format bounds every chunk by it), so a
//! damaged or crafted chunk cannot unfold past it.

use std::collections::HashMap;
use std::io::{self, Read};
use std::mem::MaybeUninit;

use bytes::Bytes;
use orc_rust::compression::{Compression, CompressionType, Decompressor};
use orc_rust::proto::stream::Kind;
use orc_rust::proto::StripeFooter;
use orc_rust::reader::ChunkReader;
use orc_rust::stripe::StripeMetadata;

/// The streams of some top-level columns of one stripe.
pub(super) struct StripeStreams {
    /// By column id and stream kind.
    streams: HashMap<(u32, Kind), Bytes>,
    codec: Option<Compression>,
    /// The most bytes a compression chunk may unfold to.
    chunk_limit: usize,
}

impl StripeStreams {
    /// The streams of the columns `ids` of the stripe `info`, served by
    /// `reader` (which checks each stream's chunks as it serves it). The
    /// stripe's footer says where each stream lies.
    pub(super) fn read(
        reader: &mut impl ChunkReader,
        info: &StripeMetadata,
        codec: Option<Compression>,
        chunk_limit: u64,
        ids: &[u32],
    ) -> Result<StripeStreams, String> {
        use prost::Message;
        let chunk_limit = usize::try_from(chunk_limit).unwrap_or(usize::MAX);
        let footer = reader
            .get_bytes(info.footer_offset(), info.footer_length())
            .map_err(|e| format!("its footer cannot be read: {e}"))?;
        let mut decoded = Vec::new();
        StreamReader::new(footer, codec, chunk_limit)
            .read_to_end(&mut decoded)
            .map_err(|e| format!("its footer cannot be decompressed: {e}"))?;
        let footer = StripeFooter::decode(decoded.as_slice())
            .map_err(|e| format!("its footer cannot be decoded: {e}"))?;
        let mut streams = HashMap::new();
        let mut offset = info.offset();
        for stream in &footer.streams {
            let length = stream.length();
            if ids.contains(&stream.column()) {
                let bytes = reader
                    .get_bytes(offset, length)
                    .map_err(|e| format!("a stream cannot be read: {e}"))?;
                streams.insert((stream.column(), stream.kind()), bytes);
            }
            offset = offset
                .checked_add(length)
                .ok_or("its footer's stream lengths overflow")?;
        }
        Ok(StripeStreams {
            streams,
            codec,
            chunk_limit,
        })
    }

    /// The `kind` stream of column `id`, if the stripe has it (a column
    /// without nulls has no present stream).
    pub(super) fn get(&self, id: u32, kind: Kind) -> Option<StreamReader> {
        let bytes = self.streams.get(&(id, kind))?.clone();
        Some(StreamReader::new(bytes, self.codec, self.chunk_limit))
    }
}

/// One stream, decompressed chunk by chunk as it is read.
pub(super) enum StreamReader {
    Chunks(Chunks),
    /// LZO, which fastingest has no decoder for: `orc-rust`'s.
    Theirs(Box<Decompressor>),
}

impl StreamReader {
    pub(super) fn new(
        bytes: Bytes,
        codec: Option<Compression>,
        chunk_limit: usize,
    ) -> StreamReader {
        let codec = match codec.map(|c| c.compression_type()) {
            None => None,
            Some(CompressionType::Lzo) => {
                return StreamReader::Theirs(Box::new(Decompressor::new(bytes, codec, vec![])))
            }
            Some(kind) => Some(kind),
        };
        StreamReader::Chunks(Chunks {
            rest: bytes,
            read: 0,
            codec,
            chunk_limit,
            current: Current::Stored(Bytes::new()),
            at: 0,
            scratch: Vec::new(),
            zstd: None,
            inflate: None,
        })
    }

    /// Appends the rest of the stream to `out` (no zeros written first, as
    /// `read_to_end` writes).
    pub(super) fn append_rest(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let StreamReader::Chunks(chunks) = self else {
            return self.read_to_end(out).map(drop);
        };
        loop {
            let available = chunks.unread()?;
            if available.is_empty() {
                return Ok(());
            }
            let n = available.len();
            out.extend_from_slice(available);
            chunks.at += n;
        }
    }

    /// Fills `out` with the next bytes of the stream, without first
    /// filling it with zeros; an error when the stream ends sooner.
    pub(super) fn fill(&mut self, out: &mut [MaybeUninit<u8>]) -> io::Result<()> {
        let StreamReader::Chunks(chunks) = self else {
            // `orc-rust`'s reader (LZO) reads into initialised space only.
            let mut bytes = vec![0; out.len()];
            self.read_exact(&mut bytes)?;
            for (slot, byte) in out.iter_mut().zip(bytes) {
                slot.write(byte);
            }
            return Ok(());
        };
        let mut done = 0;
        while done < out.len() {
            let available = chunks.unread()?;
            if available.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the stream ends {} bytes short", out.len() - done),
                ));
            }
            let take = available.len().min(out.len() - done);
            // SAFETY: `take` bytes fit both; `MaybeUninit<u8>` is laid out
            // as `u8`, and the scratch or fetched bytes never overlap the
            // caller's space.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    available.as_ptr(),
                    out[done..].as_mut_ptr().cast::<u8>(),
                    take,
                );
            }
            chunks.at += take;
            done += take;
        }
        Ok(())
    }
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            // orc-rust's decompressor panics on some corrupt chunk headers
            // (a length past the bytes it holds): an error here, wherever
            // the stream is read (the fuzzer's input 1129:258494 reached it
            // while a read was planned, outside the decoders' guard).
            StreamReader::Theirs(theirs) => {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| theirs.read(buf)))
                    .unwrap_or_else(|_| {
                        Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "a corrupt compression chunk (its header runs past the stream)",
                        ))
                    })
            }
            StreamReader::Chunks(chunks) => {
                let available = chunks.unread()?;
                let n = available.len().min(buf.len());
                buf[..n].copy_from_slice(&available[..n]);
                chunks.at += n;
                Ok(n)
            }
        }
    }
}

/// A stream of compression chunks (or, without a codec, one stored chunk).
pub(super) struct Chunks {
    /// The chunks not yet started.
    rest: Bytes,
    /// Bytes of the stream before `rest`, for errors.
    read: usize,
    codec: Option<CompressionType>,
    chunk_limit: usize,
    /// The chunk being read, and how far.
    current: Current,
    at: usize,
    /// What a compressed chunk unfolded to (its first bytes; the buffer
    /// keeps its length, so it is zeroed only when it grows).
    scratch: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    inflate: Option<Box<libdeflater::Decompressor>>,
}

enum Current {
    /// A chunk stored as it is, or a stream without compression.
    Stored(Bytes),
    /// A compressed chunk, unfolded into the first this many bytes of
    /// `scratch`.
    Unfolded(usize),
}

impl Chunks {
    /// The unread bytes of the current chunk, moving on to the next chunk
    /// when it is done (empty: the stream is done).
    fn unread(&mut self) -> io::Result<&[u8]> {
        while self.at == self.current_len() {
            if self.rest.is_empty() {
                return Ok(&[]);
            }
            self.next_chunk()?;
        }
        Ok(match &self.current {
            Current::Stored(bytes) => &bytes[self.at..],
            Current::Unfolded(len) => &self.scratch[self.at..*len],
        })
    }

    fn current_len(&self) -> usize {
        match &self.current {
            Current::Stored(bytes) => bytes.len(),
            Current::Unfolded(len) => *len,
        }
    }

    fn next_chunk(&mut self) -> io::Result<()> {
        self.at = 0;
        let Some(codec) = self.codec else {
            self.current = Current::Stored(std::mem::take(&mut self.rest));
            return Ok(());
        };
        let start = self.read;
        let header = self
            .rest
            .get(..3)
            .ok_or_else(|| damaged(start, "its 3-byte header is cut short".into()))?;
        let header = u32::from_le_bytes([header[0], header[1], header[2], 0]);
        let length = (header >> 1) as usize;
        if self.rest.len() < 3 + length {
            return Err(damaged(
                start,
                format!("it says it is {length} bytes long; the stream ends sooner"),
            ));
        }
        let chunk = self.rest.slice(3..3 + length);
        self.rest = self.rest.slice(3 + length..);
        self.read += 3 + length;
        if header & 1 == 1 {
            self.current = Current::Stored(chunk);
            return Ok(());
        }
        // Nothing of an earlier chunk is read if this one fails.
        self.current = Current::Unfolded(0);
        let len = self
            .unfold(codec, &chunk)
            .map_err(|problem| damaged(start, problem))?;
        self.current = Current::Unfolded(len);
        Ok(())
    }

    /// Decompresses `chunk` into the start of `scratch`, at most
    /// `chunk_limit` bytes, and says how many.
    fn unfold(&mut self, codec: CompressionType, chunk: &[u8]) -> Result<usize, String> {
        let limit = self.chunk_limit;
        let too_long = |n: u64| {
            format!("it unfolds to {n} bytes or more, past the file's compression blocks ({limit} bytes)")
        };
        match codec {
            CompressionType::Snappy => {
                let n = snap::raw::decompress_len(chunk).map_err(|e| e.to_string())?;
                if n > limit {
                    return Err(too_long(n as u64));
                }
                let got = snap::raw::Decoder::new()
                    .decompress(chunk, room(&mut self.scratch, n))
                    .map_err(|e| e.to_string())?;
                Ok(got)
            }
            CompressionType::Zstd => {
                self.scratch.clear();
                self.scratch.reserve(limit);
                let zstd = match &mut self.zstd {
                    Some(zstd) => zstd,
                    none => {
                        none.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?)
                    }
                };
                // Writes into the spare capacity: at most `limit` bytes, an
                // error past that.
                let mut room = LimitedBuffer {
                    bytes: &mut self.scratch,
                    limit,
                };
                zstd.decompress_to_buffer(chunk, &mut room)
                    .map_err(|e| format!("{e} (or it unfolds past {limit} bytes)"))
            }
            CompressionType::Zlib => {
                let inflate = self.inflate.get_or_insert_with(Box::default);
                match inflate.deflate_decompress(chunk, room(&mut self.scratch, limit)) {
                    Ok(n) => Ok(n),
                    Err(libdeflater::DecompressionError::InsufficientSpace) => {
                        Err(too_long(limit as u64 + 1))
                    }
                    Err(libdeflater::DecompressionError::BadData) => {
                        Err("the deflate stream is damaged".into())
                    }
                }
            }
            CompressionType::Lz4 => {
                lz4_flex::block::decompress_into(chunk, room(&mut self.scratch, limit))
                    .map_err(|e| format!("{e} (or it unfolds past {limit} bytes)"))
            }
            CompressionType::Lzo => Err("LZO is read by orc-rust".into()),
        }
    }
}

/// The first `len` bytes of `scratch`, which is grown (zeroed) only when
/// it is shorter.
fn room(scratch: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if scratch.len() < len {
        scratch.resize(len, 0);
    }
    &mut scratch[..len]
}

/// A `Vec` that zstd may write into up to `limit` bytes (its capacity,
/// reserved before).
struct LimitedBuffer<'a> {
    bytes: &'a mut Vec<u8>,
    limit: usize,
}

// SAFETY: the buffer is the `Vec`'s own allocation; `capacity` never says
// more than the `Vec` has; `filled` sets a length zstd says it wrote.
unsafe impl zstd::zstd_safe::WriteBuf for LimitedBuffer<'_> {
    fn as_slice(&self) -> &[u8] {
        self.bytes.as_slice()
    }
    fn capacity(&self) -> usize {
        self.bytes.capacity().min(self.limit)
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_ptr()
    }
    unsafe fn filled_until(&mut self, n: usize) {
        unsafe { self.bytes.set_len(n) }
    }
}

fn damaged(at: usize, problem: String) -> io::Error {
    io::Error::other(format!(
        "the compression chunk at byte {at} of the stream: {problem}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orc::chunks::tests::chunk;

    fn reader(bytes: Vec<u8>, codec: Option<CompressionType>, limit: usize) -> StreamReader {
        StreamReader::Chunks(Chunks {
            rest: Bytes::from(bytes),
            read: 0,
            codec,
            chunk_limit: limit,
            current: Current::Stored(Bytes::new()),
            at: 0,
            scratch: Vec::new(),
            zstd: None,
            inflate: None,
        })
    }

    fn compressed(codec: CompressionType, data: &[u8]) -> Vec<u8> {
        match codec {
            CompressionType::Snappy => snap::raw::Encoder::new().compress_vec(data).unwrap(),
            CompressionType::Zstd => zstd::bulk::compress(data, 3).unwrap(),
            CompressionType::Lz4 => lz4_flex::block::compress(data),
            CompressionType::Zlib => {
                use std::io::Write;
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            CompressionType::Lzo => unreachable!(),
        }
    }

    const CODECS: [CompressionType; 4] = [
        CompressionType::Snappy,
        CompressionType::Zstd,
        CompressionType::Lz4,
        CompressionType::Zlib,
    ];

    #[test]
    fn stored_and_compressed_chunks_read_back_in_order_whatever_the_reads_sizes() {
        let one: Vec<u8> = (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let two: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        for codec in CODECS {
            let mut stream = chunk(&compressed(codec, &one), false);
            stream.extend(chunk(&two, true));
            stream.extend(chunk(&compressed(codec, &two), false));
            let want: Vec<u8> = [&one[..], &two, &two].concat();
            for step in [1, 7, 4096, 100_000] {
                let mut r = reader(stream.clone(), Some(codec), 1 << 16);
                let mut got = Vec::new();
                let mut buf = vec![0; step];
                loop {
                    let n = r.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(got, want, "{codec:?}, reads of {step}");
            }
            // Filled in two parts, the first ending inside a chunk.
            let mut r = reader(stream.clone(), Some(codec), 1 << 16);
            let mut got = Vec::new();
            for part in [20_001, want.len() - 20_001] {
                let mut room = vec![MaybeUninit::uninit(); part];
                r.fill(&mut room).unwrap();
                got.extend(room.iter().map(|b| unsafe { b.assume_init() }));
            }
            assert_eq!(got, want, "{codec:?}, filled in two parts");
            let err = r.fill(&mut [MaybeUninit::uninit()]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        }
    }

    #[test]
    fn a_stream_without_compression_is_one_stored_chunk() {
        let mut r = reader(b"abcdef".to_vec(), None, 4);
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abcdef");
    }

    #[test]
    fn a_chunk_unfolding_past_the_block_size_is_refused_naming_its_byte() {
        let big = vec![7u8; 10_000];
        for codec in CODECS {
            let mut stream = chunk(b"xy", true);
            stream.extend(chunk(&compressed(codec, &big), false));
            let mut r = reader(stream, Some(codec), 4096);
            let err = r.read_to_end(&mut Vec::new()).unwrap_err().to_string();
            assert!(
                err.contains("chunk at byte 5 of the stream"),
                "{codec:?}: {err}"
            );
            // The same chunk within the limit reads.
            let mut r = reader(chunk(&compressed(codec, &big), false), Some(codec), 10_000);
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            assert_eq!(got, big, "{codec:?}");
        }
    }

    #[test]
    fn a_chunk_cut_short_is_an_error_not_a_panic() {
        for codec in CODECS {
            let full = chunk(&compressed(codec, &[1u8; 300]), false);
            for cut in [1, 2, 3, full.len() - 1] {
                let mut r = reader(full[..cut].to_vec(), Some(codec), 1 << 16);
                let err = r.read_to_end(&mut Vec::new()).unwrap_err().to_string();
                assert!(
                    err.contains("chunk at byte 0"),
                    "{codec:?} cut at {cut}: {err}"
                );
            }
            // A damaged body: an error too.
            let mut damaged_body = full.clone();
            for b in &mut damaged_body[3..] {
                *b ^= 0x5a;
            }
            let _ = reader(damaged_body, Some(codec), 1 << 16).read_to_end(&mut Vec::new());
        }
    }
}
