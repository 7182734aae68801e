//! Checks an ORC stream's compression chunks before `orc-rust` decompresses
//! them.
//!
//! Why: `orc-rust` sizes a Snappy chunk's output by the length the chunk
//! itself declares and fills that much with zeros first. A damaged or
//! crafted file can declare up to 4 GiB in a few bytes. The fuzzer's input
//! 777001:1546259, a 1 KB file, asked for 1.3 GB in its footer and killed
//! the process. A zstd chunk is decompressed to its end whatever it holds,
//! and its blocks can repeat one byte 128 KiB at a time: an 8 MiB chunk can
//! unfold to hundreds of GB; zstd's own bound says how far it can go. The ORC format bounds each chunk by the file's
//! compression block size, so a chunk that claims or can unfold to more is
//! refused here, naming the bytes. (Zlib streams say nothing of their size
//! short of decompressing them, which would double the decode's work; they
//! are left to `orc-rust`.)

/// The block size when the postscript gives none (the ORC specification's
/// default).
pub(crate) const DEFAULT_BLOCK_SIZE: u64 = 256 * 1024;

/// The largest compression block size a postscript may give: writers use
/// 64 KiB to a few MiB. `orc-rust` allocates a whole block for each LZ4
/// chunk, so a lying postscript could otherwise make every chunk gigabytes.
pub(crate) const MOST_BLOCK_SIZE: u64 = 64 << 20;

/// The most a zstd block regenerates (its format's `Block_Maximum_Size`).
const ZSTD_BLOCK_MOST: u64 = 128 << 10;

/// The most a compression chunk of a file whose postscript gives
/// `block_size` (if any) may unfold to.
pub(crate) fn chunk_limit(block_size: Option<u64>) -> u64 {
    block_size
        .unwrap_or(DEFAULT_BLOCK_SIZE)
        .clamp(DEFAULT_BLOCK_SIZE, MOST_BLOCK_SIZE)
}

/// The codecs whose chunks say enough about their size to be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// A chunk declares its length in its first varint.
    Snappy,
    /// A chunk is zstd frames, whose block headers bound what they unfold to.
    Zstd,
}

/// How the chunks of one file's streams are checked: the codec, and the
/// most a chunk may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkCheck {
    pub codec: Checked,
    pub limit: u64,
}

impl ChunkCheck {
    /// The check for a file of `codec` whose postscript gives `block_size`
    /// (if any); `None` for codecs left to `orc-rust`.
    pub(crate) fn for_file(
        codec: orc_rust::proto::CompressionKind,
        block_size: Option<u64>,
    ) -> Option<ChunkCheck> {
        use orc_rust::proto::CompressionKind;
        let codec = match codec {
            CompressionKind::Snappy => Checked::Snappy,
            CompressionKind::Zstd => Checked::Zstd,
            _ => return None,
        };
        Some(ChunkCheck {
            codec,
            limit: chunk_limit(block_size),
        })
    }

    /// Whether the chunks of `stream` (a whole compressed stream: chunks of
    /// a 3-byte header and a body) each hold at most the limit; the problem
    /// otherwise, with the chunk's offset within `stream`. A stream cut
    /// short is left for `orc-rust` to report.
    pub(crate) fn check(&self, stream: &[u8]) -> Result<(), String> {
        match self.codec {
            Checked::Snappy => check_snappy_chunks(stream, self.limit),
            Checked::Zstd => check_zstd_chunks(stream, self.limit),
        }
    }
}

/// The compressed chunks of `stream`, each with its offset.
fn compressed_chunks(stream: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || loop {
        let header = stream.get(at..at + 3)?;
        let header = u32::from_le_bytes([header[0], header[1], header[2], 0]);
        let (start, body) = (at, at + 3);
        let chunk = stream.get(body..body + (header >> 1) as usize)?;
        at = body + chunk.len();
        if header & 1 == 0 {
            return Some((start, chunk));
        }
    })
}

