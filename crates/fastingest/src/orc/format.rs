//! ORC as a format of the read pipeline: open the tail, choose columns and
//! stripes (by index and by the filter's stripe statistics), fetch the
//! stripe footers to find the projected streams, plan them, and decode a
//! stripe from its fetched spans.

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use orc_rust::array_decoder::NaiveStripeDecoder;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::{DataType as OrcType, RootDataType};
use orc_rust::stripe::{Stripe, StripeMetadata};

use super::columns::{decode_columns, may_decode, types_under};
use super::decimals;
use super::footer_zone::footer_for_orc_rust;
use super::from_orc;
use super::prune::prune_stripes;
use super::readers::{SpanReader, StreamFinder};
use super::streams::StripeStreams;
use super::tail::{read_tail, OrcTail};
use crate::dataset::FileScope;
use crate::error::{Error, Result};
use crate::fetch::{await_spans, FetchedSpans, Fetcher};
use crate::filter::{Filter, Rows};
use crate::pipeline::{checked_plan, chosen_units, Format, Planned};
use crate::plan::{FilePlan, PlanUnit};
use crate::source::Source;

/// ORC, as the pipeline reads it.
pub(crate) struct Orc;

/// One file's tail, its location, and the schema a full read returns.
pub type OrcMetadata = (Source, OrcTail, SchemaRef);

impl Format for Orc {
    const UNITS: &'static str = "stripes";
    const UNIT: &'static str = "stripe";
    const IN_REQUESTED_ORDER: bool = false;
    type File = PreparedOrc;
    type Metadata = OrcMetadata;

    async fn open(fetcher: &Fetcher, source: Source, _: &FileScope<'_>) -> Result<OrcMetadata> {
        let tail = read_tail(fetcher, &source).await?;
        let schema = schema_of(&tail, tail.metadata.root_data_type());
        Ok((source, tail, schema))
    }

    async fn prepare(
        fetcher: &Fetcher,
        source: Source,
        scope: &FileScope<'_>,
    ) -> Result<PreparedOrc> {
        prepare(fetcher, source, scope).await
    }
}

impl Planned for PreparedOrc {
    fn source(&self) -> &Source {
        &self.source
    }

    fn unit_rows(&self, unit: usize) -> u64 {
        let stripe = self.plan.units[unit].index;
        self.tail.metadata.stripe_metadatas()[stripe].number_of_rows()
    }

    fn unit_decoded_bytes(&self, unit: usize) -> u64 {
        // ORC stripes are compressed as a whole; the bytes read are the
        // closest measure at hand.
        self.plan.units[unit].bytes()
    }

    fn plan(&self) -> &FilePlan {
        &self.plan
    }

    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn column_names(&self) -> Vec<String> {
        let root = self.tail.metadata.root_data_type();
        root.children()
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    }

    fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    fn decode(
        &self,
        unit: usize,
        spans: FetchedSpans,
        fetcher: &Fetcher,
    ) -> Result<Vec<RecordBatch>> {
        let location = self.source.location();
        let mut reader = self.span_reader(unit, spans);
        let fields = self.decoded_schema.fields();
        let candidates: Vec<usize> = (0..fields.len())
            .filter(|&i| {
                let orc = self.projected.children()[i].data_type();
                may_decode(orc, fields[i].data_type())
            })
            .collect();
        if candidates.is_empty() {
            let stripe = self.stripe(unit, &mut reader, &self.projected)?;
            return NaiveStripeDecoder::new(stripe, Arc::clone(&self.decoded_schema), BATCH_ROWS)
                .map_err(|e| from_orc(location, e))?
                .map(|b| b.map_err(|e| from_orc(location, e)))
                .collect();
        }
        // The candidates' streams, each checked as it is served, and a
        // stripe of the candidates only, for their types and encodings: it
        // reads the same streams unchecked, and `orc-rust` decompresses none
        // of them. `orc-rust`'s columns get a stripe of their own.
        let index = self.plan.units[unit].index;
        let corrupt = |detail: String| Error::Corrupt {
            location: location.to_string(),
            range: None,
            detail: format!("stripe {index}: {detail}"),
            cause: None,
        };
        let candidate_columns = self.projected_columns(&candidates);
        // Their streams and those of every column under them.
        let ids: Vec<u32> = candidate_columns
            .children()
            .iter()
            .flat_map(|c| types_under(c.data_type()))
            .map(|ty| ty.column_index() as u32)
            .collect();
        let streams = StripeStreams::read(
            &mut reader,
            &self.tail.metadata.stripe_metadatas()[index],
            self.tail.metadata.compression(),
            self.tail.chunk_limit,
            &ids,
        )
        .map_err(corrupt)?;
        let check = reader.chunk_check.take();
        let stripe = self.stripe(unit, &mut reader, &candidate_columns);
        reader.chunk_check = check;
        let stripe = stripe?;
        let types: Vec<_> = candidates
            .iter()
            .map(|&i| fields[i].data_type().clone())
            .collect();
        let rows = stripe.number_of_rows();
        // A helper thread for each MiB of the stripe's streams, as for a
        // Parquet row group: a hop to another thread costs more than a
        // small column takes.
        let data = self.tail.metadata.stripe_metadatas()[index].data_length();
        let helpers = usize::try_from(data >> 20).unwrap_or(usize::MAX);
        let threads = fetcher
            .config()
            .decode_threads()
            .min(helpers.saturating_add(1));
        let decoded = decode_columns(
            Arc::new(stripe),
            Arc::new(streams),
            &types,
            self.decimal_integers(),
            threads,
        )
        .map_err(corrupt)?;
        let mut ours: Vec<Option<ArrayRef>> = vec![None; fields.len()];
        for (i, array) in candidates.into_iter().zip(decoded) {
            ours[i] = array;
        }
        self.join_with_orc_rust(unit, &mut reader, ours, rows)
    }

