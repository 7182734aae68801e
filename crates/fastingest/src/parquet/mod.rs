//! Parquet: footer, projection, statistics, planning and decoding, plugged
//! into the read pipeline; and raw column chunks.

mod binary_types;
mod bloom;
mod byte_arrays;
mod byte_stream_split;
pub mod chunks;
mod decode;
mod delta;
mod dictionaries;
mod flat;
mod footer;
mod format;
mod hybrid;
mod int96;
mod late;
mod leaf_paths;
mod level_masks;
pub(super) mod lists;
mod memo;
mod mistyped;
mod pages;
mod projected;
mod prune;
mod quirks;
mod select;
mod slabs;
mod structs;
mod summary;
mod thrift;
#[cfg(test)]
mod written;

use arrow_schema::SchemaRef;

pub use binary_types::BinaryType;
pub use chunks::{
    plan_chunks, read_chunks, ChunkFile, ChunkLayout, ChunkMeta, ChunkPlan, ChunkReceiver, ChunkSet,
};
pub use footer::Footer;
pub use format::{ParquetMetadata, PreparedFile};
pub use select::{OutputColumn, Projection};
pub(crate) use summary::SummaryFile;

use crate::error::Result;
use crate::pipeline::{self, BatchStream, ReadOptions, Table, Units};
use crate::source::Source;
use format::Parquet;

/// Reads Parquet `sources` (paths, URLs or globs) into one table.
pub async fn read_parquet(sources: &[String], options: &ReadOptions) -> Result<Table> {
    pipeline::read::<Parquet>(sources, options).await
}

/// Reads Parquet `sources` as a stream of batches: every footer first (so
/// that the schema is known and checked), then each file's row groups
/// decoded as their bytes arrive, with the next files' fetch already started.
pub async fn stream_parquet(sources: &[String], options: &ReadOptions) -> Result<BatchStream> {
    pipeline::stream::<Parquet>(sources, options).await
}

/// Opens Parquet `sources` for reading row group by row group, in any
/// order (the reader under `fastingest.torch` and the Ray and Dask read
/// tasks): every footer is read, no column data. The units are the row
/// groups that `options.filter`'s statistics leave.
pub async fn open_parquet_units(sources: &[String], options: &ReadOptions) -> Result<Units> {
    Units::open::<Parquet>(sources, options).await
}

/// Plans the read of `sources` without fetching column data (footers, and
/// the bloom filters a filter looks its values up in).
pub async fn plan_parquet(sources: &[String], options: &ReadOptions) -> Result<Vec<PreparedFile>> {
    pipeline::plan::<Parquet>(sources, options, &options.fetcher()).await
}

/// Footers of `sources`, for inspection (`options.columns`, `row_groups`
/// and `filter` are not used).
pub async fn read_metadata(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<(Source, Footer, SchemaRef)>> {
    pipeline::metadata::<Parquet>(sources, options).await
}