/// [`ChunkCheck::check`] for Snappy: each chunk's declared length (what
/// `orc-rust` sizes its output by). A length that does not read is left to
/// the decoder, which refuses it before allocating.
fn check_snappy_chunks(stream: &[u8], limit: u64) -> Result<(), String> {
    for (at, chunk) in compressed_chunks(stream) {
        let claimed = snap::raw::decompress_len(chunk).map_or(0, |n| n as u64);
        if claimed > limit {
            return Err(format!(
                "a Snappy chunk at byte {at} of a stream says it holds {claimed} bytes, \
                 more than the file's compression blocks ({limit} bytes)"
            ));
        }
    }
    Ok(())
}

/// [`ChunkCheck::check`] for zstd: what each chunk's frames can unfold to,
/// by zstd's own bound (`ZSTD_decompressBound`: a frame's declared content
/// size, which its decoder holds it to, or else its blocks at 128 KiB
/// each). A writer fills its blocks to 128 KiB but the last, so an honest
/// chunk's bound exceeds the limit by less than one block. A chunk that is
/// not whole frames is refused too: the decoder would unfold the frames
/// before the damage first.
fn check_zstd_chunks(stream: &[u8], limit: u64) -> Result<(), String> {
    for (at, chunk) in compressed_chunks(stream) {
        match zstd::zstd_safe::decompress_bound(chunk) {
            Ok(most) if most <= limit + ZSTD_BLOCK_MOST => {}
            Ok(most) => {
                return Err(format!(
                    "a zstd chunk at byte {at} of a stream unfolds to as many as {most} bytes, \
                     more than the file's compression blocks ({limit} bytes)"
                ))
            }
            Err(_) => {
                return Err(format!(
                    "a zstd chunk at byte {at} of a stream is not whole zstd frames"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A chunk: its 3-byte header, then `body` (`original`: stored as it
    /// is). The stream reader's tests build theirs with it too.
    pub(in crate::orc) fn chunk(body: &[u8], original: bool) -> Vec<u8> {
        let header = ((body.len() as u32) << 1) | u32::from(original);
        let mut out = header.to_le_bytes()[..3].to_vec();
        out.extend_from_slice(body);
        out
    }

    fn snappy(data: &[u8]) -> Vec<u8> {
        snap::raw::Encoder::new().compress_vec(data).unwrap()
    }

    #[test]
    fn honest_chunks_pass_and_a_long_claim_is_refused_where_it_is() {
        let block = vec![7u8; 200_000];
        let mut stream = chunk(&snappy(&block), false);
        stream.extend(chunk(b"raw bytes, stored as they are", true));
        assert_eq!(check_snappy_chunks(&stream, DEFAULT_BLOCK_SIZE), Ok(()));
        // The same block is more than a 64 KiB limit.
        let refused = check_snappy_chunks(&stream, 64 * 1024).unwrap_err();
        assert!(refused.contains("at byte 0 "), "{refused}");
        assert!(refused.contains("200000 bytes"), "{refused}");
        // A chunk claiming 1.3 GB in a 5-byte varint, after an honest one.
        let lying = [0x80u8 | 0x4e, 0xe2, 0xc3, 0x82, 0x05, 0x00];
        let first = stream.len();
        stream.extend(chunk(&lying, false));
        let refused = check_snappy_chunks(&stream, DEFAULT_BLOCK_SIZE).unwrap_err();
        assert!(refused.contains(&format!("at byte {first} ")), "{refused}");
        // An original (stored) chunk is never decompressed: any length.
        assert_eq!(check_snappy_chunks(&chunk(&lying, true), 1), Ok(()));
    }

    #[test]
    fn streams_cut_short_are_left_to_the_decoder() {
        let whole = chunk(&snappy(&[1u8; 1000]), false);
        for cut in 0..whole.len() {
            assert_eq!(
                check_snappy_chunks(&whole[..cut], DEFAULT_BLOCK_SIZE),
                Ok(())
            );
        }
    }

    #[test]
    fn the_limit_follows_the_block_size_within_bounds() {
        use orc_rust::proto::CompressionKind;
        let limit = |size| {
            ChunkCheck::for_file(CompressionKind::Snappy, size)
                .unwrap()
                .limit
        };
        assert_eq!(limit(None), DEFAULT_BLOCK_SIZE);
        assert_eq!(limit(Some(1 << 20)), 1 << 20);
        assert_eq!(limit(Some(1024)), DEFAULT_BLOCK_SIZE);
        assert_eq!(limit(Some(u64::MAX)), MOST_BLOCK_SIZE);
        let zstd = ChunkCheck::for_file(CompressionKind::Zstd, None).unwrap();
        assert_eq!(zstd.codec, Checked::Zstd);
        assert_eq!(ChunkCheck::for_file(CompressionKind::Zlib, None), None);
        assert_eq!(ChunkCheck::for_file(CompressionKind::None, None), None);
    }

    /// A zstd frame (no content size, a window byte) of `blocks`, each a
    /// block type and size, with one content byte for RLE blocks and `size`
    /// bytes for raw ones.
    fn zstd_frame(blocks: &[(u32, u32)]) -> Vec<u8> {
        let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58];
        for (i, &(kind, size)) in blocks.iter().enumerate() {
            let last = u32::from(i + 1 == blocks.len());
            let header = last | (kind << 1) | (size << 3);
            out.extend_from_slice(&header.to_le_bytes()[..3]);
            out.extend(std::iter::repeat_n(
                b'z',
                if kind == 1 { 1 } else { size as usize },
            ));
        }
        out
    }

    #[test]
    fn zstd_chunks_are_bounded_by_zstds_own_bound() {
        let zstd = |limit| ChunkCheck {
            codec: Checked::Zstd,
            limit,
        };
        // What a writer makes: a full 256 KiB block of text, compressed.
        let text: Vec<u8> = (0..DEFAULT_BLOCK_SIZE as usize)
            .map(|i| (i % 251) as u8)
            .collect();
        let honest = chunk(&zstd::bulk::compress(&text, 3).unwrap(), false);
        assert_eq!(zstd(DEFAULT_BLOCK_SIZE).check(&honest), Ok(()));
        // Without a declared size every block counts at its most, across
        // frames: three blocks are within 256 KiB and one block of slack.
        let two = [zstd_frame(&[(0, 10), (1, 1000)]), zstd_frame(&[(1, 5)])].concat();
        assert_eq!(
            zstd::zstd_safe::decompress_bound(&two),
            Ok(3 * ZSTD_BLOCK_MOST)
        );
        assert_eq!(zstd(DEFAULT_BLOCK_SIZE).check(&chunk(&two, false)), Ok(()));
        assert!(zstd(DEFAULT_BLOCK_SIZE - 1)
            .check(&chunk(&two, false))
            .is_err());
        // A bomb: RLE blocks of 128 KiB, each one byte on disk.
        let bomb = chunk(&zstd_frame(&[(1, 128 << 10); 40]), false);
        let mut stream = honest.clone();
        stream.extend(&bomb);
        let refused = zstd(DEFAULT_BLOCK_SIZE).check(&stream).unwrap_err();
        assert!(
            refused.contains(&format!("a zstd chunk at byte {} ", honest.len())),
            "{refused}"
        );
        assert!(
            refused.contains(&format!("{} bytes", 40 * (128 << 10))),
            "{refused}"
        );
        // Stored chunks are never decompressed: left alone.
        let frames = zstd_frame(&[(1, 128 << 10); 40]);
        assert_eq!(zstd(1).check(&chunk(&frames, true)), Ok(()));
        // Bytes that are not whole frames are refused: a bomb with its last
        // byte cut would still unfold before the decoder noticed the cut.
        for damaged in [&b"not a zstd frame"[..], &frames[..frames.len() - 1]] {
            let refused = zstd(DEFAULT_BLOCK_SIZE)
                .check(&chunk(damaged, false))
                .unwrap_err();
            assert!(refused.contains("is not whole zstd frames"), "{refused}");
        }
    }
}