    fn decodes_head(&self, _unit: usize) -> bool {
        // `orc-rust`'s lazy decoder gives the first rows alone, but it reads
        // times before 1970 and after 2099 differently from `timestamps`
        // (see there), and neither decimals stored as integers nor Hive
        // 0.11's: a stripe with such a column, at any depth, is decoded whole.
        let integers = self.decimal_integers();
        !self.projected.children().iter().any(|column| {
            types_under(column.data_type())
                .into_iter()
                .any(|ty| match ty {
                    OrcType::Timestamp { .. } | OrcType::TimestampWithLocalTimezone { .. } => true,
                    OrcType::Decimal { .. } => integers || decimals::is_hive_11(ty),
                    _ => false,
                })
        })
    }

    fn decode_head(
        &self,
        unit: usize,
        spans: FetchedSpans,
        _: &Fetcher,
        rows: usize,
    ) -> Result<Option<RecordBatch>> {
        // The decoder is lazy: its first batch decodes only its rows.
        let location = self.source.location();
        let first = self.stripe_decoder(unit, spans, rows)?.next();
        first.transpose().map_err(|e| from_orc(location, e))
    }

    fn output(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let Some(columns) = &self.output_columns else {
            return Ok(batch);
        };
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let arrays = columns
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), arrays, &options)
            .map_err(|e| Error::from_arrow(self.source.location(), e))
    }
}

/// Rows per record batch handed out.
const BATCH_ROWS: usize = 64 * 1024;

impl PreparedOrc {
    /// Whether the file stores its decimals of up to 18 digits as integers.
    fn decimal_integers(&self) -> bool {
        decimals::small_as_integers(self.tail.metadata.file_format_version())
    }

    /// The stripe at position `unit` of the plan, read from `spans`, as a
    /// decoder of `batch_rows`-row batches (decoded as they are pulled).
    fn stripe_decoder(
        &self,
        unit: usize,
        spans: FetchedSpans,
        batch_rows: usize,
    ) -> Result<NaiveStripeDecoder> {
        let mut reader = self.span_reader(unit, spans);
        let stripe = self.stripe(unit, &mut reader, &self.projected)?;
        NaiveStripeDecoder::new(stripe, Arc::clone(&self.decoded_schema), batch_rows)
            .map_err(|e| from_orc(self.source.location(), e))
    }

    /// A reader of the stripe at position `unit` of the plan from `spans`.
    fn span_reader(&self, unit: usize, spans: FetchedSpans) -> SpanReader {
        let info = &self.tail.metadata.stripe_metadatas()[self.plan.units[unit].index];
        SpanReader {
            size: self.tail.file_size,
            spans,
            prefetched: Arc::clone(&self.prefetched),
            skipped: info.offset()..info.offset() + info.index_length(),
            chunk_check: self.tail.chunk_check,
            footer: self
                .served_footers
                .get(&self.plan.units[unit].index)
                .cloned(),
        }
    }

