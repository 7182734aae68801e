//! A stripe footer's writer zone as `orc-rust` is handed it.
//!
//! Why: `orc-rust` 0.9 parses the zone named in every stripe footer with
//! `chrono-tz` and panics on a name it does not know (Java writers record
//! the JVM's zone, which can be a custom `GMT+08:00`), so such a file was
//! refused as "corrupt" whatever its columns. The ORC C++ reader (pyarrow's)
//! looks the zone up only to read a `timestamp`. So here such a footer is
//! handed to `orc-rust` without the zone when no `timestamp` is read, and
//! the read is refused naming the zone when one is (pyarrow refuses it too,
//! finding no zone file).

use std::io::Read;

use bytes::Bytes;
use orc_rust::compression::Compression;
use orc_rust::proto::StripeFooter;

use super::streams::StreamReader;

/// What a stripe's footer, `footer` as stored, is served to `orc-rust` as:
/// `None` as it is; else the footer without its writer zone (as a stored,
/// uncompressed chunk where the file is compressed). An error names a zone
/// that `chrono-tz` does not know when `reads_timestamps`. A footer that
/// does not decompress or decode is served as it is, for the checks that
/// report it.
pub(super) fn footer_for_orc_rust(
    footer: &Bytes,
    codec: Option<Compression>,
    chunk_limit: u64,
    reads_timestamps: bool,
) -> Result<Option<Bytes>, String> {
    use prost::Message;
    let chunk_limit = usize::try_from(chunk_limit).unwrap_or(usize::MAX);
    let mut decoded = Vec::new();
    if StreamReader::new(footer.clone(), codec, chunk_limit)
        .read_to_end(&mut decoded)
        .is_err()
    {
        return Ok(None);
    }
    let Ok(mut parsed) = StripeFooter::decode(decoded.as_slice()) else {
        return Ok(None);
    };
    let Some(zone) = parsed.writer_timezone.as_deref() else {
        return Ok(None);
    };
    if zone.parse::<chrono_tz::Tz>().is_ok() {
        return Ok(None);
    }
    if reads_timestamps {
        return Err(format!(
            "it was written in time zone {zone:?}, which the tz database does not name, so \
             its timestamp columns cannot be read (the other columns can)"
        ));
    }
    parsed.writer_timezone = None;
    let raw = parsed.encode_to_vec();
    Ok(Some(match codec {
        None => Bytes::from(raw),
        Some(_) => stored_chunk(&raw)?,
    }))
}

/// `raw` as one stored ("original") chunk of a compressed stream: a 3-byte
/// little-endian header of its length times 2, plus 1.
fn stored_chunk(raw: &[u8]) -> Result<Bytes, String> {
    let header = u32::try_from(raw.len())
        .ok()
        .filter(|&n| n < 1 << 23)
        .map(|n| (n << 1) | 1)
        .ok_or("its footer is too long for one chunk")?;
    let mut chunk = Vec::with_capacity(raw.len() + 3);
    chunk.extend_from_slice(&header.to_le_bytes()[..3]);
    chunk.extend_from_slice(raw);
    Ok(Bytes::from(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn footer(zone: Option<&str>) -> Vec<u8> {
        StripeFooter {
            writer_timezone: zone.map(str::to_string),
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn a_zone_chrono_tz_knows_or_none_is_served_as_it_is() {
        for zone in [Some("Asia/Taipei"), Some("CET"), Some("UTC"), None] {
            let bytes = Bytes::from(footer(zone));
            assert_eq!(footer_for_orc_rust(&bytes, None, 1 << 20, true), Ok(None));
        }
    }

    #[test]
    fn an_unknown_zone_is_left_out_unless_timestamps_are_read() {
        let bytes = Bytes::from(footer(Some("GMT+08:00")));
        let served = footer_for_orc_rust(&bytes, None, 1 << 20, false).unwrap();
        let served = StripeFooter::decode(served.unwrap().as_ref()).unwrap();
        assert_eq!(served.writer_timezone, None);
        let refused = footer_for_orc_rust(&bytes, None, 1 << 20, true).unwrap_err();
        assert!(refused.contains("\"GMT+08:00\""), "{refused}");
    }

    #[test]
    fn a_stored_chunk_has_its_length_in_the_header() {
        let chunk = stored_chunk(&[7; 300]).unwrap();
        assert_eq!(
            &chunk[..3],
            &[(300 * 2 + 1) as u8, ((300 * 2 + 1) >> 8) as u8, 0]
        );
        assert_eq!(chunk.len(), 303);
        assert!(stored_chunk(&vec![0; 1 << 23]).is_err());
    }

    #[test]
    fn bytes_that_are_no_footer_are_served_as_they_are() {
        let bytes = Bytes::from_static(b"\xff\xff\xff\xff");
        assert_eq!(footer_for_orc_rust(&bytes, None, 1 << 20, true), Ok(None));
    }
}
