//! Reading ORC files end to end: tail, projection, stripe selection, stripe
//! footers, the plan of the projected streams, parallel fetch, and decoding
//! that overlaps the fetch.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::{stream, FutureExt, StreamExt, TryStreamExt};
use orc_rust::array_decoder::NaiveStripeDecoder;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::RootDataType;
use orc_rust::stripe::{Stripe, StripeMetadata};

use super::chunks::{SpanReader, StreamFinder};
use super::from_orc;
use super::tail::{read_tail, OrcTail};
use crate::error::{Error, Result};
use crate::fetch::{await_spans, each_file, unit_spans, FetchedSpans, Fetcher};
use crate::plan::{FilePlan, PlanUnit};
use crate::read::{check_single_file, concat, each_source, with_files, ReadOptions, Table};
use crate::source::Source;

/// Rows per record batch handed out.
const BATCH_ROWS: usize = 64 * 1024;

/// One ORC file, planned and ready to fetch.
#[derive(Debug, Clone)]
pub struct PreparedOrc {
    /// Where the bytes come from.
    pub source: Source,
    /// The decoded tail.
    pub tail: OrcTail,
    /// The schema of the rows returned (file order, as pyarrow's ORC reader).
    pub schema: SchemaRef,
    /// The projected columns as `orc-rust` sees them.
    pub projected: RootDataType,
    /// The stream ranges to fetch, one unit per selected stripe.
    pub plan: FilePlan,
    /// What planning fetched: the stripe footers, and whatever lay between
    /// them when they were close enough to be fetched together (small
    /// stripes); streams found in here are not fetched again.
    pub prefetched: Arc<FetchedSpans>,
}

/// Reads ORC `sources` (paths, URLs, globs) into one table. `options.row_groups`
/// selects stripes (a single file only); `options.filter` is not supported.
pub async fn read_orc(sources: &[String], options: &ReadOptions) -> Result<Table> {
    check_options(options)?;
    with_files(sources, options, |files| async move {
        check_single_file(&files, options, "stripes")?;
        let fetcher = options.fetcher();
        let results = each_file(&fetcher, files, |fetcher: Fetcher, s: Source| async move {
            read_file(&fetcher, s, options).await
        })
        .await?;
        concat(&fetcher, results)
    })
    .await
}

/// Plans the reads of ORC `sources`: tails and stripe footers are fetched,
/// column data is not.
pub async fn plan_orc(sources: &[String], options: &ReadOptions) -> Result<Vec<PreparedOrc>> {
    check_options(options)?;
    each_source(
        sources,
        options,
        "stripes",
        &options.fetcher(),
        |fetcher: Fetcher, s: Source| async move { prepare(&fetcher, s, options).await },
    )
    .await
}

/// The tails of ORC `sources`, for inspection.
pub async fn read_orc_metadata(
    sources: &[String],
    options: &ReadOptions,
) -> Result<Vec<(Source, OrcTail, SchemaRef)>> {
    with_files(sources, options, |files| async move {
        each_file(&options.fetcher(), files, tail_of).await
    })
    .await
}

/// One file's tail and the schema a full read of it would return.
async fn tail_of(fetcher: Fetcher, s: Source) -> Result<(Source, OrcTail, SchemaRef)> {
    fetcher.stats().add_file();
    let tail = read_tail(&fetcher, &s).await?;
    let schema = schema_of(&tail, tail.metadata.root_data_type());
    Ok((s, tail, schema))
}

fn check_options(options: &ReadOptions) -> Result<()> {
    if options.filter.is_some() {
        return Err(Error::InvalidArgument(
            "filters are not supported for ORC yet; select columns and stripes instead".into(),
        ));
    }
    Ok(())
}

