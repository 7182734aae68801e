//! The ORC file tail (postscript, footer, metadata) from one speculative
//! request, a second only when the tail is longer than the prefetch.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use orc_rust::reader::metadata::{read_metadata, FileMetadata};

use super::chunks::{TailChunks, NEED_MORE};
use crate::error::{Error, Result};
use crate::fetch::Fetcher;
use crate::source::Source;

/// A decoded ORC tail.
#[derive(Debug, Clone)]
pub struct OrcTail {
    /// Schema, stripes, statistics, compression.
    pub metadata: Arc<FileMetadata>,
    /// The file's size in bytes.
    pub file_size: u64,
    /// Each ORC type's attributes (key, value), by type id: writers such as
    /// Iceberg and Spark put field ids and masks there; pyarrow shows them
    /// as field metadata.
    pub type_attributes: Arc<Vec<Vec<(String, String)>>>,
}

/// The type attributes in the footer, which `orc-rust` does not expose.
/// Best effort: a footer it could decode decodes here too.
fn type_attributes(tail: &Bytes, metadata: &FileMetadata) -> Vec<Vec<(String, String)>> {
    use orc_rust::proto;
    use prost::Message;
    use std::io::Read;
    let decode = || -> Option<Vec<Vec<(String, String)>>> {
        let ps_len = *tail.last()? as usize;
        let ps_start = tail.len().checked_sub(1 + ps_len)?;
        let ps = proto::PostScript::decode(&tail[ps_start..tail.len() - 1]).ok()?;
        let footer_len = ps.footer_length? as usize;
        let footer_start = ps_start.checked_sub(footer_len)?;
        let mut footer = Vec::new();
        orc_rust::compression::Decompressor::new(
            tail.slice(footer_start..ps_start),
            metadata.compression(),
            vec![],
        )
        .read_to_end(&mut footer)
        .ok()?;
        let footer = proto::Footer::decode(footer.as_slice()).ok()?;
        Some(
            footer
                .types
                .iter()
                .map(|t| {
                    t.attributes
                        .iter()
                        .map(|a| (a.key().to_string(), a.value().to_string()))
                        .collect()
                })
                .collect(),
        )
    };
    decode().unwrap_or_default()
}

/// `orc-rust` first reads this much of the end of a file, whatever the tail's
/// real length; the speculative request brings at least as much.
const ORC_FIRST_READ: u64 = 16 * 1024;

/// Reads and decodes the tail of `source`.
pub async fn read_tail(fetcher: &Fetcher, source: &Source) -> Result<OrcTail> {
    let location = source.location();
    let prefetch = fetcher.config().footer_prefetch.max(ORC_FIRST_READ);
    let tail = fetcher.fetch_tail(source, prefetch).await?;
    let size = tail.size;
    let corrupt = |detail: String| Error::Corrupt {
        location: location.to_string(),
        range: Some(0..size),
        detail,
    };
    if size == 0 {
        return Err(corrupt("the file is empty (0 bytes), not ORC".into()));
    }
    let mut bytes = tail.bytes;
    // At most one more request: the first attempt says where the tail starts.
    for _ in 0..2 {
        let mut reader = TailChunks {
            size,
            bytes: bytes.clone(),
        };
        let decoded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_metadata(&mut reader)));
        match decoded {
            Ok(Ok(metadata)) => {
                let attributes = type_attributes(&bytes, &metadata);
                return Ok(OrcTail {
                    metadata: Arc::new(metadata),
                    file_size: size,
                    type_attributes: Arc::new(attributes),
                });
            }
            Ok(Err(e)) => {
                let text = e.to_string();
                let Some(offset) = text
                    .split(NEED_MORE)
                    .nth(1)
                    .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    return Err(not_orc(location, size, &bytes, e));
                };
                let start = size - bytes.len() as u64;
                let head = fetcher.fetch_range(source, offset..start).await?;
                let mut joined = BytesMut::with_capacity(head.len() + bytes.len());
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&bytes);
                bytes = joined.freeze();
            }
            Err(_) => return Err(corrupt("corrupt file tail (the decoder gave up)".into())),
        }
    }
    Err(corrupt("the file tail is longer than it says".into()))
}

/// A tail `orc-rust` rejected: say whether the file is ORC at all.
fn not_orc(location: &str, size: u64, tail: &Bytes, e: orc_rust::error::OrcError) -> Error {
    if tail.ends_with(b"PAR1") {
        return Error::Corrupt {
            location: location.to_string(),
            range: Some(size.saturating_sub(4)..size),
            detail: "this is a Parquet file, not ORC (use read_parquet)".into(),
        };
    }
    match super::from_orc(location, e) {
        Error::Corrupt { detail, .. } => Error::Corrupt {
            location: location.to_string(),
            range: Some(size.saturating_sub(tail.len() as u64)..size),
            detail: format!("not a valid ORC file tail: {detail}"),
        },
        other => other,
    }
}