    /// The stripe at position `unit` of the plan with the columns of
    /// `projected`.
    fn stripe(
        &self,
        unit: usize,
        reader: &mut SpanReader,
        projected: &RootDataType,
    ) -> Result<Stripe> {
        let info = &self.tail.metadata.stripe_metadatas()[self.plan.units[unit].index];
        Stripe::new(reader, &self.tail.metadata, projected, info)
            .map_err(|e| from_orc(self.source.location(), e))
    }

    /// The projected columns at `positions` (in the decoded schema).
    fn projected_columns(&self, positions: &[usize]) -> RootDataType {
        let ids = positions
            .iter()
            .map(|&i| self.projected.children()[i].data_type().column_index());
        self.projected
            .project(&ProjectionMask::roots(&self.projected, ids))
    }

    /// The stripe's batches: the columns decoded here (`ours`, whole
    /// stripes of `rows` rows) cut to the batches `orc-rust` makes of the
    /// others (or to [`BATCH_ROWS`] when it has none to decode).
    fn join_with_orc_rust(
        &self,
        unit: usize,
        reader: &mut SpanReader,
        ours: Vec<Option<ArrayRef>>,
        rows: usize,
    ) -> Result<Vec<RecordBatch>> {
        let location = self.source.location();
        let theirs: Vec<usize> = (0..ours.len()).filter(|&i| ours[i].is_none()).collect();
        let their_batches: Vec<RecordBatch> = if theirs.is_empty() {
            Vec::new()
        } else {
            let projected = self.projected_columns(&theirs);
            let schema = Arc::new(
                self.decoded_schema
                    .project(&theirs)
                    .map_err(|e| Error::from_arrow(location, e))?,
            );
            let stripe = self.stripe(unit, reader, &projected)?;
            NaiveStripeDecoder::new(stripe, schema, BATCH_ROWS)
                .map_err(|e| from_orc(location, e))?
                .map(|b| b.map_err(|e| from_orc(location, e)))
                .collect::<Result<_>>()?
        };
        let lengths: Vec<usize> = if theirs.is_empty() {
            (0..rows)
                .step_by(BATCH_ROWS)
                .map(|at| BATCH_ROWS.min(rows - at))
                .collect()
        } else {
            their_batches.iter().map(RecordBatch::num_rows).collect()
        };
        let mut at = 0;
        let mut batches = Vec::with_capacity(lengths.len());
        for (b, &n) in lengths.iter().enumerate() {
            let mut from_theirs = their_batches.get(b).map(|t| t.columns().iter());
            let columns = ours
                .iter()
                .map(|array| match array {
                    Some(array) => Ok(array.slice(at, n)),
                    None => from_theirs
                        .as_mut()
                        .and_then(Iterator::next)
                        .cloned()
                        .ok_or_else(|| Error::Corrupt {
                            location: location.to_string(),
                            range: None,
                            detail: "a stripe's columns decoded to different lengths".into(),
                            cause: None,
                        }),
                })
                .collect::<Result<Vec<_>>>()?;
            let options = RecordBatchOptions::new().with_row_count(Some(n));
            batches.push(
                RecordBatch::try_new_with_options(
                    Arc::clone(&self.decoded_schema),
                    columns,
                    &options,
                )
                .map_err(|e| Error::from_arrow(location, e))?,
            );
            at += n;
        }
        if at != rows {
            return Err(Error::Corrupt {
                location: location.to_string(),
                range: None,
                detail: format!("a stripe of {rows} rows decoded to {at}"),
                cause: None,
            });
        }
        Ok(batches)
    }
}

/// One ORC file, planned and ready to fetch.
#[derive(Debug, Clone)]
pub struct PreparedOrc {
    /// Where the bytes come from.
    pub source: Source,
    /// The decoded tail.
    pub tail: OrcTail,
    /// The schema of the rows returned (file order, as pyarrow's ORC reader).
    pub schema: SchemaRef,
    /// The columns decoded as `orc-rust` sees them: those returned plus
    /// those the filter reads.
    pub projected: RootDataType,
    /// The schema of the decoded batches.
    pub decoded_schema: SchemaRef,
    /// Where each returned column is in a decoded batch (`None`: the same
    /// columns).
    pub output_columns: Option<Vec<usize>>,
    /// The stream ranges to fetch, one unit per selected stripe.
    pub plan: FilePlan,
    /// What planning fetched: the stripe footers, and whatever lay between
    /// them when they were close enough to be fetched together (small
    /// stripes); streams found in here are not fetched again.
    pub prefetched: Arc<FetchedSpans>,
    /// The stripe footers `orc-rust` is handed in place of the file's,
    /// by stripe ([`super::footer_zone`]).
    pub served_footers: Arc<HashMap<usize, ServedFooter>>,
    /// The rows to keep, as this file can tell (`None`: all).
    pub filter: Option<Filter>,
}

