//! Reading ORC through the same planner, fetcher and cache as Parquet.
//!
//! The file tail (postscript, footer, metadata) comes from one speculative
//! tail request (a second only for a longer tail) and is decoded by
//! `orc-rust`. The selected stripes' footers are fetched next (small,
//! parallel), which tells where each column stream lies; the streams of the
//! projected columns become the plan's byte ranges, fetched with the usual
//! coalescing, slicing and bounded parallelism. `orc-rust` then decodes each
//! stripe from those buffers (through [`chunks::SpanReader`]), on the blocking
//! pool, while later stripes are still on the wire. It never issues requests
//! of its own.

mod chunks;
mod read;
mod tail;

pub use read::{plan_orc, read_orc, read_orc_metadata, PreparedOrc};
pub use tail::{read_tail, OrcTail};

use crate::error::Error;

/// An `orc-rust` error as ours: damaged data unless it says otherwise.
pub(crate) fn from_orc(location: &str, e: orc_rust::error::OrcError) -> Error {
    let detail = e.to_string();
    let lower = detail.to_ascii_lowercase();
    if lower.contains("unsupported")
        || lower.contains("not supported")
        || lower.contains("not yet implemented")
    {
        Error::Unsupported {
            location: location.to_string(),
            detail,
        }
    } else {
        Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail,
        }
    }
}