/// The Arrow schema of `projected`, with the file's user metadata and, as
/// pyarrow does, each top-level column's ORC type attributes as field
/// metadata. (Nested fields keep none: metadata there would change the
/// column's Arrow type away from what the decoder builds.)
fn schema_of(tail: &OrcTail, projected: &RootDataType) -> SchemaRef {
    let metadata: HashMap<String, String> = tail
        .metadata
        .user_custom_metadata()
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    let schema = projected.create_arrow_schema(&metadata);
    let fields: Vec<arrow_schema::FieldRef> = schema
        .fields()
        .iter()
        .zip(projected.children())
        .map(|(field, column)| {
            let id = column.data_type().column_index();
            match tail.type_attributes.get(id).filter(|a| !a.is_empty()) {
                Some(attributes) => Arc::new(
                    field
                        .as_ref()
                        .clone()
                        .with_metadata(attributes.iter().cloned().collect()),
                ),
                None => Arc::clone(field),
            }
        })
        .collect();
    Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// Reads the tail, chooses columns and stripes, fetches the stripe footers
/// and plans the projected streams.
async fn prepare(fetcher: &Fetcher, source: Source, options: &ReadOptions) -> Result<PreparedOrc> {
    let location = source.location().to_string();
    fetcher.stats().add_file();
    let tail = read_tail(fetcher, &source).await?;
    let meta = Arc::clone(&tail.metadata);
    let root = meta.root_data_type();
    let mask = match &options.columns {
        None => ProjectionMask::all(),
        Some(columns) => {
            let available: Vec<String> = root
                .children()
                .iter()
                .map(|c| c.name().to_string())
                .collect();
            if let Some(missing) = columns.iter().find(|c| !available.contains(c)) {
                return Err(Error::ColumnNotFound {
                    location,
                    column: missing.clone(),
                    available,
                });
            }
            ProjectionMask::named_roots(root, columns)
        }
    };
    let projected = root.project(&mask);
    let schema = schema_of(&tail, &projected);
    let infos = meta.stripe_metadatas();
    let stripes: Vec<usize> = match &options.row_groups {
        Some(chosen) => {
            if let Some(bad) = chosen.iter().find(|&&i| i >= infos.len()) {
                return Err(Error::InvalidArgument(format!(
                    "{location}: stripe {bad} does not exist (the file has {})",
                    infos.len()
                )));
            }
            chosen.clone()
        }
        None => (0..infos.len()).collect(),
    };
    let corrupt = |range: Range<u64>, detail: String| Error::Corrupt {
        location: location.clone(),
        range: Some(range),
        detail,
    };
    // Stripe footers say where each stream lies: fetch them first (small,
    // all at once).
    let mut footer_units = Vec::with_capacity(stripes.len());
    for &i in &stripes {
        let info = &infos[i];
        let range = info.footer_offset()..info.footer_offset() + info.footer_length();
        if range.end > tail.file_size || info.offset() > info.footer_offset() {
            return Err(corrupt(
                range,
                format!(
                    "stripe {i}'s footer lies outside the file ({} bytes)",
                    tail.file_size
                ),
            ));
        }
        footer_units.push(PlanUnit {
            index: i,
            ranges: vec![range],
        });
    }
    let config = fetcher.config();
    let footer_plan = FilePlan::new(
        location.clone(),
        tail.file_size,
        footer_units,
        config.hole_limit,
        config.slice_size,
    );
    let (futs, _guards) = fetcher.start(&source, &footer_plan);
    let all: Vec<_> = footer_plan
        .spans
        .iter()
        .zip(futs)
        .map(|(span, fut)| (span.range.clone(), fut))
        .collect();
    let footer_spans = FetchedSpans::new(await_spans(all).await?);
    let mut units = Vec::with_capacity(stripes.len());
    for &i in &stripes {
        let info = &infos[i];
        let range = info.footer_offset()..info.footer_offset() + info.footer_length();
        let bytes = footer_spans.get(&range).unwrap_or_default();
        let streams = find_streams(
            &location,
            &meta,
            &projected,
            info,
            range.clone(),
            bytes.clone(),
        )
        .map_err(|e| match e {
            Error::Corrupt { detail, .. } => {
                corrupt(range.clone(), format!("stripe {i}: {detail}"))
            }
            other => other,
        })?;
        if let Some(bad) = streams
            .iter()
            .find(|s| s.start < info.offset() || s.end > info.footer_offset())
        {
            return Err(corrupt(
                bad.clone(),
                format!("stripe {i} names a stream outside the stripe"),
            ));
        }
        // The index section (row indexes, bloom filters) only serves
        // predicates; decoding all rows never reads it, so it is not fetched.
        let data_start = info.offset() + info.index_length();
        units.push(PlanUnit {
            index: i,
            ranges: streams
                .into_iter()
                .filter(|s| s.start >= data_start && footer_spans.get(s).is_none())
                .collect(),
        });
    }
    let plan = FilePlan::new(
        location,
        tail.file_size,
        units,
        config.hole_limit,
        config.slice_size,
    );
    Ok(PreparedOrc {
        source,
        tail,
        schema,
        projected,
        plan,
        prefetched: Arc::new(footer_spans),
    })
}

/// The byte ranges of the streams `projected` needs in one stripe, as
/// `orc-rust` itself would read them.
fn find_streams(
    location: &str,
    meta: &orc_rust::reader::metadata::FileMetadata,
    projected: &RootDataType,
    info: &StripeMetadata,
    footer: Range<u64>,
    footer_bytes: Bytes,
) -> Result<Vec<Range<u64>>> {
    let mut finder = StreamFinder {
        footer,
        footer_bytes,
        streams: Default::default(),
    };
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Stripe::new(&mut finder, meta, projected, info).map(|_| ())
    }));
    match found {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(from_orc(location, e)),
        Err(_) => {
            return Err(Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: "corrupt stripe footer (the decoder gave up)".into(),
            })
        }
    }
    Ok(finder
        .streams
        .into_inner()
        .into_iter()
        .filter(|r| !r.is_empty())
        .collect())
}

