//! Raw stripes: each selected stripe's bytes exactly as the file stores them
//! (index, data and stripe footer), with where it lies, for a consumer that
//! decodes ORC itself. Chosen like a decoded read's stripes (by index, and
//! by the filter's stripe statistics) and fetched by the same pipeline.

use std::sync::Arc;

use bytes::Bytes;

use super::format::Orc;
use crate::error::{Error, Result};
use crate::known::Known;
use crate::pipeline::{self, fetch_pieces, RawFile, ReadOptions};
use crate::plan::PlanUnit;

/// What a raw stripe is, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeMeta {
    /// Index of the stripe's file among the sources read.
    pub file: usize,
    /// The file, as the user named it.
    pub source: String,
    /// The stripe's index in its file.
    pub stripe: usize,
    /// Where the stripe starts in the file.
    pub offset: u64,
    /// Length of its index section (row indexes, bloom filters).
    pub index_length: u64,
    /// Length of its data section.
    pub data_length: u64,
    /// Length of its stripe footer.
    pub footer_length: u64,
    /// Rows in the stripe.
    pub num_rows: u64,
}

impl StripeMeta {
    /// The stripe's bytes in the file: index, data and footer.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.offset..self.offset + self.index_length + self.data_length + self.footer_length
    }
}

/// The stripes of a read with their bytes.
#[derive(Debug, Clone, Default)]
pub struct StripeSet {
    /// What each stripe is.
    pub stripes: Vec<StripeMeta>,
    /// Each stripe's bytes (views into the fetched spans, not copies).
    pub bytes: Vec<Bytes>,
}

/// Reads the stripes `options` select (`row_groups` as stripe indices, and
/// the stripes a filter's statistics leave) from ORC `sources`, whole: a
/// stripe holds every column, so `options.columns` must be `None`.
pub async fn read_orc_stripes(sources: &[String], options: &ReadOptions) -> Result<StripeSet> {
    if options.columns.is_some() {
        return Err(Error::InvalidArgument(
            "raw stripes hold every column; select columns after decoding them".into(),
        ));
    }
    // One fetcher: the stripes' requests share the read's limits with the
    // tails', and are sized by what the tails' answers showed of the store.
    let fetcher = options.fetcher();
    let prepared = pipeline::plan::<Orc>(sources, options, &fetcher).await?;
    let mut set = StripeSet::default();
    let mut files = Vec::with_capacity(prepared.len());
    let mut pieces = Vec::new();
    let count = prepared.len();
    for (f, file) in prepared.into_iter().enumerate() {
        let infos = file.tail.metadata.stripe_metadatas();
        let mut units = Vec::with_capacity(file.plan.units.len());
        for unit in &file.plan.units {
            let info = &infos[unit.index];
            let meta = StripeMeta {
                file: f,
                source: file.source.location().to_string(),
                stripe: unit.index,
                offset: info.offset(),
                index_length: info.index_length(),
                data_length: info.data_length(),
                footer_length: info.footer_length(),
                num_rows: info.number_of_rows(),
            };
            // Planning checked that the stripe's footer lies inside the file.
            pieces.push((f, meta.range()));
            units.push(PlanUnit {
                index: unit.index,
                ranges: vec![meta.range()],
            });
            set.stripes.push(meta);
        }
        let plan =
            pipeline::checked_plan(&file.source, file.tail.file_size, units, &fetcher, count)?;
        files.push(RawFile {
            source: Arc::clone(&file.source),
            plan,
            known: Known::default(),
        });
    }
    let mut arriving = fetch_pieces(fetcher, files, &pieces, options.cache.clone());
    set.bytes = vec![Bytes::new(); pieces.len()];
    while let Some(next) = arriving.recv().await {
        let (i, b) = next?;
        set.bytes[i] = b;
    }
    Ok(set)
}
