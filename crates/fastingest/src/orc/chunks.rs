//! Checks an ORC stream's compression chunks before `orc-rust` decompresses
//! them.
//!
//! Why: `orc-rust` sizes a Snappy chunk's output by the length the chunk
//! itself declares and fills that much with zeros first. A damaged or
//! crafted file can declare up to 4 GiB in a few bytes. The fuzzer's input
//! 777001:1546259, a 1 KB file, asked for 1.3 GB in its footer and killed
//! the process. The ORC format bounds each chunk by the file's compression
//! block size, so a longer claim is refused here, naming the bytes.

/// The block size when the postscript gives none (the ORC specification's
/// default).
pub(crate) const DEFAULT_BLOCK_SIZE: u64 = 256 * 1024;

/// The most a Snappy chunk may claim, whatever the postscript's block size
/// says: writers use 64 KiB to a few MiB, and a lying postscript must not
/// lift the bound.
const MOST_BLOCK_SIZE: u64 = 64 << 20;

/// What a Snappy chunk of a file with block size `block_size` (from its
/// postscript, if it gives one) may decompress to.
pub(crate) fn snappy_chunk_limit(block_size: Option<u64>) -> u64 {
    block_size
        .unwrap_or(DEFAULT_BLOCK_SIZE)
        .clamp(DEFAULT_BLOCK_SIZE, MOST_BLOCK_SIZE)
}

/// Whether the Snappy chunks of `stream` (a whole compressed stream: chunks
/// of a 3-byte header and a body) each declare at most `limit` bytes; the
/// problem otherwise, with the chunk's offset within `stream`. A stream cut
/// short is left for `orc-rust` to report.
pub(crate) fn check_snappy_chunks(stream: &[u8], limit: u64) -> Result<(), String> {
    let mut at = 0usize;
    while let Some(header) = stream.get(at..at + 3) {
        let header = u32::from_le_bytes([header[0], header[1], header[2], 0]);
        let original = header & 1 == 1;
        let len = (header >> 1) as usize;
        let body = at + 3;
        let Some(chunk) = stream.get(body..body + len) else {
            return Ok(());
        };
        if !original {
            if let Some(claimed) = snappy_length(chunk).filter(|&n| n > limit) {
                return Err(format!(
                    "a Snappy chunk at byte {at} of a stream says it holds {claimed} bytes, \
                     more than the file's compression blocks ({limit} bytes)"
                ));
            }
        }
        at = body + len;
    }
    Ok(())
}

/// The decompressed length a raw Snappy block declares (its leading
/// varint), if it reads.
fn snappy_length(block: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in block.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk: its 3-byte header, then `body`.
    fn chunk(body: &[u8], original: bool) -> Vec<u8> {
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
        assert_eq!(snappy_chunk_limit(None), DEFAULT_BLOCK_SIZE);
        assert_eq!(snappy_chunk_limit(Some(1 << 20)), 1 << 20);
        assert_eq!(snappy_chunk_limit(Some(1024)), DEFAULT_BLOCK_SIZE);
        assert_eq!(snappy_chunk_limit(Some(u64::MAX)), MOST_BLOCK_SIZE);
    }
}
