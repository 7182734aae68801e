//! A check of a column chunk's page headers before the decoder sees them.
//!
//! The `parquet` crate allocates a page's `uncompressed_page_size` before it
//! decompresses it, and that size comes from the file: a damaged or hostile
//! header claiming 2 GiB makes a 15 KB file allocate 2 GiB. This walks the
//! chunk's pages (their Thrift compact headers) and refuses sizes the page
//! cannot hold: a compressed size past the chunk's end, or an uncompressed
//! size beyond what the codec can expand the compressed bytes to.

use parquet::basic::Compression;

use super::thrift::{Compact, FALSE, I32, STRUCT, TRUE};

/// Why a chunk's pages were refused: what is wrong, and at which byte of
/// the chunk.
#[derive(Debug, PartialEq)]
pub(crate) struct BadPage {
    pub offset: usize,
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
/// `codec`) and refuses a header whose sizes the bytes cannot back.
pub(crate) fn check_pages(chunk: &[u8], codec: Compression) -> Result<(), BadPage> {
    let mut at = 0usize;
    while at < chunk.len() {
        let mut reader = Compact::new(&chunk[at..]);
        let header = page_header(&mut reader).map_err(|detail| BadPage {
            offset: at,
            detail: format!("unreadable page header: {detail}"),
        })?;
        let body = at + reader.pos;
        let bad = |detail: String| BadPage { offset: at, detail };
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
        at = body + compressed as usize;
    }
    Ok(())
}

/// What the check needs of a page header.
struct PageHeader {
    uncompressed: i64,
    compressed: i64,
    /// False only for a data page v2 that says its values are not compressed.
    is_compressed: bool,
}

fn page_header(r: &mut Compact) -> Result<PageHeader, String> {
    let mut header = PageHeader {
        uncompressed: -1,
        compressed: -1,
        is_compressed: true,
    };
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (2, I32) => header.uncompressed = r.zigzag()?,
            (3, I32) => header.compressed = r.zigzag()?,
            (8, STRUCT) => header.is_compressed = data_page_v2_is_compressed(r)?,
            (_, kind) => r.skip(kind, 1)?,
        }
    }
    if header.uncompressed < 0 && header.compressed < 0 {
        return Err("no page sizes".into());
    }
    Ok(header)
}

/// DataPageHeaderV2's `is_compressed` (field 7, default true).
fn data_page_v2_is_compressed(r: &mut Compact) -> Result<bool, String> {
    let mut compressed = true;
    let mut last = 0i16;
    while let Some((id, kind)) = r.field(&mut last)? {
        match (id, kind) {
            (7, TRUE) => compressed = true,
            (7, FALSE) => compressed = false,
            (_, kind) => r.skip(kind, 2)?,
        }
    }
    Ok(compressed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::ZstdLevel;

    /// A compact-protocol page header with the given sizes, then `body`.
    fn page(uncompressed: i64, compressed: i64, body: &[u8]) -> Vec<u8> {
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
        out.push(0x2c); // field 5, struct: a data page header
        out.extend([0x15, 0x02, 0x00]); // num_values 1, stop
        out.push(0x00);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn honest_pages_pass() {
        let mut chunk = page(100, 10, &[0; 10]);
        chunk.extend(page(5000, 100, &[0; 100]));
        let zstd = Compression::ZSTD(ZstdLevel::default());
        assert_eq!(check_pages(&chunk, zstd), Ok(()));
        assert_eq!(check_pages(&chunk, Compression::SNAPPY), Ok(()));
    }

    #[test]
    fn a_page_past_the_chunk_is_refused() {
        let chunk = page(100, 50, &[0; 10]);
        let bad = check_pages(&chunk, Compression::SNAPPY).unwrap_err();
        assert!(bad.detail.contains("has 10 left"), "{bad:?}");
    }

    #[test]
    fn a_size_the_codec_cannot_reach_is_refused() {
        let chunk = page(i32::MAX as i64, 100, &[0; 100]);
        let bad = check_pages(&chunk, Compression::SNAPPY).unwrap_err();
        assert!(bad.detail.contains("more than the codec"), "{bad:?}");
        // Small claims pass whatever the ratio; uncompressed chunks
        // allocate nothing from the claim.
        assert_eq!(
            check_pages(&page(1 << 19, 1, &[0]), Compression::SNAPPY),
            Ok(())
        );
        let plain = page(i32::MAX as i64, 1, &[0]);
        assert_eq!(check_pages(&plain, Compression::UNCOMPRESSED), Ok(()));
    }

    #[test]
    fn garbage_is_an_error_not_a_loop() {
        assert!(check_pages(&[0x19, 0xfc, 0xff, 0xff, 0xff, 0x7f], Compression::SNAPPY).is_err());
        assert!(check_pages(&[0x15], Compression::SNAPPY).is_err());
        let deep = [0x1c; 64];
        assert!(check_pages(&deep, Compression::SNAPPY).is_err());
        assert!(check_pages(&[0x00], Compression::SNAPPY).is_err());
    }
}
