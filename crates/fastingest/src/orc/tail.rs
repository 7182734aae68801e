//! The ORC file tail (postscript, footer, metadata) from one speculative
//! request, a second only when the tail is longer than the prefetch.

use std::sync::Arc;

use bytes::Bytes;
use orc_rust::reader::metadata::{read_metadata, FileMetadata};

use super::chunks::{chunk_limit, ChunkCheck, MOST_BLOCK_SIZE};
use super::readers::TailChunks;
use crate::error::{Error, Result};
use crate::fetch::{Beside, Fetcher, FooterRound};
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
    /// How the compression chunks of its streams are checked before they
    /// are decompressed (see [`super::chunks`]); `None` for codecs that are
    /// not.
    pub(crate) chunk_check: Option<ChunkCheck>,
    /// The most a compression chunk of its streams may unfold to.
    pub(crate) chunk_limit: u64,
}

/// What the postscript says about the tail: its lengths and compression.
struct PostScriptInfo {
    /// Postscript + footer + metadata + the final length byte.
    tail_len: u64,
    /// Length of the postscript.
    ps_len: u64,
    /// Length of the footer, which lies just before the postscript.
    footer_len: u64,
    /// Length of the metadata section, which lies just before the footer
    /// (0 where the postscript gives none, as ORC 0.11's do not).
    metadata_len: u64,
    /// Whether the postscript gives that length.
    gives_metadata_len: bool,
    /// How its compression chunks are checked.
    chunk_check: Option<ChunkCheck>,
    /// The compression block size the postscript gives, if any.
    block_size: Option<u64>,
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
        metadata_len,
        gives_metadata_len: postscript.metadata_length.is_some(),
        chunk_check: ChunkCheck::for_file(
            postscript.compression(),
            postscript.compression_block_size,
        ),
        block_size: postscript.compression_block_size,
    })
}

/// `tail` with a postscript that gives a metadata length of 0 where it gives
/// none (ORC 0.11 files have no metadata section, and `orc-rust` 0.9 wants
/// the length), and how much longer the tail grew: as if the file ended that
/// much later, so that the footer stays where it is. `None`: the postscript
/// gives one.
fn with_metadata_length(tail: &Bytes, ps: &PostScriptInfo) -> Option<(Bytes, u64)> {
    use prost::Message;
    if ps.gives_metadata_len {
        return None;
    }
    let end = tail.len().checked_sub(1 + ps.ps_len as usize)?;
    let mut postscript = orc_rust::proto::PostScript::decode(&tail[end..tail.len() - 1]).ok()?;
    postscript.metadata_length = Some(0);
    let encoded = postscript.encode_to_vec();
    let length = u8::try_from(encoded.len()).ok()?;
    let longer = (encoded.len() as u64).checked_sub(ps.ps_len)?;
    let mut patched = Vec::with_capacity(end + encoded.len() + 1);
    patched.extend_from_slice(&tail[..end]);
    patched.extend_from_slice(&encoded);
    patched.push(length);
    Some((Bytes::from(patched), longer))
}

/// What is wrong with the compression chunks of the tail's footer and
/// metadata sections (`tail` ends with the postscript), if anything; checked
/// before anything decompresses them.
fn tail_chunk_problem(tail: &Bytes, ps: &PostScriptInfo) -> Option<String> {
    if let Some(size) = ps.block_size.filter(|&s| s > MOST_BLOCK_SIZE) {
        return Some(format!(
            "the postscript gives {size}-byte compression blocks, more than {MOST_BLOCK_SIZE}"
        ));
    }
    let check = ps.chunk_check?;
    let footer_end = (tail.len() as u64).checked_sub(1 + ps.ps_len)?;
    let footer_start = footer_end.checked_sub(ps.footer_len)?;
    let metadata_start = footer_start.checked_sub(ps.metadata_len)?;
    [
        ("metadata", metadata_start..footer_start),
        ("footer", footer_start..footer_end),
    ]
    .into_iter()
    .find_map(|(section, range)| {
        let bytes = &tail[range.start as usize..range.end as usize];
        check
            .check(bytes)
            .err()
            .map(|problem| format!("{section}: {problem}"))
    })
}

