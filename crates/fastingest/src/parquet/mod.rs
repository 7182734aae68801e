//! Parquet: footer, projection, statistics, planning and decoding, plugged
//! into the read pipeline; and raw column chunks.

pub mod chunks;
mod decode;
mod footer;
mod format;
mod memo;
mod prune;
mod select;

use arrow_schema::SchemaRef;

pub use chunks::{
    plan_chunks, read_chunks, ChunkFile, ChunkLayout, ChunkMeta, ChunkPlan, ChunkReceiver, ChunkSet,
};
pub use footer::Footer;
pub use format::{ParquetMetadata, PreparedFile};
pub use select::{OutputColumn, Projection};

use crate::error::Result;
use crate::pipeline::{self, BatchStream, ReadOptions, Table, UnitInfo};
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

/// A Parquet dataset opened for reading row group by row group, in any
/// order: the reader under the training loader (`fastingest.torch`).
pub struct ParquetUnits(pipeline::UnitReader<Parquet>);

impl ParquetUnits {
    /// Resolves `sources` and reads every footer (no column data). The units
    /// are the row groups that `options.filter`'s statistics leave.
    pub async fn open(sources: &[String], options: &ReadOptions) -> Result<Self> {
        pipeline::UnitReader::open(sources, options)
            .await
            .map(ParquetUnits)
    }

    /// The schema of every batch (partition keys included).
    pub fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    /// The row groups, in file order.
    pub fn units(&self) -> &[UnitInfo] {
        self.0.units()
    }

    /// The files' locations, in dataset order.
    pub fn locations(&self) -> Vec<String> {
        self.0.locations()
    }

    /// Streams row groups `order` (positions in [`units`](Self::units)) as
    /// one filtered batch each, in that order, fetching ahead of the
    /// consumer within `ahead_bytes`. Call it on the runtime.
    pub fn stream(&self, order: Vec<usize>, ahead_bytes: u64) -> Result<BatchStream> {
        self.0.stream(order, ahead_bytes)
    }
}

/// Plans the read of `sources` without fetching column data (footers only).
pub async fn plan_parquet(sources: &[String], options: &ReadOptions) -> Result<Vec<PreparedFile>> {
    pipeline::plan::<Parquet>(sources, options).await
}

/// Footers of `sources`, for inspection (`options.columns`, `row_groups`
/// and `filter` are not used).
pub async fn read_metadata(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<(Source, Footer, SchemaRef)>> {
    pipeline::metadata::<Parquet>(sources, options).await
}