async fn read_file(
    fetcher: &Fetcher,
    source: Source,
    options: &ReadOptions,
) -> Result<(Source, SchemaRef, Vec<RecordBatch>)> {
    let prepared = prepare(fetcher, Arc::clone(&source), options).await?;
    let plan = &prepared.plan;
    let (spans, _abort_guards) = fetcher.start(&prepared.source, plan);
    let infos = prepared.tail.metadata.stripe_metadatas();
    let units: Vec<_> = plan
        .units
        .iter()
        .map(|unit| {
            let needed = unit_spans(plan, &spans, unit);
            let prefetched = Arc::clone(&prepared.prefetched);
            let job = StripeJob {
                fetcher: fetcher.clone(),
                location: source.location().to_string(),
                file_size: prepared.tail.file_size,
                meta: Arc::clone(&prepared.tail.metadata),
                projected: prepared.projected.clone(),
                schema: Arc::clone(&prepared.schema),
                info: infos[unit.index].clone(),
                index: unit.index,
            };
            async move {
                let fetched = await_spans(needed).await?;
                job.decode(FetchedSpans::new(fetched), prefetched).await
            }
            .boxed()
        })
        .collect();
    drop(spans);
    let per_stripe: Vec<Vec<RecordBatch>> = stream::iter(units)
        .buffered(plan.units.len().max(1))
        .try_collect()
        .await?;
    Ok((
        source,
        Arc::clone(&prepared.schema),
        per_stripe.into_iter().flatten().collect(),
    ))
}

/// Everything decoding one stripe needs, owned (it runs on the blocking pool).
struct StripeJob {
    fetcher: Fetcher,
    location: String,
    file_size: u64,
    meta: Arc<orc_rust::reader::metadata::FileMetadata>,
    projected: RootDataType,
    schema: SchemaRef,
    info: StripeMetadata,
    index: usize,
}

impl StripeJob {
    async fn decode(
        self,
        spans: FetchedSpans,
        prefetched: Arc<FetchedSpans>,
    ) -> Result<Vec<RecordBatch>> {
        let _permit = self.fetcher.decode_permit().await?;
        let started = Instant::now();
        let location = self.location.clone();
        let index = self.index;
        let stats = self.fetcher.stats().clone();
        let handle = tokio::task::spawn_blocking(move || -> Result<Vec<RecordBatch>> {
            let mut reader = SpanReader {
                size: self.file_size,
                spans,
                prefetched,
                skipped: self.info.offset()..self.info.offset() + self.info.index_length(),
            };
            let stripe = Stripe::new(&mut reader, &self.meta, &self.projected, &self.info)
                .map_err(|e| from_orc(&self.location, e))?;
            let decoder = NaiveStripeDecoder::new(stripe, Arc::clone(&self.schema), BATCH_ROWS)
                .map_err(|e| from_orc(&self.location, e))?;
            decoder
                .map(|b| b.map_err(|e| from_orc(&self.location, e)))
                .collect()
        });
        let result = match handle.await {
            Ok(r) => r,
            Err(e) => Err(Error::Corrupt {
                location,
                range: None,
                detail: format!(
                    "decoding stripe {index} failed: {}",
                    crate::parquet::decode::panic_message(e)
                ),
            }),
        };
        stats.add_decode_time(started.elapsed());
        result
    }
}