/// Nesting deeper than this is refused (real schemas nest a few levels; the
/// decoder recurses once per level).
const MAX_TYPE_DEPTH: usize = 256;

/// What is wrong with the footer's type tree, if anything: every subtype
/// id must be greater than its parent's (ORC numbers types in pre-order),
/// within the list, and used once; the nesting at most [`MAX_TYPE_DEPTH`].
/// `None` also when the footer does not decode: orc-rust reports that.
fn type_tree_problem(footer: Option<&orc_rust::proto::Footer>) -> Option<String> {
    let types = &footer?.types;
    let n = types.len();
    let mut depth = vec![0usize; n];
    let mut used = vec![false; n];
    for (id, ty) in types.iter().enumerate() {
        if let Some(name) = ty.field_names.iter().find(|n| n.contains('\0')) {
            // Arrow's C interface (how tables reach Python) has C-string names.
            return Some(format!(
                "type {id} has a field named {name:?} (a NUL byte in it)"
            ));
        }
        if ty.kind() == orc_rust::proto::r#type::Kind::Decimal {
            // Arrow (and so every reader of the result) needs 1..=38 digits.
            let (precision, scale) = (ty.precision(), ty.scale());
            // (0, 0): Hive 0.11's decimal, each value of its own scale,
            // read at `decimals::HIVE_11` as pyarrow reads it.
            if (precision, scale) != (0, 0) && (!(1..=38).contains(&precision) || scale > precision)
            {
                return Some(format!(
                    "type {id} is a decimal of precision {precision} and scale {scale}"
                ));
            }
        }
        for &child in &ty.subtypes {
            let child = child as usize;
            if child <= id || child >= n || used[child] {
                return Some(format!(
                    "type {id} lists subtype {child}, which is not a later unused type of the {n}"
                ));
            }
            used[child] = true;
            // Parents come before children: their depth is final here.
            depth[child] = depth[id] + 1;
            if depth[child] > MAX_TYPE_DEPTH {
                return Some(format!("types nest deeper than {MAX_TYPE_DEPTH} levels"));
            }
        }
    }
    None
}

/// The footer message, decompressed with the postscript's codec, before
/// orc-rust sees it. orc-rust keeps its codec constructor to itself, so the
/// codec comes from reading a minimal tail with this postscript's
/// compression (one struct type, its footer stored as an uncompressed chunk,
/// which every codec allows).
fn footer_proto(tail: &Bytes, ps: &PostScriptInfo) -> Option<orc_rust::proto::Footer> {
    use orc_rust::proto;
    use prost::Message;
    let n = tail.len() as u64;
    let end = n.checked_sub(1 + ps.ps_len)?;
    let postscript = proto::PostScript::decode(&tail[end as usize..(n - 1) as usize]).ok()?;
    if postscript.compression() == proto::CompressionKind::None {
        return decode_footer(tail, ps, None);
    }
    let root = proto::Type {
        kind: Some(proto::r#type::Kind::Struct as i32),
        ..Default::default()
    };
    let footer = proto::Footer {
        types: vec![root],
        ..Default::default()
    }
    .encode_to_vec();
    // An "original" chunk: its 3-byte header is the length shifted left
    // once with the lowest bit set.
    let header = ((footer.len() as u32) << 1) | 1;
    let mut minimal = header.to_le_bytes()[..3].to_vec();
    minimal.extend_from_slice(&footer);
    let small_ps = proto::PostScript {
        footer_length: Some(minimal.len() as u64),
        metadata_length: Some(0),
        ..postscript.clone()
    }
    .encode_to_vec();
    minimal.extend_from_slice(&small_ps);
    minimal.push(small_ps.len() as u8);
    let mut reader = TailChunks {
        size: minimal.len() as u64,
        bytes: Bytes::from(minimal),
    };
    let made =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_metadata(&mut reader)));
    decode_footer(tail, ps, made.ok()?.ok()?.compression())
}

