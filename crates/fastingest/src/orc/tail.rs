//! The ORC file tail (postscript, footer, metadata) from one speculative
//! request, a second only when the tail is longer than the prefetch.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use orc_rust::reader::metadata::{read_metadata, FileMetadata};

use super::readers::TailChunks;
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

/// What the postscript says about the tail: its lengths and compression.
struct PostScriptInfo {
    /// Postscript + footer + metadata + the final length byte.
    tail_len: u64,
    /// Length of the postscript.
    ps_len: u64,
    /// Length of the footer, which lies just before the postscript.
    footer_len: u64,
}

/// Reads the postscript at the end of `tail` (the file's last bytes).
fn postscript(tail: &Bytes) -> Option<PostScriptInfo> {
    use prost::Message;
    let ps_len = *tail.last()? as u64;
    let ps_start = (tail.len() as u64).checked_sub(1 + ps_len)?;
    let postscript =
        orc_rust::proto::PostScript::decode(&tail[ps_start as usize..tail.len() - 1]).ok()?;
    let footer_len = postscript.footer_length?;
    // ORC 0.11 files have no metadata length; orc-rust then says so itself.
    let metadata_len = postscript.metadata_length.unwrap_or(0);
    Some(PostScriptInfo {
        tail_len: 1 + ps_len + footer_len + metadata_len,
        ps_len,
        footer_len,
    })
}

/// The type attributes in the footer, which `orc-rust` does not expose.
/// Best effort: a footer it could decode decodes here too.
fn type_attributes(
    tail: &Bytes,
    ps: &PostScriptInfo,
    metadata: &FileMetadata,
) -> Vec<Vec<(String, String)>> {
    use orc_rust::proto;
    use prost::Message;
    use std::io::Read;
    let n = tail.len() as u64;
    let decode = || -> Option<Vec<Vec<(String, String)>>> {
        let end = n.checked_sub(1 + ps.ps_len)?;
        let start = end.checked_sub(ps.footer_len)?;
        let (start, end) = (start as usize, end as usize);
        let mut footer = Vec::new();
        orc_rust::compression::Decompressor::new(
            tail.slice(start..end),
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
        cause: None,
    };
    if size == 0 {
        return Err(corrupt("the file is empty (0 bytes), not ORC".into()));
    }
    let mut bytes = tail.bytes;
    if bytes.ends_with(b"PAR1") {
        return Err(Error::WrongFormat {
            location: location.to_string(),
            expected: "ORC",
            detail: "it is a Parquet file (use read_parquet)".into(),
        });
    }
    let Some(ps) = postscript(&bytes) else {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(size.saturating_sub(bytes.len() as u64)..size),
            detail: "not an ORC file: no valid postscript at the end".into(),
            cause: None,
        });
    };
    if ps.tail_len > size {
        return Err(corrupt(format!(
            "the postscript gives a {}-byte tail, more than the file's {size} bytes",
            ps.tail_len
        )));
    }
    // A tail longer than the prefetch: one more request for the rest.
    let have = bytes.len() as u64;
    if ps.tail_len > have {
        let head = fetcher
            .fetch_range(source, size - ps.tail_len..size - have)
            .await?;
        let mut joined = BytesMut::with_capacity(head.len() + bytes.len());
        joined.extend_from_slice(&head);
        joined.extend_from_slice(&bytes);
        bytes = joined.freeze();
    }
    let mut reader = TailChunks {
        size,
        bytes: bytes.clone(),
    };
    let decoded =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_metadata(&mut reader)));
    match decoded {
        Ok(Ok(metadata)) => {
            let attributes = type_attributes(&bytes, &ps, &metadata);
            Ok(OrcTail {
                metadata: Arc::new(metadata),
                file_size: size,
                type_attributes: Arc::new(attributes),
            })
        }
        Ok(Err(e)) => Err(match super::from_orc(location, e) {
            Error::Corrupt { detail, cause, .. } => Error::Corrupt {
                location: location.to_string(),
                range: Some(size - bytes.len() as u64..size),
                detail: format!("not a valid ORC file tail: {detail}"),
                cause,
            },
            other => other,
        }),
        Err(_) => Err(corrupt("corrupt file tail (the decoder gave up)".into())),
    }
}
