//! Parquet: footer, projection, filters, planning and decoding.

pub mod chunks;
pub mod decode;
pub mod filter;
pub mod footer;
mod memo;
pub mod read;
pub mod select;

pub use chunks::{plan_chunks, read_chunks, ChunkLayout, ChunkMeta, ChunkPlan, ChunkSet};
pub use filter::{CmpOp, Filter, Predicate};
pub use footer::Footer;
pub use read::{
    plan_parquet, read_metadata, read_parquet, stream_parquet, BatchStream, PreparedFile,
    ReadOptions, Table,
};
