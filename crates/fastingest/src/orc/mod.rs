//! ORC through the same pipeline, planner, fetcher and cache as Parquet.
//!
//! The file tail (postscript, footer, metadata) comes from one speculative
//! tail request (a second only for a longer tail) and is decoded by
//! `orc-rust`. The selected stripes' footers are fetched next (small,
//! parallel), which tells where each column stream lies; the streams of the
//! projected columns become the plan's byte ranges, fetched with the usual
//! coalescing, slicing and bounded parallelism. Each stripe is then decoded
//! from those buffers (through [`readers`]'s `SpanReader`) on the decode
//! threads, while later stripes are still on the wire: the top-level columns
//! [`columns`] picks by fastingest's own decoders, the rest by `orc-rust`,
//! which never issues requests of its own.

mod booleans;
mod chunks;
mod columns;
mod decimals;
mod floats;
mod footer_zone;
mod format;
mod integers;
mod nested;
mod prune;
mod readers;
mod rle_v1;
mod streams;
mod strings;
mod stripes;
mod tail;
mod timestamps;
mod zone_files;
mod zones;

use orc_rust::error::OrcError;

pub use format::{OrcMetadata, PreparedOrc};
pub use stripes::{read_orc_stripes, StripeMeta, StripeSet};
pub use tail::OrcTail;

use crate::error::{Error, Result};
use crate::pipeline::{self, BatchStream, ReadOptions, Table, Units};
use format::Orc;

/// Reads ORC `sources` (paths, URLs, globs) into one table.
/// `options.row_groups` selects stripes (a single file only); `options.filter`
/// skips stripes whose statistics rule it out and keeps the matching rows.
pub async fn read_orc(sources: &[String], options: &ReadOptions) -> Result<Table> {
    pipeline::read::<Orc>(sources, options).await
}

/// Reads ORC `sources` as a stream of batches (every tail first, then each
/// file's stripes as their bytes arrive).
pub async fn stream_orc(sources: &[String], options: &ReadOptions) -> Result<BatchStream> {
    pipeline::stream::<Orc>(sources, options).await
}

/// Opens ORC `sources` for reading stripe by stripe, in any order: every
/// tail is read, no column data. The units are the stripes that
/// `options.filter`'s statistics leave.
pub async fn open_orc_units(sources: &[String], options: &ReadOptions) -> Result<Units> {
    Units::open::<Orc>(sources, options).await
}

/// Plans the reads of ORC `sources`: tails and stripe footers are fetched,
/// column data is not.
pub async fn plan_orc(sources: &[String], options: &ReadOptions) -> Result<Vec<PreparedOrc>> {
    pipeline::plan::<Orc>(sources, options, &options.fetcher()).await
}

/// The tails of ORC `sources`, for inspection.
pub async fn read_orc_metadata(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<OrcMetadata>> {
    pipeline::metadata::<Orc>(sources, options).await
}

/// An `orc-rust` error as ours: a type it cannot decode is unsupported,
/// anything else is damaged data.
pub(crate) fn from_orc(location: &str, e: OrcError) -> Error {
    match e {
        OrcError::UnsupportedTypeVariant { .. } => Error::Unsupported {
            location: location.to_string(),
            detail: e.to_string(),
            cause: Some(std::sync::Arc::new(e)),
        },
        other => Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail: other.to_string(),
            cause: Some(std::sync::Arc::new(other)),
        },
    }
}
