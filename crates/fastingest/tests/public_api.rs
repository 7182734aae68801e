//! The crate as a service uses it: only the entry points re-exported at the
//! root, reading local files and `memory://` objects.

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use fastingest::{
    open_orc_units, open_parquet_units, plan_orc, plan_parquet, read_metadata, read_orc,
    read_orc_stripes, read_parquet, stream_orc, stream_parquet, CmpOp, Config, Error, Filter,
    Predicate, ReadOptions,
};
use futures::StreamExt;
use object_store::ObjectStoreExt;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

const ROWS: i64 = 10_000;
const ROWS_PER_GROUP: usize = 2_500;

/// A Parquet file of `ROWS` rows (`id` 0.., `name`), four row groups.
fn parquet_file() -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let ids = Int64Array::from_iter_values(0..ROWS);
    let names = StringArray::from_iter((0..ROWS).map(|i| (i % 7 != 0).then(|| format!("n{i}"))));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(ids), Arc::new(names)])
        .expect("a valid batch");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .build();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, schema, Some(props)).expect("writer");
    writer.write(&batch).expect("write");
    writer.close().expect("close");
    out
}

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let col = b
                .column_by_name("id")
                .expect("an id column")
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("int64")
                .clone();
            (0..col.len()).map(move |i| col.value(i))
        })
        .collect()
}