/// The footer message of `tail`, decompressed with `compression`.
fn decode_footer(
    tail: &Bytes,
    ps: &PostScriptInfo,
    compression: Option<orc_rust::compression::Compression>,
) -> Option<orc_rust::proto::Footer> {
    use prost::Message;
    use std::io::Read;
    let end = (tail.len() as u64).checked_sub(1 + ps.ps_len)?;
    let start = end.checked_sub(ps.footer_len)?;
    let mut footer = Vec::new();
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        orc_rust::compression::Decompressor::new(
            tail.slice(start as usize..end as usize),
            compression,
            vec![],
        )
        .read_to_end(&mut footer)
    }));
    read.ok()?.ok()?;
    orc_rust::proto::Footer::decode(footer.as_slice()).ok()
}

/// The type attributes in the footer, which `orc-rust` does not expose
/// (none when the footer did not decode here).
fn type_attributes(footer: Option<&orc_rust::proto::Footer>) -> Vec<Vec<(String, String)>> {
    let Some(footer) = footer else {
        return Vec::new();
    };
    footer
        .types
        .iter()
        .map(|t| {
            t.attributes
                .iter()
                .map(|a| (a.key().to_string(), a.value().to_string()))
                .collect()
        })
        .collect()
}

/// `orc-rust` first reads this much of the end of a file, whatever the tail's
/// real length; the speculative request brings at least as much.
const ORC_FIRST_READ: u64 = 16 * 1024;

/// Reads and decodes the tail of `source`.
pub async fn read_tail(fetcher: &Fetcher, source: &Source) -> Result<OrcTail> {
    let location = source.location();
    let prefetch = fetcher.config().footer_prefetch.max(ORC_FIRST_READ);
    // On a slow link, a longer tail in case the metadata is long (many
    // stripes or columns).
    let beside = Beside::footer_of(fetcher, source, false);
    let FooterRound {
        tail, long_tail, ..
    } = fetcher
        .fetch_tail_and_beside(source, prefetch, beside)
        .await?;
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
    if tail.bytes.ends_with(b"PAR1") {
        return Err(Error::WrongFormat {
            location: location.to_string(),
            expected: "ORC",
            detail: "it is a Parquet file (use read_parquet)".into(),
        });
    }
    let Some(ps) = postscript(&tail.bytes) else {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(tail.start()..size),
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
    // A tail longer than the prefetch: the long tail, or one more request.
    let bytes = fetcher
        .tail_from(source, tail, long_tail, size - ps.tail_len)
        .await?
        .bytes;
    if let Some(problem) = tail_chunk_problem(&bytes, &ps) {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(size - bytes.len() as u64..size),
            detail: format!("not a valid ORC file tail: {problem}"),
            cause: None,
        });
    }
    // orc-rust builds the schema by recursion over the footer's type ids:
    // a cycle or a very deep chain there overflows the stack, which no
    // catch can stop, so the type tree is checked first.
    // Decoded once here: checked first, its type attributes kept after.
    let footer = footer_proto(&bytes, &ps);
    if let Some(problem) = type_tree_problem(footer.as_ref()) {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(size - bytes.len() as u64..size),
            detail: format!("not a valid ORC file tail: {problem}"),
            cause: None,
        });
    }
    let mut reader = match with_metadata_length(&bytes, &ps) {
        Some((bytes, longer)) => TailChunks {
            size: size + longer,
            bytes,
        },
        None => TailChunks {
            size,
            bytes: bytes.clone(),
        },
    };
    let decoded =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_metadata(&mut reader)));
    match decoded {
        Ok(Ok(metadata)) => {
            // The footer decoded before, or (should that have failed) now
            // with the codec orc-rust found.
            let footer = footer.or_else(|| decode_footer(&bytes, &ps, metadata.compression()));
            let attributes = type_attributes(footer.as_ref());
            Ok(OrcTail {
                metadata: Arc::new(metadata),
                file_size: size,
                type_attributes: Arc::new(attributes),
                chunk_check: ps.chunk_check,
                chunk_limit: chunk_limit(ps.block_size),
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
