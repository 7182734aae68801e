#![warn(missing_docs)]
//! # fastingest
//!
//! Planned, sliced, parallel reads of Parquet and ORC from local disk and
//! object storage (S3, GCS, Azure, HTTP) into Arrow `RecordBatch`es.
//!
//! A read resolves its sources (paths, URLs, globs), fetches each footer with
//! one speculative tail request, selects columns and row groups (by index or
//! by filter statistics), and turns that into a [`plan::FilePlan`]: the byte
//! ranges of the needed column chunks, coalesced across small holes and split
//! into slices. A [`fetch::Fetcher`] runs the slices with bounded concurrency
//! and memory, retrying transient failures, and row groups are decoded as
//! soon as their bytes are in, while later ones are still being fetched.
//! With a [`Cache`] in the read options, every remote range is looked up on
//! local disk first, and what is fetched is kept for the next epoch.
//!
//! ```no_run
//! # async fn demo() -> fastingest::Result<()> {
//! use fastingest::{read_parquet, ReadOptions};
//! let options = ReadOptions {
//!     columns: Some(vec!["id".into(), "value".into()]),
//!     ..Default::default()
//! };
//! let table = read_parquet(&["s3://bucket/data/*.parquet".to_string()], &options).await?;
//! println!("{} rows, stats: {:?}", table.num_rows(), options.stats.snapshot());
//! # Ok(()) }
//! ```

pub(crate) mod blocks;
pub mod cache;
pub mod clients;
pub mod config;
pub(crate) mod dataset;
pub mod error;
pub(crate) mod fetch;
pub mod filter;
pub mod gpu;
pub mod io;
pub(crate) mod known;
pub(crate) mod link;
pub mod memory;
pub(crate) mod nontemporal;
pub mod orc;
pub mod parquet;
pub(crate) mod pipeline;
pub mod plan;
pub(crate) mod request;
pub mod reuse;
pub mod rows;
pub mod runtime;
pub(crate) mod simd;
pub mod source;
pub mod stats;
pub(crate) mod utf8;

// The entry points and the types they take and return: a service needs
// nothing else. The public modules hold the types these name (and the
// binding's helpers: the shared runtime, the object-store clients).
pub use cache::{Cache, CacheInfo, CacheOptions, Validate};
pub use clients::StorageOptions;
pub use config::{Config, LocalDisk};
pub use dataset::Partitioning;
pub use error::{Error, Result};
pub use filter::{CmpOp, Filter, Predicate};
pub use gpu::{cuda_available, cuda_device_count};
pub use orc::{
    open_orc_units, plan_orc, read_orc, read_orc_metadata, read_orc_stripes, stream_orc,
    OrcMetadata, OrcTail, PreparedOrc, StripeMeta, StripeSet,
};
pub use parquet::{
    open_parquet_units, plan_chunks, plan_parquet, read_chunks, read_metadata, read_parquet,
    stream_parquet, BinaryType, ChunkSet, Footer, ParquetMetadata, PreparedFile,
};
pub use pipeline::{BatchStream, ReadOptions, Table, UnitInfo, Units};
pub use stats::{ReadStats, StatsSnapshot};