fn local_file(dir: &std::path::Path) -> String {
    let path = dir.join("t.parquet");
    std::fs::write(&path, parquet_file()).expect("write the file");
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn reads_a_local_file_whole_and_by_columns() {
    let dir = tempdir();
    let path = local_file(dir.path());
    let options = ReadOptions::default();
    let table = read_parquet(std::slice::from_ref(&path), &options)
        .await
        .expect("read");
    assert_eq!(table.num_rows(), ROWS as usize);
    assert_eq!(ids(&table.batches), (0..ROWS).collect::<Vec<_>>());
    let names = table.schema.field_with_name("name").expect("name");
    assert!(names.is_nullable());

    let options = ReadOptions {
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    let table = read_parquet(&[path], &options)
        .await
        .expect("read one column");
    assert_eq!(table.schema.fields().len(), 1);
    let snapshot = options.stats.snapshot();
    assert!(snapshot.bytes_needed > 0 && snapshot.bytes_fetched >= snapshot.bytes_needed);
}

#[tokio::test]
async fn read_dictionary_returns_named_string_columns_as_dictionaries() {
    let dir = tempdir();
    let path = local_file(dir.path());
    let options = ReadOptions {
        read_dictionary: vec!["name".into(), "id".into(), "absent".into()],
        ..Default::default()
    };
    let table = read_parquet(std::slice::from_ref(&path), &options)
        .await
        .expect("read");
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    // The string column is a dictionary; the others are as they were.
    assert_eq!(
        table
            .schema
            .field_with_name("name")
            .expect("name")
            .data_type(),
        &dictionary
    );
    assert_eq!(
        table.schema.field_with_name("id").expect("id").data_type(),
        &DataType::Int64
    );
    let plain = read_parquet(&[path], &ReadOptions::default())
        .await
        .expect("read");
    for (got, want) in table.batches.iter().zip(&plain.batches) {
        let got = got.column_by_name("name").expect("name");
        assert_eq!(got.data_type(), &dictionary);
        let decoded = arrow_cast::cast(got, &DataType::Utf8).expect("cast");
        assert_eq!(&decoded, want.column_by_name("name").expect("name"));
    }
}

#[tokio::test]
async fn a_filter_prunes_row_groups_and_rows() {
    let dir = tempdir();
    let path = local_file(dir.path());
    let filter = Filter::new(vec![vec![Predicate {
        column: "id".into(),
        op: CmpOp::Lt,
        value: Arc::new(Int64Array::from(vec![100])),
    }]])
    .expect("a valid filter");
    let options = ReadOptions {
        filter: Some(filter),
        ..Default::default()
    };
    let plans = plan_parquet(std::slice::from_ref(&path), &options)
        .await
        .expect("plan");
    assert_eq!(
        plans[0].plan.units.len(),
        1,
        "only the first row group can match"
    );
    let table = read_parquet(&[path], &options).await.expect("read");
    assert_eq!(ids(&table.batches), (0..100).collect::<Vec<_>>());
}

#[tokio::test]
async fn streams_batches_in_order() {
    let dir = tempdir();
    let path = local_file(dir.path());
    let mut stream = stream_parquet(&[path], &ReadOptions::default())
        .await
        .expect("stream");
    let mut batches = Vec::new();
    while let Some(batch) = stream.next().await {
        batches.push(batch.expect("a batch"));
    }
    assert_eq!(batches.len(), ROWS as usize / ROWS_PER_GROUP);
    assert_eq!(ids(&batches), (0..ROWS).collect::<Vec<_>>());
}

#[tokio::test]
async fn row_groups_stream_in_any_order_one_batch_each() {
    let dir = tempdir();
    let path = local_file(dir.path());
    let options = ReadOptions {
        columns: Some(vec!["id".into()]),
        filter: Some(
            Filter::new(vec![vec![Predicate {
                column: "id".into(),
                op: CmpOp::GtEq,
                value: Arc::new(Int64Array::from(vec![1_000])),
            }]])
            .expect("a valid filter"),
        ),
        ..Default::default()
    };
    let reader = open_parquet_units(&[path], &options).await.expect("open");
    let units = reader.units();
    assert_eq!(units.len(), 4);
    assert!(units.iter().all(|u| u.num_rows == ROWS_PER_GROUP as u64));
    assert!(units
        .iter()
        .all(|u| u.fetch_bytes > 0 && u.decoded_bytes > 0));
    // Any order, repeats allowed, a budget smaller than one unit still runs.
    let order = vec![3, 0, 2, 0];
    let mut stream = reader.stream(order.clone(), 1).expect("stream");
    let mut got = Vec::new();
    while let Some(batch) = stream.next().await {
        got.push(batch.expect("a batch"));
    }
    assert_eq!(got.len(), order.len(), "one batch per unit asked for");
    for (batch, &u) in got.iter().zip(&order) {
        let start = (u * ROWS_PER_GROUP) as i64;
        let want: Vec<i64> = (start..start + ROWS_PER_GROUP as i64)
            .filter(|&i| i >= 1_000)
            .collect();
        assert_eq!(ids(std::slice::from_ref(batch)), want, "unit {u}");
    }
    assert!(matches!(
        reader.stream(vec![4], 1 << 20),
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn reads_memory_objects_and_their_footers() {
    let url = "memory:///public-api/t.parquet".to_string();
    let parsed = url::Url::parse(&url).expect("url");
    let (store, path) =
        fastingest::clients::store_for(&parsed, &Default::default(), &Config::default())
            .expect("the memory store");
    store
        .put(&path, Bytes::from(parquet_file()).into())
        .await
        .expect("put");
    let options = ReadOptions::default();
    let table = read_parquet(std::slice::from_ref(&url), &options)
        .await
        .expect("read");
    assert_eq!(ids(&table.batches), (0..ROWS).collect::<Vec<_>>());
    let files = read_metadata(&[url], &options).await.expect("metadata");
    assert_eq!(files[0].1.metadata.num_row_groups(), 4);
}

#[tokio::test]
async fn errors_name_the_file() {
    let dir = tempdir();
    let missing = dir
        .path()
        .join("missing.parquet")
        .to_string_lossy()
        .into_owned();
    match read_parquet(std::slice::from_ref(&missing), &ReadOptions::default()).await {
        Err(e @ Error::NotFound { .. }) => assert!(e.to_string().contains(&missing)),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let not_parquet = dir.path().join("x.parquet");
    std::fs::write(&not_parquet, b"this is not a parquet file at all").expect("write");
    let not_parquet = not_parquet.to_string_lossy().into_owned();
    match read_parquet(std::slice::from_ref(&not_parquet), &ReadOptions::default()).await {
        Err(e @ Error::WrongFormat { .. }) => assert!(e.to_string().contains(&not_parquet)),
        other => panic!("expected WrongFormat, got {other:?}"),
    }
    let parquet = local_file(dir.path());
    match read_orc(std::slice::from_ref(&parquet), &ReadOptions::default()).await {
        Err(Error::WrongFormat { expected, .. }) => assert_eq!(expected, "ORC"),
        other => panic!("expected WrongFormat, got {other:?}"),
    }
}

/// An ORC file of `ROWS` rows (`id` 0.., `name`) in several small stripes.
fn orc_file(dir: &std::path::Path) -> String {
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(0..ROWS)),
            Arc::new(StringArray::from_iter(
                (0..ROWS).map(|i| (i % 7 != 0).then(|| format!("n{i}"))),
            )),
        ],
    )
    .expect("a valid batch");
    let path = dir.join("t.orc");
    let file = std::fs::File::create(&path).expect("create");
    let mut writer = orc_rust::arrow_writer::ArrowWriterBuilder::new(file, batch.schema())
        .with_stripe_byte_size(16 * 1024)
        .try_build()
        .expect("writer");
    for i in 0..10 {
        writer.write(&batch.slice(i * 1_000, 1_000)).expect("write");
    }
    writer.close().expect("close");
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn orc_reads_filters_streams_and_hands_out_raw_stripes() {
    let dir = tempdir();
    let path = orc_file(dir.path());
    let sources = std::slice::from_ref(&path);
    let all = read_orc(sources, &ReadOptions::default())
        .await
        .expect("read");
    assert_eq!(ids(&all.batches), (0..ROWS).collect::<Vec<_>>());
    let stripes = read_orc_stripes(sources, &ReadOptions::default())
        .await
        .expect("stripes");
    assert!(
        stripes.stripes.len() > 2,
        "{} stripes",
        stripes.stripes.len()
    );
    let raw = std::fs::read(&path).expect("read the file");
    for (meta, bytes) in stripes.stripes.iter().zip(&stripes.bytes) {
        let range = meta.range();
        assert_eq!(&raw[range.start as usize..range.end as usize], &bytes[..]);
    }
    let options = ReadOptions {
        columns: Some(vec!["name".into()]),
        filter: Some(
            Filter::new(vec![vec![Predicate {
                column: "id".into(),
                op: CmpOp::GtEq,
                value: Arc::new(Int64Array::from(vec![ROWS - 10])),
            }]])
            .expect("a valid filter"),
        ),
        ..Default::default()
    };
    // Stripes whose `id` statistics end below the filter are skipped (a
    // stripe without statistics is kept).
    let metadata = fastingest::read_orc_metadata(sources, &ReadOptions::default())
        .await
        .expect("metadata");
    let may_match = metadata[0]
        .1
        .metadata
        .stripe_metadatas()
        .iter()
        .filter(|s| {
            match s
                .column_statistics()
                .get(1)
                .and_then(|c| c.type_statistics())
            {
                Some(orc_rust::statistics::TypeStatistics::Integer { max, .. }) => {
                    *max >= ROWS - 10
                }
                _ => true,
            }
        })
        .count();
    let plans = plan_orc(sources, &options).await.expect("plan");
    assert_eq!(plans[0].plan.units.len(), may_match);
    let mut stream = stream_orc(sources, &options).await.expect("stream");
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch.expect("a batch");
        assert_eq!(batch.schema().field(0).name(), "name");
        assert_eq!(batch.num_columns(), 1);
        rows += batch.num_rows();
    }
    assert_eq!(rows, 10);
}

#[tokio::test]
async fn orc_stripes_stream_as_units_in_any_order() {
    let dir = tempdir();
    let path = orc_file(dir.path());
    let units = open_orc_units(std::slice::from_ref(&path), &ReadOptions::default())
        .await
        .expect("open");
    let infos = units.units();
    assert!(infos.len() > 2, "{} stripes", infos.len());
    assert!(units.partitions().expect("keys").is_none());
    let order: Vec<usize> = (0..infos.len()).rev().collect();
    let mut stream = units.stream(order.clone(), 1 << 20).expect("stream");
    let mut got = Vec::new();
    while let Some(batch) = stream.next().await {
        got.push(batch.expect("a batch"));
    }
    assert_eq!(got.len(), order.len(), "one batch per stripe");
    for (batch, &u) in got.iter().zip(&order) {
        assert_eq!(batch.num_rows() as u64, infos[u].num_rows);
    }
    let mut all = ids(&got);
    all.sort_unstable();
    assert_eq!(all, (0..ROWS).collect::<Vec<_>>());
}

/// A temporary directory removed on drop (no extra dependency for one helper).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> TempDir {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "fastingest-public-api-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}
