//! ORC's statistics for filters: each stripe's minimum and maximum of a
//! column, from the file's metadata section (already fetched with the tail).
//!
//! Only integer and date statistics are used. Double statistics leave NaN
//! out while Arrow's comparisons order NaN above every number (a stripe of
//! NaNs could be wrongly skipped for `x > 5`), and string statistics from
//! older writers were ordered by UTF-16 code units, not bytes; pruning must
//! never drop a row the filter keeps, so those stripes are read and the rows
//! filtered after decoding.

use std::sync::Arc;

use arrow_array::{ArrayRef, Date32Array, Int64Array};
use orc_rust::reader::metadata::FileMetadata;
use orc_rust::schema::DataType;
use orc_rust::statistics::TypeStatistics;

use crate::filter::{Filter, Predicate};

/// For each stripe of the file, whether its statistics allow a match.
pub(crate) fn prune_stripes(filter: &Filter, meta: &FileMetadata) -> Vec<bool> {
    filter.prune(meta.stripe_metadatas().len(), |p| stripe_min_max(meta, p))
}

/// Every stripe's minimum and maximum of `p`'s column (nulls where a stripe
/// has no statistics for it), when the column's type allows pruning.
fn stripe_min_max(meta: &FileMetadata, p: &Predicate) -> Option<(ArrayRef, ArrayRef)> {
    let column = meta
        .root_data_type()
        .children()
        .iter()
        .find(|c| c.name() == p.column)?;
    let id = column.data_type().column_index();
    let stats = meta.stripe_metadatas().iter().map(|s| {
        s.column_statistics()
            .get(id)
            .and_then(|c| c.type_statistics())
    });
    match column.data_type() {
        DataType::Byte { .. }
        | DataType::Short { .. }
        | DataType::Int { .. }
        | DataType::Long { .. } => {
            let (mins, maxes): (Vec<Option<i64>>, Vec<Option<i64>>) = stats
                .map(|s| match s {
                    Some(TypeStatistics::Integer { min, max, .. }) => (Some(*min), Some(*max)),
                    _ => (None, None),
                })
                .unzip();
            Some((
                Arc::new(Int64Array::from(mins)),
                Arc::new(Int64Array::from(maxes)),
            ))
        }
        DataType::Date { .. } => {
            let (mins, maxes): (Vec<Option<i32>>, Vec<Option<i32>>) = stats
                .map(|s| match s {
                    Some(TypeStatistics::Date { min, max }) => (Some(*min), Some(*max)),
                    _ => (None, None),
                })
                .unzip();
            Some((
                Arc::new(Date32Array::from(mins)),
                Arc::new(Date32Array::from(maxes)),
            ))
        }
        _ => None,
    }
}