/// A stripe footer's range, and the bytes served for it in place of the
/// file's.
type ServedFooter = (Range<u64>, Bytes);

/// Whether the file has top-level column `name`.
fn has_root(tail: &OrcTail, name: &str) -> bool {
    tail.metadata
        .root_data_type()
        .children()
        .iter()
        .any(|c| c.name() == name)
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
            let field = match decimals::arrow_type(column.data_type(), field.data_type()) {
                Some(arrow) => Arc::new(field.as_ref().clone().with_data_type(arrow)),
                None => Arc::clone(field),
            };
            let id = column.data_type().column_index();
            match tail.type_attributes.get(id).filter(|a| !a.is_empty()) {
                Some(attributes) => Arc::new(
                    field
                        .as_ref()
                        .clone()
                        .with_metadata(attributes.iter().cloned().collect()),
                ),
                None => field,
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
async fn prepare(fetcher: &Fetcher, source: Source, scope: &FileScope<'_>) -> Result<PreparedOrc> {
    let location = source.location().to_string();
    fetcher.stats().add_file();
    let tail = read_tail(fetcher, &source).await?;
    let (wanted, rows) = scope.in_file(|c| has_root(&tail, c))?;
    let filter = rows.filter().cloned();
    let columns = choose_columns(&location, &tail, wanted.as_ref(), filter.as_ref())?;
    let meta = Arc::clone(&tail.metadata);
    let n = meta.stripe_metadatas().len();
    let mut stripes = chosen_units::<Orc>(&location, scope.options, n)?;
    if matches!(rows, Rows::Nothing) {
        stripes.clear();
    }
    if let Some(f) = &filter {
        let keep = prune_stripes(f, &meta);
        stripes.retain(|&i| keep[i]);
    }
    let footers = fetch_stripe_footers(fetcher, &source, &tail, &stripes).await?;
    // (`orc-rust` needs a stripe's writer zone only to read a timestamp.)
    let reads_timestamps = columns.projected.children().iter().any(|column| {
        types_under(column.data_type())
            .into_iter()
            .any(|ty| matches!(ty, OrcType::Timestamp { .. }))
    });
    let mut served_footers = HashMap::new();
    let mut units = Vec::with_capacity(stripes.len());
    for &i in &stripes {
        let (unit, served) = stripe_streams(
            &location,
            &tail,
            &columns.projected,
            i,
            &footers,
            reads_timestamps,
        )?;
        units.push(unit);
        if let Some(served) = served {
            served_footers.insert(i, served);
        }
    }
    let plan = checked_plan(
        &source,
        tail.file_size,
        units,
        fetcher,
        scope.files_in_read(),
    )?;
    Ok(PreparedOrc {
        source,
        tail,
        schema: columns.schema,
        projected: columns.projected,
        decoded_schema: columns.decoded_schema,
        output_columns: columns.output_columns,
        plan,
        prefetched: Arc::new(footers),
        served_footers: Arc::new(served_footers),
        filter,
    })
}

/// The columns of a read: those returned, and those decoded (plus the
/// filter's).
struct Columns {
    schema: SchemaRef,
    projected: RootDataType,
    decoded_schema: SchemaRef,
    output_columns: Option<Vec<usize>>,
}

/// Checks the requested and filter columns against the file's top-level
/// columns and builds both projections.
fn choose_columns(
    location: &str,
    tail: &OrcTail,
    wanted: Option<&Vec<String>>,
    filter: Option<&Filter>,
) -> Result<Columns> {
    let root = tail.metadata.root_data_type();
    let available: Vec<String> = root
        .children()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let filter_columns: BTreeSet<String> = filter.map(|f| f.columns()).unwrap_or_default();
    let requested = wanted.into_iter().flatten().chain(&filter_columns);
    if let Some(missing) = requested.into_iter().find(|c| !available.contains(c)) {
        return Err(Error::ColumnNotFound {
            location: location.to_string(),
            column: missing.clone(),
            available,
        });
    }
    let (out_mask, decode_mask) = match wanted {
        None => (ProjectionMask::all(), ProjectionMask::all()),
        Some(columns) => {
            let mut decoded = columns.clone();
            let extra = filter_columns.iter().filter(|c| !columns.contains(c));
            decoded.extend(extra.cloned());
            (
                ProjectionMask::named_roots(root, columns),
                ProjectionMask::named_roots(root, &decoded),
            )
        }
    };
    let schema = schema_of(tail, &root.project(&out_mask));
    let projected = root.project(&decode_mask);
    let decoded_schema = schema_of(tail, &projected);
    if let Some(f) = filter {
        f.check_types(location, &decoded_schema)?;
    }
    let output_columns = (decoded_schema.fields().len() != schema.fields().len()).then(|| {
        schema
            .fields()
            .iter()
            .filter_map(|f| decoded_schema.index_of(f.name()).ok())
            .collect()
    });
    Ok(Columns {
        schema,
        projected,
        decoded_schema,
        output_columns,
    })
}

/// Where stripe `i`'s footer lies; checked to be inside the file.
fn footer_range(location: &str, tail: &OrcTail, i: usize) -> Result<Range<u64>> {
    let info = &tail.metadata.stripe_metadatas()[i];
    let range = info.footer_offset()..info.footer_offset() + info.footer_length();
    if range.end > tail.file_size || info.offset() > info.footer_offset() {
        return Err(Error::Corrupt {
            location: location.to_string(),
            range: Some(range),
            detail: format!(
                "stripe {i}'s footer lies outside the file ({} bytes)",
                tail.file_size
            ),
            cause: None,
        });
    }
    Ok(range)
}

/// The footers of `stripes` (they say where each stream lies): small, all
/// fetched at once, with whatever lies between close ones.
async fn fetch_stripe_footers(
    fetcher: &Fetcher,
    source: &Source,
    tail: &OrcTail,
    stripes: &[usize],
) -> Result<FetchedSpans> {
    let location = source.location();
    let units = stripes
        .iter()
        .map(|&i| {
            Ok(PlanUnit {
                index: i,
                ranges: vec![footer_range(location, tail, i)?],
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Stripe footers: small ranges, one file.
    let plan = checked_plan(source, tail.file_size, units, fetcher, 1)?;
    let (futs, _guards) = fetcher.start(source, &plan);
    let all: Vec<_> = plan
        .spans
        .iter()
        .zip(futs)
        .map(|(span, fut)| (span.range.clone(), fut))
        .collect();
    Ok(FetchedSpans::new(await_spans(all).await?))
}

/// Stripe `i`'s unit of the plan: the data streams `projected` needs that
/// the footers' fetch did not already bring; and its footer's range and the
/// bytes `orc-rust` is handed for it in place of the file's, if any
/// ([`super::footer_zone`]; `reads_timestamps`: a projected column holds a
/// `timestamp` at some depth).
fn stripe_streams(
    location: &str,
    tail: &OrcTail,
    projected: &RootDataType,
    i: usize,
    footers: &FetchedSpans,
    reads_timestamps: bool,
) -> Result<(PlanUnit, Option<ServedFooter>)> {
    let info = &tail.metadata.stripe_metadatas()[i];
    let range = footer_range(location, tail, i)?;
    let corrupt = |range: Range<u64>, detail: String| Error::Corrupt {
        location: location.to_string(),
        range: Some(range),
        detail,
        cause: None,
    };
    let bytes = footers.get(&range).unwrap_or_default();
    let served = footer_for_orc_rust(
        &bytes,
        tail.metadata.compression(),
        tail.chunk_limit,
        reads_timestamps,
    )
    .map_err(|detail| Error::Unsupported {
        location: location.to_string(),
        detail: format!("stripe {i}: {detail}"),
        cause: None,
    })?;
    let bytes = served.clone().unwrap_or(bytes);
    let streams = find_streams(
        location,
        &tail.metadata,
        projected,
        info,
        range.clone(),
        bytes,
        tail.chunk_check,
    )
    .map_err(|e| match e {
        Error::Corrupt { detail, cause, .. } => Error::Corrupt {
            location: location.to_string(),
            range: Some(range.clone()),
            detail: format!("stripe {i}: {detail}"),
            cause,
        },
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
    let unit = PlanUnit {
        index: i,
        ranges: streams
            .into_iter()
            .filter(|s| s.start >= data_start && footers.get(s).is_none())
            .collect(),
    };
    Ok((unit, served.map(|bytes| (range, bytes))))
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
    chunk_check: Option<super::chunks::ChunkCheck>,
) -> Result<Vec<Range<u64>>> {
    let mut finder = StreamFinder {
        footer,
        footer_bytes,
        streams: Default::default(),
        chunk_check,
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
                cause: None,
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
